//! The multi-subnet harness: CLI -> scenario -> engine -> canisters ->
//! measurement -> report.

pub mod baseline;
pub mod caller_client;
pub mod chaos;
pub mod charts;
pub mod cli;
pub mod commands;
pub mod engines;
pub mod load;
pub mod profile;
pub mod report;
pub mod rounds;
pub mod scenario;
pub mod sweep;
pub mod table;
