//! Helpers that several test modules share.

pub mod big_module;
pub mod goals;
pub mod scenarios;
