//! The harness's integration tests, one module per subject, in one binary
//! so that the simulator, the servers and pocket-ic are linked once.

mod common;

mod baselines;
mod canisters_from_elsewhere;
mod chaos;
mod charts;
mod command_line;
mod determinism;
mod docs_links;
mod goals;
mod hostile_modules_on_sim_server;
mod icp_cli_on_network;
mod icrc1_conformance;
mod jobs;
mod load;
mod no_server;
mod notify_all;
mod one_management_canister;
mod pocket_ic_client_on_sim_server;
mod readme;
mod scenarios;
mod strategies;
