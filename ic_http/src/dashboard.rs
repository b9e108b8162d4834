//! The live view of a network at `/_/dashboard` (PocketIC's name for its
//! own): a page that polls `/_/dashboard/state`, the network's subnets,
//! canisters, rounds and the request slots each (caller, callee) pair
//! holds. It shows nothing a query could not read and changes nothing.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::Network;

/// What `/_/dashboard/state` answers: the backend's view, and what the
/// backend is.
#[derive(Serialize)]
struct Shown {
    engine: String,
    #[serde(flatten)]
    view: ic_model::NetworkView,
}

/// The page: plain HTML and a script, no assets to fetch.
pub async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], include_str!("dashboard.html")).into_response()
}

/// The network's view, as JSON.
pub async fn state(State(network): State<Network>) -> Response {
    let read =
        network.run(|backend| Some(Shown { engine: backend.description(), view: backend.view()? })).await;
    match read {
        Ok(Some(shown)) => Json(shown).into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, "this network's backend gives no live view").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}
