//! The engine fills in every `{{ ralph.* }}` name validation accepts
//! (`ralph_frontmatter::RALPH_PLACEHOLDERS`, the one list of them).

use ralph_engine::{Engine, EngineOptions};
use ralph_frontmatter::RALPH_PLACEHOLDERS;

#[tokio::test]
async fn every_ralph_placeholder_validation_accepts_gets_a_value() {
    let body: String = RALPH_PLACEHOLDERS
        .iter()
        .map(|name| format!("{name}=[{{{{ ralph.{name} }}}}]\n"))
        .collect();
    let text = format!("---\nagent: cat\nmax_iterations: 7\n---\n{body}");
    let parsed = ralph_frontmatter::parse("RALPH.md", &text).expect("valid RALPH.md");
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let mut options = EngineOptions::new("RALPH.md", parsed.file);
    options.cwd = std::env::temp_dir();

    let prompt = Engine::new(options).dry_run().await.unwrap().prompt;

    assert!(!prompt.contains("{{"), "{prompt}");
    assert!(prompt.contains("iteration=[1]"), "{prompt}");
    assert!(prompt.contains("max_iterations=[7]"), "{prompt}");
    assert!(!prompt.starts_with("name=[]"), "{prompt}");
}
