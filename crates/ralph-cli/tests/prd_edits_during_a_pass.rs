//! A person's edit of prd.json while ralph marks a pass there is kept, and a prd.json that
//! does not parse is never written over: the pass waits for it, or is committed without it.

use crate::common;

use std::path::Path;
use std::process::Stdio;

use common::{code, send_signal, show};
use serde_json::Value;

use crate::work_is_never_lost::{READ_STORY, frontmatter, git_wrapper, passes, prd_json, repo};

/// A `git` (see [`git_wrapper`]) that, the first time a pass commit moves
/// `refs/ralph/checkpoint`, copies `edit` over the project's prd.json first: a person saving
/// the file while ralph commits.
fn git_editing_prd_during_the_pass_commit(bin: &Path, edit: &Path, prd: &Path) -> String {
    let once = bin.join("edited");
    git_wrapper(
        bin,
        &format!(
            "for a in \"$@\"; do\n  case \"$a\" in refs/ralph/checkpoint) [ -e '{once}' ] || {{ cp '{edit}' '{prd}'; : > '{once}'; }}; break;; esac\ndone",
            once = once.display(),
            edit = edit.display(),
            prd = prd.display(),
        ),
    )
}

/// `prd` as a person edits it: a title changed, a story and a field added.
fn persons_edit(prd: &str, new_story: bool) -> String {
    let mut value: Value = serde_json::from_str(prd).unwrap();
    value["owner"] = "kim".into();
    let stories = value["userStories"].as_array_mut().unwrap();
    stories[1]["title"] = "Checkout, as Kim wants it".into();
    if new_story {
        stories.push(serde_json::json!({
            "id": "US-003", "title": "Receipts", "priority": 3, "passes": false
        }));
    }
    serde_json::to_string_pretty(&value).unwrap() + "\n"
}

#[test]
fn a_persons_edit_of_prd_json_during_a_pass_is_kept() {
    let agent = format!("{READ_STORY}echo \"$story work\" > \"work-$story.txt\"\n");
    let prd = prd_json(&["US-001", "US-002"]);
    let p = repo(&frontmatter("none"), &agent, &prd);
    let bin = tempfile::tempdir().unwrap();
    let edit = bin.path().join("edit.json");
    let edited = persons_edit(&prd, true);
    std::fs::write(&edit, &edited).unwrap();
    let path_env =
        git_editing_prd_during_the_pass_commit(bin.path(), &edit, &p.path().join("prd.json"));

    let out = p
        .ralph(&["run", "-n", "1"])
        .env("PATH", &path_env)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert_eq!(p.events_of("STORY_PASSED").len(), 1);
    assert!(
        bin.path().join("edited").exists(),
        "the person's edit happened"
    );
    // The person's file, byte for byte, with ralph's one change: US-001 passes.
    let written = std::fs::read_to_string(p.path().join("prd.json")).unwrap();
    assert_eq!(
        written,
        edited.replacen("\"passes\": false", "\"passes\": true", 1)
    );
    let committed: Value =
        serde_json::from_slice(&show(p.path(), "HEAD", "prd.json").unwrap()).unwrap();
    assert_eq!(passes(&committed, "US-001"), true);
}

#[test]
fn a_prd_json_that_does_not_parse_is_not_written_and_the_pass_is_written_once_it_does() {
    const BROKEN: &str = "{\"userStories\": [\n";
    for resume in [false, true] {
        let agent = format!("{READ_STORY}echo \"$story work\" > \"work-$story.txt\"\n");
        let prd = prd_json(&["US-001", "US-002"]);
        let p = repo(&format!("{}\ndelay: 1h", frontmatter("none")), &agent, &prd);
        let prd_path = p.path().join("prd.json");
        let bin = tempfile::tempdir().unwrap();
        let broken = bin.path().join("broken.json");
        std::fs::write(&broken, BROKEN).unwrap();
        let path_env = git_editing_prd_during_the_pass_commit(bin.path(), &broken, &prd_path);

        let mut child = p
            .ralph(&["run", "-n", "2"])
            .env("PATH", &path_env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Waiting out `delay` after US-001 passed.
        p.wait_for("WAIT_STARTED", 1);
        assert_eq!(p.events_of("STORY_PASSED").len(), 1, "resume {resume}");
        assert_eq!(
            std::fs::read_to_string(&prd_path).unwrap(),
            BROKEN,
            "resume {resume}: not written while it does not parse"
        );
        let warned = p.events_of("WARNING").iter().any(|w| {
            w["message"]
                .as_str()
                .is_some_and(|m| m.contains("prd.json") && m.contains("\"US-001 passes\""))
        });
        assert!(warned, "resume {resume}: {:#?}", p.events());

        // The person mends the file.
        let edited = persons_edit(&prd, false);
        std::fs::write(&prd_path, &edited).unwrap();
        if resume {
            send_signal(child.id(), libc::SIGTERM);
            assert_eq!(child.wait().unwrap().code(), Some(143));
            // `--now`: the rest of the stopped run's wait is not waited out.
            let out = p.run(&["run", "--now", "-n", "2", "--resume"]);
            assert_eq!(code(&out), 0, "{}", common::stderr(&out));
        } else {
            // One Ctrl+C skips the wait; the next step writes the pass.
            send_signal(child.id(), libc::SIGINT);
            assert_eq!(child.wait().unwrap().code(), Some(0));
        }
        assert_eq!(p.run_ended()["reason"], "stories_done", "resume {resume}");
        assert_eq!(
            std::fs::read_to_string(&prd_path).unwrap(),
            edited.replace("\"passes\": false", "\"passes\": true"),
            "resume {resume}"
        );
    }
}

#[test]
fn an_agent_that_leaves_prd_json_unparsable_gets_its_pass_committed_and_the_file_left_as_it_is() {
    const BROKEN: &str = "{\"userStories\": [\n";
    let agent = format!(
        "{READ_STORY}echo \"$story work\" > \"work-$story.txt\"\nprintf '%s' '{BROKEN}' > prd.json\n"
    );
    let p = repo(
        &frontmatter("none"),
        &agent,
        &prd_json(&["US-001", "US-002"]),
    );
    let out = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&out), 1, "{}", common::stderr(&out));
    assert_eq!(p.events_of("STORY_PASSED").len(), 1);
    let warned = p.events_of("WARNING").iter().any(|w| {
        w["message"]
            .as_str()
            .is_some_and(|m| m.contains("prd.json") && m.contains("\"US-001 passes\""))
    });
    assert!(warned, "{:#?}", p.events());
    assert_eq!(
        std::fs::read_to_string(p.path().join("prd.json")).unwrap(),
        BROKEN,
        "not written while it does not parse"
    );
    // The pass commit holds the file as ralph last read it, with the pass.
    let committed: Value =
        serde_json::from_slice(&show(p.path(), "HEAD", "prd.json").unwrap()).unwrap();
    assert_eq!(passes(&committed, "US-001"), true);
    assert_eq!(passes(&committed, "US-002"), false);
    assert_eq!(
        show(p.path(), "HEAD", "work-US-001.txt").unwrap(),
        b"US-001 work\n"
    );
    // The run cannot go on without a readable prd.json, and says so.
    assert_eq!(p.run_ended()["reason"], "escalation_failed");
}
