//! Sending messages from a thread of their own: the loop hands a message over and goes on.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ralph_frontmatter::NotifyFormat;
use serde_json::json;

use crate::message::Message;
use crate::{Targets, Webhook};

/// Bursts waiting to be sent at most; past it a burst is dropped and its messages counted.
const QUEUE: usize = 16;
/// One try of one webhook: connect, send, answer.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Tries per message and webhook.
const TRIES: u32 = 3;
/// The wait before the second try; doubled before each further one.
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// How long the command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the end of a run waits for messages still queued.
const FLUSH: Duration = Duration::from_secs(30);

/// The thread that sends, and the queue to it. Dropping it sends what is queued (for at most
/// 30 s) and stops the thread.
pub struct Delivery {
    queue: Option<SyncSender<Vec<Message>>>,
    worker: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

/// What the thread tells the loop's side.
#[derive(Default)]
struct Shared {
    /// The first failure not yet taken, in words (no URL in them).
    failure: Mutex<Option<String>>,
    /// Whether a failure was reported already: later ones are not.
    reported: std::sync::atomic::AtomicBool,
    /// Messages dropped because the queue was full, not yet told.
    dropped: AtomicU64,
}

impl Shared {
    fn take_failure(&self) -> Option<String> {
        let failure = self.failure.lock().ok()?.take()?;
        (!self.reported.swap(true, Ordering::SeqCst)).then_some(failure)
    }
}

/// A [`Delivery`]'s failure, to be taken after the run ([`Delivery::failures`]).
pub struct Failures(Arc<Shared>);

impl Failures {
    /// The first failure, unless it was reported already.
    pub fn take(&self) -> Option<String> {
        self.0.take_failure()
    }
}

/// What one delivery did, target by target (for `ralph notify --test`).
#[derive(Debug, Clone, Default)]
pub struct DeliveryReport {
    /// Each target as shown (webhooks redacted) and its failure, `None` when it was sent.
    pub targets: Vec<(String, Option<String>)>,
}

impl Delivery {
    /// A thread sending to `targets`.
    pub fn start(targets: Targets) -> Self {
        let (queue, messages) = sync_channel(QUEUE);
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("ralph-notify".to_owned())
            .spawn(move || work(&targets, &messages, &thread_shared))
            .ok();
        Self {
            queue: Some(queue),
            worker,
            shared,
        }
    }

    /// Queues `message`; never waits. A full queue drops it (the next message says how many).
    pub fn send(&self, message: Message) {
        self.send_burst(vec![message]);
    }

    /// Queues `messages` to go as one (one post to a people's webhook, one run of the
    /// command); never waits. A full queue drops them (the next message says how many).
    pub fn send_burst(&self, messages: Vec<Message>) {
        let Some(queue) = &self.queue else { return };
        let count = messages.len() as u64;
        if count == 0 {
            return;
        }
        match queue.try_send(messages) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.shared.dropped.fetch_add(count, Ordering::SeqCst);
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// The first failure, once: later failures are not reported again.
    pub fn take_failure(&self) -> Option<String> {
        self.shared.take_failure()
    }

    /// A handle on the failures that outlives the delivery: a failure of the last messages,
    /// sent as the run ends, is known only once the sink is gone.
    pub fn failures(&self) -> Failures {
        Failures(Arc::clone(&self.shared))
    }

    /// Sends `message` to every target now, on this thread, and says how each went.
    pub fn send_now(targets: &Targets, message: &Message) -> DeliveryReport {
        let mut report = DeliveryReport::default();
        for webhook in &targets.webhooks {
            let failed = post(webhook, targets.format, std::slice::from_ref(message)).err();
            report
                .targets
                .push((format!("webhook {}", webhook.shown), failed));
        }
        if let Some(command) = &targets.command {
            let failed = run_command(command, &message.text).err();
            report.targets.push(("command".to_owned(), failed));
        }
        report
    }

    /// Sends what is queued (for at most 30 s), then stops the thread.
    pub fn finish(&mut self) {
        drop(self.queue.take());
        let Some(worker) = self.worker.take() else {
            return;
        };
        let deadline = Instant::now() + FLUSH;
        while !worker.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if worker.is_finished() {
            let _ = worker.join();
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The thread: each message, with any that queued up meanwhile, sent as one.
fn work(targets: &Targets, messages: &Receiver<Vec<Message>>, shared: &Shared) {
    while let Ok(mut burst) = messages.recv() {
        burst.extend(messages.try_iter().flatten());
        let dropped = shared.dropped.swap(0, Ordering::SeqCst);
        if dropped > 0 {
            let last = burst.len() - 1;
            burst[last].text.push_str(&format!(
                "\n({dropped} more message(s) were dropped: too many at once)"
            ));
        }
        let mut failures = Vec::new();
        for webhook in &targets.webhooks {
            if let Err(failure) = post(webhook, targets.format, &burst) {
                failures.push(format!("webhook {}: {failure}", webhook.shown));
            }
        }
        if let Some(command) = &targets.command {
            let text = joined(&burst);
            if let Err(failure) = run_command(command, &text) {
                failures.push(format!("notify.command: {failure}"));
            }
        }
        if let Some(failure) = failures.into_iter().next() {
            if let Ok(mut slot) = shared.failure.lock() {
                slot.get_or_insert(format!(
                    "a notification could not be sent ({failure}); the loop goes on, and \
                     further failures are not reported"
                ));
            }
        }
    }
}

/// The messages of a burst as one text.
fn joined(burst: &[Message]) -> String {
    burst
        .iter()
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Posts a burst to one webhook, trying again after a network failure or a 5xx or 429
/// answer. The error never holds the URL: ureq's words name it, so only the kind is kept.
fn post(webhook: &Webhook, format: NotifyFormat, burst: &[Message]) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(concat!("ralph/", env!("CARGO_PKG_VERSION")))
        .timeout_global(Some(TIMEOUT))
        .build()
        .into();
    // A JSON webhook is a machine's: each event goes as itself; the others are read by people,
    // to whom a burst is one message.
    let bodies: Vec<(String, &'static str, String)> = match format {
        NotifyFormat::Json => burst
            .iter()
            .map(|m| (m.json.to_string(), "application/json", m.title.clone()))
            .collect(),
        NotifyFormat::Slack => vec![(
            json!({ "text": joined(burst) }).to_string(),
            "application/json",
            String::new(),
        )],
        NotifyFormat::Discord => vec![(
            json!({ "content": joined(burst) }).to_string(),
            "application/json",
            String::new(),
        )],
        NotifyFormat::Ntfy => vec![(
            joined(burst),
            "text/plain; charset=utf-8",
            burst.first().map(|m| m.title.clone()).unwrap_or_default(),
        )],
    };
    for (body, content_type, title) in bodies {
        let mut wait = FIRST_RETRY;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut request = agent
                .post(&webhook.url)
                .header("content-type", content_type);
            if format == NotifyFormat::Ntfy && !title.is_empty() {
                request = request.header("title", &title);
            }
            let outcome = match request.send(body.as_bytes()) {
                Ok(response) => {
                    let status = response.status().as_u16();
                    match status {
                        200..=299 => Ok(()),
                        429 | 500..=599 => Err((true, format!("HTTP {status}"))),
                        _ => Err((false, format!("HTTP {status}"))),
                    }
                }
                Err(err) => Err((true, network_failure(&err))),
            };
            match outcome {
                Ok(()) => break,
                Err((again, failure)) if !again || tries >= TRIES => {
                    return Err(format!("{failure} after {tries} tr{}", plural(tries)));
                }
                Err(_) => {
                    std::thread::sleep(wait);
                    wait *= 2;
                }
            }
        }
    }
    Ok(())
}

fn plural(tries: u32) -> &'static str {
    if tries == 1 { "y" } else { "ies" }
}

/// A network failure in words that cannot hold the URL.
fn network_failure(err: &ureq::Error) -> String {
    match err {
        ureq::Error::Timeout(_) => "no answer in time".to_owned(),
        ureq::Error::Io(io) => format!("network error ({})", io.kind()),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        ureq::Error::ConnectionFailed => "connection failed".to_owned(),
        _ => "the request failed".to_owned(),
    }
}

/// Runs the command through `sh -c` with the message in `RALPH_NOTIFY_MESSAGE` and each
/// `{{ message }}` made a reference to it (so no text of the message is ever read as shell
/// syntax); killed after 10 s.
fn run_command(command: &str, message: &str) -> Result<(), String> {
    let line = replace_message(command);
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .env("RALPH_NOTIFY_MESSAGE", message)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot start `sh`: {err}"))?;
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = pipe.read_to_string(&mut stderr);
                }
                let said = stderr.lines().last().unwrap_or("").trim().to_owned();
                return Err(match said.is_empty() {
                    true => format!("it {status}"),
                    false => format!("it {status}: {said}"),
                });
            }
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "it ran past {}s and was killed",
                    COMMAND_TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(err) => return Err(format!("waiting for it: {err}")),
        }
    }
}

/// `command` with each `{{ message }}` (spaces inside the braces optional) replaced by a
/// reference to `RALPH_NOTIFY_MESSAGE`: `${RALPH_NOTIFY_MESSAGE}` inside double quotes,
/// quoted outside them, so the message is one word either way.
fn replace_message(command: &str) -> String {
    let mut out = String::new();
    let mut rest = command;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) if after[..end].trim() == "message" => {
                out.push_str(&rest[..start]);
                out.push_str(match in_double_quotes(&out) {
                    true => "${RALPH_NOTIFY_MESSAGE}",
                    false => "\"${RALPH_NOTIFY_MESSAGE}\"",
                });
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str(&rest[..start + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether the end of `shell` is inside a double-quoted string.
fn in_double_quotes(shell: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in shell.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ => {}
        }
    }
    double
}

#[cfg(test)]
mod tests {
    use super::replace_message;

    #[test]
    fn the_message_placeholder_is_one_word_quoted_or_not() {
        assert_eq!(
            replace_message("say {{ message }} \"x {{message}}\" {{ other }}"),
            "say \"${RALPH_NOTIFY_MESSAGE}\" \"x ${RALPH_NOTIFY_MESSAGE}\" {{ other }}"
        );
    }
}
