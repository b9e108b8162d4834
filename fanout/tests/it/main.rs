//! ic-fanout's integration tests, one binary: a module per part of the
//! crate. proptest keeps their regressions in `../proptest-regressions/`
//! (its default: beside the directory that holds `main.rs`).

mod batches;
#[cfg(feature = "jobs")]
mod jobs;
mod once;
mod paces;
