//! Process supervision for ralph: the one place that spawns processes (the agent, the
//! per-iteration commands and the checks), on pipes or a PTY.
//!
//! Every child runs in its own process group, so a timeout or a stop reaches its children too,
//! and whatever is left in the group when the child exits is killed: no orphans. Output is read
//! from both pipes concurrently and handed over chunk by chunk; nothing here keeps it, and
//! nothing here knows what an agent's output means (that is `ralph-agents`') nor what a loop
//! is (that is `ralph-engine`'s). It never prints.
//!
//! No process outlives the run, even when ralph itself is killed. A run holds a
//! [`Containment`]:
//! - the watchdog, on every Unix: a process that SIGKILLs every process group ralph
//!   registered and had not yet killed, as soon as ralph is gone, whatever signal ended it
//!   (on Linux, every process carrying the run's token in its environment too, with its group);
//! - on Linux, unless turned off, ralph as a child subreaper: when an
//!   iteration ends, every process it started that still runs, even one that left its process
//!   group (`setsid`), is ended and reaped, handed to the watchdog for its grace. Other
//!   platforms have the process group kill only. A process that left its group and dropped the
//!   token from its environment while ralph is killed with SIGKILL is beyond both.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

mod descendants;
mod program;
pub mod pty;
mod supervisor;
mod watchdog;

pub use descendants::end_carriers;
pub use program::find_on_path;
pub use pty::{PtyMode, PtySize, PtyTerminal};
use supervisor::{Read, Reader, Supervisor};

/// Which output stream a chunk came from (a PTY's output is all [`Stream::Stdout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

pub use ralph_events::{InterruptSignal, Termination};

/// Whether process `pid` exists (a zombie counts, and a process of another user): a file a
/// process named after its own pid is stale once this is false.
pub fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // Signal 0 sends nothing; a process of another user answers EPERM, and exists.
    matches!(
        rustix::process::test_kill_process(pid),
        Ok(()) | Err(rustix::io::Errno::PERM)
    )
}

/// The `PWD` a child started in `dir` gets: `dir` absolute, without `.` or `..`, and the
/// person's own name for it (ralph's `PWD`, through a link) where that names the same folder.
///
/// Every process ralph starts gets it, since a child inherits ralph's own `PWD` otherwise:
/// bash and dash check `PWD` against the real folder and fix it, but Node and Python programs
/// trust it and would write into the folder ralph was started from instead of a lane's
/// worktree. A `dir` that cannot be made absolute is passed on as it is.
pub fn child_pwd(dir: &Path) -> PathBuf {
    let ours = std::env::var_os("PWD").map(PathBuf::from);
    // Trusted as a shell trusts it: absolute, no `.` or `..`, and naming the same folder.
    let logical = ours.filter(|pwd| {
        pwd.is_absolute()
            && pwd
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    });
    if let Some(pwd) = &logical {
        if pwd == dir || (dir == Path::new(".") && same_folder(pwd, Path::new("."))) {
            return pwd.clone();
        }
    }
    let Ok(absolute) = std::path::absolute(dir) else {
        return dir.to_path_buf();
    };
    // `absolute` keeps `..`, which a shell's `PWD` never holds: only then are links resolved.
    let absolute = match absolute.components().any(|c| c == Component::ParentDir) {
        true => std::fs::canonicalize(&absolute).unwrap_or(absolute),
        false => absolute.components().collect(),
    };
    match logical {
        Some(pwd) if same_folder(&pwd, &absolute) => pwd,
        _ => absolute,
    }
}

/// Whether `a` and `b` are one folder (one device and inode).
fn same_folder(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Size of each read from a pipe.
const READ_CHUNK: usize = 64 * 1024;

/// Where the spawns of a confined process are made: a thread of ralph's own that applied a
/// confinement to itself (a sandbox's Landlock rules and `no_new_privs` hold for the thread that
/// applies them and for every process it starts afterwards). A child started from it inherits
/// the confinement and the spawn stays a `posix_spawn` (a `vfork`): nothing runs between fork
/// and exec, and the rest of ralph is not confined. Clones share the thread, which ends with
/// the last of them.
#[derive(Clone)]
pub struct ChildSetup(Arc<std::sync::mpsc::Sender<SpawnJob>>);

/// A spawn handed to the confined thread.
type SpawnJob = Box<dyn FnOnce() + Send>;

impl ChildSetup {
    /// Starts the thread and has it apply `confine` to itself; `confine`'s error is returned,
    /// and no thread is left then.
    pub fn new(
        confine: impl FnOnce() -> std::io::Result<()> + Send + 'static,
    ) -> std::io::Result<Self> {
        let (jobs, inbox) = std::sync::mpsc::channel::<SpawnJob>();
        let (ready, applied) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("ralph-confined".to_owned())
            .spawn(move || {
                let confined = confine();
                let ok = confined.is_ok();
                let _ = ready.send(confined);
                if ok {
                    for job in inbox {
                        job();
                    }
                }
            })?;
        applied.recv().map_err(|_| thread_gone())??;
        Ok(Self(Arc::new(jobs)))
    }

    /// Runs `spawn` on the confined thread, inside the caller's tokio runtime, and returns its
    /// result.
    fn spawn<C: Send + 'static>(
        &self,
        spawn: impl FnOnce() -> std::io::Result<C> + Send + 'static,
    ) -> std::io::Result<C> {
        let runtime = tokio::runtime::Handle::current();
        let (done, result) = std::sync::mpsc::sync_channel(1);
        self.0
            .send(Box::new(move || {
                let _entered = runtime.enter();
                let _ = done.send(spawn());
            }))
            .map_err(|_| thread_gone())?;
        result.recv().map_err(|_| thread_gone())?
    }
}

fn thread_gone() -> std::io::Error {
    std::io::Error::other("the sandbox's spawning thread is gone")
}

impl std::fmt::Debug for ChildSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChildSetup")
    }
}

/// A process to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// The program: a path, or a name looked up on `PATH`.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The folder it runs in.
    pub cwd: PathBuf,
    /// Environment variables added to ralph's own.
    pub env: Vec<(String, String)>,
    /// Variables of ralph's own environment the process goes without (secrets it is not to
    /// have: the engine passes what the RALPH.md's `env` and `sandbox` blocks withhold).
    pub env_remove: Vec<String>,
    /// Bytes written to standard input, which is then closed; `None` gives it /dev/null.
    pub stdin: Option<Arc<[u8]>>,
    /// How long it may run before it is stopped; `None` for no limit.
    pub timeout: Option<Duration>,
    /// How long it may print nothing before it is stopped ([`Termination::IdleTimeout`]),
    /// on pipes and on a terminal alike; `None` for no limit.
    pub idle_timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when ralph stops the process.
    pub kill_grace: Duration,
    /// The confinement the process starts in (a sandbox's): it is spawned from that
    /// [`ChildSetup`]'s thread. `None`: unconfined.
    pub child_setup: Option<ChildSetup>,
}

impl ProcessSpec {
    /// `sh -c COMMAND`.
    pub fn shell(command: &str, cwd: PathBuf, kill_grace: Duration) -> Self {
        Self {
            program: "sh".to_owned(),
            args: vec!["-c".to_owned(), command.to_owned()],
            cwd,
            env: Vec::new(),
            env_remove: Vec::new(),
            stdin: None,
            timeout: None,
            idle_timeout: None,
            kill_grace,
            child_setup: None,
        }
    }
}

impl ProcessSpec {
    /// `words` run directly: the first is the program, the rest its arguments. No words do
    /// nothing, as `sh -c ""` does.
    pub fn words(words: &[String], cwd: PathBuf, kill_grace: Duration) -> Self {
        match words.split_first() {
            Some((program, args)) => Self {
                program: program.clone(),
                args: args.to_vec(),
                ..Self::shell("", cwd, kill_grace)
            },
            None => Self::shell("", cwd, kill_grace),
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessExit {
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// How long it ran.
    pub duration: Duration,
    /// Why it ended.
    pub termination: Termination,
}

impl ProcessExit {
    /// How a reaped child ended: `stopping` is why ralph stopped it, if it did; a signal ralph
    /// did not send is `Killed`.
    pub fn new(
        status: std::process::ExitStatus,
        stopping: Option<Termination>,
        started: Instant,
    ) -> Self {
        use std::os::unix::process::ExitStatusExt;
        let signal = status.signal();
        let termination = match (stopping, signal) {
            (Some(reason), _) => reason,
            (None, Some(_)) => Termination::Killed,
            (None, None) => Termination::Natural,
        };
        Self {
            exit_code: status.code(),
            signal,
            duration: started.elapsed(),
            termination,
        }
    }

    /// Whether ralph stopped it for running past its `timeout`.
    pub fn timed_out(&self) -> bool {
        self.termination == Termination::Timeout
    }

    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// What the caller does with a running process's output and with interrupts that arrive
/// meanwhile.
pub trait Supervision: Send {
    /// A chunk of output, in arrival order.
    fn output(&mut self, stream: Stream, bytes: &[u8]);

    /// An interrupt arrived; return `true` to stop the process now.
    fn interrupt(&mut self, signal: InterruptSignal) -> bool;

    /// Asked after each chunk of output: `true` stops the process now, as
    /// [`Termination::RetryLimit`] (an agent retrying without end).
    fn give_up(&mut self) -> bool {
        false
    }

    /// PTY interactive mode: an interrupt arrived while the user drives the agent. Return
    /// `true` to stop the process now; `false` hands a Ctrl+C to the agent instead.
    fn interrupt_interactive(&mut self, signal: InterruptSignal) -> bool {
        self.interrupt(signal)
    }
}

/// Runs `spec` to its end, feeding output to `supervision` and interrupts from `signals`.
pub async fn run(
    spec: &ProcessSpec,
    supervision: &mut dyn Supervision,
    signals: &mut mpsc::UnboundedReceiver<InterruptSignal>,
) -> std::io::Result<ProcessExit> {
    let spawn = |program: PathBuf| {
        let mut command = tokio::process::Command::new(program);
        // No hook on Linux, so the spawn stays a `posix_spawn`: the token covers the moment
        // before ralph registers the group (see `watchdog`).
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        // SAFETY: the hook only makes async-signal-safe calls (see `register_from_child`).
        unsafe {
            command.pre_exec(watchdog::register_from_child());
        }
        command.envs(watchdog::token().map(|token| (watchdog::TOKEN_VAR, token)));
        command
            .args(&spec.args)
            .current_dir(&spec.cwd)
            .env("PWD", child_pwd(&spec.cwd))
            .envs(spec.env.iter().map(|(k, v)| (k, v)));
        for name in &spec.env_remove {
            command.env_remove(name);
        }
        command
            .stdin(if spec.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        match &spec.child_setup {
            Some(setup) => setup.spawn(move || command.spawn()),
            None => command.spawn(),
        }
    };

    // On Linux this spawn is a `posix_spawn`, which refuses a script without `#!` itself,
    // unless the program is a bare name the standard library looks up in a changed `PATH`
    // (then it forks and execs as `execvp` does).
    let spawn_refuses_scripts = cfg!(any(target_os = "linux", target_os = "android"));
    let mut spawned = Spawned::new(spec, spawn_refuses_scripts, spawn)?;
    let child = &mut spawned.child;

    if let (Some(bytes), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // Written from its own task so a large prompt never deadlocks an agent that writes
        // before it reads; an agent that never reads gets EPIPE here, which is fine.
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        });
        // A process that escaped the group could hold stdin open without reading: the
        // write must not outlive the run, holding the prompt.
        spawned.group.abort_on_drop(writer);
    }

    let mut reader = Pipes {
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        // Read into spare capacity: a zeroed buffer would cost a 64 KiB memset per stream and
        // spawn, for bytes the read overwrites.
        out_buf: Vec::with_capacity(READ_CHUNK),
        err_buf: Vec::with_capacity(READ_CHUNK),
        eof_reported: false,
    };
    spawned
        .supervise(&mut reader, spec, supervision, signals)
        .await
}

/// A child just spawned, its process group under guard: what [`run`] and [`pty::run`] share.
struct Spawned {
    child: tokio::process::Child,
    pgid: Option<i32>,
    group: GroupGuard,
    started: Instant,
}

impl Spawned {
    /// Spawns the child `spawn` makes of `spec`'s program, resolved (and refused when it is a
    /// script without `#!`, here unless `spawn_refuses_scripts` and the program is a path),
    /// and puts its process group, the child's pid, under guard.
    fn new(
        spec: &ProcessSpec,
        spawn_refuses_scripts: bool,
        spawn: impl FnOnce(PathBuf) -> std::io::Result<tokio::process::Child>,
    ) -> std::io::Result<Self> {
        let started = Instant::now();
        let spawning = descendants::spawning();
        let program = program::resolve(&spec.program);
        if !(spawn_refuses_scripts && program.components().count() > 1) {
            program::refuse_script_without_shebang(&program, &spec.cwd)?;
        }
        let child = spawn(program)?;
        let pgid = child.id().map(|id| id as i32);
        let group = GroupGuard::new(pgid);
        drop(spawning);
        Ok(Self {
            child,
            pgid,
            group,
            started,
        })
    }

    /// Supervises the child to its end with `spec`'s timeouts and kill grace, its output read
    /// by `reader`; then lets go of its group.
    async fn supervise<R: Reader>(
        mut self,
        reader: &mut R,
        spec: &ProcessSpec,
        supervision: &mut dyn Supervision,
        signals: &mut mpsc::UnboundedReceiver<InterruptSignal>,
    ) -> std::io::Result<ProcessExit> {
        let supervisor = Supervisor::new(
            self.started,
            spec.timeout,
            spec.idle_timeout,
            spec.kill_grace,
        );
        let (status, stopping) = supervisor::drive(
            &mut self.child,
            self.pgid,
            &mut self.group,
            reader,
            supervisor,
            supervision,
            signals,
        )
        .await?;
        Ok(ProcessExit::new(status, stopping, self.started))
    }
}

/// A child's stdout and stderr, read concurrently.
struct Pipes {
    stdout: Option<tokio::process::ChildStdout>,
    stderr: Option<tokio::process::ChildStderr>,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
    eof_reported: bool,
}

impl Reader for Pipes {
    const STOP_SIGNALS: &'static [i32] = &[libc::SIGTERM];

    async fn next(&mut self, _running: bool, _exited: bool) -> Read {
        loop {
            if self.stdout.is_none() && self.stderr.is_none() {
                if self.eof_reported {
                    return std::future::pending().await;
                }
                self.eof_reported = true;
                return Read::Eof;
            }
            tokio::select! {
                read = read_some(&mut self.stdout, &mut self.out_buf) => match read {
                    Some(n) => return Read::Chunk(Stream::Stdout, n),
                    None => self.stdout = None,
                },
                read = read_some(&mut self.stderr, &mut self.err_buf) => match read {
                    Some(n) => return Read::Chunk(Stream::Stderr, n),
                    None => self.stderr = None,
                },
            }
        }
    }

    fn chunk(&self, stream: Stream, n: usize) -> &[u8] {
        match stream {
            Stream::Stdout => &self.out_buf[..n],
            Stream::Stderr => &self.err_buf[..n],
        }
    }

    fn close(&mut self) {
        self.stdout = None;
        self.stderr = None;
        self.eof_reported = true;
    }
}

/// Reads what `pipe` has into `buf`, replacing its content, up to its capacity.
async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut Vec<u8>,
) -> Option<usize> {
    let Some(reader) = pipe else {
        return std::future::pending().await;
    };
    buf.clear();
    match reader.read_buf(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The environment variable every process ralph starts carries, holding its runs' tokens.
pub const RUN_TOKEN_VAR: &str = watchdog::TOKEN_VAR;

/// What keeps a run's processes from outliving it, held for the length of the run.
#[derive(Debug)]
pub struct Containment {
    /// Dropped first: what the run left is killed while the watchdog is still known.
    reaper: Option<descendants::Reaper>,
    /// Only held: shared with concurrent runs, it ends when the last one drops its handle.
    _watchdog: Option<Arc<watchdog::Watchdog>>,
    /// Why the watchdog could not start, for the engine to emit.
    warning: Option<String>,
}

/// What ran before an iteration began: it is not the iteration's to end.
#[derive(Debug)]
pub struct IterationStart(Option<descendants::Snapshot>);

impl Containment {
    /// Starts (or joins) the watchdog and, with `subreaper` (Linux only), makes ralph a child
    /// subreaper until the containment is dropped.
    pub fn start(subreaper: bool) -> Self {
        let (watchdog, warning) = match watchdog::Watchdog::acquire() {
            Ok(watchdog) => (Some(watchdog), None),
            Err(warning) => (None, Some(warning)),
        };
        let reaper = subreaper
            .then(|| descendants::Reaper::start(watchdog.as_ref().map(|w| w.pid())))
            .flatten();
        Self {
            reaper,
            _watchdog: watchdog,
            warning,
        }
    }

    /// The run's own token, one of the `:`-separated parts of [`RUN_TOKEN_VAR`] in the
    /// environment of every process started while this containment holds the watchdog (and of
    /// whatever they start): for [`end_carriers`]. `None` without a watchdog.
    pub fn run_token(&self) -> Option<String> {
        let token = &self._watchdog.as_ref()?.token;
        token.rsplit(':').next().map(str::to_owned)
    }

    /// Why the watchdog could not start, once.
    pub fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    /// Notes what runs before an iteration.
    pub fn iteration_started(&self) -> IterationStart {
        IterationStart(self.reaper.as_ref().map(descendants::Reaper::snapshot))
    }

    /// Ends whatever the iteration started that still runs: SIGTERM, then SIGKILL after
    /// `grace`. Nothing without the subreaper. Returns warnings for the engine to emit.
    pub async fn iteration_ended(&self, start: IterationStart, grace: Duration) -> Vec<String> {
        match (&self.reaper, &start.0) {
            (Some(reaper), Some(before)) => reaper.end_new(before, grace).await,
            _ => Vec::new(),
        }
    }
}

/// Kills a child's process group when dropped, and aborts the tasks feeding it: whatever way
/// a run ends (an I/O error, a panic, an embedder dropping the run), nothing of the group
/// outlives it. `kill_on_drop` alone would reach the child, not its children.
pub(crate) struct GroupGuard {
    pgid: Option<i32>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl GroupGuard {
    /// Call with [`descendants::spawning`] held since the spawn.
    pub(crate) fn new(pgid: Option<i32>) -> Self {
        if let Some(pgid) = pgid {
            watchdog::register(pgid);
            descendants::supervise(pgid);
        }
        Self {
            pgid,
            tasks: Vec::new(),
        }
    }

    /// Aborts `task` when the guard is dropped.
    pub(crate) fn abort_on_drop(&mut self, task: tokio::task::JoinHandle<()>) {
        self.tasks.push(task);
    }

    /// SIGKILL to the group now, once the child was reaped; the guard then forgets the group,
    /// whose id the system may give to another one.
    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            signal_group(pgid, libc::SIGKILL);
            watchdog::unregister(pgid);
            descendants::release(pgid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Sends `signal` to every process of group `pgid`.
pub(crate) fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) with a negative pid only sends a signal; it touches no memory of ours.
    // ESRCH (the group is already gone) is the expected outcome and needs no handling.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminations_word_is_the_one_events_write() {
        for termination in [
            Termination::Natural,
            Termination::Timeout,
            Termination::IdleTimeout,
            Termination::RetryLimit,
            Termination::Interrupted,
            Termination::Killed,
        ] {
            let written = serde_json::to_value(termination).unwrap();
            assert_eq!(written, termination.as_str());
            assert_eq!(termination.to_string(), termination.as_str());
        }
    }

    /// Ignores output; never stops on an interrupt.
    struct Discard;

    impl Supervision for Discard {
        fn output(&mut self, _stream: Stream, _bytes: &[u8]) {}

        fn interrupt(&mut self, _signal: InterruptSignal) -> bool {
            false
        }
    }

    /// Whether `pid` is a live process (a zombie waiting for its reaper is not).
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            // The state follows the command name, which is in parentheses.
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            state != Some(Some('Z'))
        })
    }

    #[tokio::test]
    async fn dropping_a_running_process_kills_its_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let spec = ProcessSpec::shell(
            &format!("sleep 30 & echo $! > {}; wait", pid_file.display()),
            dir.path().to_path_buf(),
            Duration::from_secs(3),
        );
        let (_tx, mut signals) = mpsc::unbounded_channel();
        let mut supervision = Discard;
        let grandchild = {
            let running = run(&spec, &mut supervision, &mut signals);
            tokio::pin!(running);
            loop {
                tokio::select! {
                    _ = &mut running => panic!("the process ended by itself"),
                    () = tokio::time::sleep(Duration::from_millis(10)) => {}
                }
                let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
                if let Ok(pid) = pid.trim().parse::<i32>() {
                    break pid;
                }
            }
            // `running` is dropped here, mid-run: what an error or a cancelled run does.
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while alive(grandchild) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let left = alive(grandchild);
        if left {
            // SAFETY: kill(2) only sends a signal.
            unsafe { libc::kill(grandchild, libc::SIGKILL) };
        }
        assert!(!left, "the grandchild outlived the dropped run");
    }
}
