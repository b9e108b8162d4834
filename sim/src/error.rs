//! Why the simulator refused: a management operation, a save, a restore.

use candid::Principal;

use crate::message::ErrorCode;
use crate::module::WasmError;

/// A management operation that could not be done.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// No canister has this id (it was never created, or it was deleted).
    #[error("canister {0} does not exist")]
    CanisterNotFound(Principal),
    /// `create_canister` was given an index past the last subnet.
    #[error("no subnet {index}: there are {subnets}")]
    NoSuchSubnet {
        /// The index asked for.
        index: usize,
        /// How many subnets there are.
        subnets: usize,
    },
    /// The subnet has assigned (or reserved) every id of its range.
    #[error("subnet {index} has no canister ids left: it assigns {ids} at most")]
    SubnetFull {
        /// The subnet's index.
        index: usize,
        /// How many ids it assigns (its [`crate::IdRanges`]' allocation range).
        ids: u64,
    },
    /// A canister cannot be created with this id on this subnet: the
    /// subnet's ranges do not hold it.
    #[error("subnet {subnet}'s canister ranges do not hold {id}: a specified id must lie in them")]
    NotInRange {
        /// The id asked for.
        id: Principal,
        /// The subnet asked for.
        subnet: Principal,
    },
    /// The module does not load: it is not valid wasm, imports something
    /// other than `ic0` functions, has no memory, or does not instantiate.
    #[error("{0}")]
    InvalidWasm(String),
    /// `canister_init` or an upgrade hook trapped; the canister is as it was.
    #[error("{hook} trapped: {trap}")]
    InstallTrapped {
        /// The export that trapped, such as `canister_post_upgrade`.
        hook: &'static str,
        /// The trap's message.
        trap: String,
        /// The replica's error code for the trap.
        code: ErrorCode,
    },
    /// An upgrade needs code to upgrade from.
    #[error("canister {0} has no code to upgrade")]
    NoCodeToUpgrade(Principal),
    /// An upgrade or a delete needs the canister's call contexts closed.
    #[error("canister {0} has open call contexts: stop it first")]
    OpenCallContexts(Principal),
    /// Its call contexts did not close within the rounds `stop_canister` waits.
    #[error("canister {canister} did not stop within {rounds} rounds")]
    DidNotStop {
        /// The canister still stopping.
        canister: Principal,
        /// How many rounds were waited ([`crate::UPDATE_CALL_ROUND_LIMIT`]).
        rounds: u64,
    },
    /// The id is taken: a canister of the simulator's, or one hosted
    /// outside ([`crate::Sim::host_outside`]), has it.
    #[error("canister {0} already exists in the simulator")]
    IdTaken(Principal),
    /// The canister keeps no snapshot with this id.
    #[error("canister {canister} has no snapshot {}", hex(.snapshot))]
    NoSuchSnapshot {
        /// The canister.
        canister: Principal,
        /// The snapshot id asked for.
        snapshot: Vec<u8>,
    },
    /// Stable memory set from outside would pass the model's page limit.
    #[error("stable memory of {pages} pages is more than the {max} the simulator holds")]
    StableMemoryTooLarge {
        /// The pages asked for.
        pages: u64,
        /// The limit.
        max: u64,
    },
    /// The host-memory budget refuses what was asked (see
    /// [`crate::HostMemory`]).
    #[error("{0}")]
    OverBudget(String),
    /// Traces are only kept by a simulator built `with_tracing` (see [`crate::bench`]).
    #[error("the simulator was built without tracing")]
    TracingOff,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl From<WasmError> for SimError {
    fn from(e: WasmError) -> Self {
        SimError::InvalidWasm(e.to_string())
    }
}

/// Why a simulator could not be saved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot save the simulator: {0}")]
pub struct SaveError(pub(crate) String);

/// Why a saved simulator could not be restored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot restore the simulator: {0}")]
pub struct RestoreError(pub(crate) String);
