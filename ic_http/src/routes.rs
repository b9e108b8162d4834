//! The routes of the IC's HTTP interface, in every version current agents
//! use (agents do not fall back from one version to another).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use candid::Principal;
use ic_transport_types::{
    EnvelopeContent, NodeSignature, QueryResponse, ReadStateResponse, ReplyResponse, RequestId,
    TransportCallResponse,
};
use serde::Serialize;
use std::time::Duration;
use tower_http::cors::{self, CorsLayer};

use crate::auth::{self, Authenticated};
use crate::cbor::{self, Cbor, HttpError};
use crate::network::Network;
use ic_model::Path as TreePath;
use ic_model::{CanisterCall, Effective};

/// The replica's `max_request_size_bytes`.
pub const MAX_REQUEST_BYTES: usize = 5 * 1024 * 1024;
/// The replica's `max_ingress_bytes_per_message` on application subnets.
const MAX_INGRESS_BYTES: usize = 2 * 1024 * 1024;
/// How long a synchronous call waits for its outcome to be certified
/// (`ingress_message_certificate_timeout_seconds`) before it answers 202
/// and the agent polls.
const SYNC_CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The replica's limits on a `read_state` request's paths.
const MAX_PATHS: usize = 1000;
const MAX_LABELS_PER_PATH: usize = 127;

/// The interface's routes over `network`.
///
/// ```no_run
/// # async fn serve(network: ic_http::Network) {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// axum::serve(listener, ic_http::router(network)).await.unwrap();
/// # }
/// ```
pub fn router(network: Network) -> Router {
    router_beside(network, Router::new().fallback(endpoint_not_found))
}

/// The interface's routes over `network` under `/api/`, and `others` for
/// every other path (an HTTP gateway's, on the same port as the replica
/// serves both). A path under `/api/` that the interface does not serve is
/// 404 here, never `others`'s.
pub fn router_beside(network: Network, others: Router) -> Router {
    let api = Router::new()
        .route("/v2/status", get(status))
        .route("/{version}/canister/{effective}/call", post(call))
        .route("/{version}/canister/{effective}/query", post(query))
        .route("/{version}/canister/{effective}/read_state", post(read_canister_state))
        .route("/{version}/subnet/{subnet}/read_state", post(read_subnet_state))
        .fallback(endpoint_not_found)
        .layer(cors());
    Router::new()
        .nest("/api", api)
        .route("/api", any(endpoint_not_found))
        .route("/_/dashboard", get(crate::dashboard::page))
        .route("/_/dashboard/state", get(crate::dashboard::state))
        .route(
            "/_/faults",
            get(crate::faults::report).post(crate::faults::inject).delete(crate::faults::clear),
        )
        .fallback_service(others)
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .with_state(network)
}

/// The replica's CORS policy for its API: any origin may call it, so a page
/// served from `<canister-id>.localhost` (the Candid UI, a frontend) reaches
/// the API at `localhost`, a different origin. Agents send CBOR, which is not
/// a simple content type, so browsers ask first (`OPTIONS`).
fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(cors::Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::CONTENT_TYPE])
        .max_age(Duration::from_secs(2 * 60 * 60))
}

async fn endpoint_not_found() -> HttpError {
    HttpError::not_found("Endpoint not found.")
}

/// The versions of `query` and `read_state` agents use: ic-agent 0.49
/// (icp-cli) v3, ic-agent 0.44 (dfx) v2.
fn read_version(version: &str) -> Result<u8, HttpError> {
    match version {
        "v2" => Ok(2),
        "v3" => Ok(3),
        _ => Err(HttpError::not_found("Endpoint not found.")),
    }
}

fn principal(text: &str) -> Result<Principal, HttpError> {
    Principal::from_text(text)
        .map_err(|e| HttpError::bad_request(format!("Could not parse principal ID: {e}")))
}

/// `/api/v2/status`: the root key, and what answers.
async fn status(State(network): State<Network>) -> Response {
    #[derive(Serialize)]
    struct Status {
        ic_api_version: &'static str,
        #[serde(with = "serde_bytes")]
        root_key: Vec<u8>,
        impl_version: String,
        replica_health_status: &'static str,
        certified_height: u64,
    }
    let certified = &network.certified;
    Cbor(Status {
        ic_api_version: "0.18.0",
        root_key: network.root_key(),
        impl_version: certified.description.clone(),
        replica_health_status: "healthy",
        certified_height: network.state().subnets().iter().map(|s| s.certified_height()).min().unwrap_or(0),
    })
    .into_response()
}

/// Decodes and authenticates a request, as the replica does before it
/// looks at what is asked.
fn authenticated(network: &Network, headers: &HeaderMap, body: &Bytes) -> Result<Authenticated, HttpError> {
    let request = cbor::request(headers, body)?;
    auth::authenticate(request, network.now()).map_err(HttpError::bad_request)
}

async fn query(
    State(network): State<Network>,
    Path((version, effective)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, HttpError> {
    read_version(&version)?;
    let effective = principal(&effective)?;
    // The replica's order: the request's kind and its canister, then who sent it.
    let request = cbor::request(&headers, &body)?;
    let EnvelopeContent::Query { canister_id, .. } = request.content() else {
        return Err(HttpError::bad_request("Malformed request: the endpoint takes a query"));
    };
    if *canister_id != Principal::management_canister() && *canister_id != effective {
        return Err(HttpError::bad_request(format!(
            "Specified CanisterId {canister_id} does not match effective canister id in URL {effective}"
        )));
    }
    let request = auth::authenticate(request, network.now()).map_err(HttpError::bad_request)?;
    let request_id = request.id;
    let EnvelopeContent::Query { sender, canister_id, method_name, arg, .. } = request.content else {
        unreachable!("authenticate keeps the content's kind, a query");
    };
    let (_, subnet) = network.subnet_of(effective).ok_or_else(|| not_hosted(effective))?;
    let result = network
        .run(move |backend| backend.query(CanisterCall::new(canister_id, sender, method_name, arg)))
        .await
        .map_err(HttpError::internal)?;
    let timestamp = subnet.certified_time();
    let unsigned = match result {
        Ok(arg) => QueryResponse::Replied { reply: ReplyResponse { arg }, signatures: vec![] },
        Err(reject) => {
            QueryResponse::Rejected { reject: crate::backend::response(reject), signatures: vec![] }
        }
    };
    let signature = subnet.node_key.sign_message(&unsigned.signable(request_id, timestamp)).to_vec();
    let signatures = vec![NodeSignature { timestamp, signature, identity: subnet.node_id }];
    let signed = match unsigned {
        QueryResponse::Replied { reply, .. } => QueryResponse::Replied { reply, signatures },
        QueryResponse::Rejected { reject, .. } => QueryResponse::Rejected { reject, signatures },
    };
    Ok(Cbor(signed).into_response())
}

fn not_hosted(canister: Principal) -> HttpError {
    HttpError::bad_request(format!(
        "No subnet of this network hosts the effective canister id {canister}: it lies in no subnet's canister ranges"
    ))
}

/// The paths of a `read_state` request, checked as the replica checks
/// them. `effective` is the canister the URL names, `None` on the subnet
/// endpoint. Also returns the request id whose status is asked, if any.
fn paths(
    content: EnvelopeContent,
    effective: Option<Principal>,
    version: u8,
) -> Result<(Vec<TreePath>, Option<[u8; 32]>), HttpError> {
    let EnvelopeContent::ReadState { paths, .. } = content else {
        return Err(HttpError::bad_request("Malformed request: the endpoint takes a read_state request"));
    };
    if paths.len() > MAX_PATHS {
        return Err(HttpError::bad_request(format!(
            "Malformed request: {} paths requested, at most {MAX_PATHS} are allowed",
            paths.len()
        )));
    }
    let paths: Vec<TreePath> = paths
        .into_iter()
        .map(|path| path.into_iter().map(|label| label.as_bytes().to_vec()).collect())
        .collect();
    let mut request_id = None;
    for path in &paths {
        if path.len() > MAX_LABELS_PER_PATH {
            return Err(HttpError::bad_request(format!(
                "Malformed request: a path has {} labels, at most {MAX_LABELS_PER_PATH} are allowed",
                path.len()
            )));
        }
        let labels: Vec<&[u8]> = path.iter().map(Vec::as_slice).collect();
        let allowed = match (effective, labels.as_slice()) {
            (_, [b"time"]) => true,
            (_, [b"subnet", ..]) if labels.len() <= 5 => {
                subnet_path(&labels, effective.is_none() || version == 2)
            }
            (_, [b"api_boundary_nodes", ..]) => true,
            (None, [b"canister_ranges", _]) => true,
            (Some(effective), [b"canister", canister, rest @ ..]) => {
                let canister = Principal::try_from_slice(canister)
                    .map_err(|e| HttpError::bad_request(format!("Could not parse principal ID: {e}")))?;
                if canister != effective {
                    return Err(HttpError::bad_request(format!(
                        "Effective principal id in URL {effective} does not match requested principal id: {canister}."
                    )));
                }
                matches!(rest, [b"controllers"] | [b"module_hash"] | [b"metadata", _])
            }
            (Some(_), [b"request_status", id, rest @ ..]) => {
                if id.len() != 32 {
                    return Err(HttpError::bad_request(
                        "Invalid request id in paths. Maybe the request ID is not of 32 bytes in length?!",
                    ));
                }
                let id: [u8; 32] = (*id).try_into().expect("32 bytes, checked");
                match request_id.replace(id) {
                    Some(other) if other != id => {
                        return Err(HttpError::bad_request(format!(
                            "More than one non-unique request ID exists in request_status paths: {} and {}.",
                            hex::encode(other),
                            hex::encode(id)
                        )));
                    }
                    _ => {}
                }
                matches!(
                    rest,
                    [] | [b"status"] | [b"reply"] | [b"reject_code"] | [b"reject_message"] | [b"error_code"]
                )
            }
            _ => false,
        };
        if !allowed {
            return Err(HttpError::not_found("Invalid path requested."));
        }
    }
    Ok((paths, request_id))
}

/// `/subnet`, `/subnet/<id>`, `/subnet/<id>/{public_key,type,node}`,
/// `/subnet/<id>/node/<id>[/public_key]`, and `canister_ranges` where the
/// replica serves it (subnet endpoints, and v2 of the canister endpoint).
fn subnet_path(labels: &[&[u8]], ranges_allowed: bool) -> bool {
    match labels {
        [_] | [_, _] => true,
        [_, _, b"public_key" | b"type" | b"node"] => true,
        [_, _, b"canister_ranges"] => ranges_allowed,
        [_, _, b"node", _] | [_, _, b"node", _, b"public_key"] => true,
        _ => false,
    }
}

async fn read_canister_state(
    State(network): State<Network>,
    Path((version, effective)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, HttpError> {
    let version = read_version(&version)?;
    let effective = principal(&effective)?;
    let request = authenticated(&network, &headers, &body)?;
    let reader = *request.content.sender();
    let (paths, request_id) = paths(request.content, Some(effective), version)?;
    if let Some(id) = request_id
        && let Some(sent) = network.requests().get(&RequestId::new(&id))
    {
        if sent.sender != reader {
            return Err(HttpError::forbidden(
                "The user tries to access Request ID not signed by the caller.",
            ));
        }
        if request.targets.is_some_and(|targets| !targets.contains(&sent.canister)) {
            return Err(HttpError::forbidden(
                "The user tries to access request IDs not belonging to sender delegation targets.",
            ));
        }
    }
    for path in &paths {
        if let [_, _, metadata, name] = path.as_slice()
            && metadata == b"metadata"
            && !network.state().may_read_metadata(effective, name, reader)
        {
            return Err(HttpError::forbidden(format!(
                "Custom section {:.100} can only be requested by the controllers of the canister.",
                String::from_utf8_lossy(name)
            )));
        }
    }
    let (_, subnet) = network.subnet_of(effective).ok_or_else(|| not_hosted(effective))?;
    Ok(Cbor(ReadStateResponse { certificate: subnet.certificate(&paths) }).into_response())
}

async fn read_subnet_state(
    State(network): State<Network>,
    Path((version, subnet)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, HttpError> {
    let version = read_version(&version)?;
    let id = principal(&subnet)?;
    let request = authenticated(&network, &headers, &body)?;
    let (paths, _) = paths(request.content, None, version)?;
    let subnet = network.state().subnet(id).ok_or_else(|| HttpError {
        status: StatusCode::NOT_FOUND,
        message: format!("Subnet {id} is not part of this network."),
    })?;
    Ok(Cbor(ReadStateResponse { certificate: subnet.certificate(&paths) }).into_response())
}

/// `call`: v2 answers 202 at once and the agent polls; v3 and v4 wait for
/// the certified outcome (v4's certificate format is v3's here: the
/// delegation carries both canister-range formats).
async fn call(
    State(network): State<Network>,
    Path((version, effective)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, HttpError> {
    let synchronous = match version.as_str() {
        "v2" => false,
        "v3" | "v4" => true,
        _ => return Err(HttpError::not_found("Endpoint not found.")),
    };
    let effective = principal(&effective)?;
    let request = cbor::request(&headers, &body)?;
    let EnvelopeContent::Call { canister_id, method_name, arg, .. } = request.content() else {
        return Err(HttpError::bad_request(
            "Could not parse body as call message: the endpoint takes a call",
        ));
    };
    if *canister_id != Principal::management_canister() && *canister_id != effective {
        return Err(HttpError::bad_request(format!(
            "Specified CanisterId {canister_id} does not match effective canister id in URL {effective}"
        )));
    }
    let size = arg.len() + method_name.len();
    if size > MAX_INGRESS_BYTES {
        return Err(HttpError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: format!(
                "Request {} is too large. Message byte size {size} is larger than the max allowed {MAX_INGRESS_BYTES}.",
                request.id()
            ),
        });
    }
    let request = auth::authenticate(request, network.now()).map_err(HttpError::bad_request)?;
    let id = request.id;
    let (subnet, _) = network.subnet_of(effective).ok_or_else(|| not_hosted(effective))?;
    let EnvelopeContent::Call { sender, canister_id, method_name, arg, ingress_expiry, .. } = request.content
    else {
        unreachable!("authenticate keeps the content's kind, a call");
    };
    let message = Message { id, sender, canister_id, method_name, arg, ingress_expiry, effective, subnet };
    if let Err(reject) = submit(&network, message).await? {
        let reject = crate::backend::response(reject);
        return Ok(if synchronous {
            Cbor(TransportCallResponse::NonReplicatedRejection(reject)).into_response()
        } else {
            Cbor(reject).into_response()
        });
    }
    if !synchronous || !certified_within(&network, &id, SYNC_CALL_TIMEOUT).await {
        let text = if synchronous {
            "Message did not complete execution and certification within the replica defined timeout."
        } else {
            ""
        };
        return Ok((StatusCode::ACCEPTED, text).into_response());
    }
    let path = vec![b"request_status".to_vec(), id.as_slice().to_vec()];
    let certificate = network.subnet_at(subnet).certificate(&[path]);
    Ok(Cbor(TransportCallResponse::Replied { certificate }).into_response())
}

/// An authenticated call, and where it goes.
struct Message {
    id: RequestId,
    sender: Principal,
    canister_id: Principal,
    method_name: String,
    arg: Vec<u8>,
    ingress_expiry: u64,
    effective: Principal,
    subnet: usize,
}

/// Hands the message to the backend, unless it has it already (a request
/// id executes once, however often it is submitted). The expiry is checked
/// again on the backend's thread, where rounds forget expired requests: a
/// replay that raced its request's pruning is refused there, not executed.
async fn submit(network: &Network, message: Message) -> Result<Result<(), crate::Reject>, HttpError> {
    let shared = network.clone();
    let submitted = network
        .run(move |backend| -> Result<Result<(), crate::Reject>, String> {
            if shared.requests().get(&message.id).is_some() {
                return Ok(Ok(()));
            }
            auth::check_expiry(message.ingress_expiry, shared.now())?;
            let Message { id, sender, canister_id, method_name, arg, ingress_expiry, effective, subnet } =
                message;
            let ticket = match backend.submit(
                Effective::Canister(effective),
                CanisterCall::new(canister_id, sender, method_name, arg),
            ) {
                Ok(ticket) => ticket,
                Err(reject) => return Ok(Err(reject)),
            };
            shared.requests().insert(id, sender, canister_id, subnet, ingress_expiry, ticket);
            Ok(Ok(()))
        })
        .await
        .map_err(HttpError::internal)?;
    submitted.map_err(HttpError::bad_request)
}

/// Waits until a round has certified the message's outcome, at most `timeout`.
async fn certified_within(network: &Network, id: &RequestId, timeout: Duration) -> bool {
    let mut rounds = network.certified.rounds.subscribe();
    let wait = async {
        while !network.requests().is_done(id) {
            if rounds.changed().await.is_err() {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(timeout, wait).await.unwrap_or(false)
}
