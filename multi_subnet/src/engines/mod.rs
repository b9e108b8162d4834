//! The one seam between the harness and what runs the canisters. Everything
//! above this trait is engine-agnostic; only `main` picks an implementation.

pub mod pocket_ic;
pub mod pocket_ic_server;
pub mod sim;

use anyhow::Result;
use candid::Principal;
use serde::Serialize;
use std::fmt;

/// Which engine produced a figure. Reports always carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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

/// A message submitted with [`Engine::submit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IngressId(pub usize);

/// An IC reject: the code (1 SYS_FATAL ... 6 SYS_UNKNOWN) and its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reject {
    pub code: u64,
    pub message: String,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reject code {}: {}", self.code, self.message)
    }
}

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
}
