//! The one seam between the harness and what runs the canisters. Everything
//! above this trait is engine-agnostic; only `main` picks an implementation.

pub mod pocket_ic;
pub mod pocket_ic_server;
pub mod sim;

use anyhow::Result;

use crate::profile::Profile;
pub use crate::profile::TimeStep;
use candid::Principal;
pub use ic_error_types::RejectCode;
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
    /// `profile`. Only the simulator can follow mainnet's.
    pub fn start_profile(&self, subnets: usize, profile: Profile) -> Result<Box<dyn Engine>> {
        match (self, profile) {
            (Self::Sim, _) => {
                let builder =
                    ::sim::Sim::builder().with_subnets(subnets).with_time_step(profile.time_step().0);
                let sim = builder.with_xnet_latency_rounds(profile.xnet_latency_rounds()).build();
                Ok(Box::new(sim::SimEngine::new(sim)))
            }
            (Self::PocketIc(_), Profile::PocketIc) => self.start(subnets, profile.time_step()),
            (Self::PocketIc(_), Profile::Mainnet { .. }) => anyhow::bail!(
                "--profile mainnet needs the simulator (--engine sim): PocketIC inducts every cross-subnet message at the next round"
            ),
        }
    }

    /// A fresh IC with `subnets` application subnets.
    pub fn start(&self, subnets: usize, step: TimeStep) -> Result<Box<dyn Engine>> {
        Ok(match self {
            Self::PocketIc(server) => {
                Box::new(pocket_ic::PocketIcEngine::start_with_time_step(server.clone(), subnets, step)?)
            }
            Self::Sim => Box::new(sim::SimEngine::new(
                ::sim::Sim::builder().with_subnets(subnets).with_time_step(step.0).build(),
            )),
        })
    }
}

/// A message submitted with [`Engine::submit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IngressId(pub usize);

/// An IC reject: its error code, reject code and message (`ic_reject`'s,
/// the simulator's and the model's; the PocketIC engine converts its
/// rejects to it).
pub use ::sim::Reject;

/// The final state of an ingress message: the reply bytes or the reject.
pub type IngressOutcome = std::result::Result<Vec<u8>, Reject>;

/// What the harness needs from an IC: subnets, canisters, ingress and rounds.
pub trait Engine {
    fn kind(&self) -> EngineKind;

    /// One line for humans: the engine and its version or origin.
    fn description(&self) -> String;

    /// How many application subnets there are. Subnet `i` is the i-th in
    /// ascending order of subnet id bytes, the order in which a round runs.
    fn subnet_count(&self) -> usize;

    /// Creates an empty canister on subnet `subnet`, controlled by `controller`.
    fn create_canister(&mut self, subnet: usize, controller: Principal) -> Result<Principal>;

    /// Installs `wasm` with an empty init argument, as `controller`.
    fn install(&mut self, canister: Principal, wasm: &[u8], controller: Principal) -> Result<()>;

    /// Submits an update call; it is executed by later [`Engine::tick`]s.
    fn submit(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressId>;

    /// Executes one round on every subnet.
    fn tick(&mut self);

    /// `None` while the message is still being processed.
    fn ingress_status(&mut self, id: IngressId) -> Option<IngressOutcome>;

    /// The canister's cycle balance now.
    fn cycle_balance(&mut self, canister: Principal) -> Result<u128>;

    /// An update call from `sender` to the management canister about
    /// `target` (its effective canister id), executed to its end: the IC's
    /// answer, or why there is none.
    fn call_management(
        &mut self,
        target: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressOutcome>;

    /// A query call; it changes nothing.
    fn query(&mut self, canister: Principal, sender: Principal, method: &str, arg: Vec<u8>)
    -> IngressOutcome;
}
