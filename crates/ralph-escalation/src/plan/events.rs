//! What a plan reports: its events and end reasons are wire types, ralph-events'
//! (`ralph_events::plan`), re-exported here as the plan's API.

pub(crate) use ralph_events::plan::end;
pub use ralph_events::plan::{PLAN_INVALID, PLAN_SHOWN, PLAN_WRITTEN, PlanEvent};
