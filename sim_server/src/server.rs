//! The router, and starting it: on a port (`multi_subnet serve`) or on a
//! thread of its own in-process (tests, measurements).

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use candid::Principal;
use ic_management_canister_types::CanisterIdRecord;
use pocket_ic::RejectResponse;
use pocket_ic::common::rest::{
    AutoProgressConfig, CreateHttpGatewayResponse, CreateInstanceResponse, HttpGatewayBackend,
    HttpGatewayConfig, HttpGatewayInfo, InstanceConfig, RawAddCycles, RawCanisterCall,
    RawCanisterHttpRequest, RawCanisterId, RawCanisterResult, RawCycles, RawEffectivePrincipal,
    RawIngressStatusArgs, RawMessageId, RawMockCanisterHttpResponse, RawPrincipalId, RawSetStableMemory,
    RawStableMemory, RawSubnetId, RawTickConfigs, RawTime, Topology,
};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

use crate::DESCRIPTION;
use crate::blobstore::BlobStore;
use crate::errors::{self, ApiError, Body};
use crate::extensions;
use crate::instance;
use crate::instances::{Limits, Store};
use crate::lifetime::{Activity, Lifetime};
use crate::outcalls;
use ic_model::Engine;
use ic_sim_client::api::{FaultReport, FaultSpec, Latency, SetLatency};

/// A module and its arguments fit, base64 in JSON, with room to spare
/// (above 2 MB the client uploads chunks through the management canister).
pub const MAX_BODY_BYTES: usize = 64 << 20;

struct Server {
    instances: Store,
    blobs: BlobStore,
    /// HTTP gateways, by id; `None` once stopped.
    gateways: std::sync::Mutex<Vec<Option<Gateway>>>,
}

/// The instance a gateway serves, and what stops it (sent or dropped).
type Gateway = (usize, tokio::sync::oneshot::Sender<()>);

type App = State<Arc<Server>>;
type Answer<T> = Result<Json<T>, ApiError>;

/// PocketIC answers its routes with and without a trailing slash.
fn both<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    path: &str,
    route: MethodRouter<S>,
) -> Router<S> {
    router.route(path, route.clone()).route(&format!("{path}/"), route)
}

fn router(limits: Limits) -> Router {
    let routes: [(&str, MethodRouter<Arc<Server>>); 28] = [
        ("/instances", get(list).post(create)),
        ("/instances/{id}", axum::routing::delete(delete)),
        ("/instances/{id}/read/topology", get(topology)),
        ("/instances/{id}/_/topology", get(topology)),
        ("/instances/{id}/_/latency", get(get_latency).post(set_latency)),
        ("/instances/{id}/_/faults", get(get_faults).post(inject_faults).delete(clear_faults)),
        ("/instances/{id}/read/get_time", get(get_time)),
        ("/instances/{id}/read/query", post(query)),
        ("/instances/{id}/read/ingress_status", post(ingress_status)),
        ("/instances/{id}/read/get_cycles", post(get_cycles)),
        ("/instances/{id}/read/get_subnet", post(get_subnet)),
        ("/instances/{id}/read/get_controllers", post(get_controllers)),
        ("/instances/{id}/update/submit_ingress_message", post(submit)),
        ("/instances/{id}/update/await_ingress_message", post(await_message)),
        ("/instances/{id}/update/tick", post(tick)),
        ("/instances/{id}/update/set_time", post(set_time)),
        ("/instances/{id}/update/set_certified_time", post(set_certified_time)),
        ("/instances/{id}/update/add_cycles", post(add_cycles)),
        ("/instances/{id}/read/get_stable_memory", post(get_stable_memory)),
        ("/instances/{id}/update/set_stable_memory", post(set_stable_memory)),
        ("/instances/{id}/read/get_canister_http", get(get_canister_http)),
        ("/instances/{id}/update/mock_canister_http", post(mock_canister_http)),
        ("/instances/{id}/auto_progress", get(auto_progress_enabled).post(auto_progress)),
        ("/instances/{id}/stop_progress", post(stop_progress)),
        ("/http_gateway", post(start_gateway)),
        ("/http_gateway/{id}/stop", post(stop_gateway)),
        ("/blobstore", post(upload_blob)),
        ("/blobstore/{id}", get(download_blob)),
    ];
    routes
        .into_iter()
        .fold(Router::new(), |router, (path, route)| both(router, path, route.fallback(unsupported)))
        .route("/instances/{id}/api/{*rest}", axum::routing::any(instance_api))
        .fallback(unsupported)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(Arc::new(Server {
            instances: Store::new(limits),
            blobs: BlobStore::default(),
            gateways: Default::default(),
        }))
}

/// `auto_progress`: the instance's rounds run by themselves and the IC's
/// HTTP interface serves it (at `/instances/<id>/api`, and at any gateway).
async fn auto_progress(
    State(server): App,
    Path(id): Path<String>,
    Body(config): Body<AutoProgressConfig>,
) -> Answer<()> {
    // PocketIC's round duration in live mode: a round every so many ms.
    let round_interval = match config.artificial_delay_ms {
        Some(ms) if ms > MAX_ARTIFICIAL_DELAY_MS => {
            return Err(ApiError::bad_request(format!(
                "artificial_delay_ms {ms} is more than {MAX_ARTIFICIAL_DELAY_MS}"
            )));
        }
        // 0, as `network --round-ms 0`: rounds as fast as there is work.
        Some(0) | None => None,
        Some(ms) => Some(Duration::from_millis(ms)),
    };
    live(&server, instance_id(&id)?, round_interval).await?;
    Ok(Json(()))
}

async fn auto_progress_enabled(State(server): App, Path(id): Path<String>) -> Answer<bool> {
    Ok(Json(server.instances.network(instance_id(&id)?).is_some()))
}

async fn stop_progress(State(server): App, Path(id): Path<String>) -> Answer<()> {
    server.instances.stop_progress(instance_id(&id)?);
    Ok(Json(()))
}

/// The longest round `auto_progress` takes in live mode, as `network --round-ms`.
const MAX_ARTIFICIAL_DELAY_MS: u64 = 60_000;

/// The instance's network, started off the runtime's threads if need be,
/// with a round every `round_interval` (`None`: as fast as there is work).
async fn live(
    server: &Arc<Server>,
    id: usize,
    round_interval: Option<Duration>,
) -> Result<ic_http::Network, ApiError> {
    let server = server.clone();
    tokio::task::spawn_blocking(move || server.instances.auto_progress(id, round_interval))
        .await
        .map_err(|e| ApiError::internal(format!("starting auto progress failed: {e}")))?
}

/// `/instances/<id>/api/...`: the IC's HTTP interface of a live instance.
async fn instance_api(
    State(server): App,
    Path((id, rest)): Path<(String, String)>,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    use tower::ServiceExt;
    let id = instance_id(&id)?;
    let network = server.instances.network(id).ok_or_else(|| {
        ApiError::bad_request(format!(
            "instance {id} is not live: its IC HTTP interface serves after auto_progress"
        ))
    })?;
    // A new request, so that this route's path parameters stay behind.
    let (parts, body) = request.into_parts();
    let mut inner = axum::extract::Request::new(body);
    *inner.method_mut() = parts.method;
    *inner.headers_mut() = parts.headers;
    *inner.uri_mut() = format!("/api/{rest}").parse().map_err(|e| ApiError::bad_request(format!("{e}")))?;
    Ok(ic_http::router(network).oneshot(inner).await.expect("infallible"))
}

/// `http_gateway`: the IC's HTTP interface of an instance (live from now
/// on) on a port of its own, as PocketIC's `make_live` asks for it.
async fn start_gateway(
    State(server): App,
    Body(config): Body<HttpGatewayConfig>,
) -> Json<CreateHttpGatewayResponse> {
    let refuse = |message: String| Json(CreateHttpGatewayResponse::Error { message });
    let HttpGatewayBackend::PocketIcInstance(id) = config.forward_to else {
        return refuse(format!(
            "{DESCRIPTION} serves a gateway only to one of its instances, not to a replica"
        ));
    };
    if config.https_config.is_some() || config.domains.as_ref().is_some_and(|d| !d.is_empty()) {
        return refuse(format!("{DESCRIPTION} serves gateways over plain HTTP on localhost only"));
    }
    let network = match live(&server, id, None).await {
        Ok(network) => network,
        Err(e) => return refuse(e.message),
    };
    let address = (config.ip_addr.as_deref().unwrap_or("127.0.0.1").to_string(), config.port.unwrap_or(0));
    let listener = match TcpListener::bind(address).await {
        Ok(listener) => listener,
        Err(e) => return refuse(format!("cannot listen for the gateway: {e}")),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        let _ = axum::serve(listener, ic_http::router(network)).with_graceful_shutdown(shutdown).await;
    });
    let mut gateways = server.gateways.lock().expect("not poisoned");
    gateways.push(Some((id, stop)));
    Json(CreateHttpGatewayResponse::Created(HttpGatewayInfo { instance_id: gateways.len() - 1, port }))
}

async fn stop_gateway(State(server): App, Path(id): Path<String>) -> Answer<()> {
    let stopped = id
        .parse::<usize>()
        .ok()
        .and_then(|id| server.gateways.lock().expect("not poisoned").get_mut(id)?.take());
    match stopped {
        Some((_, stop)) => {
            let _ = stop.send(());
            Ok(Json(()))
        }
        None => Err(ApiError::bad_request(format!("HTTP gateway not found: {id}"))),
    }
}

/// Every other endpoint (and method) says so, naming it.
async fn unsupported(method: Method, uri: Uri) -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        message: format!(
            "{method} {}: the simulator server does not support this endpoint ({DESCRIPTION})",
            uri.path()
        ),
    }
}

fn instance_id(id: &str) -> Result<usize, ApiError> {
    id.parse().map_err(|_| ApiError::bad_request(format!("Instance not found: {id}")))
}

async fn list(State(server): App) -> Json<Vec<String>> {
    Json(server.instances.list())
}

async fn create(
    State(server): App,
    Body(config): Body<InstanceConfig>,
) -> (StatusCode, Json<CreateInstanceResponse>) {
    match server.instances.create(config).await {
        Ok((instance_id, topology)) => (
            StatusCode::CREATED,
            Json(CreateInstanceResponse::Created { instance_id, topology, http_gateway_info: None }),
        ),
        Err(message) => (StatusCode::BAD_REQUEST, Json(CreateInstanceResponse::Error { message })),
    }
}

async fn delete(State(server): App, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    let id = instance_id(&id)?;
    // Its gateways stop with it.
    for gateway in server.gateways.lock().expect("not poisoned").iter_mut() {
        if gateway.as_ref().is_some_and(|(instance, _)| *instance == id) {
            gateway.take();
        }
    }
    if server.instances.delete(id) { Ok(StatusCode::OK) } else { Err(ApiError::instance_not_found(id)) }
}

async fn topology(State(server): App, Path(id): Path<String>) -> Answer<Topology> {
    Ok(Json(server.instances.topology(instance_id(&id)?)?))
}

/// This project's extension: the instance's rounds between subnets.
async fn get_latency(State(server): App, Path(id): Path<String>) -> Answer<Latency> {
    Ok(Json(server.instances.with(instance_id(&id)?, |i| extensions::latency(&i.engine)).await?))
}

async fn set_latency(
    State(server): App,
    Path(id): Path<String>,
    Body(set): Body<SetLatency>,
) -> Answer<Latency> {
    let set = move |i: &mut instance::Instance| extensions::set_latency(&mut i.engine, set);
    Ok(Json(server.instances.with(instance_id(&id)?, set).await?.map_err(ApiError::bad_request)?))
}

/// This project's extension: seeded faults from now on.
async fn inject_faults(
    State(server): App,
    Path(id): Path<String>,
    Body(spec): Body<FaultSpec>,
) -> Answer<()> {
    let inject = move |i: &mut instance::Instance| Engine::inject_faults(&mut i.engine, spec);
    server.instances.with(instance_id(&id)?, inject).await?.map_err(ApiError::bad_request)?;
    Ok(Json(()))
}

async fn get_faults(State(server): App, Path(id): Path<String>) -> Answer<FaultReport> {
    Ok(Json(server.instances.with(instance_id(&id)?, |i| i.engine.fault_report()).await?))
}

/// No fault from now on.
async fn clear_faults(State(server): App, Path(id): Path<String>) -> Answer<()> {
    let cleared = |i: &mut instance::Instance| Engine::inject_faults(&mut i.engine, FaultSpec::default());
    server.instances.with(instance_id(&id)?, cleared).await?.map_err(ApiError::bad_request)?;
    Ok(Json(()))
}

async fn get_time(State(server): App, Path(id): Path<String>) -> Answer<RawTime> {
    let nanos_since_epoch =
        server.instances.with(instance_id(&id)?, |i| ic_model::Interface::time(i)).await?;
    Ok(Json(RawTime { nanos_since_epoch }))
}

async fn set_time(State(server): App, Path(id): Path<String>, Body(time): Body<RawTime>) -> Answer<()> {
    server
        .instances
        .with(instance_id(&id)?, move |i| instance::set_time(i, time.nanos_since_epoch))
        .await??;
    Ok(Json(()))
}

/// `set_time`, then the state certified at that time.
async fn set_certified_time(
    State(server): App,
    Path(id): Path<String>,
    Body(time): Body<RawTime>,
) -> Answer<()> {
    let set = move |i: &mut instance::Instance| {
        instance::set_time(i, time.nanos_since_epoch)?;
        i.certify();
        Ok::<_, ApiError>(())
    };
    server.instances.with(instance_id(&id)?, set).await??;
    Ok(Json(()))
}

/// Blockmakers only matter to PocketIC's subnet metrics, which the simulator has not.
async fn tick(State(server): App, Path(id): Path<String>, Body(_): Body<RawTickConfigs>) -> Answer<()> {
    server.instances.with(instance_id(&id)?, |i| i.execute_round()).await?;
    Ok(Json(()))
}

async fn query(
    State(server): App,
    Path(id): Path<String>,
    Body(call): Body<RawCanisterCall>,
) -> Answer<RawCanisterResult> {
    let result = server.instances.with(instance_id(&id)?, move |i| instance::query(i, call)).await??;
    Ok(Json(errors::pocket_ic_result(result).into()))
}

async fn submit(
    State(server): App,
    Path(id): Path<String>,
    Body(mut call): Body<RawCanisterCall>,
) -> Answer<Result<RawMessageId, RejectResponse>> {
    let id = instance_id(&id)?;
    // A management call that names no effective principal goes where
    // PocketIC sends it: to the canister its argument names (pic-js sends
    // `install_code` so), else to the subnet of the topology's default
    // effective canister id.
    let to_management = call.canister_id == Principal::management_canister().as_slice();
    if to_management && call.effective_principal == RawEffectivePrincipal::None {
        let named =
            candid::decode_one::<CanisterIdRecord>(&call.payload).map(|r| r.canister_id.as_slice().to_vec());
        let default = || server.instances.topology(id).map(|t| t.default_effective_canister_id.canister_id);
        call.effective_principal = RawEffectivePrincipal::CanisterId(match named {
            Ok(named) => named,
            Err(_) => default()?,
        });
    }
    Ok(Json(server.instances.with(id, move |i| instance::submit(i, call)).await??))
}

async fn await_message(
    State(server): App,
    Path(id): Path<String>,
    Body(message): Body<RawMessageId>,
) -> Answer<RawCanisterResult> {
    let result =
        server.instances.with(instance_id(&id)?, move |i| instance::await_message(i, &message)).await??;
    Ok(Json(errors::pocket_ic_result(result).into()))
}

/// `null` while pending; 403 when asked as someone who did not send it.
async fn ingress_status(
    State(server): App,
    Path(id): Path<String>,
    Body(args): Body<RawIngressStatusArgs>,
) -> Answer<Option<RawCanisterResult>> {
    let caller = args.raw_caller.map(Principal::from);
    let status = server
        .instances
        .with(instance_id(&id)?, move |i| instance::status(i, &args.raw_message_id, caller))
        .await?;
    match status {
        Ok(result) => Ok(Json(result.map(|result| errors::pocket_ic_result(result).into()))),
        Err(sender) => Err(ApiError {
            status: StatusCode::FORBIDDEN,
            message: format!(
                "The user tries to access Request ID not signed by the caller: sent by {sender}"
            ),
        }),
    }
}

async fn get_cycles(
    State(server): App,
    Path(id): Path<String>,
    Body(c): Body<RawCanisterId>,
) -> Answer<RawCycles> {
    let cycles = server
        .instances
        .with(instance_id(&id)?, move |i| {
            let id = instance::existing(i, &c.canister_id)?;
            i.cycle_balance(id).map_err(|reject| ApiError::bad_request(reject.message))
        })
        .await??;
    Ok(Json(RawCycles { cycles }))
}

async fn get_stable_memory(
    State(server): App,
    Path(id): Path<String>,
    Body(c): Body<RawCanisterId>,
) -> Answer<RawStableMemory> {
    let blob = server
        .instances
        .with(instance_id(&id)?, move |i| {
            let id = instance::existing(i, &c.canister_id)?;
            i.stable_memory(id).map_err(|reject| ApiError::bad_request(reject.message))
        })
        .await??;
    Ok(Json(RawStableMemory { blob }))
}

/// The blob, uploaded first (`POST /blobstore`), becomes the canister's
/// stable memory.
async fn set_stable_memory(
    State(server): App,
    Path(id): Path<String>,
    Body(set): Body<RawSetStableMemory>,
) -> Answer<()> {
    let blob_id = hex::encode(&set.blob_id.0);
    let data =
        server.blobs.get(&blob_id).ok_or_else(|| ApiError::bad_request(format!("no blob {blob_id}")))?;
    server
        .instances
        .with(instance_id(&id)?, move |i| {
            let id = instance::existing(i, &set.canister_id)?;
            i.set_stable_memory(id, data).map_err(|reject| ApiError::bad_request(reject.message))
        })
        .await??;
    Ok(Json(()))
}

/// The HTTPS outcalls waiting for responses.
async fn get_canister_http(
    State(server): App,
    Path(id): Path<String>,
) -> Answer<Vec<RawCanisterHttpRequest>> {
    Ok(Json(server.instances.with(instance_id(&id)?, |i| outcalls::pending(i)).await?))
}

/// Responses for a pending outcall; the canister gets them in the next round.
async fn mock_canister_http(
    State(server): App,
    Path(id): Path<String>,
    Body(mock): Body<RawMockCanisterHttpResponse>,
) -> Answer<()> {
    server.instances.with(instance_id(&id)?, move |i| outcalls::mock(i, mock)).await??;
    Ok(Json(()))
}

async fn add_cycles(
    State(server): App,
    Path(id): Path<String>,
    Body(add): Body<RawAddCycles>,
) -> Answer<RawCycles> {
    let cycles = server
        .instances
        .with(instance_id(&id)?, move |i| {
            let id = instance::existing(i, &add.canister_id)?;
            i.add_cycles(id, add.amount).map_err(|reject| ApiError::bad_request(reject.message))
        })
        .await??;
    Ok(Json(RawCycles { cycles }))
}

/// `null` for a canister that does not exist (the client's `canister_exists`).
async fn get_subnet(
    State(server): App,
    Path(id): Path<String>,
    Body(c): Body<RawCanisterId>,
) -> Answer<Option<RawSubnetId>> {
    let subnet = server
        .instances
        .with(instance_id(&id)?, move |i| {
            let id = Principal::try_from_slice(&c.canister_id).ok()?;
            Some(RawSubnetId::from(i.canister(id).ok()?.subnet))
        })
        .await?;
    Ok(Json(subnet))
}

async fn get_controllers(
    State(server): App,
    Path(id): Path<String>,
    Body(c): Body<RawCanisterId>,
) -> Answer<Vec<RawPrincipalId>> {
    let controllers = server
        .instances
        .with(instance_id(&id)?, move |i| {
            let id = instance::existing(i, &c.canister_id)?;
            let controllers = &i.canister(id).expect("it exists").controllers;
            Ok::<_, ApiError>(controllers.iter().map(|&p| p.into()).collect())
        })
        .await??;
    Ok(Json(controllers))
}

/// Answers the blob's id as text, as PocketIC does.
async fn upload_blob(State(server): App, headers: HeaderMap, body: Bytes) -> Result<String, ApiError> {
    let gzip = headers.get(header::CONTENT_ENCODING).is_some_and(|e| e.as_bytes() == b"gzip");
    server.blobs.insert(&body, gzip).map_err(|e| ApiError::bad_request(format!("gzip: {e}")))
}

async fn download_blob(State(server): App, Path(id): Path<String>) -> Response {
    match server.blobs.get(&id) {
        Some(blob) => blob.into_response(),
        None => ApiError { status: StatusCode::NOT_FOUND, message: format!("blob {id} not found") }
            .into_response(),
    }
}

/// Serves on `listener` until `shutdown` resolves. HTTP/1.1 and cleartext
/// HTTP/2 (prior knowledge), as PocketIC's server.
pub async fn serve(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: Limits,
) -> std::io::Result<()> {
    ic_http::serve(listener, router(limits), ic_http::RequestLimits::new(MAX_BODY_BYTES), shutdown).await
}

/// What a server was asked for (`multi_subnet serve`, `pocket-ic-sim`).
pub struct Options {
    /// The address to bind.
    pub ip: IpAddr,
    pub port: u16,
    pub port_file: Option<PathBuf>,
    pub limits: Limits,
    /// What clients may hold of the server.
    pub requests: ic_http::RequestLimits,
    /// When it ends by itself.
    pub lifetime: Lifetime,
}

/// Serves until SIGINT or SIGTERM, or until its [`Lifetime`] is over.
/// `Ok(false)` when the port file exists: another server owns it, as with
/// PocketIC.
pub fn serve_forever(
    options: Options,
    announce: impl FnOnce(SocketAddr) -> std::io::Result<()>,
) -> std::io::Result<bool> {
    let activity = Activity::new();
    let router = activity.track(router(options.limits));
    let listen =
        ic_http::Listen { ip: options.ip, port: options.port, port_file: options.port_file.as_deref() };
    let over = options.lifetime.over(activity);
    ic_http::serve_forever(router, options.requests, listen, over, announce, || {})
}

/// A server on a thread of its own, with its own runtime (the pocket-ic
/// blocking client runs another), on 127.0.0.1 and a free port. Dropping
/// it stops it.
pub struct Running {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Running {
    /// With the default [`Limits`].
    pub fn start() -> std::io::Result<Self> {
        Self::start_with(Limits::default())
    }

    pub fn start_with(limits: Limits) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let url = format!("http://{}/", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("sim server".into()).spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
            runtime.block_on(async {
                let shutdown = async {
                    let _ = stopped.await;
                };
                serve(TcpListener::from_std(listener)?, shutdown, limits).await
            })
        })?;
        Ok(Self { url, stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
