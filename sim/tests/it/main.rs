//! The simulator's integration tests, one module per subject, in one binary
//! so that the simulator and its dependencies are linked once.

mod common;

mod bounded;
mod composite_queries;
mod faults;
mod fuzz_modules;
mod hostile;
mod hostile_modules;
mod metering;
mod model;
mod payload_limits;
mod properties;
mod rounds_and_time;
mod system_api;
mod threads;
