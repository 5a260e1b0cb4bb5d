//! What a person sees of `ralph run --parallel`: lines that fit 100 columns and name a task by
//! its title (its id only in the command that takes it), counts of what is left to do in the
//! list's words, and a cost shown as unknown when no agent reports one.

use crate::common;

use common::parallel::{TODO_AGENT, todo_repo};
use common::{code, stderr, stdout};

const SIGNUP: &str = "Write the signup form with email validation and a friendly error message";

/// The columns every line must fit.
const WIDTH: usize = 100;

/// The lines a terminal was left with: the live block's erasures and carriage returns taken out.
fn screen_lines(screen: &str) -> Vec<String> {
    screen
        .replace("\x1b[1A\x1b[2K", "")
        .replace('\r', "")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn fit(lines: &[impl AsRef<str>]) {
    for line in lines {
        let line = line.as_ref();
        assert!(
            line.chars().count() <= WIDTH,
            "{} columns: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn piped_lines_fit_100_columns_name_tasks_by_title_and_count_only_what_is_left() {
    let p = todo_repo(
        TODO_AGENT,
        &format!("- [x] Old one\n- [ ] {SIGNUP}\n- [ ] Build the cart\n"),
    );
    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    fit(&lines);
    assert_eq!(
        lines.first().copied(),
        Some("ralph: running 2 tasks on main, 2 at a time"),
        "the done item is not counted: {text}"
    );

    let started = p.events_of("LANE_STARTED");
    let signup = started.iter().find(|e| e["title"] == SIGNUP).unwrap();
    let (id, lane_run) = (
        signup["task_id"].as_str().unwrap(),
        signup["lane_run_id"].as_str().unwrap(),
    );
    // The title, shortened to leave room for the command a person types, which takes the
    // task's id (not the lane's run id, which names nothing they know).
    let start = lines
        .iter()
        .find(|l| l.starts_with("▶ Write the signup form"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        start.ends_with(&format!("… (log: ralph logs {id} -f)")),
        "{start}"
    );
    assert!(!text.contains(lane_run), "{text}");
    // Elsewhere the title alone: the id is a slug of it.
    for line in lines.iter().filter(|l| !l.starts_with('▶')) {
        assert!(!line.contains(id), "{line}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("✓ Build the cart landed (")),
        "{text}"
    );
    // A shell agent reports no cost: not "$0.00".
    assert_eq!(
        lines.last().copied(),
        Some("ralph: every task passes: 2 landed, 0 blocked, 0 left · cost unknown"),
        "{text}"
    );
    assert!(!text.contains('$'), "{text}");
}

#[test]
fn on_a_terminal_one_task_is_one_task_and_no_cost_is_shown_as_dollars() {
    let p = todo_repo(TODO_AGENT, &format!("- [ ] {SIGNUP}\n"));
    let (screen, code) = common::run_on_terminal(&p, &["--parallel", "2"], &[]);
    assert_eq!(code, 0, "{screen}");
    let lines = screen_lines(&screen);
    fit(&lines);
    assert!(
        lines.contains(&"ralph: running 1 task on main, 2 at a time".to_owned()),
        "{screen}"
    );
    // The live line: the title cut to its column, then the lane's iteration.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  Write the signup form with email va… iteration 1")),
        "{screen}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "landed 1 · blocked 0 · running 0 · queued 0 · waiting 0"),
        "{screen}"
    );
    assert!(!screen.contains('$'), "no `$0.00`, no `$-0.00`: {screen}");
}

/// A person follows a 4-lane run in an 80-column terminal: no line is wider, so the live lines
/// never wrap, and each is erased whole when the next frame is drawn.
#[test]
fn a_four_lane_run_fits_an_80_column_terminal() {
    let list: String = (1..=4)
        .map(|n| format!("- [ ] {SIGNUP} number {n}\n"))
        .collect();
    let p = todo_repo(TODO_AGENT, &list);
    let (screen, code) = common::run_on_terminal_of(&p, 80, &["--parallel", "4"], &[]);
    assert_eq!(code, 0, "{screen}");
    for line in screen_lines(&screen) {
        assert!(
            line.chars().count() < 80,
            "{} columns: {line}\n{screen}",
            line.chars().count()
        );
    }
    assert!(screen.contains("landed 4"), "{screen}");
}

#[test]
fn a_block_says_why_in_words_and_the_list_holds_no_local_path() {
    // The check fails the same way each time on the work of "Fail"; "Refuse" is refused.
    let p = todo_repo(
        TODO_AGENT,
        "- [ ] Fail at the types\n- [ ] Refuse this\n- [ ] Build the cart\n",
    );
    let dir = p.path();
    std::fs::write(
        dir.join("check.sh"),
        "if ls fail-*.done >/dev/null 2>&1; then\n\
         echo '   Compiling shop v0.1.0'\necho 'error[E0308]: mismatched types'\n\
         echo ' --> src/lib.rs:3:5'\nexit 1\nfi\nls *.done >/dev/null 2>&1\n",
    )
    .unwrap();
    let ralph = std::fs::read_to_string(dir.join("RALPH.md"))
        .unwrap()
        .replace("'ls *.done >/dev/null 2>&1'", "sh check.sh");
    std::fs::write(dir.join("RALPH.md"), ralph).unwrap();
    common::commit_all(dir, "a check that says its error");

    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    fit(&text.lines().collect::<Vec<_>>());
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let types = "check `sh check.sh` failed 3 times in a row the same way: \
                 error[E0308]: mismatched types";
    assert!(
        words.contains(&format!("✗ Fail at the types blocked: {types} (details: ")),
        "{text}"
    );
    assert!(
        words.contains(
            "✗ Refuse this blocked: the agent reported it is blocked: not mine (details: "
        ),
        "{text}"
    );

    let todo = String::from_utf8(common::show(dir, "main", "TODO.md").unwrap()).unwrap();
    let lines: Vec<&str> = todo.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "- [ ] Fail at the types <!-- ralph: blocked: {types}"
        )),
        "{todo}"
    );
    // Where the work and the details are, as a ref name and a path in the repository.
    for line in &lines[..2] {
        assert!(line.contains("refs/ralph/attempts/"), "{todo}");
        assert!(line.contains("(details: .ralph/parallel/lanes/"), "{todo}");
    }
    let top = std::fs::canonicalize(dir).unwrap();
    for path in [dir, top.as_path()] {
        assert!(!todo.contains(&path.display().to_string()), "{todo}");
    }
    assert!(!todo.contains(" /"), "no absolute path: {todo}");
}

#[test]
fn a_checklist_task_sent_back_by_the_queue_is_told_to_do_the_task_again_not_a_story() {
    let marks = tempfile::tempdir().unwrap();
    // Each task's work passes alone; two together fail: the second to land goes back.
    let agent = format!(
        "prompt=$(cat)\nprintf '%s\\n' \"$prompt\" >> {m}/prompts\n\
         id=$(printf '%s\\n' \"$prompt\" | sed -n 's/^ID=//p')\necho work > \"$id.done\"\n",
        m = marks.path().display()
    );
    let p = todo_repo(&agent, "- [ ] Build the cart\n- [ ] Add checkout\n");
    let dir = p.path();
    std::fs::write(
        dir.join("check.sh"),
        "[ \"$(ls *.done 2>/dev/null | wc -l)\" -eq 1 ] || { echo 'error: two at once'; exit 1; }\n",
    )
    .unwrap();
    let ralph = std::fs::read_to_string(dir.join("RALPH.md"))
        .unwrap()
        .replace("'ls *.done >/dev/null 2>&1'", "sh check.sh");
    std::fs::write(dir.join("RALPH.md"), ralph).unwrap();
    common::commit_all(dir, "one task at a time passes");

    let out = p.run(&["run", "--parallel", "2"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        !p.events_of("MERGE_CHECK_FAILED").is_empty(),
        "{:#?}",
        p.events()
    );
    let prompts = std::fs::read_to_string(marks.path().join("prompts")).unwrap();
    assert!(
        prompts.contains("## Your earlier work on this task failed its checks once merged")
            && prompts.contains("Do the task again on it."),
        "{prompts}"
    );
    assert!(!prompts.to_lowercase().contains("story"), "{prompts}");
}
