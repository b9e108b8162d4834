//! The project's own simulator, under the IC model of `serve` and
//! `network`: its management canister creates and installs the canisters,
//! and ingress and queries go through the model, so every path meets the
//! same IC. Used where no PocketIC server is available.

use anyhow::{Context, Result, anyhow, bail};
use candid::{Decode, Encode, Principal};
use ic_model::ic_management_canister_types::{
    CanisterIdRecord, CanisterInstallMode, CanisterSettings, InstallCodeArgs,
    ProvisionalCreateCanisterWithCyclesArgs,
};
use ic_model::{Effective, Ic, Keys};
use sim::Sim;

use super::{Engine, EngineKind, IngressId, IngressOutcome};

/// How reports name this engine.
pub const DESCRIPTION: &str = "sim (this project's simulator: a model of IC message routing running the real canister wasm; not PocketIC)";

/// How many rounds [`Engine::call_management`] waits for its answer, as
/// the pocket-ic client's update calls do.
const MAX_ROUNDS_OF_AN_UPDATE: usize = 100;

/// The keys the harness's ICs sign their state with: any seed would do,
/// and a fixed one keeps runs alike.
const KEY_SEED: u64 = 0;

pub struct SimEngine {
    ic: Ic<Sim>,
}

impl SimEngine {
    /// The harness's engine over `sim`, which `Sim::builder()` configures
    /// (its subnets, time step, cross-subnet latency, host memory): the IC
    /// model over it, without ledgers.
    pub fn new(sim: Sim) -> Self {
        Self { ic: Ic::new(sim, Keys::from_seed(KEY_SEED), false) }
    }

    /// The simulator itself, for what only it can tell (per-canister statistics).
    pub fn sim(&self) -> &Sim {
        &self.ic.engine
    }

    pub fn sim_mut(&mut self) -> &mut Sim {
        &mut self.ic.engine
    }

    /// Calls the management canister as `sender`, at once, as a test
    /// harness's provisional calls are.
    fn manage(
        &mut self,
        effective: Effective,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>> {
        self.ic
            .call_management(effective, sender, method, &arg)
            .map_err(|reject| anyhow!("{method}: {reject}"))
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
        self.sim().subnets().len()
    }

    fn create_canister(&mut self, subnet: usize, controller: Principal) -> Result<Principal> {
        let subnets = self.sim().subnets();
        let id = *subnets
            .get(subnet)
            .with_context(|| format!("no subnet {subnet}: there are {}", subnets.len()))?;
        let args = ProvisionalCreateCanisterWithCyclesArgs {
            amount: None,
            settings: Some(CanisterSettings { controllers: Some(vec![controller]), ..Default::default() }),
            specified_id: None,
            sender_canister_version: None,
        };
        let created = self.manage(
            Effective::Subnet(id),
            controller,
            "provisional_create_canister_with_cycles",
            Encode!(&args)?,
        )?;
        Ok(Decode!(&created, CanisterIdRecord)?.canister_id)
    }

    fn install(&mut self, canister: Principal, wasm: &[u8], controller: Principal) -> Result<()> {
        let args = InstallCodeArgs {
            mode: CanisterInstallMode::Install,
            canister_id: canister,
            wasm_module: wasm.to_vec(),
            arg: candid::encode_args(())?,
            sender_canister_version: None,
        };
        self.manage(Effective::Canister(canister), controller, "install_code", Encode!(&args)?)?;
        Ok(())
    }

    fn submit(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressId> {
        let number = self
            .ic
            .submit(Effective::Canister(canister), canister, sender, method, arg)
            .map_err(|r| anyhow!("{method} refused: {r}"))?;
        Ok(IngressId(number as usize))
    }

    fn tick(&mut self) {
        self.ic.execute_round();
    }

    fn ingress_status(&mut self, id: IngressId) -> Option<IngressOutcome> {
        self.ic.outcome(id.0 as u64)
    }

    fn cycle_balance(&mut self, canister: Principal) -> Result<u128> {
        Ok(self.sim().cycle_balance(canister)?)
    }

    fn call_management(
        &mut self,
        target: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressOutcome> {
        let management = Principal::management_canister();
        let number = match self.ic.submit(Effective::Canister(target), management, sender, method, arg) {
            Ok(number) => number,
            Err(refused) => return Ok(Err(refused)),
        };
        for _ in 0..MAX_ROUNDS_OF_AN_UPDATE {
            self.tick();
            if let Some(outcome) = self.ic.outcome(number) {
                return Ok(outcome);
            }
        }
        bail!("{method} did not complete within {MAX_ROUNDS_OF_AN_UPDATE} rounds")
    }

    fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> IngressOutcome {
        self.ic.query(canister, sender, method, arg)
    }
}
