//! What the Internet Computer is beyond executing wasm, in its own terms
//! and no wire format: each subnet's certified state, signed with keys
//! derived from one seed and delegated by a root key. Canisters read it
//! (`ic0.data_certificate_copy`), and every adapter serves the same
//! certificates from it: the IC's HTTP interface and PocketIC's REST API.
//! And the system canisters a network's tools call ([`system_canisters`]):
//! the ICP ledger, the cycles ledger and the cycles minting canister, with
//! balances and allowances kept as the IC's ledgers keep them. And the management
//! canister ([`management`]), over an [`Engine`] that executes the
//! canisters: [`Ic`] puts them together. With the `sim` feature, the
//! simulator is that engine ([`sim_engine`]).

mod certified_state;
mod effective;
pub mod engine;
#[cfg(all(test, feature = "sim"))]
mod from_canisters;
mod ic;
mod ingress;
mod interface;
mod keys;
mod ledger;
pub mod management;
mod saved;
#[cfg(feature = "sim")]
pub mod sim_engine;
#[cfg(feature = "sim")]
mod sim_faults;
pub mod system_canisters;

pub use certified_state::{
    CanisterState, CertifiedState, Edits, Path, SubnetRanges, SubnetState, leb128, to_cbor,
};
pub use effective::{Effective, NoSubnet};
pub use engine::{CallsInFlight, Engine, EngineStatus};
pub use ic::{Ic, IcState, NetworkView, SubnetView};
/// The management canister's argument and result types, as its methods
/// and [`Engine`] name them.
pub use ic_management_canister_types;
pub use ic_reject::Reject;
pub use ingress::{Misrouted, routed_to};
pub use interface::{CanisterCall, Interface};
pub use keys::Keys;
pub use saved::Encode;
