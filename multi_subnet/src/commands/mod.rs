//! One file per command: its arguments and what it does. `network`'s
//! arguments are also the icp-cli launcher's (`bin/network_launcher.rs`).

pub mod chaos;
pub mod compare;
pub mod example;
pub mod network;
pub mod serve;
pub mod sweep;
