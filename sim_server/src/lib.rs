//! PocketIC's REST API over this project's simulator (the IC model,
//! `ic_model`, over `sim`): the pocket-ic client (and PocketIC's other
//! clients) drive real canister wasm on the simulator through it. It is
//! not PocketIC and does not pretend to be.

mod blobstore;
mod errors;
mod extensions;
mod instance;
mod instances;
mod lifetime;
mod live;
mod outcalls;
mod server;
mod subnets;
mod topology;

pub use instances::Limits;
pub use lifetime::Lifetime;
pub use server::{MAX_BODY_BYTES, Options, Running, serve, serve_forever};

/// What the server is, in one line: it says so when it starts and in every
/// "not supported" answer.
pub const DESCRIPTION: &str = "this project's simulator (a model of IC message routing running the real canister wasm) behind PocketIC's REST API; not PocketIC";
