#!/usr/bin/env python3
"""The peers comparison: ralph, ralphy and ralph-tui on the same 8 tasks, in parallel mode.

    python3 xtask/peers/peers.py --ralph target/release/ralph [--reps 3] [--lanes 4]

Not part of CI: it installs the pinned peers from npm into ~/.cache/ralph-peers (outside the
repository) and takes minutes. For each runner and repetition it copies xtask/peers/fixture
into a fresh git repository, puts the scripted agent xtask/peers/claude first on PATH as
`claude`, runs the runner in parallel mode with the same number of lanes, and measures:

- wall: from starting the runner to its exit;
- runner CPU: user+sys of the runner's own processes (ralph; node and the ralphy binary;
  bun for ralph-tui), read from /proc/<pid>/stat every 20 ms (a process's last 20 ms can be
  missed), agents and the short-lived commands (git, sh, the checks) not included;
- CPU of everything but the agents: user+sys of the whole process tree (getrusage of the
  reaped children) minus what the agents report for themselves (each fake agent appends its
  own and its children's rusage to $PEERS_AGENT_LOG): the runner plus the git commands and
  checks it starts;
- peak memory: the sum of the runner processes' peak RSS (VmHWM in /proc/<pid>/status).

Then it runs the suite on the branch the runner says holds the work, counts the tasks whose
change is there, and prints one JSON line per run and a Markdown table of medians.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path.home() / ".cache" / "ralph-peers"
PEERS = {"ralphy-cli": "4.7.2", "ralph-tui": "0.11.0", "bun": "1.4.5"}
SUITE = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-q"]
# Processes a runner starts that are not the runner itself.
HELPERS = {"git", "sh", "bash", "dash", "env", "timeout", "sleep", "cat", "which", "ssh"}
TICK = os.sysconf("SC_CLK_TCK")


def install_peers():
    """npm-installs the pinned peers into the cache once; returns its bin folder."""
    bin_dir = CACHE / "node_modules" / ".bin"
    have = {}
    for name in PEERS:
        manifest = CACHE / "node_modules" / name / "package.json"
        if manifest.exists():
            have[name] = json.loads(manifest.read_text())["version"]
    if have != PEERS:
        CACHE.mkdir(parents=True, exist_ok=True)
        specs = [f"{name}@{version}" for name, version in PEERS.items()]
        subprocess.run(["npm", "install", "--prefix", str(CACHE), *specs], check=True)
    return bin_dir


def runners(ralph, peers_bin, lanes):
    """Each runner: its command and how to read what it reported and where its work is."""
    return {
        "ralph": {
            "cmd": [ralph, "run", "--parallel", str(lanes)],
            "reported": r"ralph: .*?(\d+) landed",
            "branch": None,
            "list": ("TODO.md", r"(?m)^- \[x\]"),
        },
        "ralphy (Markdown PRD)": {
            "cmd": [str(peers_bin / "ralphy"), "--prd", "TODO.md", "--parallel",
                    "--max-parallel", str(lanes)],
            "reported": r"Completed:\s+(\d+)",
            "branch": None,
            "list": ("TODO.md", r"(?m)^- \[x\]"),
        },
        "ralphy (YAML, one parallel group)": {
            "cmd": [str(peers_bin / "ralphy"), "--yaml", "tasks.yaml", "--parallel",
                    "--max-parallel", str(lanes)],
            "reported": r"Completed:\s+(\d+)",
            "branch": None,
            "list": ("tasks.yaml", r"completed: true"),
        },
        "ralph-tui": {
            "cmd": [str(peers_bin / "ralph-tui"), "run", "--prd", "prd.json", "--agent",
                    "claude", "--parallel", str(lanes), "--headless", "--no-setup",
                    "--no-notify"],
            "reported": r"Tasks:\s+(\d+)/\d+ completed",
            "branch": r"Changes are on branch:\s+(\S+)",
            "list": ("prd.json", r'"passes": true'),
        },
    }


def make_repo(work):
    repo = work / "repo"
    shutil.copytree(HERE / "fixture", repo)
    for args in (["init", "-q", "-b", "main"], ["config", "user.name", "peers"],
                 ["config", "user.email", "peers@example.invalid"], ["add", "-A"],
                 ["commit", "-q", "-m", "textkit: the fixture"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    agent_bin = work / "bin"
    agent_bin.mkdir()
    shutil.copy(HERE / "claude", agent_bin / "claude")
    return repo, agent_bin


def proc_table(root):
    """pid -> (ppid, exe basename, cmdline, cpu seconds, VmHWM bytes) for ROOT and every
    process below it."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = (int(stat[stat.rindex(")") + 2:].split()[1]), stat)
    tree = {root}
    changed = True
    while changed:
        changed = False
        for pid, (ppid, _) in parents.items():
            if pid not in tree and ppid in tree:
                tree.add(pid)
                changed = True
    table = {}
    for pid in tree & parents.keys():
        ppid, stat = parents[pid]
        fields = stat[stat.rindex(")") + 2:].split()
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
            hwm = 0
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        table[pid] = (ppid, exe, cmdline, cpu, hwm)
    return table


def measure(cmd, cwd, env, agent_path, log_path, timeout):
    """Runs CMD, sampling its process tree; returns the figures and its output."""
    out = open(log_path, "wb")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)
    # Stopped by Ctrl+C or a TERM, the harness ends the runner's session with it.
    def stop(signum, _frame):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    runner = {}  # (pid, exe) -> (cpu, hwm): the last sample of each runner process
    timed_out = False
    while proc.poll() is None:
        if time.monotonic() - start > timeout:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            break
        table = proc_table(proc.pid)
        agents = set()
        changed = True
        while changed:
            changed = False
            for pid, (ppid, _, cmdline, _, _) in table.items():
                if pid not in agents and (ppid in agents or agent_path in cmdline):
                    agents.add(pid)
                    changed = True
        for pid in table.keys() - agents:
            ppid, exe, _, cpu, hwm = table[pid]
            # A program of the runner's own: the runner, or a program it started (ralphy's
            # node wrapper starts its binary); not a command it runs, and not a child caught
            # between fork and exec, which shows its parent's exe and memory.
            parent_exe = table[ppid][1] if ppid in table else None
            own = pid == proc.pid or exe != parent_exe
            if own and exe not in HELPERS and not exe.startswith("python"):
                runner[(pid, exe)] = (cpu, hwm)
        time.sleep(0.02)
    proc.wait()
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Whatever the runner left behind in its session (agents, merges) is ended here.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    out.close()
    tree_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "exit_code": proc.returncode,
        "timed_out": timed_out,
        "wall_s": round(wall, 2),
        "runner_cpu_s": round(sum(cpu for cpu, _ in runner.values()), 3),
        "runner_processes": [
            {"pid": pid, "exe": exe, "cpu_s": cpu, "peak_rss_mib": round(hwm / 2**20, 1)}
            for (pid, exe), (cpu, hwm) in sorted(runner.items())
        ],
        "tree_cpu_s": tree_cpu,
        "runner_peak_rss_mib": round(sum(hwm for _, hwm in runner.values()) / 2**20, 1),
    }


def task_checks(tree):
    """Which of the 8 tasks' changes are in TREE (a checked-out result)."""
    def read(path):
        p = tree / path
        return p.read_text() if p.exists() else ""

    return {
        "Add slugify": (tree / "lib/slugify.py").exists(),
        "Add clamp": (tree / "lib/clamp.py").exists(),
        "Add word_count": (tree / "lib/word_count.py").exists(),
        "Add is_palindrome": (tree / "lib/palindrome.py").exists(),
        "Register the csv exporter": '"csv"' in read("lib/registry.py"),
        "Register the json exporter": '"json"' in read("lib/registry.py"),
        "Use a hyphen as the default separator": 'DEFAULT_SEP = "-"' in read("lib/config.py"),
        "Add join_words": (tree / "lib/join.py").exists(),
    }


def judge(repo, branch, work):
    """Runs the suite on BRANCH's tree; returns (suite passes, failing lines, tasks there)."""
    tree = work / "result"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", branch], cwd=repo, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    suite = subprocess.run(SUITE, cwd=tree, capture_output=True, text=True)
    failing = [l for l in suite.stderr.splitlines() if l.startswith(("FAIL:", "ERROR:"))]
    landed = [t for t, there in task_checks(tree).items() if there]
    return suite.returncode == 0, failing, landed


def run_one(name, spec, agent_seconds, timeout, peers_bin, keep):
    work = Path(tempfile.mkdtemp(prefix="ralph-peers-"))
    repo, agent_bin = make_repo(work)
    agent_log = work / "agents.jsonl"
    env = dict(os.environ)
    env.update({
        # The fake agent first; the real interpreter next, so no shim decides by PWD.
        # (ralph-tui's script starts with `#!/usr/bin/env bun`: the pinned bun is next.)
        "PATH": f"{agent_bin}:{os.path.dirname(sys.executable)}:{peers_bin}:{env['PATH']}",
        "PEERS_AGENT_LOG": str(agent_log),
        "PEERS_AGENT_SECONDS": str(agent_seconds),
        "HOME": str(work / "home"),  # no peer reads or writes the real ~/.config
        "NO_COLOR": "1",
    })
    (work / "home").mkdir()
    figures = measure(spec["cmd"], repo, env, str(agent_bin / "claude"), work / "output.log",
                      timeout)
    output = (work / "output.log").read_text(errors="replace")
    agent_runs = [json.loads(l) for l in agent_log.read_text().splitlines()] \
        if agent_log.exists() else []
    agent_cpu = sum(a["cpu_s"] for a in agent_runs)
    figures["cpu_but_agents_s"] = round(figures.pop("tree_cpu_s") - agent_cpu, 3)
    # Calls that did work (a task, a conflict), not a runner's `claude --version`.
    figures["agent_calls"] = sum(1 for a in agent_runs if a["action"] != "--version")
    reported = re.findall(spec["reported"], output)
    branch = "main"
    if spec["branch"]:
        found = re.findall(spec["branch"], output)
        branch = found[-1] if found else "main"
    passes, failing, landed = judge(repo, branch, work)
    # The task list as the person finds it in their checkout after the run.
    list_file, mark = spec["list"]
    marked = len(re.findall(mark, (repo / list_file).read_text()))
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "runner": name, **figures,
        "reported_done": int(reported[-1]) if reported else None,
        "marked_in_list": marked,
        "result_branch": branch, "tasks_on_branch": len(landed),
        "missing": sorted(set(task_checks(Path("/nonexistent"))) - set(landed)),
        "suite_passes": passes, "failing_tests": failing, "work": str(work) if keep else None,
    }


def context(ralph, peers_bin):
    """Date, machine and versions, for the report's first lines."""
    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
        except OSError as err:
            return f"({err})"
        return out.strip().splitlines()[0] if out.strip() else "?"

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    mem = int(open("/proc/meminfo").readline().split()[1]) / 2**20
    return [
        f"- Date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"- Machine: {cpu}, {os.cpu_count()} cores, {mem:.1f} GiB, Linux {os.uname().release};"
        f" load average {os.getloadavg()[0]:.2f} at the start",
        f"- ralph: {first_line([ralph, '--version'])};"
        f" ralphy {first_line([peers_bin / 'ralphy', '--version'])};"
        f" ralph-tui {PEERS['ralph-tui']} on bun {first_line([peers_bin / 'bun', '--version'])};"
        f" git {first_line(['git', '--version']).split()[-1]}; Python {sys.version.split()[0]}",
    ]


def table(results):
    lines = [
        "| Runner | Runs | Wall (median, min-max) | Runner CPU | CPU, all but the agents "
        "| Runner peak RSS | Agent calls | Reported done | Marked done in the checkout's list "
        "| Tasks on the result branch | Suite passes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r["runner"] for r in results):
        rs = [r for r in results if r["runner"] == name]
        med = lambda key: statistics.median(r[key] for r in rs)  # noqa: E731
        walls = [r["wall_s"] for r in rs]
        counts = lambda key: ", ".join(str(r[key]) for r in rs)  # noqa: E731
        lines.append(
            f"| {name} | {len(rs)} | {med('wall_s'):.1f} s ({min(walls):.1f}-{max(walls):.1f})"
            f" | {med('runner_cpu_s'):.2f} s | {med('cpu_but_agents_s'):.2f} s"
            f" | {med('runner_peak_rss_mib'):.0f} MiB | {counts('agent_calls')}"
            f" | {counts('reported_done')} | {counts('marked_in_list')}"
            f" | {counts('tasks_on_branch')} | {sum(r['suite_passes'] for r in rs)} of {len(rs)} |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ralph", required=True, help="the ralph binary to measure")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--agent-seconds", type=float, default=2.0,
                        help="how long each fake agent call takes (default 2)")
    parser.add_argument("--timeout", type=float, default=600.0, help="per run, in seconds")
    parser.add_argument("--only", action="append",
                        help="run only this runner: ralph, ralphy (both task lists), ralph-tui")
    parser.add_argument("--json", type=Path, help="also append each run's JSON line here")
    parser.add_argument("--keep", action="store_true",
                        help="keep each run's folder (repository, output, agent log)")
    args = parser.parse_args()

    peers_bin = install_peers()
    specs = runners(os.path.abspath(args.ralph), peers_bin, args.lanes)
    if args.only:
        specs = {n: s for n, s in specs.items() if n.split()[0] in args.only}
    header = context(os.path.abspath(args.ralph), peers_bin)
    header.append(f"- {args.lanes} lanes; each fake agent call takes {args.agent_seconds:g} s")
    print("\n".join(header), flush=True)
    results = []
    # Interleaved: repetition 1 of every runner, then repetition 2, so load drifts evenly.
    for rep in range(args.reps):
        for name, spec in specs.items():
            result = run_one(name, spec, args.agent_seconds, args.timeout, peers_bin, args.keep)
            result["rep"] = rep + 1
            result["load_average"] = round(os.getloadavg()[0], 2)
            results.append(result)
            line = json.dumps(result)
            print(line, flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(line + "\n")
    print()
    print("\n".join(header))
    print()
    print(table(results))


if __name__ == "__main__":
    main()
