//! Command output is bounded: whatever a command prints, what it puts into the prompt is at most
//! about its `max_output` (head, a notice of the cut, tail) and ralph's memory stays flat.

use crate::common;

use common::{Project, code};

/// An agent that copies its prompt to `prompt.txt` and writes ralph's peak resident memory
/// (VmHWM of its parent, in kB) to `hwm.txt`: read while ralph still runs, after the commands.
const COPYING_AGENT: &str = "agent: sh agent.sh";

fn project(commands: &str) -> Project {
    let p = Project::new(
        &format!("{COPYING_AGENT}\ncommands:\n{commands}"),
        "BEGIN\n{{ commands.big }}\nEND\n",
    );
    std::fs::write(
        p.path().join("agent.sh"),
        "cat > prompt.txt\nawk '/^VmHWM/ {print $2}' /proc/$PPID/status > hwm.txt\n",
    )
    .unwrap();
    p
}

fn prompt(p: &Project) -> String {
    std::fs::read_to_string(p.path().join("prompt.txt")).expect("the agent ran")
}

#[test]
fn a_command_printing_without_end_is_cut_to_its_max_output_and_the_run_ends_normally() {
    let p = project(
        "  - name: big\n    run: \"printf 'first line\\\\n'; yes | head -c 50000000; printf 'last line'\"\n    max_output: 16KiB\n",
    );
    let out = p.run(&["run", "-n", "1", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "max_iterations");
    let prompt = prompt(&p);
    assert!(
        prompt.starts_with("BEGIN\nfirst line\ny\ny\n"),
        "{}",
        &prompt[..40]
    );
    assert!(
        prompt.ends_with("y\ny\nlast line\nEND"),
        "{}",
        &prompt[prompt.len() - 40..]
    );
    let cut = 50_000_000 + "first line\nlast line".len() - 16 * 1024;
    assert!(
        prompt.contains(&format!(
            "\n[... {cut} bytes cut by ralph: max_output 16KiB ...]\n"
        )),
        "no cut notice"
    );
    assert!(prompt.len() < 16 * 1024 + 200, "{} bytes", prompt.len());
}

#[test]
fn output_under_the_default_cap_reaches_the_prompt_whole() {
    let p = project("  - name: big\n    run: yes | head -c 60000\n");
    assert_eq!(code(&p.run(&["run", "-n", "1", "--quiet"])), 0);
    let prompt = prompt(&p);
    assert!(!prompt.contains("cut by ralph"));
    // The command's trailing newline goes, as with `$(...)`.
    assert_eq!(prompt.len(), "BEGIN\n\nEND".len() + 60000 - 1);
}

#[test]
fn a_command_printing_until_its_timeout_ends_with_a_bounded_prompt() {
    let p = project("  - name: big\n    run: yes\n    timeout: 1s\n");
    let out = p.run(&["run", "-n", "1", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    assert_eq!(p.run_ended()["reason"], "max_iterations");
    let finished = &p.events_of("COMMAND_FINISHED")[0];
    assert_eq!(finished["timed_out"], true);
    let prompt = prompt(&p);
    assert!(
        prompt.contains("cut by ralph: max_output 64KiB"),
        "no cut notice"
    );
    assert!(prompt.len() < 64 * 1024 + 200, "{} bytes", prompt.len());
    // The iteration log holds the same bounded text, not everything `yes` printed.
    let log = p.events_of("ITERATION_ENDED")[0]["log_file"]
        .as_str()
        .unwrap()
        .to_owned();
    let log_len = std::fs::metadata(p.path().join(log)).unwrap().len();
    assert!(log_len < 64 * 1024 + 1000, "log of {log_len} bytes");
}

#[test]
fn memory_stays_flat_while_a_command_prints_500_mb() {
    let p = project("  - name: big\n    run: yes | head -c 500000000\n    timeout: 5m\n");
    let out = p.run(&["run", "-n", "1", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", common::stderr(&out));
    let hwm_kb: u64 = std::fs::read_to_string(p.path().join("hwm.txt"))
        .unwrap()
        .trim()
        .parse()
        .expect("VmHWM in kB");
    assert!(hwm_kb < 100 * 1024, "peak RSS {hwm_kb} kB");
    assert!(prompt(&p).len() < 64 * 1024 + 200);
}
