//! PocketIC's REST API over this project's simulator: the pocket-ic
//! client (and PocketIC's other clients) drive real canister wasm on the
//! simulator through it. It is not PocketIC and does not pretend to be.
//! It is also the backend of the IC's own HTTP interface (`ic_http`),
//! which icp-cli, dfx and the agents speak.

mod blobstore;
mod errors;
mod ic_http_backend;
mod instance;
mod instances;
mod live;
mod saved;
mod server;
mod topology;

pub use ic_http_backend::{
    DESCRIPTION as IC_HTTP_DESCRIPTION, backend as ic_http_backend, resume as resume_ic_http_backend,
};
pub use instances::Limits;
pub use saved::format as state_format;
pub use server::{MAX_BODY_BYTES, Options, Running, serve, serve_forever};

/// What the server is, in one line: it says so when it starts and in every
/// "not supported" answer.
pub const DESCRIPTION: &str = "this project's simulator (a model of IC message routing running the real canister wasm) behind PocketIC's REST API; not PocketIC";
