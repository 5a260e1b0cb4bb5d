//! The `ralph` command.
fn main() {}
