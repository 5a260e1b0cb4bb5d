//! The crate's integration tests, one module per file of this folder, in one test binary.
