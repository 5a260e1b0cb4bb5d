//! Everyday use: `ralph init`, `ralph run --dry-run`, `ralph check`'s warnings, shell
//! completions, and the documentation's example files.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Project, code, stderr, stdout};

fn ralph(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ralph"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("ralph runs")
}

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

/// `ralph check` warning lines.
fn warnings(output: &std::process::Output) -> Vec<String> {
    stderr(output)
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn init_writes_a_valid_template_with_no_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let out = ralph(dir.path(), &["init", "project"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("wrote project/RALPH.md"));
    let text = std::fs::read_to_string(dir.path().join("project/RALPH.md")).unwrap();
    assert!(text.contains("<!-- ralph:state idle -->"));
    assert!(text.contains("done_when"));

    let check = ralph(dir.path(), &["check", "project"]);
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    // Claude Code missing on this machine is the machine's business, not the template's.
    let w: Vec<String> = warnings(&check)
        .into_iter()
        .filter(|w| !w.contains("`claude` is not found on PATH"))
        .collect();
    assert_eq!(w, Vec::<String>::new());
}

#[test]
fn init_refuses_to_overwrite_and_force_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let ralph_md = dir.path().join("RALPH.md");
    std::fs::write(&ralph_md, "mine").unwrap();

    let out = ralph(dir.path(), &["init"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("RALPH.md: already exists (use --force to replace it)"));
    assert_eq!(std::fs::read_to_string(&ralph_md).unwrap(), "mine");

    let out = ralph(dir.path(), &["init", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&ralph_md)
            .unwrap()
            .starts_with("---\n")
    );
    // Nothing but the file itself is left behind (the temporary file was renamed).
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);
}

#[test]
fn init_force_writes_into_a_fifo_and_leaves_it_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("RALPH.md");
    let reader = common::fifo_with_reader(&fifo);
    let out = ralph(dir.path(), &["init", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(common::is_fifo(&fifo), "the FIFO was replaced");
    let text = String::from_utf8(reader.join().unwrap()).unwrap();
    assert!(text.starts_with("---\n"), "{text}");
}

#[test]
fn init_in_a_folder_named_run_keeps_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("run")).unwrap();
    let ralph_md = dir.path().join("run/RALPH.md");
    std::fs::write(&ralph_md, "mine").unwrap();
    let out = ralph(dir.path(), &["init", "run", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&ralph_md)
            .unwrap()
            .starts_with("---\n")
    );
}

#[test]
fn init_prd_writes_story_mode_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = ralph(dir.path(), &["init", "--prd"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let prd = std::fs::read_to_string(dir.path().join("prd.json")).unwrap();
    let prd: serde_json::Value = serde_json::from_str(&prd).expect("prd.json is JSON");
    assert_eq!(prd["userStories"][0]["passes"], false);
    assert!(dir.path().join("progress.txt").is_file());
    let text = std::fs::read_to_string(dir.path().join("RALPH.md")).unwrap();
    assert!(text.contains("prd: prd.json"));

    // Valid; outside git, where its revert cannot work, the run would refuse: check says so.
    let check = ralph(dir.path(), &["check"]);
    assert_eq!(code(&check), 1, "{}", stderr(&check));
    assert!(stdout(&check).contains("prd prd.json"));
    assert!(
        stderr(&check).contains("not a git repository"),
        "{}",
        stderr(&check)
    );
    common::git_repo(dir.path());
    let check = ralph(dir.path(), &["check"]);
    assert_eq!(code(&check), 0, "{}", stderr(&check));

    // A second run refuses before writing anything.
    std::fs::remove_file(dir.path().join("RALPH.md")).unwrap();
    let again = ralph(dir.path(), &["init", "--prd"]);
    assert_eq!(code(&again), 2);
    assert!(!dir.path().join("RALPH.md").exists());
}

#[test]
fn dry_run_prints_the_prompt_and_the_agent_line_and_runs_no_agent() {
    let project = Project::new(
        "agent: sh -c 'touch agent-ran' --label 'nightly run'\n\
         commands:\n  - name: greeting\n    run: echo hello from a command\n\
         args: [focus]",
        "Focus: {{ args.focus }}\nIteration {{ ralph.iteration }}.\n{{ commands.greeting }}\n",
    );
    let out = project.run(&["run", "--dry-run", ".", "--focus", "parser"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Focus: parser\nIteration 1.\nhello from a command\n"
    );
    let err = stderr(&out);
    assert!(
        err.contains("dry run: agent: sh -c 'touch agent-ran' --label 'nightly run'\n"),
        "{err}"
    );
    assert!(err.contains("to the agent's stdin"), "{err}");
    assert!(err.contains("command greeting ran"), "{err}");
    assert!(!project.path().join("agent-ran").exists(), "the agent ran");
    assert!(!project.path().join(".ralph").exists(), "logs were written");
}

#[test]
fn dry_run_shows_the_prompt_placed_in_the_command_line() {
    let project = Project::new("agent: my-agent --prompt {prompt}", "Do the thing.");
    let out = project.run(&["run", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("dry run: agent: my-agent --prompt 'Do the thing.'\n"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("in the command line"));
}

#[test]
fn dry_run_shows_the_arguments_a_claude_agent_gets() {
    let project = Project::new("agent: claude -p", "Work.");
    let out = project.run(&["run", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("dry run: agent: claude -p --output-format stream-json --verbose\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn dry_run_in_story_mode_shows_the_next_story_and_touches_nothing() {
    // Not a git repository: a dry run needs none, though `revert` is on.
    let project = Project::new(
        "agent: my-agent\nescalation:\n  prd: prd.json",
        "{{ story.id }}: {{ story.title }} ({{ ralph.iteration }}/{{ ralph.max_iterations }})\n",
    );
    let prd = r#"{
  "userStories": [
    {"id": "US-001", "title": "Sign in", "priority": 1, "passes": true},
    {"id": "US-002", "title": "Sign out", "priority": 2, "passes": false}
  ]
}
"#;
    let prd_path = project.path().join("prd.json");
    std::fs::write(&prd_path, prd).unwrap();
    let out = project.run(&["run", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "US-002: Sign out (1/10)\n");
    assert!(
        stderr(&out).contains("dry run: iteration 1 works on US-002\n"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&prd_path).unwrap(), prd);
    assert!(!project.path().join("progress.txt").exists());

    std::fs::write(&prd_path, prd.replace("false", "true")).unwrap();
    let out = project.run(&["run", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("no iteration would run: every story passes (stories_done)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_warns_about_a_placeholder_that_names_nothing() {
    let project = Project::new("agent: cat", "{{ commands.tsts }}");
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 0);
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("warning: RALPH.md:4:1: commands.tsts:"),
        "{w:?}"
    );
}

#[test]
fn check_warns_when_idle_is_on_but_the_prompt_never_shows_the_marker() {
    let project = Project::new("agent: cat\nidle:\n  delay: 5s", "Say when you are done.");
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 0);
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("warning: RALPH.md:3:1: idle: idle handling is on, but the prompt"),
        "{w:?}"
    );

    let fixed = Project::new(
        "agent: cat\nidle:\n  delay: 5s",
        "When done, end with <!-- ralph:state idle -->",
    );
    assert_eq!(warnings(&fixed.run(&["check"])), Vec::<String>::new());
}

#[test]
fn check_warns_about_done_when_programs_that_cannot_be_found() {
    let project = Project::new(
        "agent: cat\ndone_when:\n  - no-such-checker-xyz --all\n  - ./missing.sh\n  \
         - test -f done\n  - FOO=1 sh -c 'exit 0'",
        "Work.",
    );
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 0);
    let w = warnings(&out);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with(
            "warning: RALPH.md:4:5: done_when[0]: `no-such-checker-xyz` is not found on PATH"
        ),
        "{w:?}"
    );
    assert!(
        w[1].starts_with("warning: RALPH.md:5:5: done_when[1]: `./missing.sh` does not exist"),
        "{w:?}"
    );
}

#[test]
fn check_warns_about_an_agent_that_cannot_be_found() {
    let typo = Project::new("agent: cluade-xyz -p", "Work.");
    let out = typo.run(&["check"]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        warnings(&out),
        [
            "warning: RALPH.md:2:8: agent: `cluade-xyz` is not found on PATH; every iteration \
             would fail to start the agent"
        ]
    );

    let script = Project::new("agent: ./agent.sh --fast", "Work.");
    let w = warnings(&script.run(&["check"]));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("warning: RALPH.md:2:8: agent: `./agent.sh` does not exist"),
        "{w:?}"
    );
    std::fs::write(script.path().join("agent.sh"), "").unwrap();
    assert_eq!(warnings(&script.run(&["check"])), Vec::<String>::new());

    let found = Project::new("agent: sh -c 'cat'", "Work.");
    assert_eq!(warnings(&found.run(&["check"])), Vec::<String>::new());
}

#[test]
fn check_refuses_revert_outside_a_git_repository_as_the_run_would() {
    let project = Project::new("agent: cat\nescalation:\n  revert: true", "Work.");
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 1);
    let said = stderr(&out);
    let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("error: RALPH.md:4:3: escalation.revert: "),
        "{errors:?}"
    );
    assert!(errors[0].contains("not a git repository"), "{errors:?}");
    assert!(
        errors[0].ends_with("; `ralph run` would refuse to start"),
        "{errors:?}"
    );

    let off = Project::new("agent: cat\nescalation:\n  revert: false", "Work.");
    let out = off.run(&["check"]);
    assert_eq!((code(&out), warnings(&out)), (0, Vec::<String>::new()));

    common::git_repo(project.path());
    let out = project.run(&["check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn completions_are_printed_for_every_shell() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = ralph(dir.path(), &["completions", shell]);
        assert_eq!(code(&out), 0, "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains("ralph"), "{shell}");
        assert!(script.contains("dry-run"), "{shell}");
    }
}

#[test]
fn every_docs_example_passes_check() {
    let examples = docs().join("examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        // From a git checkout, as a reader would run them (story mode reverts through git).
        let checkout = tempfile::tempdir().unwrap();
        // Story mode reads prd.json: the one `ralph init --prd` writes.
        assert_eq!(code(&ralph(checkout.path(), &["init", "--prd"])), 0);
        // A checklist reads TODO.md.
        std::fs::write(checkout.path().join("TODO.md"), "- [ ] A first task\n").unwrap();
        common::git_repo(checkout.path());
        let out = ralph(checkout.path(), &["check", path.to_str().unwrap()]);
        assert_eq!(code(&out), 0, "{}: {}", path.display(), stderr(&out));
        // A missing tool on this machine (cargo, uv) is the machine's business, not the file's.
        let w: Vec<String> = warnings(&out)
            .into_iter()
            .filter(|w| !w.contains("is not found on PATH"))
            .collect();
        assert!(w.is_empty(), "{}: {w:?}", path.display());
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} examples found");
}

/// A RALPH.md shown in a guide is one of the example files, verbatim, so what the guides show
/// is what the test above checks.
#[test]
fn ralph_md_blocks_in_the_guides_are_example_files() {
    let examples: Vec<String> = std::fs::read_dir(docs().join("examples"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    for guide in ["getting-started.md", "comparison.md", "embedding.md"] {
        let text = std::fs::read_to_string(docs().join(guide)).unwrap();
        let mut blocks = Vec::new();
        let mut current: Option<String> = None;
        for line in text.lines() {
            match &mut current {
                None if line == "```markdown" => current = Some(String::new()),
                Some(block) if line == "```" => {
                    blocks.push(std::mem::take(block));
                    current = None;
                }
                Some(block) => {
                    block.push_str(line);
                    block.push('\n');
                }
                None => {}
            }
        }
        for block in blocks.iter().filter(|b| b.starts_with("---\n")) {
            assert!(
                examples.contains(block),
                "{guide}: this RALPH.md is not a file of docs/examples:\n{block}"
            );
        }
    }
}

/// The story-mode RALPH.md the guide shows is what `ralph init --prd` writes, without its
/// comments: the guide cannot drift from the template.
#[test]
fn the_guides_story_mode_file_is_the_init_template_without_comments() {
    let dir = tempfile::tempdir().unwrap();
    let out = ralph(dir.path(), &["init", "--prd"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let template = std::fs::read_to_string(dir.path().join("RALPH.md")).unwrap();
    let mut stripped = String::new();
    let mut fences = 0;
    for line in template.lines() {
        let trimmed = line.trim();
        if trimmed == "---" {
            fences += 1;
        }
        let yaml_comment = fences == 1 && (trimmed.is_empty() || trimmed.starts_with('#'));
        let note = fences == 2
            && trimmed.starts_with("<!--")
            && trimmed.ends_with("-->")
            && !trimmed
                .trim_start_matches("<!--")
                .trim()
                .starts_with("ralph:");
        if !yaml_comment && !note {
            stripped.push_str(line);
            stripped.push('\n');
        }
    }
    let example = std::fs::read_to_string(docs().join("examples/story-mode.md")).unwrap();
    assert_eq!(example, stripped);
}

/// `--dry-run` says which commands failed or timed out: their output fills the prompt all the
/// same, and a typo in a command should not pass for a result.
#[test]
fn dry_run_says_which_commands_failed_or_timed_out() {
    let project = Project::new(
        "agent: cat\ncommands:\n  - name: ok\n    run: echo fine\n  - name: broken\n    \
         run: echo oops; exit 3\n  - name: slow\n    run: sleep 5\n    timeout: 200ms",
        "{{ commands.ok }} {{ commands.broken }} {{ commands.slow }}",
    );
    let out = project.run(&["run", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("dry run: command ok ran (5 bytes of output)\n"),
        "{err}"
    );
    // Worded as everywhere else a process's end is.
    let exit_3 = ralph_engine::exit_status(Some(3), None);
    assert!(
        err.contains(&format!(
            "dry run: command broken failed: {exit_3} (5 bytes of output)\n"
        )),
        "{err}"
    );
    assert!(
        err.contains("dry run: command slow timed out (0 bytes of output)\n"),
        "{err}"
    );
}

/// `--dry-run` names the signal that killed a command, in the words ralph uses everywhere.
#[test]
fn dry_run_names_the_signal_that_killed_a_command() {
    let project = Project::new(
        "agent: cat\ncommands:\n  - name: doomed\n    run: echo bye; kill -9 $$",
        "{{ commands.doomed }}",
    );
    let out = project.run(&["run", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let killed = ralph_engine::exit_status(None, Some(libc::SIGKILL));
    assert!(
        err.contains(&format!(
            "dry run: command doomed failed: {killed} (4 bytes of output)\n"
        )),
        "{err}"
    );
}
