//! Where a client's time comes from.

use std::time::SystemTime;

/// Where the client's time comes from: the wall clock a rate limit's reset time is read
/// against. Tests pass a fixed one.
pub trait Clock: Send {
    /// The time now.
    fn now(&self) -> SystemTime;
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}
