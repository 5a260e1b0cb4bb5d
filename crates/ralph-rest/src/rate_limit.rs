//! How long a rate limit asks to wait, by the headers GitHub and GitLab both document.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A rate limit that names no reset asks for at least a minute.
const UNNAMED_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// A forge's limit resets within the hour: a longer wait is a clock gone wrong.
const LONGEST_RATE_LIMIT_WAIT: Duration = Duration::from_secs(3600);
/// The reset time is whole seconds: a second more and the first request after the wait counts.
const RESET_MARGIN: Duration = Duration::from_secs(1);

/// The rate-limit headers of an answer, as text: GitHub's `x-ratelimit-*` or GitLab's
/// `ratelimit-*`, which mean the same.
#[derive(Debug, Clone, Copy, Default)]
pub struct RateLimitHeaders<'a> {
    /// `retry-after`: seconds.
    pub retry_after: Option<&'a str>,
    /// `x-ratelimit-remaining` / `ratelimit-remaining`: requests left.
    pub remaining: Option<&'a str>,
    /// `x-ratelimit-reset` / `ratelimit-reset`: a Unix time.
    pub reset: Option<&'a str>,
    /// The answer's message.
    pub message: &'a str,
}

/// How long to wait when an answer is a rate limit: a 403 or 429 with `retry-after` waits that
/// many seconds; with no request remaining, until the reset (a Unix time) and a second; a 429,
/// or a 403 whose message says "rate limit", with neither, a minute. A 403 without these is a
/// permission refused: no wait. Never more than an hour.
#[must_use]
pub fn rate_limit_wait(
    status: u16,
    headers: &RateLimitHeaders<'_>,
    now: SystemTime,
) -> Option<Duration> {
    if status != 403 && status != 429 {
        return None;
    }
    let wait = if let Some(secs) = headers
        .retry_after
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Duration::from_secs(secs.max(1))
    } else if let (Some("0"), Some(reset)) = (
        headers.remaining.map(str::trim),
        headers.reset.and_then(|v| v.trim().parse::<u64>().ok()),
    ) {
        let reset = UNIX_EPOCH + Duration::from_secs(reset);
        reset.duration_since(now).unwrap_or(Duration::ZERO) + RESET_MARGIN
    } else if status == 429 || headers.message.to_lowercase().contains("rate limit") {
        UNNAMED_RATE_LIMIT_WAIT
    } else {
        return None;
    };
    Some(wait.min(LONGEST_RATE_LIMIT_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits<'a>(
        retry_after: Option<&'a str>,
        remaining: Option<&'a str>,
        reset: Option<&'a str>,
        message: &'a str,
    ) -> RateLimitHeaders<'a> {
        RateLimitHeaders {
            retry_after,
            remaining,
            reset,
            message,
        }
    }

    const NOW: u64 = 1_800_000_000;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(NOW)
    }

    #[test]
    fn retry_after_is_waited_as_given() {
        let headers = limits(Some("30"), None, None, "");
        assert_eq!(
            rate_limit_wait(429, &headers, now()),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            rate_limit_wait(403, &headers, now()),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn a_spent_limit_waits_until_its_reset_and_a_second() {
        let reset = (NOW + 90).to_string();
        let headers = limits(None, Some("0"), Some(&reset), "API rate limit exceeded");
        assert_eq!(
            rate_limit_wait(403, &headers, now()),
            Some(Duration::from_secs(91))
        );
        let past = (NOW - 5).to_string();
        let headers = limits(None, Some("0"), Some(&past), "");
        assert_eq!(
            rate_limit_wait(429, &headers, now()),
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn a_403_with_requests_left_is_a_refusal_not_a_wait() {
        let reset = (NOW + 90).to_string();
        let headers = limits(None, Some("4999"), Some(&reset), "Resource not accessible");
        assert_eq!(rate_limit_wait(403, &headers, now()), None);
        assert_eq!(
            rate_limit_wait(404, &limits(Some("5"), None, None, ""), now()),
            None
        );
    }

    #[test]
    fn a_limit_without_a_reset_waits_a_minute_and_none_waits_past_an_hour() {
        let secondary = limits(None, None, None, "You have exceeded a secondary rate limit");
        assert_eq!(
            rate_limit_wait(403, &secondary, now()),
            Some(UNNAMED_RATE_LIMIT_WAIT)
        );
        let far = (NOW + 86_400).to_string();
        let headers = limits(None, Some("0"), Some(&far), "");
        assert_eq!(
            rate_limit_wait(403, &headers, now()),
            Some(LONGEST_RATE_LIMIT_WAIT)
        );
    }
}
