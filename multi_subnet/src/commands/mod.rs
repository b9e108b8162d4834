//! One file per command: its arguments and what it does. `network` is
//! `crate::network`, which the icp-cli launcher shares.

pub mod chaos;
pub mod compare;
pub mod example;
pub mod serve;
pub mod sweep;
