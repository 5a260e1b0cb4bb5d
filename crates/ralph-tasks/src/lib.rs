//! Where a ralph loop's tasks live: the [`TaskList`] seam, the types it speaks in ([`ListedTask`],
//! [`TaskState`], [`Mark`], [`Asked`], [`Landed`], [`TaskListError`]), the order tasks run in
//! ([`run_order`]), the two built-in lists, prd.json ([`PrdList`] over [`prd`]) and a Markdown
//! checklist ([`MarkdownList`]), and [`forge::PullRequests`], what a forge answers for a task
//! landed as a pull request. An issue tracker's crate (`ralph-github`, `ralph-gitlab`,
//! `ralph-linear`) implements the seam with this crate alone; `ralph-escalation` gives every
//! list the same guarantees (the breaker, a revert that saves the abandoned work first,
//! blocking with a reason, resume).
//!
//! A list never loses what a person wrote: a [`Mark`] is applied to the file as it is at the
//! write, never to an older reading, only the bytes the mark changes change, and every file is
//! replaced whole (`ralph-atomic`). This crate knows nothing of the loop, git or processes: it
//! starts none, never prints, never sleeps but for the short re-reads of a file an editor is
//! saving, and depends on no async runtime.

pub mod forge;
mod list;
pub mod markdown;
pub mod prd;
mod prd_list;

pub use list::{
    ANSWER_POLL, Asked, Landed, ListedTask, Mark, STORY_PLACEHOLDERS, TASK_PLACEHOLDERS, TaskList,
    TaskListError, TaskState, counts, next, run_order,
};
pub use markdown::MarkdownList;
pub use prd::{Passes, Prd, PrdError, Story};
pub use prd_list::PrdList;
