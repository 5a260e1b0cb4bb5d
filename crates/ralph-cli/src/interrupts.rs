//! The interrupts ralph received, counted as they arrive, for code that blocks the thread the
//! runtime's signal handling runs on: a request to GitHub gives up when the count grows, and a
//! step of the start is cut short. Counted from the moment ralph takes the signals instead of
//! dying from them ([`crate::run::forward_signals`]).

use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use ralph_engine::InterruptSignal;

/// SIGINT, SIGTERM and SIGHUP received so far.
pub(crate) static COUNT: AtomicU64 = AtomicU64::new(0);
/// The last of them.
static LAST: AtomicI32 = AtomicI32::new(0);

/// Counts SIGINT, SIGTERM and SIGHUP from now on, beside the runtime's own handling of them.
pub(crate) fn count_from_now() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the action only stores to atomics, which is async-signal-safe.
            let _ = unsafe {
                signal_hook_registry::register(signal, move || {
                    LAST.store(signal, Ordering::SeqCst);
                    COUNT.fetch_add(1, Ordering::SeqCst);
                })
            };
        }
    });
}

/// The count now.
pub(crate) fn count() -> u64 {
    COUNT.load(Ordering::SeqCst)
}

/// The last signal, when one came since the count was `before`.
pub(crate) fn since(before: u64) -> Option<InterruptSignal> {
    if count() == before {
        return None;
    }
    Some(match LAST.load(Ordering::SeqCst) {
        libc::SIGTERM => InterruptSignal::Term,
        libc::SIGHUP => InterruptSignal::Hup,
        _ => InterruptSignal::Int,
    })
}
