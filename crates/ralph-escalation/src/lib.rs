//! Escalation for ralph loops.
