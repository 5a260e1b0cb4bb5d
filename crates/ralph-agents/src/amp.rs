//! Amp's `amp --execute --stream-json`: Claude Code's stream-json events, read by
//! [`ClaudeStreamJsonAdapter::amp`](super::ClaudeStreamJsonAdapter::amp), with usage on each
//! assistant message (summed) rather than on the result.

use super::ClaudeStreamJsonAdapter;
use super::claude::Flavour;

impl ClaudeStreamJsonAdapter {
    /// A new adapter for one run of Amp's `--stream-json`: Claude Code's events, the final
    /// answer in `result.result`, an error in `is_error` and `error`, and usage summed over the
    /// assistant messages, which carry it.
    pub fn amp() -> Self {
        let mut adapter = Self::default();
        adapter.flavour = Flavour::Amp;
        adapter
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, Recorded};
    use super::ClaudeStreamJsonAdapter;

    fn amp(name: &str) -> Recorded {
        testing::read_fixture(ClaudeStreamJsonAdapter::amp(), "amp", name)
    }

    #[test]
    fn a_run_shows_text_and_tool_calls_and_sums_message_usage() {
        let out = amp("tool-use.jsonl");
        insta::assert_snapshot!(out.shown());
        assert_eq!(out.error, None);
        assert_eq!(out.state().as_deref(), Some("idle"));
        let usage = out.usage.unwrap();
        assert_eq!(usage.num_turns, Some(3));
        assert_eq!(
            usage.input_tokens,
            Some(6 + 4012 + 8 + 512 + 4012 + 10 + 890 + 4524)
        );
        assert_eq!(usage.cached_input_tokens, Some(4012 + 4524));
        assert_eq!(usage.output_tokens, Some(88 + 64 + 140));
        assert_eq!(
            usage.session_id.as_deref(),
            Some("T-5a7d7f3c-6b1e-4f0a-9d2c-8e4b1a3c5d7f")
        );
    }

    #[test]
    fn markers_come_from_the_result_only() {
        assert_eq!(amp("quoted-marker.jsonl").state(), None);
        assert_eq!(
            amp("success.jsonl").markers(),
            ["state blocked reason=needs \"deploy\" rights"]
        );
    }

    #[test]
    fn an_error_result_fails_the_run_with_amps_words() {
        let out = amp("error.jsonl");
        assert_eq!(
            out.error.as_deref(),
            Some("Out of credits. Add credits at ampcode.com/settings")
        );
    }

    #[test]
    fn chunking_at_any_byte_gives_the_same_reading() {
        testing::assert_every_fixture_reads_alike_in_any_chunks(
            ClaudeStreamJsonAdapter::amp,
            "amp",
        );
    }
}
