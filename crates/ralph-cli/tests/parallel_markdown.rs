//! `ralph run --parallel N` over a Markdown checklist: each landing ticks exactly its line
//! (CRLF, tabs, prose and code fences kept as they are), a blocked task says so in the file on
//! the base, and a run killed mid-merge or while the base moves resumes and ticks each line once.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::parallel::{TODO_AGENT, nothing_left_behind, todo_repo, wait_for_file};
use common::{Project, git, show};
use serde_json::Value;

/// CRLF, a tab, trailing spaces, prose, a done item and a code fence around three tasks.
const TODO: &str = "# Shop\r\n\r\nSome prose  \r\n\r\n- [ ] Build the cart\r\n  \tuse a map  \r\n- [x] Old thing\r\n* [ ] Add checkout\r\n\r\n```\r\n- [ ] not a task\r\n```\r\n1. [ ] Ship it\r\ntrailing prose\t\r\n";

/// `ralph tasks --json`'s id of the task titled `title`.
fn task_id(p: &Project, title: &str) -> String {
    let out = p.run(&["tasks", "--json"]);
    let listed: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == title)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_markdown_checklist_runs_in_parallel_and_each_landing_ticks_exactly_its_line() {
    let p = todo_repo(TODO_AGENT, TODO);
    let dir = p.path();
    let ids: Vec<String> = ["Build the cart", "Add checkout", "Ship it"]
        .iter()
        .map(|t| task_id(&p, t))
        .collect();
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    let ended = events.last().unwrap();
    assert_eq!(ended["type"], "PARALLEL_ENDED");
    assert_eq!(ended["landed"], 3, "{events:#?}");

    // The file ends with exactly the three ticks; every other byte as the person wrote it.
    let expected = TODO
        .replace("- [ ] Build the cart", "- [x] Build the cart")
        .replace("* [ ] Add checkout", "* [x] Add checkout")
        .replace("1. [ ] Ship it", "1. [x] Ship it");
    assert_eq!(
        String::from_utf8(show(dir, "main", "TODO.md").unwrap()).unwrap(),
        expected
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("TODO.md")).unwrap(),
        expected
    );
    // Each tick lands with its task's work, never before: the landing's parent lacks both.
    for id in &ids {
        let landed: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "TASK_LANDED" && e["task_id"] == id.as_str())
            .collect();
        assert_eq!(landed.len(), 1, "{id}: {events:#?}");
        let commit = landed[0]["commit"].as_str().unwrap();
        assert!(show(dir, commit, &format!("{id}.done")).is_some());
        let before =
            String::from_utf8(show(dir, &format!("{commit}^"), "TODO.md").unwrap()).unwrap();
        let after = String::from_utf8(show(dir, commit, "TODO.md").unwrap()).unwrap();
        assert_eq!(
            before.matches("[x]").count() + 1,
            after.matches("[x]").count(),
            "{id}'s landing ticks one line"
        );
    }
    // No lane ticked TODO.md on its branch: only the landings did.
    let touching = git(dir, &["log", "--format=%s", "main", "--", "TODO.md"]);
    assert_eq!(
        touching
            .lines()
            .filter(|l| l.starts_with("ralph: land "))
            .count(),
        3,
        "{touching}"
    );
    assert_eq!(touching.lines().count(), 4, "{touching}");
    assert_eq!(git(dir, &["status", "--porcelain"]), "");
    nothing_left_behind(dir);
}

/// `todo_repo` with "Refuse this" blocked while "Do that" is being landed: the refusing agent
/// writes its worktree's path to `<marks>/refusing`, waits for `<marks>/merging` (the queue's
/// check of "Do that" has begun), then says it is blocked; the queue's check (no
/// `RALPH_ITERATION`: it is no iteration's) touches `merging` and holds the landing until the
/// refusing lane's worktree is gone (its block decided), then runs `extra` (a shell line).
fn block_during_landing_repo(marks: &Path, extra: &str) -> Project {
    let agent = format!(
        "prompt=$(cat)\n\
         id=$(printf '%s\\n' \"$prompt\" | sed -n 's/^ID=//p')\n\
         title=$(printf '%s\\n' \"$prompt\" | sed -n 's/^TITLE=//p')\n\
         case \"$title\" in\n\
         Refuse*)\n\
         pwd > {m}/refusing.tmp && mv {m}/refusing.tmp {m}/refusing\n\
         i=0; until [ -e {m}/merging ]; do i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1; done\n\
         echo '<!-- ralph:state blocked reason=\"not mine\" -->' ;;\n\
         *) echo \"work of $title\" > \"$id.done\" ;;\n\
         esac\n",
        m = marks.display()
    );
    let p = todo_repo(&agent, "- [ ] Refuse this\n- [ ] Do that\n");
    let check = format!(
        "ls *.done >/dev/null 2>&1 || exit 1\n\
         if [ -z \"$RALPH_ITERATION\" ]; then\n\
         touch {m}/merging\n\
         i=0; until [ -e {m}/refusing ] && [ ! -d \"$(cat {m}/refusing)\" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1; done\n\
         {extra}\n\
         fi\n",
        m = marks.display()
    );
    let dir = p.path();
    std::fs::write(dir.join("check.sh"), check).unwrap();
    let ralph = std::fs::read_to_string(dir.join("RALPH.md"))
        .unwrap()
        .replace("'ls *.done >/dev/null 2>&1'", "sh check.sh");
    std::fs::write(dir.join("RALPH.md"), ralph).unwrap();
    git(dir, &["add", "-A"]);
    git(
        dir,
        &["commit", "-qm", "the queue's check waits for the block"],
    );
    p
}

#[test]
fn a_blocked_markdown_task_in_a_parallel_run_says_so_in_the_file_on_the_base() {
    let marks = tempfile::tempdir().unwrap();
    let p = block_during_landing_repo(marks.path(), ":");
    let dir = p.path();
    // The block is decided while the other task's landing is under way: the block's mark
    // waits its turn in the queue, and the landing is not refused.
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let events = p.events();
    let ended = events.last().unwrap();
    assert_eq!(
        (
            ended["reason"].as_str(),
            ended["landed"].as_u64(),
            ended["blocked"].as_u64()
        ),
        (Some("stories_blocked"), Some(1), Some(1)),
        "{events:#?}"
    );
    assert!(events.iter().all(|e| e["type"] != "WARNING"), "{events:#?}");
    let text = String::from_utf8(show(dir, "main", "TODO.md").unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("- [ ] Refuse this <!-- ralph: blocked: ")
            && lines[0].contains("not mine")
            && lines[0].contains("refs/ralph/attempts/")
            && lines[0].ends_with("-->"),
        "{text}"
    );
    assert_eq!(lines[1], "- [x] Do that");
    assert_eq!(std::fs::read_to_string(dir.join("TODO.md")).unwrap(), text);
    // The block's commit came after the landing, from the queue.
    let subjects = git(dir, &["log", "--format=%s", "main"]);
    let subjects: Vec<&str> = subjects.lines().collect();
    assert!(
        subjects[0].ends_with(" blocked") && subjects[1].starts_with("ralph: land "),
        "{subjects:?}"
    );
    nothing_left_behind(dir);
}

/// The lines of TODO.md on `main` once "Refuse this" is blocked and "Do that" landed.
fn blocked_and_landed(dir: &Path) {
    let text = String::from_utf8(show(dir, "main", "TODO.md").unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("- [ ] Refuse this <!-- ralph: blocked: ")
            && lines[0].contains("not mine")
            && lines[0].ends_with("-->")
            && lines[0].matches("<!--").count() == 1,
        "marked blocked once: {text}"
    );
    assert_eq!(lines[1], "- [x] Do that");
    assert_eq!(std::fs::read_to_string(dir.join("TODO.md")).unwrap(), text);
    let subjects = git(dir, &["log", "--format=%s", "main"]);
    assert_eq!(
        subjects.lines().filter(|l| l.ends_with(" blocked")).count(),
        1,
        "{subjects}"
    );
}

/// The merge journal's path.
pub(crate) fn merge_journal(dir: &Path) -> std::path::PathBuf {
    let common_dir = git(dir, &["rev-parse", "--git-common-dir"]);
    dir.join(common_dir.trim()).join("ralph-merge-journal.json")
}

#[test]
fn killed_while_a_block_waits_for_a_landing_the_resumed_run_marks_it_and_lands_the_other() {
    let marks = tempfile::tempdir().unwrap();
    let (decided, hold) = (marks.path().join("decided"), marks.path().join("hold"));
    std::fs::write(&hold, "").unwrap();
    // The landing's check holds, once the block is decided, while `hold` exists.
    let p = block_during_landing_repo(
        marks.path(),
        &format!(
            "touch {decided}; while [ -e {hold} ]; do sleep 0.1; done  # parallel-block-killed-ok",
            decided = decided.display(),
            hold = hold.display()
        ),
    );
    let dir = p.path();
    let refuse = task_id(&p, "Refuse this");
    let mut child = p.spawn(&["run", "--parallel", "2"]);
    wait_for_file(&decided);
    // The block is the session's, waiting for its turn; the base has no mark yet.
    let session: Value =
        serde_json::from_slice(&std::fs::read(dir.join(".ralph/parallel/session.json")).unwrap())
            .unwrap();
    assert_eq!(
        session["blocks"][0]["task_id"],
        refuse.as_str(),
        "{session}"
    );
    assert_eq!(session["lanes"][refuse.as_str()]["state"], "blocked");
    assert_eq!(
        show(dir, "main", "TODO.md").unwrap(),
        b"- [ ] Refuse this\n- [ ] Do that\n"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    std::fs::remove_file(&hold).unwrap();
    let out = p.run(&["run", "--parallel", "2", "--resume"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let events = p.events();
    assert_eq!(events[0]["resumed"], true);
    let ended = events.last().unwrap();
    assert_eq!(
        (
            ended["reason"].as_str(),
            ended["landed"].as_u64(),
            ended["blocked"].as_u64()
        ),
        (Some("stories_blocked"), Some(1), Some(1)),
        "{events:#?}"
    );
    let blocked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "TASK_BLOCKED")
        .collect();
    assert_eq!(blocked.len(), 1, "{events:#?}");
    assert!(blocked[0]["reason"].as_str().unwrap().contains("not mine"));
    blocked_and_landed(dir);
    assert!(!merge_journal(dir).exists());
    assert_eq!(git(dir, &["status", "--porcelain"]), "");
    nothing_left_behind(dir);
    assert!(!common::process_running("parallel-block-killed-ok"));
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn process_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// A checklist run killed while git moves the base to the block of "Refuse this" (held there by
/// a `reference-transaction` hook); git then goes on without ralph and moves the base, or
/// with `abort` refuses to. A `--resume` records the block once, marked once.
fn killed_while_the_base_moves_to_a_block(abort: bool) {
    let marks = tempfile::tempdir().unwrap();
    let m = marks.path().display();
    let p = todo_repo(TODO_AGENT, "- [ ] Refuse this\n- [ ] Do that\n");
    let dir = p.path();
    let refuse = task_id(&p, "Refuse this");
    // git holds the base's move to a block commit (the first only) until `release` exists,
    // its pid in `git.pid`: ralph is killed there, and git goes on without it.
    let hook = dir.join(".git/hooks/reference-transaction");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\n\
             while read -r old new ref; do\n\
             [ \"$ref\" = refs/heads/main ] && [ ! -e {m}/held ] || continue\n\
             git log -1 --format=%s \"$new\" 2>/dev/null | grep -q ' blocked$' || continue\n\
             echo $PPID > {m}/git.pid.tmp && mv {m}/git.pid.tmp {m}/git.pid; touch {m}/held\n\
             i=0; until [ -e {m}/release ]; do i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1; done\n\
             [ -e {m}/abort ] && exit 1\n\
             done\nexit 0\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    let mut child = p.spawn(&["run", "--parallel", "2"]);
    wait_for_file(&marks.path().join("held"));
    let git_pid: u32 = std::fs::read_to_string(marks.path().join("git.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let journal: Value =
        serde_json::from_slice(&std::fs::read(merge_journal(dir)).unwrap()).unwrap();
    assert_eq!(journal["task_id"], refuse.as_str(), "{journal}");
    assert!(journal["blocked"].as_str().unwrap().contains("not mine"));
    child.kill().unwrap();
    child.wait().unwrap();
    if abort {
        std::fs::write(marks.path().join("abort"), "").unwrap();
    }
    std::fs::write(marks.path().join("release"), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !process_ended(git_pid) {
        assert!(Instant::now() < deadline, "git {git_pid} never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
    let main = git(dir, &["rev-parse", "main"]);
    assert_eq!(
        journal["landing"].as_str().unwrap() == main.trim(),
        !abort,
        "{journal}"
    );

    let out = p.run(&["run", "--parallel", "2", "--resume"]);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let events = p.events();
    assert_eq!(events[0]["resumed"], true);
    let blocked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "TASK_BLOCKED")
        .collect();
    assert_eq!(blocked.len(), 1, "the resumed run records it: {events:#?}");
    assert_eq!(blocked[0]["task_id"], refuse.as_str());
    let ended = events.last().unwrap();
    assert_eq!(ended["reason"], "stories_blocked", "{events:#?}");
    blocked_and_landed(dir);
    assert!(!merge_journal(dir).exists());
    assert_eq!(git(dir, &["status", "--porcelain"]), "");
    nothing_left_behind(dir);
}

#[test]
fn killed_while_the_base_moves_to_a_block_the_resumed_run_finishes_it() {
    killed_while_the_base_moves_to_a_block(false);
}

#[test]
fn killed_before_the_base_moved_to_a_block_the_resumed_run_marks_it_again() {
    killed_while_the_base_moves_to_a_block(true);
}

#[test]
fn a_markdown_run_killed_mid_merge_resumes_and_ticks_each_line_once() {
    let marks = tempfile::tempdir().unwrap();
    let slow = marks.path().join("slow");
    let merging = marks.path().join("merging");
    std::fs::write(&slow, "").unwrap();
    // "Second" is slow: it runs while "First"'s merge is checked, and the queue's check hangs
    // while `slow` exists.
    let agent = "prompt=$(cat)\n\
         id=$(printf '%s\\n' \"$prompt\" | sed -n 's/^ID=//p')\n\
         title=$(printf '%s\\n' \"$prompt\" | sed -n 's/^TITLE=//p')\n\
         if [ \"$title\" = Second ]; then sleep 3; fi  # parallel-md-killed-ok\n\
         echo ok > \"$id.done\"\n";
    let todo = "Notes  \n\n- [ ] First\n- [ ] Second\n";
    let p = todo_repo(agent, todo);
    let check = format!(
        "---\nagent: sh agent.sh\ndone_when:\n  - 'ls *.done >/dev/null 2>&1 || exit 1; if [ -z \"$RALPH_ITERATION\" ] && [ -e {slow} ]; then touch {merging}; sleep 60; fi  # parallel-md-killed-ok'\n\
         convergence: {{max_attempts: 5, backoff: 10ms, max_backoff: 10ms}}\n\
         failure: {{delay: 10ms, max_delay: 10ms}}\n\
         tasks:\n  markdown: TODO.md\n---\nID={{{{ task.id }}}}\nTITLE={{{{ task.title }}}}\n",
        slow = slow.display(),
        merging = merging.display()
    );
    let dir = p.path();
    std::fs::write(dir.join("RALPH.md"), check).unwrap();
    git(dir, &["commit", "-qam", "the check hangs while merging"]);
    let mut child = p.spawn(&["run", "--parallel", "2"]);
    wait_for_file(&merging);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        show(dir, "main", "TODO.md").unwrap(),
        todo.as_bytes(),
        "nothing ticked before a landing"
    );

    std::fs::remove_file(&slow).unwrap();
    let out = p.run(&["run", "--parallel", "2", "--resume"]);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    let events = p.events();
    assert_eq!(events[0]["resumed"], true);
    assert_eq!(
        String::from_utf8(show(dir, "main", "TODO.md").unwrap()).unwrap(),
        "Notes  \n\n- [x] First\n- [x] Second\n"
    );
    assert_eq!(git(dir, &["status", "--porcelain"]), "");
    nothing_left_behind(dir);
    assert!(!common::process_running("parallel-md-killed-ok"));
}
