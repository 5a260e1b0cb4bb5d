//! What a person is told: one message per event worth hearing about, in words that say what
//! happened, where, on which task, at what cost, and what to do.

use ralph_frontmatter::NotifyEvent;
use serde_json::{Map, Value};

/// Where the run is: what a message names so a person knows which loop it is.
#[derive(Debug, Clone)]
pub struct Place {
    /// The folder the loop runs in, absolute.
    pub folder: String,
    /// The RALPH.md as given on the command line.
    pub ralph_file: String,
}

impl Place {
    /// The command that goes on with a stopped run.
    pub(crate) fn resume_command(&self) -> String {
        let folder =
            shlex::try_quote(&self.folder).map_or_else(|_| self.folder.clone(), Into::into);
        let file = match self.ralph_file.as_str() {
            "RALPH.md" | "." | "" => String::new(),
            file => format!(
                " {}",
                shlex::try_quote(file).map_or_else(|_| file.to_owned(), Into::into)
            ),
        };
        format!("cd {folder} && ralph run{file} --resume")
    }
}

/// One message, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// What it is about; `None` for `ralph notify --test`.
    pub event: Option<NotifyEvent>,
    /// A short title (ntfy's `Title`).
    pub title: String,
    /// The whole message in words.
    pub text: String,
    /// The event as ralph wrote it, with `message` added (the `json` format's body).
    pub json: Value,
    /// What makes it the same message again (a resumed run meeting the same question): a
    /// message whose key was sent is not sent twice.
    pub key: String,
}

impl Message {
    /// `ralph notify --test`'s message.
    pub fn test(place: &Place) -> Self {
        let text = format!(
            "ralph: a test message from the loop in {}; notifications work.",
            place.folder
        );
        let mut json = Map::new();
        json.insert("type".into(), "NOTIFY_TEST".into());
        json.insert("folder".into(), place.folder.clone().into());
        json.insert("message".into(), text.clone().into());
        Self {
            event: None,
            title: "ralph: test".to_owned(),
            text,
            json: Value::Object(json),
            key: String::new(),
        }
    }
}

/// What the events so far say about the run, for the next message.
#[derive(Debug, Default)]
pub(crate) struct RunFacts {
    /// The task the current iteration works on (`story_id`), if any.
    task: Option<String>,
    /// The agents' reported cost so far, in US dollars.
    cost_usd: Option<f64>,
    /// The last question the agent asked (an `ask` marker's `question`).
    question: Option<String>,
}

impl RunFacts {
    /// Takes in what `event` (as written) says; returns the message it makes, if it is one of
    /// `chosen`.
    pub(crate) fn message(
        &mut self,
        event: &Value,
        chosen: &[NotifyEvent],
        place: &Place,
    ) -> Option<Message> {
        let kind = event["type"].as_str().unwrap_or("");
        let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
        let (what, title, words, act, key) = match kind {
            "ITERATION_STARTED" => {
                self.task = event["story_id"].as_str().map(str::to_owned);
                return None;
            }
            "ITERATION_ENDED" => {
                if let Some(cost) = event["usage"]["cost_usd"].as_f64() {
                    self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
                }
                if let Some(question) = asked_question(event) {
                    self.question = Some(question);
                }
                return None;
            }
            "RUN_ENDED" => {
                let reason = text(&event["reason"]);
                if let Some(cost) = event["cost_usd"].as_f64() {
                    self.cost_usd = Some(cost);
                }
                let budget = matches!(reason.as_str(), "max_cost" | "max_runtime");
                let what = match budget && chosen.contains(&NotifyEvent::Budget) {
                    true => NotifyEvent::Budget,
                    false => NotifyEvent::Ended,
                };
                let iterations = event["iterations"].as_u64().unwrap_or(0);
                let exit_code = event["exit_code"].as_i64().unwrap_or(0);
                let words = match what {
                    NotifyEvent::Budget => format!(
                        "the run stopped at its budget ({reason}) after {iterations} iteration(s)"
                    ),
                    _ => format!(
                        "the run ended: {reason} after {iterations} iteration(s), exit \
                         {exit_code}"
                    ),
                };
                let act = match exit_code {
                    0 => None,
                    _ => Some(format!("to go on: {}", place.resume_command())),
                };
                let title = format!("ralph: {reason}");
                (
                    what,
                    title,
                    words,
                    act,
                    format!("ended {iterations} {reason}"),
                )
            }
            // With tasks, a tripped breaker blocks the task: its `STORY_BLOCKED` tells it.
            "CIRCUIT_TRIPPED" if !event["story_id"].is_null() => return None,
            "STORY_BLOCKED" | "CIRCUIT_TRIPPED" => {
                let task = event["story_id"]
                    .as_str()
                    .map(str::to_owned)
                    .or(self.task.clone());
                let reason = text(&event["reason"]);
                let words = match kind {
                    "STORY_BLOCKED" => format!("a task is blocked: {reason}"),
                    _ => format!("the circuit breaker tripped on a task ({reason})"),
                };
                let act = format!(
                    "unblock it in the task list; the loop goes on with other tasks, or end \
                     it and then: {}",
                    place.resume_command()
                );
                let key = format!("blocked {} {reason}", task.as_deref().unwrap_or(""));
                self.task = task;
                (
                    NotifyEvent::Blocked,
                    "ralph: blocked".to_owned(),
                    words,
                    Some(act),
                    key,
                )
            }
            "WAIT_STARTED" if event["reason"] == "task" => {
                let why = text(&event["why"]);
                if !why.starts_with("waiting for an answer") {
                    return None;
                }
                // A resumed run waits again without the iteration that asked: the question is
                // known by where it was put.
                let words = match &self.question {
                    Some(question) => format!("the agent asks: \"{question}\""),
                    None => "the agent asked a question".to_owned(),
                };
                let where_ = why.trim_start_matches("waiting for an answer").trim();
                let act = format!("answer it {where_}; the loop goes on by itself once answered");
                let key = format!("asked {where_}");
                (
                    NotifyEvent::Asked,
                    "ralph: a question".to_owned(),
                    words,
                    Some(act),
                    key,
                )
            }
            "RATE_LIMITED" => {
                let until = text(&event["until"]);
                let why = text(&event["why"]);
                let words = match (event["wait_ms"].as_u64(), event["fallback"].as_str()) {
                    (Some(_), Some(fallback)) => format!(
                        "the agent is rate-limited until {until}; `{fallback}` runs meanwhile"
                    ),
                    (Some(_), None) => {
                        format!("the agent is rate-limited until {until}; the loop waits")
                    }
                    (None, _) => format!("the agent is rate-limited until {until}; the loop ends"),
                };
                let words = match why.is_empty() {
                    true => words,
                    false => format!("{words} ({why})"),
                };
                (
                    NotifyEvent::RateLimited,
                    "ralph: rate-limited".to_owned(),
                    words,
                    None,
                    format!("rate_limited {until}"),
                )
            }
            _ => return None,
        };
        if !chosen.contains(&what) {
            return None;
        }
        let said = Said {
            what,
            title,
            words,
            act,
            key,
            task: self.task.as_deref(),
            cost_usd: self.cost_usd,
        };
        Some(said.message(event, place))
    }
}

/// What a message says, before it is put in words for each format.
pub(crate) struct Said<'a> {
    pub(crate) what: NotifyEvent,
    pub(crate) title: String,
    /// What happened, after `ralph: `.
    pub(crate) words: String,
    /// What to do, if anything.
    pub(crate) act: Option<String>,
    /// What makes it the same message again, after the event's name.
    pub(crate) key: String,
    pub(crate) task: Option<&'a str>,
    pub(crate) cost_usd: Option<f64>,
}

impl Said<'_> {
    /// The message about `event` (as written) in the loop at `place`.
    pub(crate) fn message(self, event: &Value, place: &Place) -> Message {
        let mut lines = vec![
            format!("ralph: {}", self.words),
            format!("folder: {}", place.folder),
        ];
        if let Some(task) = self.task {
            lines.push(format!("task: {task}"));
        }
        if let Some(cost) = self.cost_usd {
            lines.push(format!("cost so far: ${cost:.2}"));
        }
        if let Some(act) = self.act {
            lines.push(act);
        }
        let text = lines.join("\n");
        let mut json = event.as_object().cloned().unwrap_or_default();
        json.insert("notify".into(), self.what.as_str().into());
        json.insert("message".into(), text.clone().into());
        Message {
            event: Some(self.what),
            title: self.title,
            text,
            json: Value::Object(json),
            key: format!("{} {}", self.what.as_str(), self.key),
        }
    }
}

/// The `question` of an `ask` state marker in an `ITERATION_ENDED`.
fn asked_question(event: &Value) -> Option<String> {
    event["markers"]
        .as_array()?
        .iter()
        .rev()
        .filter(|m| m["name"] == "ask")
        .find_map(|m| {
            m["attrs"]
                .as_array()?
                .iter()
                .find(|pair| pair[0] == "question")
                .and_then(|pair| pair[1].as_str())
                .map(str::to_owned)
        })
}
