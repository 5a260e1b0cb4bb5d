//! PTY mode: the agent runs on a pseudo-terminal, for agents that only behave on one
//! (interactive TUIs, tools that buffer or change their output when piped).
//!
//! Still the process layer: the same [`Supervision`] and the same supervisor (group kill,
//! timeouts, drain) as [`super::run`]. The agent is the session leader of its terminal, so its
//! process group is its pid. Output (stdout and stderr are one stream on a terminal) is handed
//! over chunk by chunk as [`Stream::Stdout`], raw, escape sequences included.
//!
//! Ctrl+C in interactive mode belongs to the agent: a single one is written to its terminal as
//! the byte 0x03, so the agent's own terminal settings decide what it means (SIGINT for a
//! line-mode tool, a key for a TUI in raw mode); [`Supervision::interrupt_interactive`] decides
//! when it is ralph's instead (a second one within a second).

use std::io;
use std::os::fd::AsRawFd;

use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

use super::supervisor::{Read, Reader};
use super::{ProcessExit, ProcessSpec, READ_CHUNK, Spawned, Supervision, read_some};
use crate::{InterruptSignal, Stream};

/// The byte a terminal sends for Ctrl+C.
const CTRL_C: u8 = 0x03;

/// The byte a terminal sends for Ctrl+D: end of file on a line-mode terminal.
const CTRL_D: u8 = 0x04;

/// The byte that makes a terminal take the next byte literally (VLNEXT, Ctrl+V).
const LNEXT: u8 = 0x16;

/// Longest stretch of one line typed before it is pushed to the agent with Ctrl+D. A terminal
/// holds at most 4095 bytes of an unfinished line and drops the rest: a long prompt line (a
/// command's output, a minified file) would reach the agent cut short.
const TYPED_STRETCH: usize = 1024;

/// A terminal size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtySize {
    /// Lines.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

impl Default for PtySize {
    /// 80x24, the size an agent gets when ralph has no terminal.
    fn default() -> Self {
        Self { rows: 24, cols: 80 }
    }
}

/// The user's side of PTY mode, given to the engine by its embedder: what the user types (sent
/// to the agent in interactive mode) and the size of the user's terminal (the agent's terminal
/// follows it). The engine never reads its own standard input nor asks the OS for a size.
#[derive(Debug)]
pub struct PtyTerminal {
    input: mpsc::UnboundedReceiver<Vec<u8>>,
    input_open: bool,
    size: watch::Receiver<PtySize>,
    size_open: bool,
}

impl PtyTerminal {
    /// Input bytes from `input`, the size from `size` (a change resizes the running agent's
    /// terminal).
    pub fn new(input: mpsc::UnboundedReceiver<Vec<u8>>, size: watch::Receiver<PtySize>) -> Self {
        Self {
            input,
            input_open: true,
            size,
            size_open: true,
        }
    }

    /// No input and a fixed 80x24 size: an embedder without a terminal.
    pub fn detached() -> Self {
        let (_, input) = mpsc::unbounded_channel();
        let (_, size) = watch::channel(PtySize::default());
        Self {
            input,
            input_open: false,
            size,
            size_open: false,
        }
    }

    fn current_size(&self) -> PtySize {
        *self.size.borrow()
    }
}

/// What the writer task does to the agent's terminal, in order.
enum PtyWrite {
    Bytes(Vec<u8>),
    Resize(PtySize),
}

/// Whether a person works in the agent's terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtyMode {
    /// Nobody: the prompt is typed in and followed by Ctrl+D (end of input).
    Autonomous,
    /// A person: the prompt is typed in, and the terminal stays open to their keys.
    Interactive,
}

/// Runs `spec` on a pseudo-terminal to its end. `spec.stdin`, when set, is typed into the
/// terminal (echo off, so it does not come back as output), followed in autonomous mode by
/// Ctrl+D (end of input).
pub async fn run(
    spec: &ProcessSpec,
    mode: PtyMode,
    terminal: &mut PtyTerminal,
    supervision: &mut dyn Supervision,
    signals: &mut mpsc::UnboundedReceiver<InterruptSignal>,
) -> io::Result<ProcessExit> {
    let interactive = mode == PtyMode::Interactive;
    let (pty, pts) = pty_process::open().map_err(io_error)?;
    pty.resize(to_size(terminal.current_size()))
        .map_err(io_error)?;
    if spec.stdin.is_some() {
        // A prompt typed into the terminal would otherwise be echoed back into the output, the
        // log and the marker scanner (prompts often describe the markers).
        echo_off(&pts);
    }
    // The agent is the session leader of its terminal: its process group is its pid.
    // A PTY spawn forks and execs as `execvp` does, which would run a script without `#!`.
    let mut spawned = Spawned::new(spec, false, |program| {
        let command = pty_process::Command::new(program);
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        // SAFETY: the hook only makes async-signal-safe calls (see `register_from_child`); it
        // runs after the child made itself a session leader.
        let command = unsafe { command.pre_exec(super::watchdog::register_from_child()) };
        let command = match super::watchdog::token() {
            Some(token) => command.env(super::watchdog::TOKEN_VAR, token),
            None => command,
        };
        let command = spec
            .env_remove
            .iter()
            .fold(command, |command, name| command.env_remove(name));
        let command = command
            .args(&spec.args)
            .current_dir(&spec.cwd)
            .env("PWD", super::child_pwd(&spec.cwd))
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .kill_on_drop(true);
        // A confined spawn forks from the confined thread, whose confinement the child inherits.
        match &spec.child_setup {
            Some(setup) => setup.spawn(move || command.spawn(pts).map_err(io_error)),
            None => command.spawn(pts).map_err(io_error),
        }
    })?;

    let (reader, writer) = pty.into_split();
    let (to_pty, writes) = mpsc::unbounded_channel();
    // Writes go through their own task so an agent that does not read its input never stalls
    // the reading of its output (or the idle clock).
    spawned
        .group
        .abort_on_drop(tokio::spawn(write_pty(writer, writes)));
    if let Some(prompt) = &spec.stdin {
        let _ = to_pty.send(PtyWrite::Bytes(typed(prompt, !interactive)));
    }

    let mut reader = Terminal {
        reader: Some(reader),
        buf: vec![0u8; READ_CHUNK],
        eof_reported: false,
        interactive,
        terminal,
        to_pty,
    };
    spawned
        .supervise(&mut reader, spec, supervision, signals)
        .await
}

/// The agent's terminal: its output, and the user's input and size on their way to it.
struct Terminal<'a> {
    reader: Option<pty_process::OwnedReadPty>,
    buf: Vec<u8>,
    eof_reported: bool,
    interactive: bool,
    terminal: &'a mut PtyTerminal,
    to_pty: mpsc::UnboundedSender<PtyWrite>,
}

impl Reader for Terminal<'_> {
    /// What a terminal closing does: SIGHUP, then SIGTERM.
    const STOP_SIGNALS: &'static [i32] = &[libc::SIGHUP, libc::SIGTERM];

    async fn next(&mut self, running: bool, exited: bool) -> Read {
        let terminal = &mut *self.terminal;
        loop {
            if self.reader.is_none() && !self.eof_reported {
                self.eof_reported = true;
                return Read::Eof;
            }
            tokio::select! {
                read = read_some(&mut self.reader, &mut self.buf) => match read {
                    Some(n) => return Read::Chunk(Stream::Stdout, n),
                    // EIO once every holder of the terminal's other side is gone.
                    None => self.reader = None,
                },
                input = terminal.input.recv(), if self.interactive && terminal.input_open && running => {
                    match input {
                        Some(bytes) => {
                            let _ = self.to_pty.send(PtyWrite::Bytes(bytes));
                        }
                        None => terminal.input_open = false,
                    }
                }
                changed = terminal.size.changed(), if terminal.size_open && !exited => {
                    match changed {
                        Ok(()) => {
                            let _ = self.to_pty.send(PtyWrite::Resize(terminal.current_size()));
                        }
                        Err(_) => terminal.size_open = false,
                    }
                }
            }
        }
    }

    fn chunk(&self, _stream: Stream, n: usize) -> &[u8] {
        &self.buf[..n]
    }

    fn close(&mut self) {
        // The terminal is still held open by a process that escaped the group.
        self.reader = None;
        self.eof_reported = true;
    }

    fn interrupt(&mut self, supervision: &mut dyn Supervision, signal: InterruptSignal) -> bool {
        if !self.interactive {
            return supervision.interrupt(signal);
        }
        let stop = supervision.interrupt_interactive(signal);
        if !stop {
            let _ = self.to_pty.send(PtyWrite::Bytes(vec![CTRL_C]));
        }
        stop
    }
}

/// The keys that type `prompt` into a terminal in its initial (canonical) mode so that the
/// agent reads the prompt exactly as a pipe would have given it, followed by Ctrl+D (end of
/// input) when `eof`, else by Enter if the prompt does not end a line.
///
/// The terminal's line editing would otherwise act on the prompt: a carriage return becomes a
/// newline, Ctrl+C, Ctrl+Z or Ctrl+\ signal the agent, DEL and Ctrl+U erase, Ctrl+D ends the
/// input early, and a line past 4095 bytes is cut. So every control byte but newline goes
/// after a Ctrl+V (take the next byte literally), and a long line is pushed to the agent in
/// stretches with Ctrl+D, which on an unfinished line hands it over without ending the input.
fn typed(prompt: &[u8], eof: bool) -> Vec<u8> {
    let mut keys = Vec::with_capacity(prompt.len() + prompt.len() / TYPED_STRETCH + 2);
    let mut stretch = 0;
    for &byte in prompt {
        if byte == b'\n' {
            stretch = 0;
        } else {
            if stretch == TYPED_STRETCH {
                keys.push(CTRL_D);
                stretch = 0;
            }
            stretch += 1;
            if byte < 0x20 || byte == 0x7f {
                keys.push(LNEXT);
            }
        }
        keys.push(byte);
    }
    if eof {
        if prompt.last().is_some_and(|&b| b != b'\n') {
            // Hands over the unfinished last line as it is, as a pipe would.
            keys.push(CTRL_D);
        }
        keys.push(CTRL_D);
    } else if !prompt.ends_with(b"\n") {
        // Typed for someone at the keyboard: Enter sends it.
        keys.push(b'\n');
    }
    keys
}

async fn write_pty(
    mut pty: pty_process::OwnedWritePty,
    mut writes: mpsc::UnboundedReceiver<PtyWrite>,
) {
    while let Some(write) = writes.recv().await {
        match write {
            PtyWrite::Bytes(bytes) => {
                // EIO: the agent's side is closed; nothing more can be delivered.
                if pty.write_all(&bytes).await.is_err() {
                    break;
                }
            }
            PtyWrite::Resize(size) => {
                let _ = pty.resize(to_size(size));
            }
        }
    }
}

fn to_size(size: PtySize) -> pty_process::Size {
    pty_process::Size::new(size.rows, size.cols)
}

fn io_error(err: pty_process::Error) -> io::Error {
    match err {
        pty_process::Error::Io(err) => err,
        other => io::Error::other(other.to_string()),
    }
}

/// Turns echo off on the agent's terminal (the agent may turn it back on, as TUIs do).
fn echo_off(pts: &impl AsRawFd) {
    let fd = pts.as_raw_fd();
    // SAFETY: `termios` is plain data that tcgetattr fills in whole before it is read; both
    // calls only read or write that struct and the terminal behind `fd`, which `pts` keeps open
    // for the duration of the calls.
    unsafe {
        let mut termios: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut termios) == 0 {
            termios.c_lflag &= !(libc::ECHO | libc::ECHONL);
            libc::tcsetattr(fd, libc::TCSANOW, &termios);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_are_typed_literally_and_the_input_ends() {
        assert_eq!(
            typed(b"a\r\n\x03\x7f\x04\tb", true),
            b"a\x16\r\n\x16\x03\x16\x7f\x16\x04\x16\tb\x04\x04"
        );
        assert_eq!(typed(b"done\n", true), b"done\n\x04");
        assert_eq!(typed(b"", true), b"\x04");
        // Interactive: no end of input, and Enter after the prompt.
        assert_eq!(typed(b"done\n", false), b"done\n");
        assert_eq!(typed(b"go", false), b"go\n");
    }

    #[test]
    fn a_long_line_is_pushed_in_stretches_never_as_an_empty_one() {
        let line = vec![b'x'; 2 * TYPED_STRETCH];
        let mut want = vec![b'x'; TYPED_STRETCH];
        want.push(CTRL_D);
        want.extend(vec![b'x'; TYPED_STRETCH]);
        want.push(b'\n');
        assert_eq!(typed(&line, false), want);
        // A line of exactly one stretch ends with its newline, not with Ctrl+D: Ctrl+D on an
        // empty line would be the end of the input.
        let mut exact = vec![b'y'; TYPED_STRETCH];
        exact.push(b'\n');
        assert_eq!(typed(&exact, false), exact);
    }
}
