//! The interface as ic-agent 0.49.1 (icp-cli's agent) sees it: its own
//! verifier checks every certificate and query signature. The backend here
//! is a small echo engine, so that these tests are about the protocol; the
//! simulator behind the same interface is tested in `ic_http_on_sim`.

use candid::Principal;
use ic_agent::agent::{RejectCode, RequestStatusResponse};
use ic_agent::identity::{
    AnonymousIdentity, BasicIdentity, DelegatedIdentity, Prime256v1Identity, Secp256k1Identity,
};
use ic_agent::{Agent, AgentError, Identity, RequestId};
use ic_error_types::ErrorCode;
use ic_http::{Backend, Network, Options, Persistence, Reject};
use ic_model::{CanisterCall, CertifiedState, Effective, Interface, Keys, SubnetRanges};
use ic_transport_types::{Delegation, Envelope, EnvelopeContent, SignedDelegation};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A canister id as the IC makes them: a number, then the class bytes.
fn canister(n: u64) -> Principal {
    Principal::from_slice(&[&n.to_be_bytes()[..], &[1, 1]].concat())
}

fn subnet(n: u8) -> Principal {
    Principal::from_slice(&[n; 29])
}

/// Two subnets of 1000 canisters each. `echo` replies with its argument,
/// `whoami` with the sender, the update `count` with how many times it has
/// executed; every other method is missing. An update executes in the
/// round after it is submitted. Its keys derive from `seed`.
struct Echo {
    state: Arc<CertifiedState>,
    time: u64,
    count: u64,
    messages: Vec<Message>,
}

impl Echo {
    fn new(seed: u64) -> Self {
        let subnets = [
            SubnetRanges { id: subnet(1), ranges: vec![(canister(0), canister(999))] },
            SubnetRanges { id: subnet(2), ranges: vec![(canister(1000), canister(1999))] },
        ];
        let state = Arc::new(CertifiedState::new(Keys::from_seed(seed), &subnets, 0));
        Self { state, time: 0, count: 0, messages: vec![] }
    }

    /// The engine [`Backend::save`] saved, with keys from `seed`.
    fn restore(seed: u64, saved: &[u8]) -> Self {
        let (time, count, messages): (u64, u64, Vec<Message>) = serde_cbor::from_slice(saved).unwrap();
        Self { time, count, messages, ..Self::new(seed) }
    }
}

/// A message submitted: to, from, method, argument, and its outcome once executed.
type Message = (Principal, Principal, String, Vec<u8>, Option<Result<Vec<u8>, Reject>>);

fn missing(canister: Principal, kind: &str, method: &str) -> Reject {
    Reject::new(
        ErrorCode::CanisterMethodNotFound,
        format!("Canister {canister} has no {kind} method '{method}'"),
    )
}

impl Interface for Echo {
    fn description(&self) -> String {
        "an echo backend for ic_http's tests".into()
    }

    fn time(&self) -> u64 {
        self.time
    }

    fn advance_time_to(&mut self, ns: u64) {
        self.time = self.time.max(ns);
    }

    fn query(&mut self, call: CanisterCall) -> Result<Vec<u8>, Reject> {
        match call.method.as_str() {
            "echo" => Ok(call.arg),
            "whoami" => Ok(call.sender.as_slice().to_vec()),
            "panic" => panic!("the echo backend panics when asked to"),
            method => Err(missing(call.canister, "query", method)),
        }
    }

    fn submit(&mut self, _effective: Effective, call: CanisterCall) -> Result<u64, Reject> {
        if call.canister == Principal::management_canister() {
            return Err(missing(call.canister, "update", &call.method));
        }
        self.messages.push((call.canister, call.sender, call.method, call.arg, None));
        Ok(self.messages.len() as u64 - 1)
    }

    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>> {
        self.messages[ticket as usize].4.clone()
    }

    fn forget(&mut self, ticket: u64) {
        self.messages[ticket as usize].3.clear();
    }

    fn tick(&mut self) {
        for (canister, sender, method, arg, outcome) in self.messages.iter_mut().filter(|m| m.4.is_none()) {
            *outcome = Some(match method.as_str() {
                "echo" => Ok(std::mem::take(arg)),
                "whoami" => Ok(sender.as_slice().to_vec()),
                "count" => {
                    self.count += 1;
                    Ok(self.count.to_be_bytes().to_vec())
                }
                _ => Err(missing(*canister, "update", method)),
            });
        }
    }
}

impl Backend for Echo {
    fn certified_state(&self) -> Arc<CertifiedState> {
        self.state.clone()
    }

    fn has_work(&self) -> bool {
        self.messages.iter().any(|m| m.4.is_none())
    }

    fn state_version(&self) -> u64 {
        self.messages.len() as u64
    }

    fn save(&self) -> Result<ic_http::SavedState, String> {
        let saved = serde_cbor::to_vec(&(self.time, self.count, &self.messages)).unwrap();
        Ok(Box::new(move || Ok(saved)))
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// Serves a network on 127.0.0.1 and returns its URL.
async fn serve(options: Options) -> (String, Network) {
    serve_seeded(0, options).await
}

/// Serves a network whose keys derive from `seed`.
async fn serve_seeded(seed: u64, options: Options) -> (String, Network) {
    let network = Network::start(move || Box::new(Echo::new(seed)), options).unwrap();
    (ic_http::serve_locally(network.clone()).await.unwrap(), network)
}

async fn agent(url: &str, identity: impl Identity + 'static) -> Agent {
    let agent = Agent::builder().with_url(url).with_identity(identity).build().unwrap();
    agent.fetch_root_key().await.unwrap();
    agent
}

#[tokio::test]
async fn status_serves_the_root_key_its_seed_derives() {
    let (url, network) = serve_seeded(7, Options::default()).await;
    let agent = agent(&url, AnonymousIdentity).await;
    assert_eq!(agent.read_root_key(), Keys::from_seed(7).root_key_der());
    assert_eq!(network.root_key(), Keys::from_seed(7).root_key_der());
    assert_ne!(Keys::from_seed(7).root_key_der(), Keys::from_seed(8).root_key_der());
}

#[tokio::test]
async fn certificates_verify_for_the_canisters_their_subnet_hosts_only() {
    let (url, _network) = serve(Options::default()).await;
    let agent = agent(&url, AnonymousIdentity).await;
    let on_subnet_2 = canister(1500);
    let certificate = agent.read_state_raw(vec![vec!["time".into()]], on_subnet_2).await.unwrap();
    assert!(agent.verify(&certificate, on_subnet_2).is_ok());
    let delegation = certificate.delegation.as_ref().expect("a subnet's certificate is delegated");
    assert_eq!(delegation.subnet_id, subnet(2).as_slice());
    assert!(
        matches!(agent.verify(&certificate, canister(5)), Err(AgentError::CertificateNotAuthorized())),
        "subnet 2's certificate must not speak for subnet 1's canister"
    );
}

#[tokio::test]
async fn subnets_are_found_by_id_and_by_canister() {
    let (url, _network) = serve(Options::default()).await;
    let agent = agent(&url, AnonymousIdentity).await;
    let by_id = agent.fetch_subnet_by_id(&subnet(2)).await.unwrap();
    assert!(by_id.contains_canister(&canister(1000)) && by_id.contains_canister(&canister(1999)));
    assert!(!by_id.contains_canister(&canister(999)));
    let by_canister = agent.fetch_subnet_by_canister(&canister(3)).await.unwrap();
    assert_eq!(by_canister.id(), subnet(1));
    assert_eq!(by_canister.iter_node_keys().count(), 1);
}

/// One identity of every kind of key the interface accepts, and anonymous.
fn every_kind_of_identity() -> Vec<Box<dyn Identity>> {
    vec![
        Box::new(AnonymousIdentity),
        Box::new(BasicIdentity::from_raw_key(&[3; 32])),
        Box::new(Secp256k1Identity::from_private_key(k256::SecretKey::from_slice(&[4; 32]).unwrap())),
        Box::new(Prime256v1Identity::from_private_key(p256::SecretKey::from_slice(&[5; 32]).unwrap())),
    ]
}

#[tokio::test]
async fn queries_are_signed_by_a_node_of_the_canisters_subnet() {
    let (url, _network) = serve(Options::default()).await;
    for identity in every_kind_of_identity() {
        let sender = identity.sender().unwrap();
        let agent = Agent::builder().with_url(&url).with_boxed_identity(identity).build().unwrap();
        agent.fetch_root_key().await.unwrap();
        let echoed = agent.query(&canister(1200), "echo").with_arg(b"hi".to_vec()).call().await.unwrap();
        assert_eq!(echoed, b"hi");
        let who = agent.query(&canister(7), "whoami").call().await.unwrap();
        assert_eq!(Principal::from_slice(&who), sender, "the query runs as its signer");
    }
}

#[tokio::test]
async fn a_missing_method_is_an_uncertified_reject_with_the_replicas_codes() {
    let (url, _network) = serve(Options::default()).await;
    let agent = agent(&url, AnonymousIdentity).await;
    match agent.query(&canister(1), "nothing").call().await {
        Err(AgentError::UncertifiedReject { reject, .. }) => {
            assert_eq!(reject.reject_code, RejectCode::CanisterError);
            assert_eq!(reject.error_code.as_deref(), Some("IC0536"));
            assert!(
                reject.reject_message.contains("has no query method 'nothing'"),
                "{}",
                reject.reject_message
            );
        }
        other => panic!("expected a reject, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unknown_request_status_is_unknown() {
    let (url, _network) = serve(Options::default()).await;
    let agent = agent(&url, AnonymousIdentity).await;
    let (status, _certificate) =
        agent.request_status_raw(&RequestId::new(&[9; 32]), canister(1)).await.unwrap();
    assert!(matches!(status, RequestStatusResponse::Unknown), "{status:?}");
}

#[tokio::test]
async fn a_certificate_older_than_the_agents_expiry_is_refused() {
    let behind: ic_http::Options =
        Options { clock: Arc::new(|| now() - 300_000_000_000), ..Options::default() };
    let (url, _network) = serve(behind).await;
    let agent = agent(&url, AnonymousIdentity).await;
    let read = agent.read_state_raw(vec![vec!["time".into()]], canister(1)).await;
    assert!(matches!(read, Err(AgentError::CertificateOutdated(_))), "{read:?}");
}

#[tokio::test]
async fn a_delegation_speaks_for_its_signer_within_its_targets() {
    let (url, _network) = serve(Options::default()).await;
    let signer = BasicIdentity::from_raw_key(&[6; 32]);
    let session = BasicIdentity::from_raw_key(&[7; 32]);
    let delegation = Delegation {
        pubkey: session.public_key().unwrap(),
        expiration: now() + 3_600_000_000_000,
        targets: Some(vec![canister(8)]),
        permissions: None,
    };
    let signature = signer.sign_delegation(&delegation).unwrap().signature.unwrap();
    let chain = vec![SignedDelegation { delegation, signature }];
    let delegated = DelegatedIdentity::new_unchecked(signer.public_key().unwrap(), Box::new(session), chain);
    let agent = agent(&url, delegated).await;
    let who = agent.query(&canister(8), "whoami").call().await.unwrap();
    assert_eq!(Principal::from_slice(&who), signer.sender().unwrap());
    match agent.query(&canister(9), "whoami").call().await {
        Err(AgentError::HttpError(e)) => {
            assert_eq!(e.status, 400);
            let text = String::from_utf8_lossy(&e.content);
            assert!(text.contains("is not one of the delegation targets"), "{text}");
        }
        other => panic!("a canister outside the targets must be refused, got {other:?}"),
    }
}

/// A query envelope for `canister(1)`'s `echo`, signed by `key` for `sender`.
fn query_envelope(
    key: &ic_ed25519::PrivateKey,
    sender: Principal,
    expiry: u64,
    forge_signature: bool,
) -> Vec<u8> {
    let content = EnvelopeContent::Query {
        ingress_expiry: expiry,
        sender,
        canister_id: canister(1),
        method_name: "echo".into(),
        arg: vec![],
        nonce: None,
        sender_info: None,
    };
    let mut signature = key.sign_message(&content.to_request_id().signable()).to_vec();
    if forge_signature {
        signature[0] ^= 1;
    }
    Envelope {
        content: std::borrow::Cow::Owned(content),
        sender_pubkey: Some(key.public_key().serialize_rfc8410_der()),
        sender_sig: Some(signature),
        sender_delegation: None,
    }
    .encode_bytes()
}

/// A page on another origin (the Candid UI at `<id>.localhost`) calls the
/// API at `localhost`: the browser asks first, as agents send CBOR.
#[tokio::test]
async fn pages_on_other_origins_may_call_the_api() {
    let (url, _network) = serve(Options::default()).await;
    let http = reqwest::Client::new();
    let query_url = format!("{url}/api/v3/canister/{}/query", canister(1));
    let asked = http
        .request(reqwest::Method::OPTIONS, &query_url)
        .header("origin", "http://aaaaa-aa.localhost:4944")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 200);
    let header = |name: &str| asked.headers()[name].to_str().unwrap().to_string();
    assert_eq!(header("access-control-allow-origin"), "*");
    assert!(header("access-control-allow-methods").contains("POST"));
    assert_eq!(header("access-control-allow-headers"), "content-type");
    let status = http.get(format!("{url}/api/v2/status")).header("origin", "http://x.localhost").send();
    assert_eq!(status.await.unwrap().headers()["access-control-allow-origin"], "*");
}

#[tokio::test]
async fn bad_requests_get_the_replicas_errors_and_the_server_keeps_serving() {
    let (url, _network) = serve(Options::default()).await;
    let http = reqwest::Client::new();
    let key = ic_ed25519::PrivateKey::generate_from_seed(&[1; 32]);
    let me = Principal::self_authenticating(key.public_key().serialize_rfc8410_der());
    let fresh = now() + 120_000_000_000;
    let query_url = format!("{url}/api/v3/canister/{}/query", canister(1));
    // What is sent, where, as what; the status and text expected.
    type Case = (&'static str, String, Vec<u8>, &'static str, u16, &'static str);
    let cases: Vec<Case> = vec![
        (
            "a wrong content type",
            query_url.clone(),
            vec![],
            "text/plain",
            400,
            "Unexpected content-type, expected application/cbor.",
        ),
        (
            "malformed CBOR",
            query_url.clone(),
            vec![0xff, 0x00],
            "application/cbor",
            400,
            "Failed to deserialize cbor request",
        ),
        (
            "a forged sender",
            query_url.clone(),
            query_envelope(&key, canister(77), fresh, false),
            "application/cbor",
            400,
            "does not match the public key",
        ),
        (
            "a bad signature",
            query_url.clone(),
            query_envelope(&key, me, fresh, true),
            "application/cbor",
            400,
            "Invalid signature",
        ),
        (
            "an expired request",
            query_url.clone(),
            query_envelope(&key, me, now() - 1_000_000_000, false),
            "application/cbor",
            400,
            "Invalid request expiry",
        ),
        (
            "an expiry too far ahead",
            query_url.clone(),
            query_envelope(&key, me, now() + 400_000_000_000, false),
            "application/cbor",
            400,
            "Invalid request expiry",
        ),
        (
            "another canister than the URL's",
            format!("{url}/api/v3/canister/{}/query", canister(2)),
            query_envelope(&key, me, fresh, false),
            "application/cbor",
            400,
            "does not match effective canister id in URL",
        ),
        ("an oversized body", query_url.clone(), vec![0; 6 << 20], "application/cbor", 413, ""),
        (
            "an unknown endpoint",
            format!("{url}/api/v9/nothing"),
            vec![],
            "application/cbor",
            404,
            "Endpoint not found.",
        ),
    ];
    for (what, url_, body, content_type, status, text) in cases {
        let response = http.post(&url_).header("content-type", content_type).body(body).send().await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{what}");
        let body = response.text().await.unwrap();
        assert!(body.contains(text), "{what}: {body}");
        let still = http.get(format!("{url}/api/v2/status")).send().await.unwrap();
        assert_eq!(still.status().as_u16(), 200, "the server still serves after {what}");
    }
    let good = http
        .post(&query_url)
        .header("content-type", "application/cbor")
        .body(query_envelope(&key, me, fresh, false))
        .send()
        .await
        .unwrap();
    assert_eq!(good.status().as_u16(), 200, "the same envelope, well signed, is answered");
}

#[test]
fn the_same_seed_gives_the_same_root_key_and_others_another() {
    let keys = Keys::from_seed(0);
    assert_eq!(keys.root_key_der(), Keys::from_seed(0).root_key_der());
    assert_ne!(keys.root_key_der(), Keys::from_seed(1).root_key_der());
}

#[tokio::test]
async fn updates_are_answered_with_certified_replies_for_every_kind_of_key() {
    let (url, _network) = serve(Options::default()).await;
    for identity in every_kind_of_identity() {
        let sender = identity.sender().unwrap();
        let agent = Agent::builder().with_url(&url).with_boxed_identity(identity).build().unwrap();
        agent.fetch_root_key().await.unwrap();
        let who = agent.update(&canister(1500), "whoami").call_and_wait().await.unwrap();
        assert_eq!(Principal::from_slice(&who), sender, "the update runs as its signer");
    }
}

#[tokio::test]
async fn a_canisters_reject_is_certified() {
    let (url, _network) = serve(Options::default()).await;
    let agent = agent(&url, AnonymousIdentity).await;
    match agent.update(&canister(2), "nothing").call_and_wait().await {
        Err(AgentError::CertifiedReject { reject, .. }) => {
            assert_eq!(reject.reject_code, RejectCode::CanisterError);
            assert_eq!(reject.error_code.as_deref(), Some("IC0536"));
        }
        other => panic!("expected a certified reject, got {other:?}"),
    }
    match agent
        .update(&Principal::management_canister(), "nothing")
        .with_effective_canister_id(canister(2))
        .call_and_wait()
        .await
    {
        Err(AgentError::UncertifiedReject { reject, .. }) => {
            assert_eq!(reject.error_code.as_deref(), Some("IC0536"), "refused before execution");
        }
        other => panic!("expected a non-replicated rejection, got {other:?}"),
    }
}

/// A call envelope for `count` on `canister(1)`, signed by `key`.
fn count_envelope(key: &ic_ed25519::PrivateKey, nonce: u8) -> (RequestId, Vec<u8>) {
    let content = EnvelopeContent::Call {
        nonce: Some(vec![nonce]),
        ingress_expiry: now() + 120_000_000_000,
        sender: Principal::self_authenticating(key.public_key().serialize_rfc8410_der()),
        canister_id: canister(1),
        method_name: "count".into(),
        arg: vec![],
        sender_info: None,
    };
    let signature = key.sign_message(&content.to_request_id().signable()).to_vec();
    let id = content.to_request_id();
    let envelope = Envelope {
        content: std::borrow::Cow::Owned(content),
        sender_pubkey: Some(key.public_key().serialize_rfc8410_der()),
        sender_sig: Some(signature),
        sender_delegation: None,
    };
    (id, envelope.encode_bytes())
}

#[tokio::test]
async fn a_request_submitted_twice_executes_once_and_only_its_sender_reads_its_status() {
    let (url, network) = serve(Options::default()).await;
    let http = reqwest::Client::new();
    let key = ic_ed25519::PrivateKey::deserialize_raw_32(&[11; 32]);
    let (id, envelope) = count_envelope(&key, 1);
    for version in ["v2", "v3", "v4", "v2"] {
        let response = http
            .post(format!("{url}/api/{version}/canister/{}/call", canister(1)))
            .header("content-type", "application/cbor")
            .body(envelope.clone())
            .send()
            .await
            .unwrap();
        assert!([200, 202].contains(&response.status().as_u16()), "{version}: {}", response.status());
    }
    let sender = agent(&url, BasicIdentity::from_raw_key(&[11; 32])).await;
    let (status, _) = sender.request_status_raw(&id, canister(1)).await.unwrap();
    match status {
        RequestStatusResponse::Replied(reply) => {
            assert_eq!(reply.arg, 1u64.to_be_bytes(), "the first execution")
        }
        other => panic!("expected a reply, got {other:?}"),
    }
    let (_, envelope) = count_envelope(&key, 2);
    let response = http
        .post(format!("{url}/api/v3/canister/{}/call", canister(1)))
        .header("content-type", "application/cbor")
        .body(envelope)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let second = sender.update(&canister(1), "count").call_and_wait().await.unwrap();
    assert_eq!(second, 3u64.to_be_bytes(), "four submissions of one request id executed once");
    let stranger = agent(&url, BasicIdentity::from_raw_key(&[12; 32])).await;
    match stranger.request_status_raw(&id, canister(1)).await {
        Err(AgentError::HttpError(e)) => assert_eq!(e.status, 403),
        other => panic!("another sender must not read the status, got {other:?}"),
    }
    assert_eq!(network.remembered_requests(), 3);
}

#[tokio::test]
async fn many_agents_at_once_get_exactly_one_outcome_per_call() {
    let (url, _network) = serve(Options::default()).await;
    let calls = (0..64u8).map(|n| {
        let url = url.clone();
        tokio::spawn(async move {
            let agent = agent(&url, BasicIdentity::from_raw_key(&[n; 32])).await;
            let mut counts = vec![];
            for _ in 0..4 {
                let count = agent.update(&canister(1), "count").call_and_wait().await.unwrap();
                counts.push(u64::from_be_bytes(count.try_into().unwrap()));
            }
            counts
        })
    });
    let mut counts: Vec<u64> = futures_join(calls).await.into_iter().flatten().collect();
    counts.sort_unstable();
    assert_eq!(counts, (1..=256).collect::<Vec<u64>>(), "each call executed once and answered once");
}

async fn futures_join<T>(handles: impl Iterator<Item = tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut results = vec![];
    for handle in handles.collect::<Vec<_>>() {
        results.push(handle.await.unwrap());
    }
    results
}

#[tokio::test]
async fn a_request_is_forgotten_after_its_expiry_and_cannot_be_replayed() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let ahead = Arc::new(AtomicU64::new(0));
    let clock = ahead.clone();
    let options =
        Options { clock: Arc::new(move || now() + clock.load(Ordering::Relaxed)), ..Options::default() };
    let (url, network) = serve(options).await;
    let http = reqwest::Client::new();
    let key = ic_ed25519::PrivateKey::deserialize_raw_32(&[13; 32]);
    let (_, envelope) = count_envelope(&key, 1);
    let call = |body: Vec<u8>| {
        http.post(format!("{url}/api/v3/canister/{}/call", canister(1)))
            .header("content-type", "application/cbor")
            .body(body)
            .send()
    };
    assert_eq!(call(envelope.clone()).await.unwrap().status(), 200);
    assert_eq!(network.remembered_requests(), 1);
    // Past the request's expiry (120 s): the next rounds prune it.
    ahead.store(200_000_000_000, Ordering::Relaxed);
    let started = std::time::Instant::now();
    while network.remembered_requests() > 0 {
        assert!(started.elapsed().as_secs() < 10, "the request was never forgotten");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let replay = call(envelope).await.unwrap();
    assert_eq!(replay.status(), 400, "an expired request is refused, not executed again");
    assert!(replay.text().await.unwrap().contains("Invalid request expiry"));
}

/// A read_state content with a nonce, which ic-transport-types' own
/// `EnvelopeContent` cannot carry, written from the specification.
#[derive(serde::Serialize)]
struct ReadStateWithNonce {
    request_type: &'static str,
    ingress_expiry: u64,
    sender: Principal,
    paths: Vec<Vec<serde_bytes::ByteBuf>>,
    #[serde(with = "serde_bytes")]
    nonce: Vec<u8>,
}

/// A read_state of `/time` with `nonce`, signed by `key` (anonymous if
/// none) over its request id, or over the id of the same content without
/// the nonce.
fn read_state_with_nonce(
    key: Option<&ic_ed25519::PrivateKey>,
    nonce: Vec<u8>,
    sign_without_nonce: bool,
) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Signed<'a> {
        content: &'a ReadStateWithNonce,
        #[serde(with = "serde_bytes", skip_serializing_if = "Option::is_none")]
        sender_pubkey: Option<Vec<u8>>,
        #[serde(with = "serde_bytes", skip_serializing_if = "Option::is_none")]
        sender_sig: Option<Vec<u8>>,
    }
    let der = key.map(|key| key.public_key().serialize_rfc8410_der());
    let content = ReadStateWithNonce {
        request_type: "read_state",
        ingress_expiry: now() + 120_000_000_000,
        sender: der.as_ref().map_or(Principal::anonymous(), Principal::self_authenticating),
        paths: vec![vec![serde_bytes::ByteBuf::from(b"time".to_vec())]],
        nonce,
    };
    let id = if sign_without_nonce {
        EnvelopeContent::ReadState {
            ingress_expiry: content.ingress_expiry,
            sender: content.sender,
            paths: vec![vec!["time".into()]],
        }
        .to_request_id()
    } else {
        ic_transport_types::to_request_id(&content).unwrap()
    };
    let sender_sig = key.map(|key| key.sign_message(&id.signable()).to_vec());
    let mut body = vec![];
    let mut serializer = serde_cbor::Serializer::new(&mut body);
    serializer.self_describe().unwrap();
    serde::Serialize::serialize(
        &Signed { content: &content, sender_pubkey: der, sender_sig },
        &mut serializer,
    )
    .unwrap();
    body
}

#[tokio::test]
async fn a_read_state_carries_a_nonce_of_at_most_32_bytes() {
    let (url, _network) = serve(Options::default()).await;
    let agent = agent(&url, AnonymousIdentity).await;
    let http = reqwest::Client::new();
    let key = ic_ed25519::PrivateKey::generate_from_seed(&[5; 32]);
    let post = |path: String, body: Vec<u8>| {
        http.post(format!("{url}{path}")).header("content-type", "application/cbor").body(body).send()
    };
    for path in [
        format!("/api/v2/canister/{}/read_state", canister(1)),
        format!("/api/v3/canister/{}/read_state", canister(1)),
        format!("/api/v2/subnet/{}/read_state", subnet(1)),
        format!("/api/v3/subnet/{}/read_state", subnet(1)),
    ] {
        let signed = post(path.clone(), read_state_with_nonce(Some(&key), vec![7; 32], false)).await.unwrap();
        assert_eq!(signed.status(), 200, "{path}: {}", signed.text().await.unwrap());
        let response: ic_transport_types::ReadStateResponse =
            serde_cbor::from_slice(&signed.bytes().await.unwrap()).unwrap();
        let certificate: ic_agent::Certificate = serde_cbor::from_slice(&response.certificate).unwrap();
        assert!(ic_agent::lookup_value(&certificate, [b"time".as_slice()]).is_ok(), "{path}");

        // The nonce is part of the request id: a signature over the id
        // without it does not hold.
        let forged = post(path.clone(), read_state_with_nonce(Some(&key), vec![7; 32], true)).await.unwrap();
        assert_eq!(forged.status(), 400, "{path}");

        for key in [Some(&key), None] {
            let long = post(path.clone(), read_state_with_nonce(key, vec![7; 33], false)).await.unwrap();
            assert_eq!(long.status(), 400, "{path}");
            let text = long.text().await.unwrap();
            assert!(text.contains("the nonce has 33 bytes, at most 32 are allowed"), "{path}: {text}");
        }
    }
    assert!(agent.read_state_raw(vec![vec!["time".into()]], canister(1)).await.is_ok(), "still serving");
}

/// A network over [`Echo`] that keeps its state in `dir`, on a runtime of
/// its own: dropping the runtime stops it.
fn start_saved(
    dir: &std::path::Path,
    format: &str,
) -> Result<(tokio::runtime::Runtime, String, Network), String> {
    let persistence = Persistence {
        dir: dir.to_path_buf(),
        backend_format: format.into(),
        checkpoint_every: std::time::Duration::from_secs(3600),
    };
    let make = |saved: Option<&[u8]>| -> Result<Box<dyn Backend>, String> {
        Ok(Box::new(match saved {
            None => Echo::new(0),
            Some(saved) => Echo::restore(0, saved),
        }))
    };
    // The last network on `dir` lets go of its lock once its thread ends.
    let mut tries = 0;
    let network = loop {
        match Network::start_saved(make, Options::default(), persistence.clone()) {
            Err(why) if why.contains("another process") && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            started => break started?,
        }
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(ic_http::serve_locally(network.clone())).unwrap();
    Ok((runtime, url, network))
}

#[test]
fn a_network_started_again_on_its_state_dir_keeps_its_outcomes_and_executes_nothing_twice() {
    let dir = std::env::temp_dir().join(format!("ic_http-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let key = ic_ed25519::PrivateKey::deserialize_raw_32(&[21; 32]);
    let (id, envelope) = count_envelope(&key, 1);
    let submit = |runtime: &tokio::runtime::Runtime, url: &str| {
        let status = runtime.block_on(async {
            let response = reqwest::Client::new()
                .post(format!("{url}/api/v3/canister/{}/call", canister(1)))
                .header("content-type", "application/cbor")
                .body(envelope.clone())
                .send()
                .await
                .unwrap();
            response.status().as_u16()
        });
        assert_eq!(status, 200);
    };
    let status_of = |runtime: &tokio::runtime::Runtime, url: &str| {
        runtime.block_on(async {
            let sender = agent(url, BasicIdentity::from_raw_key(&[21; 32])).await;
            match sender.request_status_raw(&id, canister(1)).await.unwrap().0 {
                RequestStatusResponse::Replied(reply) => reply.arg,
                other => panic!("expected a reply, got {other:?}"),
            }
        })
    };

    let (runtime, url, network) = start_saved(&dir, "echo 1").unwrap();
    submit(&runtime, &url);
    assert_eq!(status_of(&runtime, &url), 1u64.to_be_bytes());
    let report = network.save().unwrap();
    assert!(report.bytes > 0);
    let rounds = network.rounds();
    drop((runtime, network));

    let (runtime, url, network) = start_saved(&dir, "echo 1").unwrap();
    assert_eq!(network.rounds(), rounds, "the round counter goes on");
    assert_eq!(network.remembered_requests(), 1);
    assert_eq!(status_of(&runtime, &url), 1u64.to_be_bytes(), "its certified outcome is the same");
    submit(&runtime, &url);
    let next = runtime.block_on(async {
        let sender = agent(&url, BasicIdentity::from_raw_key(&[21; 32])).await;
        sender.update(&canister(1), "count").call_and_wait().await.unwrap()
    });
    assert_eq!(next, 2u64.to_be_bytes(), "the request sent again was not executed again");
    network.save().unwrap();
    let saved = std::fs::read(dir.join("state")).unwrap();
    // A backend that failed is in an unknown state: it is not saved.
    let failed = runtime.block_on(async {
        let sender = agent(&url, BasicIdentity::from_raw_key(&[21; 32])).await;
        sender.query(&canister(1), "panic").call().await
    });
    assert!(failed.is_err());
    let refused = network.save().unwrap_err();
    assert!(
        refused.contains("the backend panicked earlier: the echo backend panics when asked to")
            && refused.contains("keeps the last checkpoint"),
        "{refused}"
    );
    assert_eq!(std::fs::read(dir.join("state")).unwrap(), saved);
    drop((runtime, network));

    let refused = start_saved(&dir, "echo 2").err().unwrap();
    assert!(
        refused.contains("written by ic_http state 1 over echo 1; this is ic_http state 1 over echo 2"),
        "{refused}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
