//! The Internet Computer's public HTTP interface (`/api/v2/status`, `call`,
//! `query`, `read_state`), served over a [`Backend`] such as this project's
//! simulator, so that icp-cli, dfx and every agent can use it.
//!
//! What it answers is what the replica answers, checked by ic-agent's own
//! verifier: certificates signed with BLS12-381 keys (one per subnet, each
//! delegated by a root key), query responses signed by a node's Ed25519 key,
//! and ingress authenticated as the replica authenticates it. The state it
//! certifies is the backend's ([`ic_model::CertifiedState`]), whose keys
//! come from a seed, so a root key can be pinned in a tool's configuration.
//!
//! It is not the replica: the engine behind it is the [`Backend`], and
//! [`/api/v2/status`](Network::status) says which one it is.

mod auth;
mod backend;
mod cbor;
mod dashboard;
mod faults;
mod ic_backend;
mod ingress;
mod network;
mod outcalls;
mod request;
mod routes;
mod serving;
mod state_file;

pub use backend::{Backend, SavedState};
pub use ic_model::Reject;
pub use network::{Network, Options, Persistence, SaveReport};
pub use outcalls::OutcallPolicy;
pub use routes::{MAX_REQUEST_BYTES, router, router_beside};
pub use serving::{Listen, RequestLimits, serve, serve_forever, serve_locally};
