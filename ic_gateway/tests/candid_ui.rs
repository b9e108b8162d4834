//! The gateway in front of the simulator, on the port of its API, as a
//! browser reaches it: DFINITY's Candid UI canister (taken from the `icp`
//! binary) served and verified, and each way a request can fail answered
//! with the gateway's status and a page, the API serving on.

use candid::{CandidType, Encode, Principal};
use ic_agent::Agent;
use ic_agent::identity::BasicIdentity;
use ic_utils::interfaces::ManagementCanister;
use ic_utils::interfaces::http_request::{
    CallbackStrategy, HttpRequestStreamingCallback, HttpResponse, StreamingCallbackHttpResponse,
    StreamingStrategy,
};
use std::net::SocketAddr;

/// A network of two subnets served with its gateway on 127.0.0.1; its
/// address and an agent that trusts its root key.
async fn network() -> (SocketAddr, Agent) {
    let make = || {
        let sim = sim::Sim::builder().with_subnet().with_subnet().build();
        Box::new(ic_model::sim_engine::network(sim, ic_model::Keys::from_seed(0)).unwrap())
            as Box<dyn ic_http::Backend>
    };
    let network = ic_http::Network::start(make, ic_http::Options::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let gateway = ic_gateway::Gateway::new(network.root_key());
    gateway.connect(&format!("http://{address}")).unwrap();
    let router = ic_http::router_beside(network, gateway.router());
    let limits = ic_http::RequestLimits::new(ic_http::MAX_REQUEST_BYTES);
    tokio::spawn(ic_http::serve(listener, router, limits, std::future::pending()));
    let agent = Agent::builder()
        .with_url(format!("http://{address}"))
        .with_identity(BasicIdentity::from_raw_key(&[1; 32]))
        .build()
        .unwrap();
    agent.fetch_root_key().await.unwrap();
    (address, agent)
}

/// `wasm` installed on a new canister of the first subnet, as dfx installs
/// it (ic-utils' management canister, at dfx's default effective id).
async fn install(agent: &Agent, wasm: Vec<u8>) -> Principal {
    let canister = create(agent).await;
    install_into(agent, canister, wasm).await;
    canister
}

async fn create(agent: &Agent) -> Principal {
    let management = ManagementCanister::create(agent);
    let first_subnet = Principal::from_text("rwlgt-iiaaa-aaaaa-aaaaa-cai").unwrap();
    let creating = management.create_canister().as_provisional_create_with_amount(None);
    creating.with_effective_canister_id(first_subnet).call_and_wait().await.unwrap().0
}

async fn install_into(agent: &Agent, canister: Principal, wasm: Vec<u8>) {
    let management = ManagementCanister::create(agent);
    management.install(&canister, &wasm).with_raw_arg(Encode!().unwrap()).call_and_wait().await.unwrap();
}

/// The token of this file's streamed responses.
#[derive(CandidType)]
struct Part {
    index: u64,
}

type Callback = HttpRequestStreamingCallback<Part>;

/// An uncertified response: 200 and `body`, maybe asking to be upgraded
/// or streamed.
fn response(
    body: &str,
    upgrade: Option<bool>,
    streaming: Option<StreamingStrategy<Part, Callback>>,
) -> Vec<u8> {
    let response = HttpResponse::<Part, Callback> {
        status_code: 200,
        headers: vec![],
        body: body.into(),
        streaming_strategy: streaming,
        upgrade,
    };
    Encode!(&response).unwrap()
}

/// A canister whose every export (`canister_query http_request`, ...)
/// replies with its fixed bytes, certifying nothing.
fn replying(exports: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let (mut data, mut funcs, mut offset) = (String::new(), String::new(), 0);
    for (export, reply) in exports {
        let bytes: String = reply.iter().map(|byte| format!("\\{byte:02x}")).collect();
        data += &format!(r#"(data (i32.const {offset}) "{bytes}")"#);
        funcs += &format!(
            r#"(func (export "{export}") (call $append (i32.const {offset}) (i32.const {})) (call $reply))"#,
            reply.len()
        );
        offset += reply.len();
    }
    wat::parse_str(format!(
        r#"(module
            (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
            (import "ic0" "msg_reply" (func $reply))
            (memory 1)
            {data}
            {funcs})"#
    ))
    .unwrap()
}

/// A canister whose `http_request` answers every request with 200 and
/// `body`, and no certificate.
fn uncertified_page(body: &str) -> Vec<u8> {
    replying(&[("canister_query http_request", response(body, None, None))])
}

/// GET `url`, `host` resolving to the network as a browser resolves
/// `*.localhost`: the status and the body.
async fn get(address: SocketAddr, host: &str, path: &str) -> (u16, String) {
    let client = reqwest::Client::builder().resolve(host, address).build().unwrap();
    let response = client.get(format!("http://{host}:{}{path}", address.port())).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_candid_ui_is_served_verified_and_failures_get_the_gateways_status_and_a_page() {
    let (address, agent) = network().await;
    let candid_ui = install(&agent, canister_wasm::elsewhere::candid_ui().unwrap()).await;
    let proxy = install(&agent, canister_wasm::elsewhere::proxy().unwrap()).await;

    // The link icp-cli and dfx print, the canister's own domain, its raw one.
    let candid_ui_page = |(status, body): (u16, String)| {
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains("<title>DFINITY Canister Candid UI</title>"),
            "the Candid UI's page: {body:.300}"
        );
    };
    candid_ui_page(get(address, "127.0.0.1", &format!("/?canisterId={candid_ui}&id={proxy}")).await);
    candid_ui_page(get(address, &format!("{candid_ui}.localhost"), "/").await);
    candid_ui_page(get(address, &format!("{candid_ui}.raw.localhost"), "/").await);

    // The script that page loads, found by the page's address (its Referer).
    let script = reqwest::Client::new()
        .get(format!("http://{address}/index.js"))
        .header(reqwest::header::REFERER, format!("http://{address}/?canisterId={candid_ui}"))
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), 200);
    assert!(script.text().await.unwrap().contains("__webpack_require__"), "the Candid UI's script");

    // A page served without a certificate is refused unless raw: the
    // gateway verifies (and so verified the Candid UI's above).
    let uncertified = install(&agent, uncertified_page("an uncertified page")).await;
    let (status, body) = get(address, &format!("{uncertified}.localhost"), "/").await;
    assert_eq!(status, 500, "{body}");
    let raw = format!("http://{uncertified}.raw.localhost:{}/", address.port());
    assert!(body.contains("Response not verified") && body.contains(&raw), "{body}");
    let (status, body) = get(address, &format!("{uncertified}.raw.localhost"), "/").await;
    assert_eq!((status, body.as_str()), (200, "an uncertified page"));

    // A canister without `http_request`.
    let (status, body) = get(address, "127.0.0.1", &format!("/?canisterId={proxy}")).await;
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("no <code>http_request</code> method"), "{body}");

    // No such canister: an id in a subnet's range, and one in none.
    let unknown = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0x10, 0, 1, 1]);
    let (status, body) = get(address, &format!("{unknown}.localhost"), "/").await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("No such canister") && body.contains(&unknown.to_text()), "{body}");
    let nowhere = Principal::from_slice(&[0xff; 10]);
    let (status, body) = get(address, "127.0.0.1", &format!("/?canisterId={nowhere}")).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("No such canister") && body.contains(&nowhere.to_text()), "{body}");

    // No canister named, or not an id.
    let (status, body) = get(address, "127.0.0.1", "/").await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("No canister named") && body.contains("?canisterId="), "{body}");
    for (host, path) in [("127.0.0.1", "/?canisterId=not-an-id"), ("nope.localhost", "/")] {
        let (status, body) = get(address, host, path).await;
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("is not a canister id"), "{body}");
    }

    // The API is the IC's HTTP interface still, and serves on.
    let (status, body) = get(address, "127.0.0.1", "/api/v3/nothing").await;
    assert_eq!((status, body.as_str()), (404, "Endpoint not found."));
    let status = agent.status().await.expect("/api/v2/status answers");
    assert!(status.root_key.is_some());
}

/// The two ways a canister answers over several calls, through the
/// network's API: a query asking to be upgraded is answered by
/// `http_request_update`, and a streamed body is followed through its
/// callback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgraded_request_is_answered_by_the_update_and_a_stream_is_followed() {
    let (address, agent) = network().await;
    let upgraded = install(
        &agent,
        replying(&[
            ("canister_query http_request", response("", Some(true), None)),
            ("canister_update http_request_update", response("answered by http_request_update", None, None)),
        ]),
    )
    .await;
    // An update's reply comes certified by the call's own certificate.
    let (status, body) = get(address, &format!("{upgraded}.localhost"), "/").await;
    assert_eq!((status, body.as_str()), (200, "answered by http_request_update"));

    let streamed = create(&agent).await;
    let callback = candid::Func { principal: streamed, method: "http_request_streaming_callback".into() };
    let strategy = StreamingStrategy::Callback(CallbackStrategy {
        callback: HttpRequestStreamingCallback(callback, std::marker::PhantomData),
        token: Part { index: 1 },
    });
    let last = StreamingCallbackHttpResponse::<Part> { body: "and the rest".into(), token: None };
    let wasm = replying(&[
        ("canister_query http_request", response("the first part, ", None, Some(strategy))),
        ("canister_query http_request_streaming_callback", Encode!(&last).unwrap()),
    ]);
    install_into(&agent, streamed, wasm).await;
    let (status, body) = get(address, &format!("{streamed}.raw.localhost"), "/").await;
    assert_eq!((status, body.as_str()), (200, "the first part, and the rest"));
}
