//! The project's own simulator, under the IC model of `serve` and
//! `network`: its management canister creates and installs the canisters,
//! and ingress and queries go through the model, so every path meets the
//! same IC. Used where no PocketIC server is available.

use anyhow::Result;
use candid::Principal;
use ic_model::{Ic, Keys};
use ic_sim_client::api::{FaultReport, FaultSpec};
use sim::Sim;

use super::{Engine, EngineKind};

/// How reports name this engine.
pub const DESCRIPTION: &str = "sim (this project's simulator: a model of IC message routing running the real canister wasm; not PocketIC)";

/// The keys the harness's ICs sign their state with: any seed would do,
/// and a fixed one keeps runs alike.
const KEY_SEED: u64 = 0;

/// The harness's engine: the IC model over the simulator, whose
/// `engine` field is the simulator itself, for what only it can tell
/// (per-canister statistics).
pub type SimEngine = Ic<Sim>;

/// The harness's engine over `sim`, which `Sim::builder()` configures
/// (its subnets, time step, cross-subnet latency, host memory): the IC
/// model over it, without ledgers.
pub fn sim_engine(sim: Sim) -> SimEngine {
    Ic::new(sim, Keys::from_seed(KEY_SEED), false)
}

impl Engine for SimEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Sim
    }

    fn subnets(&self) -> Vec<Principal> {
        self.engine.subnets()
    }

    fn cycle_balance(&mut self, canister: Principal) -> Result<u128> {
        Ok(self.engine.cycle_balance(canister)?)
    }

    fn set_xnet_latency_rounds(&mut self, rounds: u64) -> Result<()> {
        self.engine.set_xnet_latency_rounds(rounds);
        Ok(())
    }

    /// As `serve` and `network` turn them on: one reading of a spec for every path.
    fn inject_faults(&mut self, spec: &FaultSpec) -> Result<()> {
        ic_model::Engine::inject_faults(&mut self.engine, spec.clone()).map_err(anyhow::Error::msg)
    }

    fn fault_report(&mut self) -> Result<FaultReport> {
        Ok(ic_model::Engine::fault_report(&self.engine))
    }
}
