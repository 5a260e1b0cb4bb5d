//! Plain text: the adapter for any agent ralph knows no JSON format of.

use super::{AdapterOutput, OutputAdapter, Usage};
use crate::Stream;

/// Plain text: everything is shown as is and everything is result text, on both streams.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextAdapter;

impl OutputAdapter for TextAdapter {
    fn feed(&mut self, stream: Stream, bytes: &[u8], out: &mut dyn AdapterOutput) {
        out.result_text(stream, bytes);
        out.show(stream, bytes);
    }

    fn finish(&mut self, _out: &mut dyn AdapterOutput) -> Option<Usage> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_adapter_shows_and_scans_everything_on_both_streams() {
        struct Both(Vec<(Stream, bool, Vec<u8>)>);
        impl AdapterOutput for Both {
            fn show(&mut self, stream: Stream, bytes: &[u8]) {
                self.0.push((stream, true, bytes.to_vec()));
            }
            fn result_text(&mut self, stream: Stream, bytes: &[u8]) {
                self.0.push((stream, false, bytes.to_vec()));
            }
        }
        let mut out = Both(Vec::new());
        let mut adapter = TextAdapter;
        adapter.feed(Stream::Stdout, b"a", &mut out);
        adapter.feed(Stream::Stderr, b"b", &mut out);
        assert_eq!(adapter.finish(&mut out), None);
        assert_eq!(
            out.0,
            vec![
                (Stream::Stdout, false, b"a".to_vec()),
                (Stream::Stdout, true, b"a".to_vec()),
                (Stream::Stderr, false, b"b".to_vec()),
                (Stream::Stderr, true, b"b".to_vec()),
            ]
        );
    }

    /// A plain command's words are its output: a 429 in it is a rate limit without a reset;
    /// output without such words is no rate limit.
    #[test]
    fn plain_output_reports_a_rate_limit_from_its_last_words() {
        let now = std::time::SystemTime::now();
        let tail = "working\nAPI Error: 429 {\"type\":\"rate_limit_error\"}\n";
        let limit = TextAdapter.rate_limit(tail, now).unwrap();
        assert_eq!(limit.reset, None);
        assert_eq!(TextAdapter.rate_limit("all done\n", now), None);
    }
}
