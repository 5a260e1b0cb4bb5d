//! prd.json and progress.txt, trusted with a person's files: odd but valid files are read (a
//! byte order mark, CRLF, priorities written as words), bad ones are refused with the place and
//! what is allowed, rewrites keep what a person wrote, and a progress path that would overwrite
//! something else is refused before anything runs.
//!
//! Every test runs the real binary; the ones that escalate do so without git (`revert: false`)
//! unless git is what they are about.

use crate::common;

use std::path::Path;

use common::{Project, code, stderr};
use serde_json::Value;

const STORY_BODY: &str = "STORY={{ story.id }}\n";

/// An agent that says it is blocked, every time.
const BLOCKED_AGENT: &str = "echo '<!-- ralph:state blocked reason=\"needs a key\" -->'\n";

/// A project whose RALPH.md has `frontmatter` and [`STORY_BODY`], with `prd` as prd.json and
/// [`BLOCKED_AGENT`] as `blocked.sh`.
fn project(frontmatter: &str, prd: &[u8]) -> Project {
    let p = Project::new(frontmatter, STORY_BODY);
    std::fs::write(p.path().join("prd.json"), prd).unwrap();
    std::fs::write(p.path().join("blocked.sh"), BLOCKED_AGENT).unwrap();
    p
}

/// What ralph printed on stderr, the temporary folder's path replaced by `<dir>`.
fn error_lines(p: &Project, out: &std::process::Output) -> String {
    let real = p.path().canonicalize().unwrap();
    stderr(out)
        .lines()
        .map(|l| {
            l.replace(&real.display().to_string(), "<dir>")
                .replace(&p.path().display().to_string(), "<dir>")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const STORY: &str = r#"{"id": "A", "priority": 1, "passes": false}"#;

#[test]
fn a_malformed_prd_json_is_refused_with_the_place_and_what_is_allowed() {
    let cases: Vec<(&str, String)> = vec![
        ("top-level array", format!("[\n  {STORY}\n]\n")),
        (
            "nested array",
            format!("{{\n  \"userStories\": [\n    [{STORY}]\n  ]\n}}\n"),
        ),
        (
            "number out of range",
            "{\"userStories\": [{\"id\": \"A\", \"priority\": 1e999, \"passes\": false}]}"
                .to_owned(),
        ),
        (
            "priority too large",
            "{\"userStories\": [{\"id\": \"A\", \"priority\": 1e308, \"passes\": false}]}"
                .to_owned(),
        ),
        (
            "priority word",
            "{\"userStories\": [{\"id\": \"A\", \"priority\": \"urgent\", \"passes\": false}]}"
                .to_owned(),
        ),
        (
            "wrong type",
            "{\"userStories\": [{\"id\": \"A\", \"priority\": 1, \"passes\": false,\n  \"acceptanceCriteria\": \"it works\"}]}"
                .to_owned(),
        ),
    ];
    let mut report = String::new();
    for (name, prd) in cases {
        let p = project(
            "agent: 'true'\nescalation:\n  prd: prd.json\n  revert: false",
            prd.as_bytes(),
        );
        let out = p.run(&["run", "-n", "1"]);
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
        assert!(p.events().is_empty(), "{name}: nothing ran");
        report.push_str(&format!("{name}:\n{}\n", error_lines(&p, &out)));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn a_prd_json_with_a_byte_order_mark_is_read_and_keeps_it() {
    let prd = format!("\u{feff}{{\n  \"userStories\": [\n    {STORY}\n  ]\n}}\n");
    let p = project(
        "agent: 'true'\ndone_when: ['true']\nescalation:\n  prd: prd.json\n  revert: false",
        prd.as_bytes(),
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "stories_done");
    let written = std::fs::read_to_string(p.path().join("prd.json")).unwrap();
    assert_eq!(
        written,
        prd.replace("\"passes\": false", "\"passes\": true")
    );
}

#[test]
fn blocking_a_story_keeps_its_notes_and_the_files_crlf_line_endings() {
    let prd = "{\r\n  \"userStories\": [\r\n    {\r\n      \"id\": \"A\",\r\n      \"priority\": 1,\r\n      \"passes\": false,\r\n      \"notes\": \"ask Kim about the API\"\r\n    },\r\n    {\r\n      \"id\": \"B\",\r\n      \"priority\": 2,\r\n      \"passes\": false\r\n    }\r\n  ]\r\n}\r\n";
    let p = project(
        "agent: sh blocked.sh\nescalation:\n  prd: prd.json\n  revert: false",
        prd.as_bytes(),
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(p.run_ended()["reason"], "stories_blocked");
    let written = std::fs::read_to_string(p.path().join("prd.json")).unwrap();
    assert_eq!(
        written.matches('\n').count(),
        written.matches("\r\n").count(),
        "every line still ends in CRLF:\n{written:?}"
    );
    let value: Value = serde_json::from_str(&written).unwrap();
    let notes = |i: usize| {
        value["userStories"][i]["notes"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let kept = notes(0);
    assert!(
        kept.starts_with("ask Kim about the API\r\n\r\nblocked by ralph at "),
        "{kept:?}"
    );
    assert!(kept.contains("needs a key"), "{kept:?}");
    // B had no notes: they are added on a line of their own, and only the reason.
    assert!(
        notes(1).starts_with("blocked by ralph at "),
        "{:?}",
        notes(1)
    );
    assert!(
        written.contains("\"passes\": \"blocked\",\r\n      \"notes\": \"blocked by ralph at "),
        "{written:?}"
    );
}

#[test]
fn a_progress_file_holding_bytes_that_are_not_utf8_is_appended_to() {
    let prd = format!("{{\"userStories\": [{STORY}]}}\n");
    let p = project(
        "agent: sh blocked.sh\nescalation:\n  prd: prd.json\n  revert: false",
        prd.as_bytes(),
    );
    let old: &[u8] = b"## earlier entry, caf\xe9 in Latin-1\n\xff\xfe stray bytes";
    std::fs::write(p.path().join("progress.txt"), old).unwrap();
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(
        p.run_ended()["reason"],
        "stories_blocked",
        "{}",
        stderr(&out)
    );
    let bytes = std::fs::read(p.path().join("progress.txt")).unwrap();
    assert!(bytes.starts_with(old), "the old bytes are kept exactly");
    let entry = String::from_utf8(bytes[old.len()..].to_vec()).unwrap();
    assert!(entry.starts_with("\n\n## "), "{entry:?}");
    assert!(entry.contains("· A · circuit breaker tripped"), "{entry:?}");
    // The story's notes point at the entry's line: the fourth.
    let value: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("prd.json")).unwrap()).unwrap();
    let notes = value["userStories"][0]["notes"].as_str().unwrap();
    assert!(notes.ends_with("Details: progress.txt:4"), "{notes}");
}

#[test]
fn priorities_written_as_words_or_digits_run_in_the_documented_order() {
    let prd = r#"{"userStories": [
  {"id": "low", "priority": "low", "passes": false},
  {"id": "digits-2", "priority": "2", "passes": false},
  {"id": "medium", "priority": "medium", "passes": false},
  {"id": "number-1", "priority": 1, "passes": false},
  {"id": "high", "priority": "HIGH", "passes": false},
  {"id": "half", "priority": 0.5, "passes": false}
]}
"#;
    let p = project(
        "agent: 'true'\ndone_when: ['true']\nescalation:\n  prd: prd.json\n  revert: false",
        prd.as_bytes(),
    );
    let out = p.run(&["run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let order: Vec<Value> = p
        .events_of("STORY_PASSED")
        .into_iter()
        .map(|e| e["story_id"].clone())
        .collect();
    // high is 1, medium 2, low 3; equal priorities keep file order.
    assert_eq!(
        order,
        ["half", "number-1", "high", "digits-2", "medium", "low"]
    );
}

/// `ralph run` and `ralph check` on `p`: both refuse, exit 2, with the same error line.
fn refused_by_run_and_check(p: &Project) -> String {
    let run = p.run(&["run", "-n", "1"]);
    assert_eq!(code(&run), 2, "{}", stderr(&run));
    assert!(p.events().is_empty(), "nothing ran");
    let check = p.run(&["check"]);
    assert_eq!(code(&check), 2, "{}", stderr(&check));
    let line = error_lines(p, &run);
    assert_eq!(error_lines(p, &check), line);
    line
}

#[test]
fn a_progress_path_that_is_the_prd_the_ralph_md_or_inside_git_is_a_load_error() {
    let prd = format!("{{\"userStories\": [{STORY}]}}\n");
    let mut report = String::new();
    for progress in ["./prd.json", "docs/../RALPH.md", ".git/progress.txt"] {
        let p = project(
            &format!(
                "agent: 'true'\nescalation:\n  prd: prd.json\n  progress: {progress}\n  revert: false"
            ),
            prd.as_bytes(),
        );
        report.push_str(&refused_by_run_and_check(&p));
        report.push('\n');
        assert_eq!(
            std::fs::read(p.path().join("prd.json")).unwrap(),
            prd.as_bytes()
        );
    }
    insta::assert_snapshot!(report);
}

#[test]
fn a_progress_path_that_leads_to_the_prd_the_ralph_md_or_into_git_through_a_symlink_is_a_load_error()
 {
    use std::os::unix::fs::symlink;
    let prd = format!("{{\"userStories\": [{STORY}]}}\n");
    let cases = [
        ("log.txt", "prd.json", "is the same file as escalation.prd"),
        ("log.txt", "RALPH.md", "is the same file as RALPH.md"),
        ("logs/progress.txt", ".git", "leads inside .git"),
    ];
    for (progress, target, expected) in cases {
        let p = project(
            &format!(
                "agent: 'true'\nescalation:\n  prd: prd.json\n  progress: {progress}\n  revert: false"
            ),
            prd.as_bytes(),
        );
        common::git_repo(p.path());
        let link = Path::new(progress).components().next().unwrap();
        symlink(target, p.path().join(link)).unwrap();
        let line = refused_by_run_and_check(&p);
        assert!(
            line.starts_with(&format!(
                "error: RALPH.md:5:13: escalation.progress: \"{progress}\" {expected}"
            )),
            "{line}"
        );
        assert_eq!(
            std::fs::read(p.path().join("prd.json")).unwrap(),
            prd.as_bytes()
        );
    }
}
