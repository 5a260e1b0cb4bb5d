//! Recognising an agent that says in words it is rate-limited, and when its limit resets: what
//! [`OutputAdapter::rate_limit`](crate::OutputAdapter::rate_limit) reads by default.
//!
//! Only the words of a failed run are read (its adapter's error, or else the tail of its output), so
//! an agent that merely talks about rate limits while it works is never taken for a limited one.
//! The forms known, from Claude Code's own messages:
//!
//! - `Claude AI usage limit reached|1755615600`: the reset as a Unix time;
//! - `You've hit your limit · resets 4:50am (Europe/Rome)`, `5-hour limit reached ∙ resets 3pm`,
//!   `resets Jan 30, 11:30am (Asia/Calcutta)`: a clock time, the next one after now, in the named
//!   zone or else the local one;
//! - `Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).`;
//! - Codex's `You've hit your usage limit. ... try again at 7:13 PM.` (`... at Nov 27th, 2026
//!   12:30 AM.` when not today): a local clock time;
//! - Gemini's `You exceeded your current quota ... Please retry in 2.5s.`: a wait;
//! - with no reset time: HTTP 429, `rate limit`, `rate_limit_error`, `usage limit`,
//!   `too many requests`, `RESOURCE_EXHAUSTED`.
//!
//! A clock time is written to the minute, rounded down: the limit resets within the minute
//! after it, so the end of that minute is the reset taken (waking early only meets the same
//! limit again). A clock time that passed less than an hour ago is a reset that has just
//! passed (the agent repeating its message a few seconds late), never tomorrow's.

use std::time::{Duration, SystemTime};

use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// A rate limit an agent reported: its run was refused rather than failed, and the limit
/// resets at a time the agent may have given. (What the agent said is its adapter's
/// [`reported_error`](crate::OutputAdapter::reported_error), or its output.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimit {
    /// When it resets, if the agent said: the loop waits until then (at most
    /// `rate_limit.max_wait`). `None` leaves the wait to the failure backoff.
    pub reset: Option<SystemTime>,
}

impl RateLimit {
    /// A rate limit whose reset the agent did not give.
    pub fn unknown_reset() -> Self {
        Self::default()
    }

    /// A rate limit that resets at `reset`.
    pub fn resets_at(reset: SystemTime) -> Self {
        Self { reset: Some(reset) }
    }
}

/// Words that say a run was rate-limited, lowercase.
const SIGNS: &[&str] = &[
    "usage limit",
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "hit your limit",
    "hit your session limit",
    "limit reached",
    "exceeded your current quota",
    "resource_exhausted",
    "quota exceeded",
];

/// How long after a clock time its limit may reset: the time is written to the minute.
const CLOCK_RESOLUTION: Duration = Duration::from_secs(60);

/// How long ago a clock time without a date may have passed and still be today's.
const JUST_PASSED: jiff::SignedDuration = jiff::SignedDuration::from_secs(3600);

/// Whether `text` (a failed run's words) says the agent is rate-limited, and until when. A
/// clock time without a zone of its own is in the local zone, the next one after `now`.
pub fn detect(text: &str, now: SystemTime) -> Option<RateLimit> {
    let now = Timestamp::try_from(now).ok()?.to_zoned(TimeZone::system());
    detect_in_zone(text, &now)
}

/// [`detect`], `now` in its zone.
fn detect_in_zone(text: &str, now: &Zoned) -> Option<RateLimit> {
    let lower = text.to_lowercase();
    if let Some(until) = epoch_after_bar(&lower) {
        return Some(RateLimit::resets_at(until));
    }
    let limited = SIGNS.iter().any(|s| lower.contains(s)) || has_status_429(&lower);
    if !limited {
        return None;
    }
    let until = ["resets at ", "resets ", "reset at ", "try again at "]
        .iter()
        .find_map(|lead| {
            lower
                .match_indices(lead)
                .find_map(|(i, _)| clock_time(&lower[i + lead.len()..], now))
        })
        .map(|at| SystemTime::from(at) + CLOCK_RESOLUTION)
        .or_else(|| {
            ["retry in ", "retry after "].iter().find_map(|lead| {
                lower.match_indices(lead).find_map(|(i, _)| {
                    let wait = wait(&lower[i + lead.len()..])?;
                    Some(SystemTime::from(now.timestamp()) + wait)
                })
            })
        });
    Some(RateLimit { reset: until })
}

/// `2.5s`, `30s`, `500ms`, `1m` at the start of `s`: a wait, rounded up to the millisecond.
fn wait(s: &str) -> Option<Duration> {
    let number: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let value: f64 = number.parse().ok()?;
    let unit = &s[number.len()..];
    let millis_per_unit = if unit.starts_with("ms") {
        1.0
    } else if unit.starts_with('s') {
        1000.0
    } else if unit.starts_with('m') {
        60_000.0
    } else if unit.starts_with('h') {
        3_600_000.0
    } else {
        return None;
    };
    let millis = (value * millis_per_unit).ceil();
    (millis.is_finite() && millis <= u64::MAX as f64).then(|| Duration::from_millis(millis as u64))
}

/// `usage limit reached|1755615600`: seconds (or milliseconds) since the Unix epoch.
fn epoch_after_bar(lower: &str) -> Option<SystemTime> {
    let (_, rest) = lower.split_once("limit reached|")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let n: i64 = digits.parse().ok()?;
    let ts = if n > 100_000_000_000 {
        Timestamp::from_millisecond(n)
    } else {
        Timestamp::from_second(n)
    };
    ts.ok().map(SystemTime::from)
}

/// `429` standing alone (`Error: 429 {...}`, `HTTP 429`), not inside a longer number.
fn has_status_429(lower: &str) -> bool {
    lower.match_indices("429").any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + 3..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

/// A reset time at the start of `s`: `[Mon D, ]H[:MM][am|pm][ (Area/City)]`, as the next such
/// moment after `now`. A date already past is no reset time.
fn clock_time(s: &str, now: &Zoned) -> Option<Timestamp> {
    let (date, rest) = month_day(s).map_or((None, s), |(date, rest)| (Some(date), rest));
    let (time, rest) = time_of_day(rest)?;
    let zone = zone_name(rest)
        .and_then(|name| TimeZone::get(name).ok())
        .unwrap_or_else(|| now.time_zone().clone());
    let now = now.with_time_zone(zone.clone());
    match date {
        Some(MonthDay { year, month, day }) => {
            let date = Date::new(year.unwrap_or(now.year()), month, day).ok()?;
            let at = date.to_datetime(time).to_zoned(zone).ok()?;
            (at > now).then(|| at.timestamp())
        }
        None => {
            let today = now.date().to_datetime(time).to_zoned(zone.clone()).ok()?;
            if today.timestamp() > now.timestamp() - JUST_PASSED {
                return Some(today.timestamp());
            }
            let tomorrow = now.date().tomorrow().ok()?.to_datetime(time);
            tomorrow.to_zoned(zone).ok().map(|z| z.timestamp())
        }
    }
}

/// A date a reset names, its year when written.
struct MonthDay {
    year: Option<i16>,
    /// 1-12.
    month: i8,
    day: i8,
}

/// `jan 30, ` or Codex's `nov 27th, 2026 ` at the start of `s`, and what follows.
fn month_day(s: &str) -> Option<(MonthDay, &str)> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let month = MONTHS.iter().position(|m| s.starts_with(m))?;
    let rest = s
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .trim_start();
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let day: i8 = rest.get(..digits)?.parse().ok()?;
    let rest = &rest[digits..];
    let rest = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|suffix| rest.strip_prefix(suffix))
        .unwrap_or(rest);
    let rest = rest.trim_start_matches(',').trim_start();
    let year_digits = rest.chars().take_while(char::is_ascii_digit).count();
    let (year, rest) = match rest.get(..year_digits).filter(|_| year_digits == 4) {
        Some(year) => (
            Some(year.parse().ok()?),
            rest[4..].trim_start_matches(',').trim_start(),
        ),
        None => (None, rest),
    };
    let month = i8::try_from(month + 1).ok()?;
    Some((MonthDay { year, month, day }, rest))
}

/// `3pm`, `4:50am`, `11:30 pm`, `15:00` at the start of `s`, and what follows.
fn time_of_day(s: &str) -> Option<(Time, &str)> {
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 2 {
        return None;
    }
    let mut hour: i8 = s[..digits].parse().ok()?;
    let mut rest = &s[digits..];
    let mut minute: i8 = 0;
    if let Some(after) = rest.strip_prefix(':') {
        let m = after.chars().take_while(char::is_ascii_digit).count();
        if m != 2 {
            return None;
        }
        minute = after[..2].parse().ok()?;
        rest = &after[2..];
    }
    let trimmed = rest.trim_start();
    let meridiem = ["am", "pm", "a.m.", "p.m."]
        .iter()
        .find(|m| trimmed.starts_with(*m));
    match meridiem {
        Some(m) => {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour %= 12;
            if m.starts_with('p') {
                hour += 12;
            }
            rest = &trimmed[m.len()..];
        }
        // A bare hour is not a time ("resets 3 times"); `15:00` is.
        None if minute == 0 && !s[digits..].starts_with(':') => return None,
        None => {}
    }
    Some((Time::new(hour, minute, 0, 0).ok()?, rest))
}

/// ` (Europe/Paris)` at the start of `s`: the zone's name as written (zone names are matched
/// without regard to case).
fn zone_name(s: &str) -> Option<&str> {
    let rest = s.trim_start().strip_prefix('(')?;
    let end = rest.find(')')?;
    Some(rest[..end].trim()).filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-03-10 10:00 in Paris (UTC+1).
    fn paris_morning() -> Zoned {
        "2026-03-10T10:00:00+01:00[Europe/Paris]".parse().unwrap()
    }

    fn until(text: &str) -> Option<Option<String>> {
        detect_in_zone(text, &paris_morning()).map(|limit| {
            limit
                .reset
                .map(|t| Timestamp::try_from(t).unwrap().to_string())
        })
    }

    #[test]
    fn the_unix_time_after_the_bar_is_the_reset() {
        assert_eq!(
            until("Claude AI usage limit reached|1755615600"),
            Some(Some("2025-08-19T15:00:00Z".to_owned()))
        );
    }

    #[test]
    fn a_clock_time_in_a_named_zone_is_the_next_one() {
        // 3pm in Paris on the same day.
        assert_eq!(
            until("You've hit your limit · resets 3pm (Europe/Paris)"),
            Some(Some("2026-03-10T14:01:00Z".to_owned()))
        );
        // 4:50am in Rome is past: tomorrow's.
        assert_eq!(
            until("You've hit your session limit · resets 4:50am (Europe/Rome)"),
            Some(Some("2026-03-11T03:51:00Z".to_owned()))
        );
        assert_eq!(
            until("Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw)."),
            Some(Some("2026-03-10T16:01:00Z".to_owned()))
        );
    }

    #[test]
    fn a_clock_time_without_a_zone_is_local() {
        assert_eq!(
            until("5-hour limit reached ∙ resets 3pm"),
            Some(Some("2026-03-10T14:01:00Z".to_owned()))
        );
    }

    #[test]
    fn a_date_and_time_is_taken_as_written() {
        assert_eq!(
            until("You've hit your limit · resets Mar 12, 11:30am (Asia/Calcutta)"),
            Some(Some("2026-03-12T06:01:00Z".to_owned()))
        );
        // Already past: no reset time to trust.
        assert_eq!(
            until("You've hit your limit · resets Jan 30, 11:30am (Asia/Calcutta)"),
            Some(None)
        );
    }

    /// Codex names the day when the reset is not today: `Nov 27th, 2026 12:30 AM`, in the
    /// local zone (found when a reset an hour away fell after midnight).
    #[test]
    fn codexs_date_with_an_ordinal_day_and_a_year_is_taken_as_written() {
        assert_eq!(
            until("You’ve hit your usage limit. ... or try again at Mar 11th, 2026 12:30 AM."),
            Some(Some("2026-03-10T23:31:00Z".to_owned()))
        );
        assert_eq!(
            until("You’ve hit your usage limit. ... or try again at Mar 1st, 2027 9:05 PM."),
            Some(Some("2027-03-01T20:06:00Z".to_owned()))
        );
    }

    #[test]
    fn a_limit_without_a_reset_time_is_still_a_limit() {
        for text in [
            r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}}"#,
            "HTTP 429 Too Many Requests",
            "Error: rate limit exceeded, try again later",
        ] {
            assert_eq!(until(text), Some(None), "{text}");
        }
    }

    #[test]
    fn a_clock_time_just_passed_is_today_not_tomorrow() {
        // 9:59 in Paris, said at 10:00:00: the minute Claude rounded down to, not tomorrow.
        assert_eq!(
            until("You've hit your session limit · resets 9:59am (Europe/Paris)"),
            Some(Some("2026-03-10T09:00:00Z".to_owned()))
        );
        // Passed more than an hour ago: tomorrow's.
        assert_eq!(
            until("You've hit your session limit · resets 8:30am (Europe/Paris)"),
            Some(Some("2026-03-11T07:31:00Z".to_owned()))
        );
    }

    #[test]
    fn codex_and_gemini_say_when_to_try_again() {
        assert_eq!(
            until(
                "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro) \
                 or try again at 7:13 PM."
            ),
            Some(Some("2026-03-10T18:14:00Z".to_owned()))
        );
        assert_eq!(
            until(
                "[API Error: You exceeded your current quota, please check your plan and \
                 billing details. Please retry in 2.5s.\nSuggested retry after 2.5s.]"
            ),
            Some(Some("2026-03-10T09:00:02.5Z".to_owned()))
        );
        assert_eq!(until("RESOURCE_EXHAUSTED"), Some(None));
    }

    #[test]
    fn other_failures_are_not_limits() {
        for text in [
            "Invalid API key · Please run /login",
            "error: 14290 tests failed",
            "command not found: claud",
            "the build resets 3pm",
        ] {
            assert_eq!(until(text), None, "{text}");
        }
    }
}
