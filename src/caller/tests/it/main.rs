//! The caller canister's integration tests on its real wasm, in one binary
//! so that the simulator is linked once.

mod fuzz;
mod on_sim;
