//! The one seam between the harness and what runs the canisters. Everything
//! above this trait is engine-agnostic; only `main` picks an implementation.

pub mod pocket_ic;
pub mod pocket_ic_server;
pub mod sim;

use anyhow::{Context, Result, anyhow, bail};

use crate::profile::Profile;
pub use crate::profile::TimeStep;
use candid::{Decode, Encode, Principal};
pub use ic_error_types::RejectCode;
use ic_model::ic_management_canister_types::{
    CanisterIdRecord, CanisterInstallMode, CanisterSettings, InstallCodeArgs,
    ProvisionalCreateCanisterWithCyclesArgs,
};
use ic_sim_client::api::{FaultReport, FaultSpec};
use serde::Serialize;
use std::fmt;

/// Which engine produced a figure. Reports always carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum EngineKind {
    #[serde(rename = "pocket-ic")]
    PocketIc,
    #[serde(rename = "sim")]
    Sim,
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EngineKind::PocketIc => "pocket-ic",
            EngineKind::Sim => "sim",
        })
    }
}

/// Which engine to use, as chosen on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// PocketIC if a server is available, else the simulator.
    Auto,
    /// A PocketIC server (--pocket-ic-url, POCKET_IC_BIN, or the pocket-ic crate's cached copy); never downloaded.
    PocketIc,
    /// This project's simulator, which runs the real canister wasm on a model of the IC.
    Sim,
}

/// Starts engines of one kind: the choice resolved once (a PocketIC server
/// found, or not), then as many instances as a run needs.
#[derive(Clone, Debug)]
pub enum EngineFactory {
    PocketIc(pocket_ic::Server),
    Sim,
}

/// A resolved choice, and why `auto` fell back to the simulator if it did
/// (`main` says so after a successful run; a failed one ends with its error
/// line alone).
pub struct Resolved {
    pub factory: EngineFactory,
    pub fallback_note: Option<String>,
}

impl EngineFactory {
    /// Resolves `choice`. Checked before anything is built: a missing server
    /// is the common failure. A server URL, when given, is the PocketIC
    /// engine's server (the simulator engine has no use for it).
    pub fn resolve(choice: EngineChoice, pocket_ic_url: Option<&url::Url>) -> Result<Resolved> {
        let find = || match pocket_ic_url {
            Some(url) => Ok(pocket_ic::Server::Url(url.clone())),
            None => pocket_ic_server::find().map(pocket_ic::Server::Binary),
        };
        let (factory, fallback_note) = match choice {
            EngineChoice::Sim => (Self::Sim, None),
            EngineChoice::PocketIc => (Self::PocketIc(find().map_err(anyhow::Error::msg)?), None),
            EngineChoice::Auto => match find() {
                Ok(server) => (Self::PocketIc(server), None),
                Err(why) => (Self::Sim, Some(format!("using the simulator, not PocketIC: {why}"))),
            },
        };
        Ok(Resolved { factory, fallback_note })
    }

    pub fn kind(&self) -> EngineKind {
        match self {
            Self::PocketIc(_) => EngineKind::PocketIc,
            Self::Sim => EngineKind::Sim,
        }
    }

    pub fn description(&self) -> String {
        match self {
            Self::PocketIc(server) => pocket_ic::describe(server),
            Self::Sim => sim::DESCRIPTION.into(),
        }
    }

    /// A fresh IC with `subnets` application subnets whose rounds follow
    /// `profile`. Mainnet's rounds between subnets need the simulator: a
    /// PocketIC server refuses them.
    pub fn start_profile(&self, subnets: usize, profile: Profile) -> Result<Box<dyn Engine>> {
        let mut engine = self.start(subnets, profile.time_step())?;
        if let Profile::Mainnet { xnet_latency_rounds, .. } = profile {
            engine.set_xnet_latency_rounds(xnet_latency_rounds).context("--profile mainnet")?;
        }
        Ok(engine)
    }

    /// A fresh IC with `subnets` application subnets.
    pub fn start(&self, subnets: usize, step: TimeStep) -> Result<Box<dyn Engine>> {
        Ok(match self {
            Self::PocketIc(server) => {
                Box::new(pocket_ic::PocketIcEngine::start_with_time_step(server.clone(), subnets, step)?)
            }
            Self::Sim => Box::new(sim::sim_engine(
                ::sim::Sim::builder().with_subnets(subnets).with_time_step(step.0).build(),
            )),
        })
    }
}

/// A message submitted with [`Engine::submit_update`]: the ticket its
/// outcome is read by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IngressId(pub u64);

/// An IC reject: its error code, reject code and message (`ic_reject`'s,
/// the simulator's and the model's; the PocketIC engine converts its
/// rejects to it).
pub use ::sim::Reject;

/// An IC as a client reaches it; every engine is one.
pub use ic_model::{CanisterCall, Effective, Interface};

/// The final state of an ingress message: the reply bytes or the reject.
pub type IngressOutcome = std::result::Result<Vec<u8>, Reject>;

/// How many rounds [`Engine::call_management`] waits for its answer, as
/// the pocket-ic client's update calls do.
const MAX_ROUNDS_OF_AN_UPDATE: usize = 100;

/// What the harness needs from an IC beyond what any client reaches
/// ([`Interface`]): its application subnets and a canister's balance.
/// Creating and installing canisters are calls to the management canister,
/// the same on every engine.
pub trait Engine: Interface {
    fn kind(&self) -> EngineKind;

    /// The application subnets in ascending order of id bytes, the order
    /// in which a round runs.
    fn subnets(&self) -> Vec<Principal>;

    /// The canister's cycle balance now.
    fn cycle_balance(&mut self, canister: Principal) -> Result<u128>;

    fn subnet_count(&self) -> usize {
        self.subnets().len()
    }

    /// Makes a message to another subnet take `rounds` rounds to arrive,
    /// from the next round on (0: PocketIC's next round).
    fn set_xnet_latency_rounds(&mut self, rounds: u64) -> Result<()>;

    /// Turns on `spec`'s faults, replacing any before; rounds count from now.
    fn inject_faults(&mut self, spec: &FaultSpec) -> Result<()>;

    /// What the faults did, and what is still open.
    fn fault_report(&mut self) -> Result<FaultReport>;

    /// Creates an empty canister on the `subnet`-th subnet, controlled by
    /// `controller`, with the cycles a provisional creation gives.
    fn create_canister(&mut self, subnet: usize, controller: Principal) -> Result<Principal> {
        let subnets = self.subnets();
        let id = *subnets
            .get(subnet)
            .with_context(|| format!("no subnet {subnet}: there are {}", subnets.len()))?;
        let args = ProvisionalCreateCanisterWithCyclesArgs {
            amount: None,
            settings: Some(CanisterSettings { controllers: Some(vec![controller]), ..Default::default() }),
            specified_id: None,
            sender_canister_version: None,
        };
        let method = "provisional_create_canister_with_cycles";
        let created = self.call_management(Effective::Subnet(id), controller, method, Encode!(&args)?)?;
        let created = created.map_err(|reject| anyhow!("{method}: {reject}"))?;
        Ok(Decode!(&created, CanisterIdRecord)?.canister_id)
    }

    /// Installs `wasm` with an empty init argument, as `controller`.
    fn install(&mut self, canister: Principal, wasm: &[u8], controller: Principal) -> Result<()> {
        let args = InstallCodeArgs {
            mode: CanisterInstallMode::Install,
            canister_id: canister,
            wasm_module: wasm.to_vec(),
            arg: candid::encode_args(())?,
            sender_canister_version: None,
        };
        let installed =
            self.call_management(Effective::Canister(canister), controller, "install_code", Encode!(&args)?)?;
        installed.map_err(|reject| anyhow!("install_code: {reject}"))?;
        Ok(())
    }

    /// Submits an update call to `canister`; later [`Interface::tick`]s
    /// execute it.
    fn submit_update(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressId> {
        let ticket = self
            .submit(Effective::Canister(canister), CanisterCall::new(canister, sender, method, arg))
            .map_err(|reject| anyhow!("{method} refused: {reject}"))?;
        Ok(IngressId(ticket))
    }

    /// `None` while the message is still being processed.
    fn ingress_status(&self, id: IngressId) -> Option<IngressOutcome> {
        self.outcome(id.0)
    }

    /// An update call from `sender` to the management canister, routed by
    /// `effective`, executed to its end: the IC's answer, or why there is
    /// none.
    fn call_management(
        &mut self,
        effective: Effective,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressOutcome> {
        let management = Principal::management_canister();
        let ticket = match self.submit(effective, CanisterCall::new(management, sender, method, arg)) {
            Ok(ticket) => ticket,
            Err(refused) => return Ok(Err(refused)),
        };
        for _ in 0..MAX_ROUNDS_OF_AN_UPDATE {
            self.tick();
            if let Some(outcome) = self.outcome(ticket) {
                return Ok(outcome);
            }
        }
        bail!("{method} did not complete within {MAX_ROUNDS_OF_AN_UPDATE} rounds")
    }
}
