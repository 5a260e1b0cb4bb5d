//! Story mode on a Markdown checklist (`tasks: {markdown: TODO.md}`): the breaker, a revert
//! that saves the abandoned work, blocking, resume, a person's question and answer in the
//! file, and every byte of the file a person wrote kept.

use crate::common;

use std::time::{Duration, Instant};

use common::{Project, code, git, send_signal, show, stderr, stdout, todo_repo};
use serde_json::Value;

/// `ralph tasks --json`'s tasks.
fn tasks(p: &Project) -> Vec<Value> {
    let out = p.run(&["tasks", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed["version"], 1);
    assert_eq!(listed["source"], "markdown");
    assert_eq!(listed["location"], "TODO.md");
    listed["tasks"].as_array().unwrap().clone()
}

fn id_of(tasks: &[Value], title: &str) -> String {
    tasks
        .iter()
        .find(|t| t["title"] == title)
        .unwrap_or_else(|| panic!("no task {title:?} in {tasks:#?}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// CRLF, a tab, trailing spaces, prose, a done item, a nested list, a code fence.
const TODO: &str = "# Shop\r\n\r\nSome prose  \r\n\r\n- [ ] Build the cart\r\n  \tuse a map  \r\n  - a sub-item\r\n- [x] Old thing\r\n* [ ] Add checkout\r\n\r\n```\r\n- [ ] not a task\r\n```\r\ntrailing prose\t\r\n";

const BODY: &str = "TITLE={{ task.title }}\nID={{ task.id }}\nBODY<<\n{{ task.body }}\n>>\n";

/// "Build the cart" fails the check with the same error every time, committing its work;
/// "Add checkout" passes, and a person adds a task to TODO.md meanwhile; any other task the
/// agent refuses as blocked.
const AGENT: &str = r#"prompt=$(cat)
i=$RALPH_ITERATION
mkdir -p prompts
printf '%s\n' "$prompt" > "prompts/$i.txt"
title=$(printf '%s\n' "$prompt" | sed -n 's/^TITLE=//p')
case "$title" in
"Build the cart")
    mkdir -p work
    echo "try $i" > "work/cart-$i.txt"
    printf 'error[E0308]: mismatched types\n  --> src/lib.rs:%d:5\n' $((10 + i)) > error.txt
    git add work error.txt && git commit -qm "cart $i"
    ;;
"Add checkout")
    echo done > ok
    git add ok && git commit -qm checkout
    printf -- '- [ ] Added by a person\r\n' >> TODO.md
    ;;
*)
    echo '<!-- ralph:state blocked reason="not mine" -->'
    ;;
esac
"#;

#[test]
fn a_checklist_runs_with_the_breaker_and_a_saved_revert_and_keeps_every_byte() {
    let p = todo_repo(
        "agent: sh agent.sh\ndone_when:\n  - 'test -f ok || { cat error.txt 2>/dev/null; exit 1; }'\nconvergence: {backoff: 10ms, max_backoff: 10ms}\ntasks:\n  markdown: TODO.md",
        BODY,
        AGENT,
        TODO,
    );
    let dir = p.path();
    let listed = tasks(&p);
    let order: Vec<(&str, &str, Value)> = listed
        .iter()
        .map(|t| {
            (
                t["title"].as_str().unwrap(),
                t["state"].as_str().unwrap(),
                t["order"].clone(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("Build the cart", "pending", Value::from(1)),
            ("Add checkout", "pending", Value::from(2)),
            ("Old thing", "passed", Value::Null),
        ]
    );
    let cart = id_of(&listed, "Build the cart");
    let checkout = id_of(&listed, "Add checkout");

    let out = p.run(&["run"]);
    assert_eq!(
        p.run_ended()["reason"],
        "stories_blocked",
        "{}",
        stderr(&out)
    );

    // The cart: three attempts with the same error, saved, reverted, blocked.
    let tripped = &p.events_of("CIRCUIT_TRIPPED")[0];
    assert_eq!(tripped["story_id"], cart.as_str());
    assert_eq!(tripped["reason"], "same_error");
    let saved = format!("refs/ralph/attempts/{cart}/1");
    assert_eq!(p.events_of("REVERTED")[0]["saved_ref"], saved.as_str());
    for i in 1..=3 {
        assert_eq!(
            show(dir, &saved, &format!("work/cart-{i}.txt")).unwrap(),
            format!("try {i}\n").into_bytes()
        );
    }
    assert!(!dir.join("work").exists(), "the revert removed the work");

    // Its prompt had its title, id and body (sub-lines, dedented, trailing spaces kept).
    let first = std::fs::read_to_string(dir.join("prompts/1.txt")).unwrap();
    assert!(
        first.contains(&format!(
            "TITLE=Build the cart\nID={cart}\nBODY<<\n\tuse a map  \n- a sub-item\n>>"
        )),
        "{first}"
    );

    // Checkout passed in a commit that holds TODO.md ticked.
    let passed = p.events_of("STORY_PASSED");
    assert_eq!(passed[0]["story_id"], checkout.as_str());
    let commit = passed[0]["checkpoint"].as_str().unwrap();
    let committed = String::from_utf8(show(dir, commit, "TODO.md").unwrap()).unwrap();
    assert!(committed.contains("* [x] Add checkout\r\n"), "{committed}");

    // The file: exactly `[ ]` -> `[x]` on checkout's line, a blocked comment on the cart's
    // line and on the task a person added meanwhile (the agent refused it); every other byte
    // as it was.
    let now = std::fs::read_to_string(dir.join("TODO.md")).unwrap();
    // The reason in words: the check and its error's line, not the signature's hash.
    let cart_comment = format!(
        " <!-- ralph: blocked: check `test -f ok || {{ cat error.txt 2>/dev/null; exit 1; }}` \
         failed 3 times in a row the same way: error[E0308]: mismatched types; abandoned work: \
         git checkout {saved} -->"
    );
    let expected_start = TODO
        .replacen(
            "- [ ] Build the cart\r\n",
            &format!("- [ ] Build the cart{cart_comment}\r\n"),
            1,
        )
        .replacen("* [ ] Add checkout", "* [x] Add checkout", 1)
        + "- [ ] Added by a person <!-- ralph: blocked: ";
    assert!(now.starts_with(&expected_start), "{now:?}");
    assert!(now.ends_with(" -->\r\n"), "{now:?}");
    assert!(now.contains("not mine"), "{now:?}");

    // The done item was never worked on.
    let worked: Vec<Value> = p
        .events_of("STORY_STARTED")
        .iter()
        .map(|e| e["title"].clone())
        .collect();
    assert!(!worked.contains(&Value::from("Old thing")), "{worked:?}");

    // `ralph tasks` agrees.
    let states: Vec<(String, String)> = tasks(&p)
        .iter()
        .map(|t| {
            (
                t["title"].as_str().unwrap().to_owned(),
                t["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(states.contains(&("Add checkout".to_owned(), "passed".to_owned())));
    assert!(states.contains(&("Build the cart".to_owned(), "blocked".to_owned())));
    assert!(states.contains(&("Added by a person".to_owned(), "blocked".to_owned())));
}

/// Asks once, then passes when its prompt has the answer.
const ASKING_AGENT: &str = r#"prompt=$(cat)
case "$prompt" in
*"ANSWER=Use axum."*)
    echo web > web.txt
    git add web.txt && git commit -qm web
    echo '<!-- ralph:state done -->'
    ;;
*)
    echo '<!-- ralph:state ask question="Which framework?" -->'
    ;;
esac
"#;

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 30s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_question_in_the_file_waits_for_a_persons_answer_across_a_resume() {
    let todo = "- [ ] Build the web app\n  with a server\n- [x] Earlier\n";
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md",
        "TITLE={{ task.title }}\nQUESTION={{ task.question }}\nANSWER={{ task.answer }}\n",
        ASKING_AGENT,
        todo,
    );
    let dir = p.path();
    let mut child = p.spawn(&["run"]);
    wait_until("a task wait", || {
        p.events_of("WAIT_STARTED")
            .iter()
            .any(|w| w["reason"] == "task")
    });
    let wait = p
        .events_of("WAIT_STARTED")
        .into_iter()
        .find(|w| w["reason"] == "task")
        .unwrap();
    assert_eq!(wait["why"], "waiting for an answer in TODO.md:3");
    assert_eq!(
        std::fs::read_to_string(dir.join("TODO.md")).unwrap(),
        "- [ ] Build the web app\n  with a server\n  <!-- ralph: question: Which framework? -->\n- [x] Earlier\n"
    );
    // Nothing says the state is unhandled: story mode handles `ask`.
    assert!(
        p.events_of("WARNING").is_empty(),
        "{:#?}",
        p.events_of("WARNING")
    );
    // `ralph status` says what the run waits for.
    wait_until("status to say the wait", || {
        stdout(&p.run(&["status"])).contains("waiting for an answer in TODO.md:3")
    });

    // Stopped while it waits, answered meanwhile, resumed: the answer reaches the prompt.
    send_signal(child.id(), libc::SIGTERM);
    let status = child.wait().unwrap();
    assert!(!status.success());
    std::fs::write(
        dir.join("TODO.md"),
        "- [ ] Build the web app\n  with a server\n  <!-- ralph: question: Which framework? -->\n  Use axum.\n- [x] Earlier\n",
    )
    .unwrap();
    let out = p.run(&["run", "--resume", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        p.events_of("RUN_ENDED").last().unwrap()["reason"],
        "stories_done"
    );
    let text = std::fs::read_to_string(dir.join("TODO.md")).unwrap();
    assert!(text.starts_with("- [x] Build the web app\n"), "{text:?}");
    assert_eq!(show(dir, "HEAD", "web.txt").unwrap(), b"web\n");
}

#[test]
fn check_shows_the_tasks_in_order_and_tasks_with_escalation_prd_is_refused() {
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md",
        BODY,
        AGENT,
        TODO,
    );
    let out = p.run(&["check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("tasks           markdown TODO.md · 2 to do, 1 done, 0 blocked"),
        "{text}"
    );
    let cart = text.find("1. build-the-cart-").expect("the cart first");
    let checkout = text.find("2. add-checkout-").expect("checkout second");
    assert!(cart < checkout, "{text}");

    let both = Project::new(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\nescalation:\n  prd: prd.json",
        "x",
    );
    let out = both.run(&["check"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(
            "RALPH.md:3:1: tasks: `tasks` and `escalation.prd` (prd.json) both name the task \
             list; keep one"
        ),
        "{}",
        stderr(&out)
    );
    let wrong = Project::new("agent: sh agent.sh\ntasks:\n  markdwn: TODO.md", "x");
    let out = wrong.run(&["check"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(
            "RALPH.md:4:3: tasks.markdwn: unknown key `markdwn`; `tasks` takes one of \
             `markdown`, `prd`, `github`, `gitlab`, `linear`; did you mean `markdown`?"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_pass_ralph_was_killed_committing_is_finished_by_the_next_start_and_ticked() {
    let agent = r#"title=$(sed -n 's/^TITLE=//p')
echo "$title" > "work-$RALPH_ITERATION.txt"
: > "$ARM"
echo '<!-- ralph:state done -->'
"#;
    let todo = "- [ ] First\r\n- [ ] Second\r\n";
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md",
        "TITLE={{ task.title }}\n",
        agent,
        todo,
    );
    let dir = p.path();
    let first = id_of(&tasks(&p), "First");
    let bin = tempfile::tempdir().unwrap();
    let path_env = common::killing_git(bin.path(), "commit-tree", 1, common::When::After);
    let out = p
        .ralph(&["run"])
        .env("ARM", bin.path().join("armed"))
        .env("PATH", &path_env)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        bin.path().join("killed").exists() && out.status.code().is_none(),
        "killed during the pass: {}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(dir.join("TODO.md")).unwrap(), todo);

    let out = p
        .ralph(&["run", "--resume"])
        .env("ARM", bin.path().join("unused"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let subjects = git(dir, &["log", "--format=%s", "main"]);
    assert!(
        subjects.contains(&format!("ralph: {first} passes")),
        "{subjects}"
    );
    let pass = git(
        dir,
        &[
            "log",
            "--format=%H",
            "-1",
            "--grep",
            &format!("ralph: {first} passes"),
            "main",
        ],
    );
    let committed = show(dir, pass.trim(), "TODO.md").unwrap();
    assert_eq!(committed, b"- [x] First\r\n- [ ] Second\r\n");
    assert_eq!(show(dir, pass.trim(), "work-1.txt").unwrap(), b"First\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("TODO.md")).unwrap(),
        "- [x] First\r\n- [x] Second\r\n"
    );
}

#[test]
fn tasks_prd_is_story_mode_with_the_task_placeholders_too() {
    let agent = "mkdir -p prompts; cat > prompts/$RALPH_ITERATION.txt\n";
    let p = common::story_repo(agent, &["Cart"]);
    let dir = p.path();
    std::fs::write(
        dir.join("RALPH.md"),
        "---\nagent: sh agent.sh\ntasks:\n  prd: prd.json\n---\n{{ task.id }}|{{ task.title }}|{{ task.body }}|{{ story.title }}\n",
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), "events.jsonl\nprompts/\n").unwrap();
    git(dir, &["commit", "-qam", "tasks: prd"]);
    let listed: Value = serde_json::from_str(&stdout(&p.run(&["tasks", "--json"]))).unwrap();
    assert_eq!(listed["source"], "prd");
    assert_eq!(listed["tasks"][0]["id"], "US-001");
    assert_eq!(listed["tasks"][0]["priority"], 1.0);
    p.run(&["run", "-n", "1"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("prompts/1.txt")).unwrap(),
        "US-001|Cart|Do it\n\nAcceptance criteria:\n- ok|Cart"
    );
    assert_eq!(p.events_of("STORY_STARTED")[0]["story_id"], "US-001");
}

#[test]
fn run_task_takes_a_checklist_id_from_ralph_tasks_and_passes_it_alone_on_its_branch() {
    let agent = "cat > /dev/null\necho work > work.txt\necho '<!-- ralph:state done -->'\n";
    let p = todo_repo(
        "agent: sh agent.sh\ntasks:\n  markdown: TODO.md\n",
        BODY,
        agent,
        "- [ ] Build the cart\n- [ ] Add checkout\n",
    );
    let id = id_of(&tasks(&p), "Add checkout");

    let out = p.run(&["run", "--task", &id]);

    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "task_passed");
    let branch = format!("ralph/{id}");
    let head = git(p.path(), &["symbolic-ref", "--short", "HEAD"]);
    assert_eq!(head.trim(), branch);
    let started: Vec<Value> = p.events_of("STORY_STARTED");
    assert!(
        started.iter().all(|s| s["story_id"] == id.as_str()),
        "{started:#?}"
    );
    assert_eq!(
        String::from_utf8(show(p.path(), &branch, "TODO.md").unwrap()).unwrap(),
        "- [ ] Build the cart\n- [x] Add checkout\n",
        "only its line ticked, in the commit on its branch"
    );
    assert_eq!(
        String::from_utf8(show(p.path(), "main", "TODO.md").unwrap()).unwrap(),
        "- [ ] Build the cart\n- [ ] Add checkout\n",
        "main is as it was"
    );
}

/// A person reading a checklist's run reads of tasks, never of stories (prd.json's word): in
/// the run's lines, its last line, `ralph status` and the report. The wire keeps its names.
#[test]
fn a_checklist_run_says_task_where_prd_json_says_story() {
    let agent = "prompt=$(cat)\ncase \"$prompt\" in\n*'TITLE=Build the cart'*) ;;\n\
                 *) echo '<!-- ralph:state blocked reason=\"needs a person\" -->' ;;\nesac\n";
    let p = todo_repo(
        "agent: sh agent.sh\ndone_when: ['true']\ntasks:\n  markdown: TODO.md",
        BODY,
        agent,
        "- [ ] Build the cart\n- [ ] Ask a person\n",
    );
    let out = p.run(&["run"]);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "stories_blocked", "{}", stderr(&out));
    assert_eq!(ended["task_list"], "markdown");
    let text = stdout(&out);
    let cart = id_of(&tasks(&p), "Build the cart");
    for line in [
        format!("task {cart}: Build the cart"),
        format!("task passes {cart} (1 attempt)"),
        "task blocked ".to_owned(),
        "■ done: no task left to do; some are blocked · tasks: 1 passed, 1 blocked, 0 left"
            .to_owned(),
    ] {
        assert!(text.contains(&line), "{line:?} in:\n{text}");
    }
    assert!(!text.contains("stor"), "{text}");

    let status = stdout(&p.run(&["status"]));
    assert!(
        status.contains("tasks: 1 passed, 1 blocked, 0 remaining"),
        "{status}"
    );
    assert!(!status.contains("stories:"), "{status}");
    let report = stdout(&p.run(&["report", "-o", "-"]));
    assert!(report.contains("tasks: <b>1</b> passed"), "{report}");
    assert!(report.contains("<th>task</th><th>attempt</th>"), "{report}");
    assert!(!report.contains(">story<"), "{report}");
}

/// A task's title is the list's text, which anyone with write access to it wrote: its escape
/// sequences (clear the screen, set the window title, write to the clipboard) never reach the
/// terminal raw, in `ralph tasks` or `ralph run`, one loop or parallel; `--json` keeps them.
#[test]
fn a_titles_escape_sequences_are_shown_inert() {
    let title = "Fix it\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZWNobyBoaQ==\x07";
    let repo = || {
        todo_repo(
            "agent: sh agent.sh\ntasks: {markdown: TODO.md}\ndone_when: ['true']",
            "{{ task.title }}\n",
            "cat >/dev/null\n",
            &format!("- [ ] {title}\n"),
        )
    };
    let p = repo();
    assert_eq!(tasks(&p)[0]["title"], title);
    let listed = p.run(&["tasks"]);
    let shown = String::from_utf8(listed.stdout).unwrap();
    assert!(
        !shown.contains('\x1b') && !shown.contains('\x07'),
        "{shown:?}"
    );
    assert!(shown.contains("Fix it\u{FFFD}[2J"), "{shown:?}");
    for args in [&["run"][..], &["run", "--parallel", "1"]] {
        let out = repo().run(args);
        let printed = format!("{}{}", stdout(&out), stderr(&out));
        assert!(printed.contains("Fix it"), "{args:?}: {printed:?}");
        assert!(
            !printed.contains('\x1b') && !printed.contains('\x07'),
            "{args:?}: {printed:?}"
        );
    }
}
