//! The served simulator's integration tests, one module per subject, in one
//! binary.

mod endpoint_table;
mod pocket_ic_live_on_sim_server;
mod pocket_ic_sim_command_line;
