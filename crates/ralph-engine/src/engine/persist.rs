//! The run's session file: written as the run goes, read back by a resumed run
//! (`EngineOptions::resume`). The format lives in [`crate::session`].

use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::{Next, Run};
use crate::convergence::Attempts;
use crate::event::{EventKind, WaitReason, WarningKind};
use crate::outcome::EndReason;
use crate::session::{self, Ended, PlannedWait, Session};
use crate::state::{StateWait, millis};
use ralph_agents::RunCost;
use ralph_atomic::Rewriter;

/// How long swapped session files may wait for the folder's fsync: a power cut loses at most
/// about this much of the run's steps, and a fast loop pays one folder fsync a second, not
/// one per write.
const FOLDER_SYNC_AFTER: Duration = Duration::from_secs(1);

/// Writes the session file on a thread of its own, so the loop never waits for the disk (an
/// fsync can take milliseconds on a busy one). Only the newest content waiting is written;
/// each write is whole (a spare file, fsynced, swapped in: [`Rewriter`]), in order.
pub(super) struct SessionWriter {
    file: Arc<Mutex<Rewriter>>,
    tx: Option<mpsc::Sender<Vec<u8>>>,
    thread: Option<JoinHandle<()>>,
    /// What went wrong, for the engine to emit as warnings (the thread cannot emit).
    warnings: mpsc::Receiver<String>,
    warn: mpsc::Sender<String>,
}

impl SessionWriter {
    fn start(dir: &Path) -> Self {
        let file = Arc::new(Mutex::new(Rewriter::new(&dir.join(session::SESSION_FILE))));
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        let (warn_tx, warnings) = mpsc::channel::<String>();
        let thread_warn_tx = warn_tx.clone();
        let thread_file = Arc::clone(&file);
        let thread = std::thread::Builder::new()
            .name("ralph-session".to_owned())
            .spawn(move || write_newest(&thread_file, &rx, &thread_warn_tx));
        match thread {
            Ok(thread) => Self {
                file,
                tx: Some(tx),
                thread: Some(thread),
                warnings,
                warn: warn_tx,
            },
            Err(err) => {
                // Said with the first session write, after `RUN_STARTED`.
                let _ = warn_tx.send(format!(
                    "cannot start writing the session file: {err}; the run cannot be resumed"
                ));
                Self {
                    file,
                    tx: None,
                    thread: None,
                    warnings,
                    warn: warn_tx,
                }
            }
        }
    }

    /// What went wrong since the last call.
    fn take_warnings(&self) -> Vec<String> {
        self.warnings.try_iter().collect()
    }

    /// Writes `bytes` on the caller's thread, for the first session of a run: on disk before
    /// `RUN_STARTED`, so `ralph status` finds the run as soon as anything names it.
    fn write_now(&self, bytes: &[u8]) {
        let mut file = lock(&self.file);
        let written = file.write(bytes);
        file.sync_folder();
        if let Err(err) = written {
            // Said with the next session write, after `RUN_STARTED`.
            let _ = self.warn.send(write_failed(&file, &err));
        }
    }

    fn send(&self, bytes: Vec<u8>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(bytes);
        }
    }

    /// Waits until everything sent is on disk, the folder fsynced, the spare gone.
    fn finish(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let mut file = lock(&self.file);
        file.sync_folder();
        file.remove_spare();
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        self.finish();
    }
}

fn lock(file: &Mutex<Rewriter>) -> std::sync::MutexGuard<'_, Rewriter> {
    file.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write_failed(file: &Rewriter, err: &std::io::Error) -> String {
    format!(
        "cannot write the session file {}: {err}",
        file.path().display()
    )
}

fn write_newest(
    file: &Mutex<Rewriter>,
    rx: &mpsc::Receiver<Vec<u8>>,
    warnings: &mpsc::Sender<String>,
) {
    // A failing disk fails every write: said once, until a write succeeds again.
    let mut failing = false;
    // Since when swaps wait for the folder's fsync.
    let mut unsynced: Option<Instant> = None;
    loop {
        let received = match unsynced {
            Some(since) => rx.recv_timeout(FOLDER_SYNC_AFTER.saturating_sub(since.elapsed())),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        let mut bytes = match received {
            Ok(bytes) => bytes,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                lock(file).sync_folder();
                unsynced = None;
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        while let Ok(newer) = rx.try_recv() {
            bytes = newer;
        }
        let mut file = lock(file);
        match file.write(&bytes) {
            Ok(()) => failing = false,
            Err(err) => {
                if !failing {
                    let _ = warnings.send(write_failed(&file, &err));
                }
                failing = true;
            }
        }
        let since = *unsynced.get_or_insert_with(Instant::now);
        if since.elapsed() >= FOLDER_SYNC_AFTER {
            file.sync_folder();
            unsynced = None;
        }
    }
}

/// What a resumed run does before its first iteration.
pub(super) struct Resumed {
    /// The interrupted wait, to finish first (none with `resume_now`).
    wait: Option<PlannedWait>,
    /// RALPH.md changed since the run's last step.
    config_changed: bool,
    /// What the task source and the state handlers said as they took their state up, for
    /// after `RUN_STARTED`.
    task_events: Vec<EventKind>,
}

impl Run {
    /// The run's time so far, over every process that ran it (`max_runtime` counts it).
    pub(super) fn elapsed(&self) -> Duration {
        self.elapsed_before.saturating_add(self.started.elapsed())
    }

    /// Starts the session; with `resume`, takes the stopped run's state up and emits
    /// `RUN_RESUMED`. Runs before `RUN_STARTED`.
    pub(super) fn resume(&mut self) -> Option<Resumed> {
        let hash = std::fs::read_to_string(&self.engine.options.ralph_file)
            .map(|text| session::config_hash(&text))
            .unwrap_or_default();
        let ralph_file = self.engine.options.ralph_file.display().to_string();
        self.session_writer = self
            .engine
            .options
            .log_dir
            .as_deref()
            .map(SessionWriter::start);
        let Some(old) = self.engine.options.resume.take() else {
            if self.engine.options.log_dir.is_some() {
                self.session = Some(Session::new(
                    &self.engine.options.run_id,
                    &ralph_file,
                    &self.engine.options.cwd,
                    hash,
                ));
                // On disk before `RUN_STARTED`: `ralph status` finds the run as soon as its
                // header names it.
                if let (Some(bytes), Some(writer)) =
                    (self.session_bytes(false, None, false), &self.session_writer)
                {
                    writer.write_now(&bytes);
                }
            }
            return None;
        };
        self.emit(EventKind::RunResumed {
            iteration: old.tally.iteration,
            previous_reason: old.previous_reason().to_owned(),
        });
        self.tally = old.tally.clone();
        self.elapsed_before = Duration::from_millis(old.elapsed_ms);
        self.run_cost = RunCost::resumed(old.tally.cost_usd());
        self.agents.restore(&old.agents);
        // The interrupted wait's countdown goes on with the streak it showed.
        self.state_wait = (old.wait.as_ref())
            .filter(|w| w.reason == WaitReason::Idle)
            .map(|w| {
                StateWait::new(Duration::from_millis(w.delay_ms))
                    .reason(w.reason)
                    .streak(old.consecutive_idle)
            });
        let mut task_events = Vec::new();
        self.engine
            .handlers
            .restore(&old.handlers, &mut task_events);
        let config = &self.engine.options.file.config;
        if let (Some(state), false) = (&old.attempts, config.done_when.is_empty()) {
            self.attempts = Some(Attempts::resumed(config.convergence.clone(), state));
        }
        if let Some(task) = old.task.clone() {
            self.tasks.restore(task, &mut task_events);
        }
        let resumed = Resumed {
            // A task source's wait is the source's to take up again (it asks `next_task`).
            wait: (old.wait.clone())
                .filter(|w| !self.engine.options.resume_now && w.reason != WaitReason::Task),
            config_changed: old.config_hash != hash,
            task_events,
        };
        let mut session = old;
        session.pid = std::process::id();
        session.ralph_file = ralph_file;
        // A session from before 0.3 learns its folder: the one that resumed it.
        session.folder = Some(session::canonical_folder(&self.engine.options.cwd));
        session.config_hash = hash;
        session.ended = None;
        self.session = self.engine.options.log_dir.is_some().then_some(session);
        Some(resumed)
    }

    /// After `RUN_STARTED`: a resumed run says its config changed and finishes the wait it was
    /// stopped in. Returns why the run ends, if it does before its first iteration.
    pub(super) async fn resumed(&mut self, resumed: Option<Resumed>) -> Option<EndReason> {
        let Some(mut resumed) = resumed else {
            // The session on disk is this one already (`resume`): only what went wrong
            // writing it is left to say.
            self.session_warnings();
            return None;
        };
        for event in std::mem::take(&mut resumed.task_events) {
            self.emit(event);
        }
        if resumed.config_changed {
            self.emit(EventKind::ConfigReloaded {
                iteration: self.tally.iteration + 1,
            });
        }
        self.save_session(false, resumed.wait.clone());
        let limit_reached = self
            .settings
            .max_iterations
            .is_some_and(|max| self.tally.iteration >= max);
        let wait = resumed.wait.filter(|_| !limit_reached)?;
        // Never past the whole wait it planned: a clock set back, or a hand-edited `until` in
        // year 9999, must not park the loop for ever.
        let left = wait
            .until
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .min(Duration::from_millis(wait.delay_ms));
        if left.is_zero() {
            return None;
        }
        self.wait(self.tally.iteration, wait.reason, left).await
    }

    /// The wait `next` asks for after an iteration, before a limit or a stop request turns it
    /// into an ending: a resumed run finishes it.
    pub(super) fn planned_wait(&self, next: &Next) -> Option<PlannedWait> {
        let (delay, reason) = match next {
            Next::Wait(delay, reason) => (*delay, *reason),
            Next::Continue => (self.settings.delay, WaitReason::Delay),
            Next::Stop(_) => return None,
        };
        (!delay.is_zero())
            .then(|| PlannedWait::new(reason, millis(delay), SystemTime::now() + delay, None))
    }

    /// Replaces the session file: `working` while an iteration runs (the task source's state
    /// is then its last step's), otherwise after a step, with the wait it planned.
    pub(super) fn save_session(&mut self, working: bool, wait: Option<PlannedWait>) {
        self.write_session(working, wait, false);
    }

    /// After an iteration's step: the session takes it in, and is written now when the step
    /// planned a wait (a resumed run finishes it, `ralph status` shows it). Otherwise the next
    /// iteration's start or the run's end, which follow at once, write it: one write an
    /// iteration in a loop that does not wait.
    pub(super) fn step_session(&mut self, wait: Option<PlannedWait>) {
        if wait.is_some() {
            self.write_session(false, wait, false);
        } else {
            self.update_session(false, None, false);
        }
    }

    /// Emits what went wrong writing the session file since the last call.
    fn session_warnings(&mut self) {
        let warnings = (self.session_writer.as_ref())
            .map(SessionWriter::take_warnings)
            .unwrap_or_default();
        for warning in warnings {
            self.warn(WarningKind::NotWritten, warning);
        }
    }

    fn write_session(&mut self, working: bool, wait: Option<PlannedWait>, ending: bool) {
        self.session_warnings();
        if let (Some(bytes), Some(writer)) = (
            self.session_bytes(working, wait, ending),
            &self.session_writer,
        ) {
            writer.send(bytes);
        }
    }

    /// The session as it stands, brought up to date; `None` without a session (no log folder).
    fn session_bytes(
        &mut self,
        working: bool,
        wait: Option<PlannedWait>,
        ending: bool,
    ) -> Option<Vec<u8>> {
        self.update_session(working, wait, ending);
        match self.session.as_ref()?.to_bytes() {
            Ok(bytes) => Some(bytes),
            Err(err) => {
                self.warn(
                    WarningKind::NotWritten,
                    format!("cannot write the session file: {err}"),
                );
                None
            }
        }
    }

    /// Brings the session up to date with the run, in memory.
    fn update_session(&mut self, working: bool, wait: Option<PlannedWait>, ending: bool) {
        if self.session.is_none() {
            return;
        }
        let task = match (!working).then(|| self.tasks.snapshot(ending)) {
            Some(Err(err)) => {
                // The last state saved stays: a resumed run takes that up.
                self.warn(
                    WarningKind::NotWritten,
                    format!("cannot save the task source's state: {err}"),
                );
                None
            }
            task => task.and_then(Result::ok),
        };
        let mut unsaved = Vec::new();
        let handlers = self.engine.handlers.snapshot(&mut unsaved);
        for warning in unsaved {
            self.warn(WarningKind::NotWritten, warning);
        }
        // The streak of the last idle wait asked for: the session's `consecutive_idle`.
        let consecutive_idle = (self.state_wait)
            .filter(|wait| wait.reason == WaitReason::Idle)
            .map_or(0, |wait| wait.streak);
        let elapsed = self.elapsed();
        let Some(session) = self.session.as_mut() else {
            return;
        };
        session.updated = SystemTime::now();
        session.max_iterations = self.settings.max_iterations;
        session.max_cost_usd = self.settings.max_cost;
        session.max_runtime_ms = self.settings.max_runtime.map(millis);
        session.working = working;
        session.tally.clone_from(&self.tally);
        session.elapsed_ms = millis(elapsed);
        session.agents = match self.agents.has_fallbacks() {
            true => self.agents.records(),
            false => Vec::new(),
        };
        session.consecutive_idle = consecutive_idle;
        session.handlers = handlers;
        session.attempts = self.attempts.as_ref().map(Attempts::snapshot);
        if let Some(task) = task {
            session.task = task;
        }
        session.task_id = self.tasks.current_id().map(str::to_owned);
        session.task_fields = self.tasks.summary();
        session.wait = wait;
    }

    /// The run ended: the session says how, keeping the wait its last step planned.
    pub(super) fn session_ended(&mut self, reason: &EndReason, exit_code: i32) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let wait = session.wait.clone();
        session.ended = Some(Ended::new(
            reason.clone(),
            exit_code,
            SystemTime::now(),
            session::resumable(reason),
        ));
        self.write_session(false, wait, true);
        // On disk before RUN_ENDED: whoever reads the events' end finds the session's.
        if let Some(writer) = &mut self.session_writer {
            writer.finish();
        }
        self.session_warnings();
    }
}
