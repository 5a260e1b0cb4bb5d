//! A person's saves of the task list made while ralph marks it are never lost, and ralph's
//! marks are never undone for good: a save racing ralph's write is kept with the mark applied
//! to it again, and a task a stale save shows undone again is ticked again, not done again.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{Project, code, git_repo, show, stderr};
use serde_json::Value;

/// How many tasks each race runs through: a mark per task, each raced by the person's saves.
const TASKS: usize = 20;

/// Swaps the files at `a` and `b` in one step, as ralph does: the person's editor here never
/// replaces a save it has not seen either, so every mark ralph makes stays.
fn exchange(a: &Path, b: &Path) {
    use std::os::unix::ffi::OsStrExt as _;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let (a, b) = (c(a), c(b));
    // SAFETY: renameat2 reads two NUL-terminated paths that live across the call.
    let done = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
}

/// A person saving `path` by rename every 10 ms or so until `stop`, each save adding save
/// number n to what is there (`edit(text, n)`), made on the file as it settled. Returns how
/// many saves were made.
fn person(
    path: PathBuf,
    stop: Arc<AtomicBool>,
    edit: fn(&str, usize) -> String,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let tmp = path.with_file_name(".person-save");
        let mut n = 0;
        while !stop.load(Ordering::SeqCst) {
            n += 1;
            // An editor reloads a changed file once it has settled, not the instant it changes.
            let mut base = std::fs::read_to_string(&path).unwrap();
            loop {
                std::thread::sleep(Duration::from_millis(3));
                let again = std::fs::read_to_string(&path).unwrap();
                if again == base {
                    break;
                }
                base = again;
            }
            let mut expected = base.clone();
            loop {
                let out = edit(&base, n);
                std::fs::write(&tmp, &out).unwrap();
                let now = std::fs::read_to_string(&path).unwrap();
                if now != expected {
                    (base, expected) = (now.clone(), now);
                    continue;
                }
                exchange(&tmp, &path);
                let displaced = std::fs::read_to_string(&tmp).unwrap();
                if displaced == expected {
                    break;
                }
                // ralph wrote in between: the save is made again on top of its write.
                base = displaced;
                expected = out;
            }
            let _ = std::fs::remove_file(&tmp);
            std::thread::sleep(Duration::from_millis(10));
        }
        n
    })
}

/// A repository whose RALPH.md names `tasks`, with `file` holding `text`; every iteration
/// passes its task.
fn project(tasks: &str, file: &str, text: &str) -> Project {
    let p = Project::new(
        &format!("agent: 'true'\ndone_when:\n  - 'true'\ntasks:\n  {tasks}"),
        "{{ task.title }}\n",
    );
    std::fs::write(p.path().join(file), text).unwrap();
    std::fs::write(p.path().join(".gitignore"), "events.jsonl\n.person-save\n").unwrap();
    git_repo(p.path());
    p
}

/// Runs the loop through every task while a person saves `file`; returns the file at the end
/// and how many saves the person made.
fn race(p: &Project, file: &str, edit: fn(&str, usize) -> String) -> (String, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let writer = person(p.path().join(file), stop.clone(), edit);
    let out = p.run(&["run", "-n", "40"]);
    stop.store(true, Ordering::SeqCst);
    let saves = writer.join().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "stories_done");
    // Each task done once: none done again.
    let mut passed: Vec<String> = p
        .events_of("STORY_PASSED")
        .iter()
        .map(|e| e["story_id"].as_str().unwrap().to_owned())
        .collect();
    passed.sort();
    passed.dedup();
    assert_eq!(passed.len(), TASKS);
    assert_eq!(p.events_of("STORY_PASSED").len(), TASKS);
    (std::fs::read_to_string(p.path().join(file)).unwrap(), saves)
}

#[test]
fn a_persons_prd_json_saves_made_while_ralph_marks_are_all_kept() {
    let stories: Vec<Value> = (1..=TASKS)
        .map(|i| serde_json::json!({"id": format!("S{i}"), "title": format!("Story {i}"), "priority": i, "passes": false}))
        .collect();
    let prd = serde_json::json!({"userStories": stories, "personNotes": []});
    let p = project(
        "prd: prd.json",
        "prd.json",
        &serde_json::to_string_pretty(&prd).unwrap(),
    );
    let (text, saves) = race(&p, "prd.json", |text, n| {
        let mut prd: Value = serde_json::from_str(text).unwrap();
        prd["personNotes"].as_array_mut().unwrap().push(n.into());
        serde_json::to_string_pretty(&prd).unwrap()
    });
    let prd: Value = serde_json::from_str(&text).unwrap();
    let notes: Vec<u64> = prd["personNotes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    let lost: Vec<u64> = (1..=saves as u64).filter(|n| !notes.contains(n)).collect();
    assert!(
        lost.is_empty(),
        "{} of {saves} saves lost: {lost:?}",
        lost.len()
    );
    for story in prd["userStories"].as_array().unwrap() {
        assert_eq!(story["passes"], true, "{story}");
    }
}

#[test]
fn a_persons_checklist_saves_made_while_ralph_marks_are_all_kept() {
    let todo: String = (1..=TASKS).map(|i| format!("- [ ] Task {i}\n")).collect();
    let p = project("markdown: TODO.md", "TODO.md", &format!("{todo}\nNotes:\n"));
    let (text, saves) = race(&p, "TODO.md", |text, n| format!("{text}person {n}\n"));
    let lost: Vec<usize> = (1..=saves)
        .filter(|n| !text.lines().any(|l| l == format!("person {n}")))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {saves} saves lost: {lost:?}",
        lost.len()
    );
    assert_eq!(text.matches("- [x] Task").count(), TASKS, "{text}");
}

/// "One" keeps a copy of TODO.md as an editor's buffer; during "Two" the editor saves that
/// stale buffer, which undoes ralph's tick of "One".
const STALE_AGENT: &str = r#"title=$(sed -n 's/^TITLE=//p')
case "$title" in
One) cp TODO.md .buffer ;;
Two) cp .buffer .saving && mv .saving TODO.md ;;
esac
echo "$title" >> done.txt
git add done.txt && git commit -qm "$title"
"#;

#[test]
fn a_task_a_stale_save_shows_undone_again_is_ticked_again_not_done_again() {
    let p = Project::new(
        "agent: sh agent.sh\ndone_when:\n  - 'true'\ntasks:\n  markdown: TODO.md",
        "TITLE={{ task.title }}\n",
    );
    let dir = p.path();
    std::fs::write(dir.join("agent.sh"), STALE_AGENT).unwrap();
    std::fs::write(dir.join("TODO.md"), "- [ ] One\n- [ ] Two\n- [ ] Three\n").unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\n.buffer\n").unwrap();
    git_repo(dir);
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "stories_done");
    // Three iterations, one per task: "One" was not done again.
    assert_eq!(
        std::fs::read_to_string(dir.join("done.txt")).unwrap(),
        "One\nTwo\nThree\n"
    );
    assert_eq!(p.events_of("STORY_PASSED").len(), 3, "{:#?}", p.events());
    let said: Vec<String> = p
        .events_of("WARNING")
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        said.iter()
            .any(|m| m.contains("passed in this run") && m.contains("marks it passed again")),
        "{said:#?}"
    );
    let ticked = "- [x] One\n- [x] Two\n- [x] Three\n";
    assert_eq!(
        std::fs::read_to_string(dir.join("TODO.md")).unwrap(),
        ticked
    );
    // Two's pass commit holds both ticks: the tree is as clean as the run found it.
    assert_eq!(show(dir, "HEAD", "TODO.md").unwrap(), ticked.as_bytes());
    assert_eq!(common::git(dir, &["status", "--porcelain"]), "");
}
