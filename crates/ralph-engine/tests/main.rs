//! The crate's integration tests, one module per file of this folder, in one test binary (one
//! link, not one per file; `xtask`'s tidy test checks that none is left out).

mod demo;
mod embedding;
mod loop_control;
mod placeholders;
mod resume;
mod run_api;
mod seams;
mod state_prompts;
mod state_waits;
mod task_source_defaults;
mod task_state;
mod task_waits;
mod virtual_time;
mod vocabulary_reload;
mod wait_timing;
