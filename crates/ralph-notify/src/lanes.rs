//! Messages for a parallel run (`ralph run --parallel`), from its coordinator's events as
//! written: a lane's task blocked or asking, a lane rate-limited, the run ended or stopped at
//! its budget. Each lane's message names its task. What comes in a burst (32 lanes blocking at
//! once) waits for [`LaneNotifier::flush`], a second at most, and goes as one message.

use std::path::Path;

use ralph_frontmatter::NotifyEvent;
use serde_json::Value;

use crate::deliver::Delivery;
use crate::message::{Message, Place, Said};
use crate::sent::SentRecord;

/// Turns a parallel run's coordinator events into messages, through a [`Delivery`].
pub struct LaneNotifier {
    chosen: Vec<NotifyEvent>,
    place: Place,
    delivery: Delivery,
    sent: SentRecord,
    /// Messages waiting for the next flush, to go as one.
    waiting: Vec<Message>,
    /// The lanes' cost so far, from their `LANE_ENDED`.
    cost_usd: Option<f64>,
}

impl LaneNotifier {
    /// A notifier for the events in `chosen`, keeping what it sent in `run_folder` (the
    /// parallel run's: a resumed run sends none of it again).
    pub fn new(
        chosen: Vec<NotifyEvent>,
        place: Place,
        delivery: Delivery,
        run_folder: Option<&Path>,
    ) -> Self {
        Self {
            chosen,
            place,
            delivery,
            sent: SentRecord::open(run_folder),
            waiting: Vec::new(),
            cost_usd: None,
        }
    }

    /// Takes in one coordinator event, as written (`.ralph/parallel/events.jsonl`'s line). A
    /// message waits for [`flush`](Self::flush); the run's end is sent at once, after what
    /// waits.
    pub fn event(&mut self, event: &Value) {
        let end = event["type"] == "PARALLEL_ENDED";
        if let Some(message) = self.message(event) {
            if !self.sent.contains(&message.key) {
                self.sent.remember(&message.key);
                self.waiting.push(message);
            }
        }
        if end {
            self.flush();
        }
    }

    /// Sends the messages waiting, as one.
    pub fn flush(&mut self) {
        let waiting = std::mem::take(&mut self.waiting);
        self.delivery.send_burst(waiting);
    }

    /// The first failure to send, once.
    pub fn take_failure(&mut self) -> Option<String> {
        self.delivery.take_failure()
    }

    fn message(&mut self, event: &Value) -> Option<Message> {
        let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
        let task = text(&event["task_id"]);
        let said = |what, title: &str, words: String, act: Option<String>, key: String| Said {
            what,
            title: title.to_owned(),
            words,
            act,
            key,
            task: None,
            cost_usd: None,
        };
        let mut said = match event["type"].as_str().unwrap_or("") {
            "LANE_ENDED" => {
                if let Some(cost) = event["cost_usd"].as_f64() {
                    self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
                }
                return None;
            }
            "TASK_BLOCKED" => {
                let reason = text(&event["reason"]);
                said(
                    NotifyEvent::Blocked,
                    "ralph: blocked",
                    format!("a task is blocked: {reason}"),
                    Some(
                        "unblock it in the task list; the other lanes go on, and the next \
                         `ralph run --parallel` takes it up again"
                            .to_owned(),
                    ),
                    format!("{task} {reason}"),
                )
            }
            "LANE_ASKED" => {
                let at = text(&event["at"]);
                let question = text(&event["question"]);
                // Known by its task and words: a resumed run may give another line for it.
                let key = format!("{task} {question}");
                said(
                    NotifyEvent::Asked,
                    "ralph: a question",
                    format!("the agent asks: \"{question}\""),
                    Some(format!(
                        "answer it at {at}; the lane goes on by itself once answered"
                    )),
                    key,
                )
            }
            "LANE_RATE_LIMITED" => {
                let until = text(&event["until"]);
                let then = match event["wait_ms"].as_u64() {
                    Some(_) => "the lane waits",
                    None => "the lane ends",
                };
                said(
                    NotifyEvent::RateLimited,
                    "ralph: rate-limited",
                    format!("the agent is rate-limited until {until}; {then}"),
                    None,
                    format!("{task} {until}"),
                )
            }
            "PARALLEL_ENDED" => {
                let reason = text(&event["reason"]);
                // Written as 0 when no lane reported a cost.
                let reported = event["cost_usd"].as_f64().filter(|c| *c > 0.0);
                self.cost_usd = reported.or(self.cost_usd);
                let budget = matches!(reason.as_str(), "max_cost" | "max_runtime")
                    && self.chosen.contains(&NotifyEvent::Budget);
                let count = |field: &str| event[field].as_u64().unwrap_or(0);
                let tally = format!(
                    "{} landed, {} blocked, {} left",
                    count("landed"),
                    count("blocked"),
                    count("remaining")
                );
                let words = match budget {
                    true => format!("the parallel run stopped at its budget ({reason}): {tally}"),
                    false => format!("the parallel run ended: {reason}: {tally}"),
                };
                let act = (count("remaining") > 0)
                    .then(|| format!("to go on: {}", self.place.resume_command()));
                let what = match budget {
                    true => NotifyEvent::Budget,
                    false => NotifyEvent::Ended,
                };
                let title = format!("ralph: {reason}");
                said(what, &title, words, act, format!("{reason} {tally}"))
            }
            _ => return None,
        };
        if !self.chosen.contains(&said.what) {
            return None;
        }
        let task = (!task.is_empty()).then_some(task);
        said.task = task.as_deref();
        said.cost_usd = self.cost_usd;
        Some(said.message(event, &self.place))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Targets;

    /// A notifier whose command appends each message it gets, then `----`, to `out`.
    fn notifier(out: &Path, on: &str) -> LaneNotifier {
        let text = format!(
            "---\nagent: x\nnotify:\n  on: {on}\n  command: printf '%s\\n----\\n' \"$RALPH_NOTIFY_MESSAGE\" >> {}\n---\n",
            out.display()
        );
        let parsed = ralph_frontmatter::parse("RALPH.md", &text).unwrap();
        let config = parsed.file.config.notify.unwrap();
        let targets = Targets::new(&config, "RALPH.md", |_| None).unwrap();
        let place = Place {
            folder: "/work/shop".into(),
            ralph_file: "RALPH.md".into(),
        };
        LaneNotifier::new(config.on, place, Delivery::start(targets), None)
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ralph-lanes-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("messages")
    }

    #[test]
    fn thirty_two_lanes_blocking_at_once_are_one_message_naming_each_task() {
        let out = scratch("burst");
        let mut lanes = notifier(&out, "[blocked, ended]");
        for n in 0..32 {
            lanes.event(&serde_json::json!({
                "type": "TASK_BLOCKED", "task_id": format!("T-{n}"), "reason": "tests fail"
            }));
        }
        lanes.flush();
        lanes.event(&serde_json::json!({
            "type": "PARALLEL_ENDED", "reason": "stories_blocked", "landed": 0, "blocked": 32,
            "remaining": 0, "cost_usd": 1.5
        }));
        drop(lanes);
        let text = std::fs::read_to_string(&out).unwrap();
        let messages: Vec<&str> = text.split("----\n").filter(|m| !m.is_empty()).collect();
        // The burst is one run of the command; the end follows, in a run of its own or in
        // the same when it queued up before the burst was taken.
        assert!(
            (1..=2).contains(&messages.len()),
            "the burst, then the end: {text}"
        );
        assert_eq!(
            messages[0].matches("a task is blocked: tests fail").count(),
            32
        );
        for n in 0..32 {
            assert!(
                messages[0].contains(&format!("task: T-{n}\n")),
                "T-{n}: {text}"
            );
        }
        assert_eq!(
            text.matches("ralph: the parallel run ended").count(),
            1,
            "{text}"
        );
        let end = &text[text.find("ralph: the parallel run ended").unwrap()..];
        assert!(
            end.starts_with(
                "ralph: the parallel run ended: stories_blocked: 0 landed, 32 blocked, 0 left"
            ),
            "{end}"
        );
        assert!(end.contains("cost so far: $1.50"), "{end}");
    }

    #[test]
    fn a_budget_ending_is_the_budget_message_and_says_how_to_go_on() {
        let out = scratch("budget");
        let mut lanes = notifier(&out, "[budget]");
        lanes.event(&serde_json::json!({
            "type": "PARALLEL_ENDED", "reason": "max_cost", "landed": 1, "blocked": 0,
            "remaining": 2, "cost_usd": 3.0
        }));
        drop(lanes);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(
            text.starts_with("ralph: the parallel run stopped at its budget (max_cost): 1 landed"),
            "{text}"
        );
        assert!(
            text.contains("to go on: cd /work/shop && ralph run --resume"),
            "{text}"
        );
    }
}
