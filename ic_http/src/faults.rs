//! `/_/faults`: the network's faults, as a `serve` instance's
//! `/instances/<id>/_/faults` takes them (the same JSON, `ic-sim-client`'s
//! `api`): `POST` a spec (rounds counted from now), `GET` the report,
//! `DELETE` to turn them off. Like the rest of a local network's `/_/`
//! paths, it answers anyone who reaches 127.0.0.1.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ic_sim_client::api::FaultSpec;

use crate::Network;

/// What the faults did and what is open.
pub async fn report(State(network): State<Network>) -> Response {
    match network.run(|backend| backend.fault_report()).await {
        Ok(Some(report)) => Json(report).into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, "this network's backend injects no faults").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}

/// Turns on a spec's faults, replacing any before.
pub async fn inject(State(network): State<Network>, Json(spec): Json<FaultSpec>) -> Response {
    set(network, spec).await
}

/// No fault from now on.
pub async fn clear(State(network): State<Network>) -> Response {
    set(network, FaultSpec::default()).await
}

async fn set(network: Network, spec: FaultSpec) -> Response {
    match network.run(move |backend| backend.inject_faults(spec)).await {
        Ok(Ok(())) => StatusCode::OK.into_response(),
        Ok(Err(why)) => (StatusCode::BAD_REQUEST, why).into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}
