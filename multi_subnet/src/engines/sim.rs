//! The project's own simulator: a model of IC message routing that runs
//! the real canister wasm. Used where no PocketIC server is available.

use anyhow::{Result, anyhow};
use candid::Principal;
use sim::{MessageId, Sim};

use super::{Engine, EngineKind, IngressId, IngressOutcome};

/// How reports name this engine.
pub const DESCRIPTION: &str = "sim (this project's simulator: a model of IC message routing running the real canister wasm; not PocketIC)";

pub struct SimEngine {
    sim: Sim,
    submitted: Vec<MessageId>,
}

impl SimEngine {
    /// The harness's engine over `sim`, which `Sim::builder()` configures
    /// (its subnets, time step, cross-subnet latency, host memory).
    pub fn new(sim: Sim) -> Self {
        Self { sim, submitted: vec![] }
    }

    /// The simulator itself, for what only it can tell (per-canister statistics).
    pub fn sim(&self) -> &Sim {
        &self.sim
    }

    pub fn sim_mut(&mut self) -> &mut Sim {
        &mut self.sim
    }
}

impl Engine for SimEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Sim
    }

    fn description(&self) -> String {
        DESCRIPTION.into()
    }

    fn subnet_count(&self) -> usize {
        self.sim.subnets().len()
    }

    fn create_canister(&mut self, subnet: usize, controller: Principal) -> Result<Principal> {
        Ok(self.sim.create_canister(subnet, vec![controller])?)
    }

    fn install(&mut self, canister: Principal, wasm: &[u8], controller: Principal) -> Result<()> {
        Ok(self.sim.install_canister(canister, wasm, candid::encode_args(())?, controller)?)
    }

    fn submit(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressId> {
        let id = self
            .sim
            .submit_call(canister, sender, method, arg)
            .map_err(|r| anyhow!("{method} refused: {r}"))?;
        self.submitted.push(id);
        Ok(IngressId(self.submitted.len() - 1))
    }

    fn tick(&mut self) {
        self.sim.tick();
    }

    fn ingress_status(&mut self, id: IngressId) -> Option<IngressOutcome> {
        self.sim.ingress_status(self.submitted[id.0])
    }

    fn cycle_balance(&mut self, canister: Principal) -> Result<u128> {
        Ok(self.sim.cycle_balance(canister)?)
    }

    fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> IngressOutcome {
        self.sim.query_call(canister, sender, method, arg)
    }
}
