//! PTY mode on ralph's side: the flags merged with the frontmatter, ralph's own terminal in raw
//! mode (and always put back), its size, and its input forwarded to the engine.
//!
//! Ctrl+C in interactive mode: with the terminal in raw mode the key arrives as the byte 0x03 on
//! standard input instead of SIGINT. ralph turns that byte into the interrupt SIGINT would have
//! been (sent straight to the engine: two signals in a row could merge into one), so a keyboard
//! Ctrl+C and `kill -INT` mean the same: the engine hands a single one to the agent (as 0x03 on
//! its terminal) and stops the loop on a second within a second.

use std::io::{IsTerminal, Read};
use std::sync::OnceLock;

use ralph_engine::{InterruptSignal, PtySize, PtyTerminal};
use ralph_frontmatter::{PtyConfig, PtyMode};
use rustix::stdio::stdin;
use rustix::termios::{OptionalActions, Termios, tcgetattr, tcsetattr};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};

/// The terminal settings found before raw mode, for the panic hook and the fatal-signal handler,
/// which cannot reach the guard.
static SAVED: OnceLock<Termios> = OnceLock::new();

/// The PTY settings of a run: the frontmatter's `pty` block with the command line's `--pty`
/// and `-i` over it (each of them turns PTY mode on).
pub(crate) fn pty_config(
    file: Option<PtyConfig>,
    pty: bool,
    interactive: bool,
) -> Option<PtyConfig> {
    if file.is_none() && !pty && !interactive {
        return None;
    }
    let mut config = file.unwrap_or_default();
    if interactive {
        config.mode = PtyMode::Interactive;
    }
    Some(config)
}

/// Connects ralph's terminal to the engine for a PTY run: the size (80x24 without a terminal),
/// followed on SIGWINCH, and in interactive mode standard input, with a terminal on it put in
/// raw mode until the returned guard is dropped; a Ctrl+C typed there goes to `interrupts`.
/// Must run inside the tokio runtime.
pub(crate) fn connect(
    interactive: bool,
    interrupts: mpsc::UnboundedSender<InterruptSignal>,
) -> (PtyTerminal, Option<RawMode>) {
    let (size_tx, size_rx) = watch::channel(terminal_size().unwrap_or_default());
    match signal(SignalKind::window_change()) {
        Ok(mut resized) => {
            tokio::spawn(async move {
                while resized.recv().await.is_some() {
                    if let Some(size) = terminal_size() {
                        if size_tx.send(size).is_err() {
                            break;
                        }
                    }
                }
            });
        }
        Err(err) => tracing::warn!("cannot watch for terminal resizes: {err}"),
    }
    let (input_tx, input_rx) = mpsc::unbounded_channel();
    let mut raw = None;
    if interactive {
        if std::io::stdin().is_terminal() {
            raw = RawMode::enable();
        }
        let raw_input = raw.is_some();
        // A plain thread: standard input has no readiness to wait on when it is a file, and
        // a blocked read must not hold the runtime. It ends with ralph.
        std::thread::spawn(move || {
            let interrupts = raw_input.then_some(interrupts);
            forward_input(&input_tx, interrupts.as_ref());
        });
    }
    (PtyTerminal::new(input_rx, size_rx), raw)
}

/// Copies standard input to the engine until EOF. With `interrupts`, the bytes come from a
/// keyboard in raw mode, where Ctrl+C is 0x03: it goes to `interrupts` instead.
fn forward_input(
    input: &mpsc::UnboundedSender<Vec<u8>>,
    interrupts: Option<&mpsc::UnboundedSender<InterruptSignal>>,
) {
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 4096];
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let ctrl_c_at = interrupts.and_then(|_| rest.iter().position(|&b| b == 0x03));
            let (before, ctrl_c) = match ctrl_c_at {
                Some(at) => (&rest[..at], true),
                None => (rest, false),
            };
            if !before.is_empty() && input.send(before.to_vec()).is_err() {
                return;
            }
            rest = &rest[before.len()..];
            if let (true, Some(interrupts)) = (ctrl_c, interrupts) {
                if interrupts.send(InterruptSignal::Int).is_err() {
                    return;
                }
                rest = &rest[1..];
            }
        }
    }
}

/// The size of ralph's terminal: standard output's, else standard input's or error's.
fn terminal_size() -> Option<PtySize> {
    use rustix::stdio::{stderr, stdin, stdout};
    [stdout(), stdin(), stderr()].into_iter().find_map(|fd| {
        let ws = rustix::termios::tcgetwinsize(fd).ok()?;
        (ws.ws_row > 0 && ws.ws_col > 0).then_some(PtySize {
            rows: ws.ws_row,
            cols: ws.ws_col,
        })
    })
}

/// ralph's terminal in raw mode: keys go to the agent as typed (Ctrl+C included), nothing is
/// echoed twice. Output processing stays on so ralph's own lines still start at the left.
/// Dropping the guard restores the settings; a panic or a fatal signal restores them too.
#[derive(Debug)]
pub(crate) struct RawMode {
    saved: Termios,
}

impl RawMode {
    /// Puts the terminal on standard input in raw mode; `None` if it is not a terminal.
    fn enable() -> Option<Self> {
        let saved = tcgetattr(stdin()).ok()?;
        let mut raw = saved.clone();
        raw.make_raw();
        raw.output_modes = saved.output_modes;
        tcsetattr(stdin(), OptionalActions::Now, &raw).ok()?;
        let _ = SAVED.set(saved.clone());
        install_restorers();
        Some(Self { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore(&self.saved);
    }
}

/// Puts standard input's terminal settings back. A raw system call, so a signal handler may
/// call it.
fn restore(saved: &Termios) {
    let _ = tcsetattr(stdin(), OptionalActions::Now, saved);
}

/// A panic hook and a handler for the fatal signal ralph does not otherwise handle (SIGQUIT),
/// putting the terminal back first. SIGINT, SIGTERM and SIGHUP go through the engine and end
/// ralph normally, dropping the guard.
fn install_restorers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(saved) = SAVED.get() {
                restore(saved);
            }
            previous(info);
        }));
        for sig in [libc::SIGQUIT] {
            // SAFETY: `action` is zeroed plain data with a handler that only calls
            // async-signal-safe functions (tcsetattr, raise); SA_RESETHAND puts the default
            // action back first, so the re-raised signal ends ralph as it would have.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = restore_and_reraise as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_RESETHAND;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    });
}

extern "C" fn restore_and_reraise(sig: libc::c_int) {
    // OnceLock::get is an atomic load: safe in a signal handler.
    if let Some(saved) = SAVED.get() {
        restore(saved);
    }
    // SAFETY: raise(3) is async-signal-safe; the default action is back (SA_RESETHAND), and the
    // signal is delivered once this handler returns.
    unsafe {
        libc::raise(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: PtyConfig = PtyConfig::new(PtyMode::Autonomous);

    #[test]
    fn no_pty_without_the_block_or_a_flag() {
        assert_eq!(pty_config(None, false, false), None);
    }

    #[test]
    fn the_frontmatter_block_is_kept_without_flags() {
        assert_eq!(pty_config(Some(FILE), false, false), Some(FILE));
    }

    #[test]
    fn pty_flag_turns_autonomous_mode_on() {
        let got = pty_config(None, true, false).unwrap();
        assert_eq!(got.mode, PtyMode::Autonomous);
    }

    #[test]
    fn interactive_implies_pty_and_overrides_the_mode() {
        let got = pty_config(Some(FILE), false, true).unwrap();
        assert_eq!(got.mode, PtyMode::Interactive);
        assert!(pty_config(None, false, true).is_some());
    }
}
