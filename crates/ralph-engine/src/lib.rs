//! The ralph loop engine.
