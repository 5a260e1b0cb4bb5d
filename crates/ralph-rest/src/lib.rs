//! What ralph's forge clients share, with nothing of any one forge: a [`Token`] whose `Debug`
//! hides it, a [`Clock`] a test replaces, a rate limit's wait ([`rate_limit_wait`]), one HTTP
//! exchange at a time ([`Transport`]: never a wait of its own, given up at an interrupt, told of
//! when slow), pagination that neither loops nor leaves the API's host ([`Pages`]), the waits
//! a task list asks of escalation ([`Waits`]), issues as tasks ([`issue_tasks`]) and the words
//! of ralph's comments ([`words`]).
//!
//! It never prints, logs or sleeps. Each forge's crate turns a [`Reply`] into its own errors,
//! with its own hints.

mod basic;
mod clock;
pub mod issue_tasks;
mod pages;
mod rate_limit;
mod secret;
mod transport;
mod waits;
pub mod words;

pub use basic::basic_authorization;
pub use clock::{Clock, SystemClock};
pub use pages::{PageStop, Pages};
pub use rate_limit::{RateLimitHeaders, rate_limit_wait};
pub use secret::{HIDDEN, Token, checked_api_url, userinfo};
pub use transport::{Answer, Reply, Transport, encode_query_value, next_link};
pub use waits::{SharedFailures, WaitKind, Waitable, Waits};
