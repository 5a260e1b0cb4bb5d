//! Durations as RALPH.md and ralph's options write them: `250ms`, `30s`, `1h 30m`, or a bare
//! number of seconds.

use std::time::Duration;

/// What a duration may look like, for messages (`expected {DURATION_SYNTAX}, got "x"`).
pub const DURATION_SYNTAX: &str =
    "a duration such as \"250ms\", \"30s\", \"5m\" or \"1h 30m\" (a bare number is seconds)";

/// Why a text is not a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurationError {
    /// Not written as one (or negative): [`DURATION_SYNTAX`] says what is.
    Syntax,
    /// Longer than a `Duration` holds (2^64 seconds).
    TooLong,
}

/// `text` (trimmed) as a duration: humantime's syntax (`250ms`, `1h 30m`) or a bare number of
/// seconds >= 0 (`90`, `0.5`).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= Duration::MAX.as_secs_f64() => {
            Err(DurationError::TooLong)
        }
        Ok(secs) => Duration::try_from_secs_f64(secs).map_err(|_| DurationError::Syntax),
        Err(_) => humantime::parse_duration(text).map_err(|err| match err {
            humantime::DurationError::NumberOverflow => DurationError::TooLong,
            _ => DurationError::Syntax,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds_parse_and_the_rest_says_why_not() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration(" 1h 30m "), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("-5"), Err(DurationError::Syntax));
        assert_eq!(parse_duration("fast"), Err(DurationError::Syntax));
        assert_eq!(parse_duration("NaN"), Err(DurationError::Syntax));
        assert_eq!(parse_duration("1e30"), Err(DurationError::TooLong));
        assert_eq!(
            parse_duration("99999999999999999999999s"),
            Err(DurationError::TooLong)
        );
    }
}
