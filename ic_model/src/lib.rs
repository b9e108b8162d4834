//! What the Internet Computer is beyond executing wasm, in its own terms
//! and no wire format: each subnet's certified state, signed with keys
//! derived from one seed and delegated by a root key. Canisters read it
//! (`ic0.data_certificate_copy`), and every adapter serves the same
//! certificates from it: the IC's HTTP interface and PocketIC's REST API.
//! And the system canisters a network's tools call ([`system_canisters`]):
//! the ICP ledger, the cycles ledger and the cycles minting canister, with
//! balances and allowances kept as the IC's ledgers keep them.

mod certified_state;
mod keys;
mod ledger;
pub mod system_canisters;

pub use certified_state::{
    CanisterState, CertifiedState, Edits, Path, SubnetRanges, SubnetState, leb128, to_cbor,
};
pub use keys::Keys;
