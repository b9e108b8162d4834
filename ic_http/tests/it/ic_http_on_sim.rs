//! The example through the IC's HTTP interface (`ic_http`) with the
//! simulator behind it, as ic-agent 0.49.1 (icp-cli's agent) calls it: the
//! real canister wasm, caller and callee on separate subnets, every
//! certificate and query signature checked by the agent's verifier.

use candid::{Decode, Encode, Principal};
use ic_agent::identity::BasicIdentity;
use ic_agent::{Agent, AgentError};
use ic_http::Network;
use sim::Sim;
use std::time::{Duration, Instant};

/// The caller on subnet 0 and the callee on the last of `subnets`, both
/// controlled by `controller`, served on 127.0.0.1; returns the URL and
/// the two canister ids.
async fn network(subnets: usize, controller: Principal) -> (String, Principal, Principal) {
    let (url, caller, callee, _) = paced_network(subnets, controller, 0, ic_http::Options::default()).await;
    (url, caller, callee)
}

/// As [`network`], with `xnet_latency_rounds` and `options`; also returns the network.
async fn paced_network(
    subnets: usize,
    controller: Principal,
    xnet_latency_rounds: u64,
    options: ic_http::Options,
) -> (String, Principal, Principal, Network) {
    let wasms = canister_wasm::caller_and_callee().expect("the canisters build");
    let (ids, made) = std::sync::mpsc::channel();
    let make = move || {
        let builder = (0..subnets).fold(Sim::builder(), |b, _| b.with_subnet());
        let mut sim = builder.with_xnet_latency_rounds(xnet_latency_rounds).build();
        let caller = sim.create_canister(0, vec![controller]).unwrap();
        let callee = sim.create_canister(subnets - 1, vec![controller]).unwrap();
        sim.install_canister(caller, &wasms.caller, Encode!().unwrap(), controller).unwrap();
        sim.install_canister(callee, &wasms.callee, Encode!().unwrap(), controller).unwrap();
        ids.send((caller, callee)).unwrap();
        Box::new(ic_model::sim_engine::network(sim, ic_model::Keys::from_seed(0)).unwrap())
            as Box<dyn ic_http::Backend>
    };
    let network = Network::start(make, options).unwrap();
    let (caller, callee) = made.recv().unwrap();
    (ic_http::serve_locally(network.clone()).await.unwrap(), caller, callee, network)
}

async fn agent(url: &str, key: u8) -> Agent {
    let agent = Agent::builder()
        .with_url(url)
        .with_identity(BasicIdentity::from_raw_key(&[key; 32]))
        .build()
        .unwrap();
    agent.fetch_root_key().await.unwrap();
    agent
}

fn principal_of(key: u8) -> Principal {
    use ic_agent::Identity;
    BasicIdentity::from_raw_key(&[key; 32]).sender().unwrap()
}

async fn setup_callee(controller: &Agent, caller: Principal, callee: Principal) {
    controller
        .update(&caller, "setup_callee")
        .with_arg(Encode!(&callee).unwrap())
        .call_and_wait()
        .await
        .unwrap();
}

async fn calls(agent: &Agent, caller: Principal, endpoint: &str, n: u64) -> u64 {
    let reply = agent.update(&caller, endpoint).with_arg(Encode!(&n).unwrap()).call_and_wait().await.unwrap();
    Decode!(&reply, u64).unwrap()
}

#[tokio::test]
async fn the_examples_calls_across_two_subnets_through_the_http_interface() {
    let (url, caller, callee) = network(2, principal_of(1)).await;
    let controller = agent(&url, 1).await;
    let subnet_of = |canister| {
        let controller = &controller;
        async move { controller.fetch_subnet_by_canister(&canister).await.unwrap().id() }
    };
    assert_ne!(subnet_of(caller).await, subnet_of(callee).await, "caller and callee on separate subnets");
    let setup = controller.update(&caller, "setup_callee").with_arg(Encode!(&callee).unwrap());
    setup.call_and_wait().await.unwrap();
    assert_eq!(calls(&controller, caller, "sequential_calls", 90).await, 90);
    assert_eq!(calls(&controller, caller, "parallel_calls", 90).await, 90);
    let pings =
        controller.query(&callee, "pings_received").with_arg(Encode!().unwrap()).call().await.unwrap();
    assert_eq!(Decode!(&pings, u64).unwrap(), 180, "a verified query of the callee");

    let stranger = agent(&url, 2).await;
    let refused =
        stranger.update(&caller, "setup_callee").with_arg(Encode!(&caller).unwrap()).call_and_wait().await;
    match refused {
        Err(AgentError::CertifiedReject { reject, .. }) => {
            assert!(reject.reject_message.contains("controller"), "{}", reject.reject_message)
        }
        other => panic!("a non-controller must be refused by the caller's guard, got {other:?}"),
    }
}

#[tokio::test]
async fn on_one_subnet_2000_parallel_calls_meet_the_500_slot_queue() {
    let (url, caller, callee) = network(1, principal_of(1)).await;
    let controller = agent(&url, 1).await;
    setup_callee(&controller, caller, callee).await;
    assert_eq!(calls(&controller, caller, "parallel_calls", 2000).await, 500);
    assert_eq!(calls(&controller, caller, "sequential_calls", 2000).await, 2000);
}

/// The live view at `/_/dashboard`: read while `parallel_calls(2000)`
/// runs at a pace slow enough to watch, it shows the pair's 500 slots
/// full, and no more.
#[tokio::test]
async fn the_live_view_shows_2000_parallel_calls_filling_the_500_slots() {
    let options = ic_http::Options { round_interval: Some(Duration::from_millis(150)), ..Default::default() };
    let (url, caller, callee, _network) = paced_network(1, principal_of(1), 0, options).await;
    let controller = agent(&url, 1).await;
    setup_callee(&controller, caller, callee).await;
    let page = reqwest::get(format!("{url}/_/dashboard")).await.unwrap();
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert!(page.text().await.unwrap().contains("Calls in flight, per (caller, callee)"));

    let (done, mut stop) = tokio::sync::oneshot::channel::<()>();
    let state_url = format!("{url}/_/dashboard/state");
    let watcher = tokio::spawn(async move {
        let (mut peak, mut capacity, mut engine) = (0, 0, String::new());
        while stop.try_recv().is_err() {
            let view: serde_json::Value = reqwest::get(&state_url).await.unwrap().json().await.unwrap();
            capacity = view["queue_capacity"].as_u64().unwrap();
            engine = view["engine"].as_str().unwrap().to_string();
            for pair in view["calls_in_flight"].as_array().unwrap() {
                if pair["caller"] == caller.to_text() && pair["callee"] == callee.to_text() {
                    peak = peak.max(pair["peak_last_round"].as_u64().unwrap());
                }
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        (peak, capacity, engine)
    });
    assert_eq!(calls(&controller, caller, "parallel_calls", 2000).await, 500);
    done.send(()).unwrap();
    let (peak, capacity, engine) = watcher.await.unwrap();
    assert_eq!((peak, capacity), (500, 500));
    assert!(engine.contains("simulator") && engine.contains("not the replica"), "{engine}");
}

/// With a round every 25 ms and mainnet's cross-subnet latency, a call
/// takes about its rounds times the pace in wall time, and sequential
/// calls take about n times as long as parallel ones (loose bounds: this
/// machine's scheduling is not a replica's).
#[tokio::test]
async fn at_a_fixed_pace_wall_time_follows_rounds() {
    let pace = Duration::from_millis(25);
    let options = ic_http::Options { round_interval: Some(pace), ..ic_http::Options::default() };
    let (url, caller, callee, network) = paced_network(2, principal_of(1), 2, options).await;
    let controller = agent(&url, 1).await;
    setup_callee(&controller, caller, callee).await;
    let mut timed = vec![];
    for endpoint in ["sequential_calls", "parallel_calls"] {
        let (started, first_round) = (Instant::now(), network.rounds());
        assert_eq!(calls(&controller, caller, endpoint, 5).await, 5);
        let (wall, rounds) = (started.elapsed(), network.rounds() - first_round);
        let per_round = wall.as_secs_f64() / rounds as f64 / pace.as_secs_f64();
        assert!(
            (0.7..1.6).contains(&per_round),
            "{endpoint}: {rounds} rounds in {wall:?}: {per_round:.2} paces a round"
        );
        timed.push(wall);
    }
    let ratio = timed[0].as_secs_f64() / timed[1].as_secs_f64();
    assert!((2.5..8.0).contains(&ratio), "5 sequential calls took {ratio:.1}x as long as 5 parallel ones");
}

/// dfx's way (`dfx deploy --no-wallet`, ic-agent's v3 call): create with
/// `provisional_create_canister_with_cycles` at dfx's default effective
/// canister id, install, and poll `/canister/<id>/module_hash` until it is
/// the module's sha256; a network with the system canisters, as
/// `multi_subnet network` serves it.
#[tokio::test]
async fn dfx_creates_installs_and_reads_the_module_hash() {
    use ic_management_canister_types::{
        CanisterIdRecord, CanisterInstallMode, InstallCodeArgs, ProvisionalCreateCanisterWithCyclesArgs,
    };
    use sha2::Digest;
    let make = || {
        let sim = Sim::builder().with_subnet().with_subnet().build();
        Box::new(ic_model::sim_engine::network(sim, ic_model::Keys::from_seed(0)).unwrap())
            as Box<dyn ic_http::Backend>
    };
    let network = Network::start(make, ic_http::Options::default()).unwrap();
    let url = ic_http::serve_locally(network).await.unwrap();
    let dfx = agent(&url, 3).await;
    let management = Principal::management_canister();
    let dfx_default = Principal::from_text("rwlgt-iiaaa-aaaaa-aaaaa-cai").unwrap();
    let create = ProvisionalCreateCanisterWithCyclesArgs {
        amount: None,
        settings: None,
        specified_id: None,
        sender_canister_version: None,
    };
    let created = dfx
        .update(&management, "provisional_create_canister_with_cycles")
        .with_effective_canister_id(dfx_default)
        .with_arg(Encode!(&create).unwrap())
        .call_and_wait()
        .await
        .unwrap();
    let canister = Decode!(&created, CanisterIdRecord).unwrap().canister_id;
    let wasm = canister_wasm::caller_and_callee().unwrap().callee;
    let install = InstallCodeArgs {
        mode: CanisterInstallMode::Install,
        canister_id: canister,
        wasm_module: wasm.clone(),
        arg: Encode!().unwrap(),
        sender_canister_version: None,
    };
    dfx.update(&management, "install_code")
        .with_effective_canister_id(canister)
        .with_arg(Encode!(&install).unwrap())
        .call_and_wait()
        .await
        .unwrap();
    let started = Instant::now();
    let hash = loop {
        if let Ok(hash) = dfx.read_state_canister_module_hash(canister).await {
            break hash;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no module hash certified");
    };
    assert_eq!(hash, sha2::Sha256::digest(&wasm).to_vec());
    let controllers = dfx.read_state_canister_controllers(canister).await.unwrap();
    assert_eq!(controllers, vec![principal_of(3)]);
    let pings = dfx.query(&canister, "pings_received").with_arg(Encode!().unwrap()).call().await.unwrap();
    assert_eq!(Decode!(&pings, u64).unwrap(), 0);
}

/// `sim/tests/fixtures/<name>.mo`, as the Motoko compiler builds it,
/// controlled by identity `key` on a one-subnet network served on
/// 127.0.0.1 with `options`: the URL and the canister's id.
async fn motoko_on_network(name: &str, key: u8, options: ic_http::Options) -> (String, Principal) {
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../sim/tests/fixtures/{name}.mo"));
    let wasm = canister_wasm::elsewhere::motoko_source(&source).expect("moc builds it");
    let controller = principal_of(key);
    let (ids, made) = std::sync::mpsc::channel();
    let make = move || {
        let mut sim = Sim::builder().with_subnet().build();
        let canister = sim.create_canister(0, vec![controller]).unwrap();
        sim.install_canister(canister, &wasm, Encode!().unwrap(), controller).unwrap();
        ids.send(canister).unwrap();
        Box::new(ic_model::sim_engine::network(sim, ic_model::Keys::from_seed(0)).unwrap())
            as Box<dyn ic_http::Backend>
    };
    let network = Network::start(make, options).unwrap();
    let canister = made.recv().unwrap();
    (ic_http::serve_locally(network).await.unwrap(), canister)
}

/// A network whose host makes HTTPS outcalls: a Motoko oracle's
/// `http_request` reaches a server on this machine (`LoopbackOnly`, the
/// `network` default) and comes back through its transform, as an agent
/// sees it; with outcalls denied, the canister hears why.
#[tokio::test]
async fn an_oracles_outcall_reaches_a_local_server_through_the_host() {
    use std::io::{Read, Write};
    #[derive(candid::CandidType, serde::Deserialize, Debug, PartialEq)]
    struct Header {
        name: String,
        value: String,
    }
    #[derive(candid::CandidType, serde::Deserialize, Debug)]
    struct Response {
        status: candid::Nat,
        headers: Vec<Header>,
        body: serde_bytes::ByteBuf,
    }

    // A price feed: one answer to every request.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/icp-usd", server.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in server.incoming() {
            let mut stream = stream.unwrap();
            let mut request = [0; 4096];
            let _ = stream.read(&mut request);
            let _ =
                stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\n4.20");
        }
    });
    let oracle_on =
        |outcalls| motoko_on_network("oracle", 5, ic_http::Options { outcalls, ..Default::default() });
    let (url_of_network, oracle) = oracle_on(ic_http::OutcallPolicy::LoopbackOnly).await;
    let agent = agent(&url_of_network, 5).await;
    let reply =
        agent.update(&oracle, "fetch").with_arg(Encode!(&url).unwrap()).call_and_wait().await.unwrap();
    let response = Decode!(&reply, Response).unwrap();
    assert_eq!((response.status, response.body.to_vec()), (200u8.into(), b"4.20".to_vec()));
    assert_eq!(response.headers, vec![Header { name: "x-transformed".into(), value: "price".into() }]);

    let (url_of_network, oracle) = oracle_on(ic_http::OutcallPolicy::Deny).await;
    let agent = self::agent(&url_of_network, 5).await;
    let refused =
        agent.update(&oracle, "fetch").with_arg(Encode!(&url).unwrap()).call_and_wait().await.unwrap_err();
    assert!(refused.to_string().contains("--outcalls allow"), "{refused}");
}

/// A Motoko wallet on the local network signs with each key type, through
/// an agent: its public keys are PocketIC's for its id and path, and k256
/// and ed25519-dalek verify its signatures.
#[tokio::test]
async fn a_motoko_wallet_signs_with_pocket_ics_keys_on_the_network() {
    use ic_management_canister_types::SchnorrAlgorithm;
    use ic_secp256k1::PocketIcMasterPublicKeyId as Master;
    use k256::ecdsa::signature::hazmat::PrehashVerifier;

    let (url, signer) = motoko_on_network("signer", 6, ic_http::Options::default()).await;
    let agent = agent(&url, 6).await;
    let path = vec![b"wallet".to_vec()];
    let message = *b"Hello, world!===================";

    let arg = Encode!(&"dfx_test_key", &serde_bytes::ByteBuf::from(message.to_vec())).unwrap();
    let reply = agent.update(&signer, "ecdsa").with_arg(arg).call_and_wait().await.unwrap();
    let (public_key, signature) = Decode!(&reply, Vec<u8>, Vec<u8>).unwrap();
    let pocket_ic = ic_secp256k1::PublicKey::derive_pocketic_key(Master::EcdsaDfxTestKey, &signer, &path).0;
    assert_eq!(public_key, pocket_ic.serialize_sec1(true));
    let verifying = k256::ecdsa::VerifyingKey::from_sec1_bytes(&public_key).unwrap();
    let signature = k256::ecdsa::Signature::try_from(signature.as_slice()).unwrap();
    verifying.verify_prehash(&message, &signature).expect("k256 verifies it");

    for algorithm in [SchnorrAlgorithm::Bip340secp256k1, SchnorrAlgorithm::Ed25519] {
        let arg = Encode!(&algorithm, &"test_key_1", &serde_bytes::ByteBuf::from(message.to_vec())).unwrap();
        let reply = agent.update(&signer, "schnorr").with_arg(arg).call_and_wait().await.unwrap();
        let (public_key, signature) = Decode!(&reply, Vec<u8>, Vec<u8>).unwrap();
        match algorithm {
            SchnorrAlgorithm::Bip340secp256k1 => {
                let verifying = k256::schnorr::VerifyingKey::from_bytes(&public_key[1..]).unwrap();
                let signature = k256::schnorr::Signature::try_from(signature.as_slice()).unwrap();
                verifying.verify_prehash(&message, &signature).expect("k256 verifies it");
            }
            SchnorrAlgorithm::Ed25519 => {
                use ed25519_dalek::Verifier;
                let verifying =
                    ed25519_dalek::VerifyingKey::from_bytes(&public_key.try_into().unwrap()).unwrap();
                let signature = ed25519_dalek::Signature::from_slice(&signature).unwrap();
                verifying.verify(&message, &signature).expect("ed25519-dalek verifies it");
            }
        }
    }
}
