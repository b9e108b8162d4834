//! Replica-style instruction metering: the cost table and the pass that
//! makes a module count its instructions as the replica does.

pub mod costs;
mod instrument;

pub use instrument::instrument;
