//! PocketIC tests as their users write them (`PocketIc::new()`,
//! `PocketIcBuilder`, no URL anywhere), run with `POCKET_IC_BIN` naming
//! `pocket-ic-sim`, as `POCKET_IC_BIN=$(scripts/pocket-ic-path.sh) cargo
//! test` runs a user's suite: the pocket-ic client checks its version,
//! starts it with a port file shared by the test process, and drives it.
//!
//! The variable must be set before any thread reads the environment, so
//! this file has its own `main` (`harness = false`), which sets it first
//! and then runs the tests in order, as libtest would report them.

use candid::{Decode, Encode, Principal};
use ic_sim_client::SimulatorExt;
use ic_sim_client::api::{Action, Blob, FaultSpec, Open, SetLatency};
use pocket_ic::common::rest::{BlobCompression, SubnetKind};
use pocket_ic::{PocketIc, PocketIcBuilder};
use std::process::ExitCode;

/// Each test by its name, as libtest names it.
macro_rules! tests {
    ($($test:ident),* $(,)?) => { &[$((stringify!($test), $test as fn())),*] };
}

const TESTS: &[(&str, fn())] = tests![
    a_new_instance_runs_the_example,
    instances_of_one_test_process_share_one_server,
    what_it_does_not_support_says_what_it_is,
    nns_ii_and_application_subnets_with_canisters_at_given_ids,
    stable_memory_set_through_the_api_is_what_the_canister_reads,
    a_loaded_snapshot_undoes_what_came_after_it,
    a_heartbeat_runs_once_a_round,
    a_composite_query_calls_queries_on_its_own_subnet_only,
    the_ii_and_test_keys_subnets_sign_with_pocket_ics_keys,
    a_motoko_oracles_outcall_is_mocked_transformed_and_delivered,
    a_rust_wallet_signs_with_every_key_type_and_fetches_through_ic_cdk,
    an_instance_takes_mainnets_rounds_between_subnets_when_told,
    seeded_faults_are_turned_on_and_off_through_the_extension,
    certified_time_is_the_time_set,
];

fn main() -> ExitCode {
    // SAFETY: no other thread has started yet.
    unsafe { std::env::set_var("POCKET_IC_BIN", env!("CARGO_BIN_EXE_pocket-ic-sim")) };
    // libtest's arguments: a name filter, and flags this runner need not follow.
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let chosen: Vec<_> =
        TESTS.iter().filter(|(name, _)| filter.as_ref().is_none_or(|f| name.contains(f.as_str()))).collect();
    println!("\nrunning {} tests", chosen.len());
    let mut failed = vec![];
    for (name, test) in &chosen {
        let passed = std::panic::catch_unwind(test).is_ok();
        println!("test {name} ... {}", if passed { "ok" } else { "FAILED" });
        if !passed {
            failed.push(*name);
        }
    }
    let result = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {result}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out\n",
        chosen.len() - failed.len(),
        failed.len(),
        TESTS.len() - chosen.len()
    );
    if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn user() -> Principal {
    Principal::from_slice(&[7; 29])
}

/// The caller and the callee on a fresh instance, and the example's
/// sequential calls.
fn a_new_instance_runs_the_example() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIc::new();
    let caller = pic.create_canister_with_settings(Some(user()), None);
    let callee = pic.create_canister_with_settings(Some(user()), None);
    pic.add_cycles(caller, 2_000_000_000_000);
    pic.add_cycles(callee, 2_000_000_000_000);
    pic.install_canister(callee, wasms.callee, Encode!().unwrap(), Some(user()));
    pic.install_canister(caller, wasms.caller, Encode!().unwrap(), Some(user()));
    pic.update_call(caller, user(), "setup_callee", Encode!(&callee).unwrap()).expect("setup_callee");
    let reply =
        pic.update_call(caller, user(), "sequential_calls", Encode!(&10u64).unwrap()).expect("replied");
    assert_eq!(Decode!(&reply, u64).unwrap(), 10, "every call succeeded");
    let reply = pic.query_call(callee, user(), "pings_received", Encode!().unwrap()).expect("a query");
    assert_eq!(Decode!(&reply, u64).unwrap(), 10);
}

/// The client starts a server per test, all with the test process's port
/// file: the first owns it, the others end at once, and every instance is
/// on the first one's server.
fn instances_of_one_test_process_share_one_server() {
    let (a, b) = (PocketIcBuilder::new().with_application_subnet().build(), PocketIc::new());
    assert_eq!(a.get_server_url(), b.get_server_url());
    let canister = a.create_canister();
    assert_eq!(a.get_controllers(canister), [Principal::anonymous()]);
    assert!(b.get_subnet(canister).is_none(), "instances share nothing: {canister} is a's alone");
}

/// An endpoint the simulator does not serve is answered with what it is.
fn what_it_does_not_support_says_what_it_is() {
    let pic = PocketIc::new();
    let url =
        pic.get_server_url().join(&format!("instances/{}/read/not_an_endpoint", pic.instance_id())).unwrap();
    let body = reqwest::blocking::get(url).expect("an answer").text().expect("a body");
    assert!(body.contains(sim_server::DESCRIPTION), "{body}");
}

/// PocketIC's NNS and II subnets hold mainnet's ranges: a canister created
/// at the NNS registry's id is on the NNS subnet, runs there, and its id
/// cannot be taken twice; a canister created with no placement is on the
/// application subnet.
fn nns_ii_and_application_subnets_with_canisters_at_given_ids() {
    let pic = PocketIcBuilder::new().with_nns_subnet().with_ii_subnet().with_application_subnet().build();
    let topology = pic.topology();
    let kinds: Vec<_> = topology.subnet_configs.values().map(|c| c.subnet_kind).collect();
    for kind in [SubnetKind::NNS, SubnetKind::II, SubnetKind::Application] {
        assert_eq!(kinds.iter().filter(|&&k| k == kind).count(), 1, "one {kind:?} subnet in {kinds:?}");
    }
    let (nns, ii) = (topology.get_nns().expect("an NNS subnet"), topology.get_ii().expect("an II subnet"));
    let registry = Principal::from_text("rwlgt-iiaaa-aaaaa-aaaaa-cai").unwrap();
    let internet_identity = Principal::from_text("rdmx6-jaaaa-aaaaa-aaadq-cai").unwrap();
    assert_eq!(topology.get_subnet(registry), Some(nns));
    assert_eq!(topology.get_subnet(internet_identity), Some(ii));

    let created = pic.create_canister_with_id(Some(user()), None, registry).expect("created at its id");
    assert_eq!(created, registry);
    assert_eq!(pic.get_subnet(registry), Some(nns));
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    pic.install_canister(registry, wasms.callee, Encode!().unwrap(), Some(user()));
    pic.update_call(registry, user(), "ping", Encode!().unwrap()).expect("it runs on the NNS subnet");
    let again = pic.create_canister_with_id(Some(user()), None, registry).unwrap_err();
    assert!(again.contains("already exists"), "{again}");
    assert_eq!(pic.create_canister_with_id(None, None, internet_identity), Ok(internet_identity));
    assert_eq!(pic.get_subnet(internet_identity), Some(ii));

    let anywhere = pic.create_canister();
    assert_eq!(
        pic.get_subnet(anywhere),
        topology.get_app_subnets().first().copied(),
        "no placement: application"
    );
}

/// A canister whose query `first_bytes` replies with the first four bytes
/// of its stable memory.
const STABLE_READER: &str = r#"(module
  (import "ic0" "stable64_read" (func $read (param i64 i64 i64)))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (memory 1)
  (func (export "canister_query first_bytes")
    (call $read (i64.const 0) (i64.const 0) (i64.const 4))
    (call $append (i32.const 0) (i32.const 4))
    (call $reply)))"#;

/// Stable memory written through PocketIC's API, grown to whole pages, is
/// what the API reads back and what the canister reads.
fn stable_memory_set_through_the_api_is_what_the_canister_reads() {
    let pic = PocketIc::new();
    let canister = pic.create_canister();
    pic.install_canister(canister, wat::parse_str(STABLE_READER).unwrap(), vec![], None);
    assert!(pic.get_stable_memory(canister).is_empty(), "no pages yet");
    pic.set_stable_memory(canister, b"IC!\x01".to_vec(), BlobCompression::NoCompression);
    let memory = pic.get_stable_memory(canister);
    assert_eq!(memory.len(), 64 * 1024, "one whole page");
    assert_eq!(&memory[..4], b"IC!\x01");
    let read = pic.query_call(canister, Principal::anonymous(), "first_bytes", vec![]).expect("a reply");
    assert_eq!(read, b"IC!\x01");
}

/// A snapshot taken, the canister changed, the snapshot loaded: the change
/// is gone. Only a controller may take one; a deleted one cannot be loaded.
fn a_loaded_snapshot_undoes_what_came_after_it() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIc::new();
    let callee = pic.create_canister_with_settings(Some(user()), None);
    pic.install_canister(callee, wasms.callee, Encode!().unwrap(), Some(user()));
    let ping = |times| {
        for _ in 0..times {
            pic.update_call(callee, user(), "ping", Encode!().unwrap()).expect("a ping");
        }
    };
    let pings = || {
        let reply = pic.query_call(callee, user(), "pings_received", Encode!().unwrap()).expect("a query");
        Decode!(&reply, u64).unwrap()
    };
    ping(2);
    let stranger = pic.take_canister_snapshot(callee, Some(Principal::anonymous()), None).unwrap_err();
    assert!(stranger.reject_message.contains("Only controllers"), "{}", stranger.reject_message);

    let snapshot = pic.take_canister_snapshot(callee, Some(user()), None).expect("a snapshot");
    assert_eq!(&snapshot.id[8..], callee.as_slice(), "its id ends with the canister's");
    assert!(snapshot.total_size > 0);
    ping(3);
    assert_eq!(pings(), 5);
    pic.load_canister_snapshot(callee, Some(user()), snapshot.id.clone()).expect("it loads");
    assert_eq!(pings(), 2, "the three pings after the snapshot are gone");
    ping(1);
    assert_eq!(pings(), 3, "the loaded canister runs on");

    let listed = pic.list_canister_snapshots(callee, Some(user())).expect("a list");
    assert_eq!(listed, std::slice::from_ref(&snapshot));
    pic.delete_canister_snapshot(callee, Some(user()), snapshot.id.clone()).expect("deleted");
    assert!(pic.list_canister_snapshots(callee, Some(user())).unwrap().is_empty());
    let gone = pic.load_canister_snapshot(callee, Some(user()), snapshot.id).unwrap_err();
    assert!(gone.reject_message.contains("Could not find the snapshot"), "{}", gone.reject_message);
}

/// Counts its heartbeats; `beats` answers the count.
const HEARTBEAT_COUNTER: &str = include_str!("../../sim/tests/fixtures/heartbeat_counter.wat");

/// Each `tick` is a round, and a round runs the heartbeat once.
fn a_heartbeat_runs_once_a_round() {
    let pic = PocketIc::new();
    let canister = pic.create_canister();
    pic.install_canister(canister, wat::parse_str(HEARTBEAT_COUNTER).unwrap(), vec![], None);
    let beats = || {
        let reply = pic.query_call(canister, Principal::anonymous(), "beats", vec![]).expect("a reply");
        u32::from_le_bytes(reply.try_into().unwrap())
    };
    let before = beats();
    for _ in 0..3 {
        pic.tick();
    }
    assert_eq!(beats(), before + 3);
}

/// `sum(hops)`, `inc` and `get`: see the fixture.
const COMPOSITE_SUM: &str = include_str!("../../sim/tests/fixtures/composite_sum.wat");

/// Through the client's `query_call`: a composite query sums counters on
/// its subnet, a canister on another subnet is not found, and an update
/// call to a composite query is refused, each as the replica answers.
fn a_composite_query_calls_queries_on_its_own_subnet_only() {
    let pic = PocketIcBuilder::new().with_application_subnet().with_application_subnet().build();
    let subnets = pic.topology().get_app_subnets();
    let counter = |subnet, count| {
        let canister = pic.create_canister_on_subnet(None, None, subnet);
        pic.add_cycles(canister, 10_000_000_000_000);
        pic.install_canister(canister, wat::parse_str(COMPOSITE_SUM).unwrap(), vec![], None);
        for _ in 0..count {
            pic.update_call(canister, user(), "inc", vec![]).expect("counted");
        }
        canister
    };
    let (a, b, elsewhere) = (counter(subnets[0], 1), counter(subnets[0], 2), counter(subnets[1], 3));
    let sum = |hop: Principal| pic.query_call(a, user(), "sum", hop.as_slice().to_vec());
    let reply = sum(b).expect("a sum");
    assert_eq!(u64::from_le_bytes(reply.try_into().unwrap()), (1 + 1) + (2 + 1));
    let refused = sum(elsewhere).unwrap_err();
    assert_eq!(refused.reject_message, format!("3: Canister {elsewhere} not found"));
    let refused = pic.update_call(a, user(), "sum", vec![]).unwrap_err();
    assert_eq!(refused.error_code, pocket_ic::ErrorCode::CompositeQueryCalledInReplicatedMode);
}

/// Forwards a call to the management canister with cycles attached; see the fixture.
const MANAGEMENT_FORWARDER: &str = include_str!("../../sim/tests/fixtures/management_forwarder.wat");

/// `canister`'s call to the management canister through the forwarder:
/// the reply, or the reject code and message.
fn forwarded(
    pic: &PocketIc,
    canister: Principal,
    method: &str,
    arg: Vec<u8>,
    cycles: u64,
) -> Result<Vec<u8>, (u8, String)> {
    let mut call = cycles.to_le_bytes().to_vec();
    call.extend((method.len() as u32).to_le_bytes());
    call.extend(method.as_bytes());
    call.extend(arg);
    let seen = pic.update_call(canister, user(), "call", call).expect("the forwarder replies");
    match seen[0] {
        0 => Ok(seen[17..].to_vec()),
        code => Err((code, String::from_utf8_lossy(&seen[17..]).into_owned())),
    }
}

/// As PocketIC's own test of it: the II subnet holds `key_1`, the
/// test-keys subnet `test_key_1` and `dfx_test_key`; a canister on an
/// application subnet gets PocketIC's public keys and signatures k256
/// verifies; an instance without those subnets holds no key.
fn the_ii_and_test_keys_subnets_sign_with_pocket_ics_keys() {
    use ic_management_canister_types::{
        EcdsaCurve, EcdsaKeyId, EcdsaPublicKeyArgs, EcdsaPublicKeyResult, SignWithEcdsaArgs,
        SignWithEcdsaResult,
    };
    use ic_secp256k1::PocketIcMasterPublicKeyId as Master;
    use k256::ecdsa::signature::hazmat::PrehashVerifier;

    let key_id = |name: &str| EcdsaKeyId { curve: EcdsaCurve::Secp256k1, name: name.into() };
    let path = vec![b"my message".to_vec()];
    let signer = |pic: &PocketIc| {
        let app = pic.topology().get_app_subnets()[0];
        let canister = pic.create_canister_on_subnet(None, None, app);
        pic.add_cycles(canister, 100_000_000_000_000);
        pic.install_canister(canister, wat::parse_str(MANAGEMENT_FORWARDER).unwrap(), vec![], None);
        canister
    };

    let pic = PocketIcBuilder::new()
        .with_ii_subnet()
        .with_test_threshold_keys_subnet()
        .with_application_subnet()
        .build();
    let canister = signer(&pic);
    let hash = [9u8; 32].to_vec();
    for (name, master) in [
        ("key_1", Master::EcdsaKey1),
        ("test_key_1", Master::EcdsaTestKey1),
        ("dfx_test_key", Master::EcdsaDfxTestKey),
    ] {
        let args =
            EcdsaPublicKeyArgs { canister_id: None, derivation_path: path.clone(), key_id: key_id(name) };
        let reply = forwarded(&pic, canister, "ecdsa_public_key", Encode!(&args).unwrap(), 0).expect("a key");
        let key = Decode!(&reply, EcdsaPublicKeyResult).unwrap();
        let (expected, chain_code) = ic_secp256k1::PublicKey::derive_pocketic_key(master, &canister, &path);
        assert_eq!(
            (key.public_key.clone(), key.chain_code),
            (expected.serialize_sec1(true), chain_code.to_vec()),
            "{name}"
        );
        let args = SignWithEcdsaArgs {
            message_hash: hash.clone(),
            derivation_path: path.clone(),
            key_id: key_id(name),
        };
        let reply = forwarded(&pic, canister, "sign_with_ecdsa", Encode!(&args).unwrap(), 10_000_000_000)
            .expect("signed");
        let signature = Decode!(&reply, SignWithEcdsaResult).unwrap().signature;
        let verifying = k256::ecdsa::VerifyingKey::from_sec1_bytes(&key.public_key).unwrap();
        let signature = k256::ecdsa::Signature::try_from(signature.as_slice()).unwrap();
        verifying.verify_prehash(&hash, &signature).expect("k256 verifies it");
    }

    let without = PocketIc::new();
    let canister = signer(&without);
    let args =
        EcdsaPublicKeyArgs { canister_id: None, derivation_path: path, key_id: key_id("dfx_test_key") };
    let (code, message) =
        forwarded(&without, canister, "ecdsa_public_key", Encode!(&args).unwrap(), 0).unwrap_err();
    assert_eq!(code, 3);
    assert!(
        message.contains("Requested unknown threshold key: ecdsa:Secp256k1:dfx_test_key, existing keys: []"),
        "{message}"
    );
}

/// As PocketIC's mocking API is used: a Motoko oracle's outcall is listed
/// once it is made, a mocked response goes through its transform to it,
/// and nodes that disagree make it fail with the replica's reject.
fn a_motoko_oracles_outcall_is_mocked_transformed_and_delivered() {
    use pocket_ic::common::rest::{
        CanisterHttpHeader, CanisterHttpMethod, CanisterHttpReply, CanisterHttpResponse,
        MockCanisterHttpResponse,
    };

    #[derive(candid::CandidType, serde::Deserialize, Debug, PartialEq)]
    struct Header {
        name: String,
        value: String,
    }
    #[derive(candid::CandidType, serde::Deserialize, Debug, PartialEq)]
    struct Response {
        status: candid::Nat,
        headers: Vec<Header>,
        body: serde_bytes::ByteBuf,
    }
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/tests/fixtures/oracle.mo");
    let wasm = canister_wasm::elsewhere::motoko_source(&source).expect("moc builds it");
    let pic = PocketIc::new();
    let oracle = pic.create_canister();
    pic.add_cycles(oracle, 100_000_000_000_000);
    pic.install_canister(oracle, wasm, Encode!().unwrap(), None);
    let url = "https://prices.example/icp-usd";
    let reply = |body: &[u8]| {
        CanisterHttpResponse::CanisterHttpReply(CanisterHttpReply {
            status: 200,
            headers: vec![CanisterHttpHeader { name: "date".into(), value: "today".into() }],
            body: body.to_vec(),
        })
    };
    let fetch = || {
        let call = pic.submit_call(oracle, user(), "fetch", Encode!(&url).unwrap()).expect("submitted");
        pic.tick();
        pic.tick();
        let pending = pic.get_canister_http();
        assert_eq!(pending.len(), 1, "{pending:?}");
        (call, pending.into_iter().next().unwrap())
    };

    let (call, request) = fetch();
    assert_eq!((request.url.as_str(), request.http_method.clone()), (url, CanisterHttpMethod::GET));
    assert_eq!(request.max_response_bytes, Some(10_000));
    let mock = MockCanisterHttpResponse {
        subnet_id: request.subnet_id,
        request_id: request.request_id,
        response: reply(b"4.20"),
        additional_responses: vec![],
    };
    pic.mock_canister_http_response(mock);
    assert!(pic.get_canister_http().is_empty());
    let answer = Decode!(&pic.await_call(call).expect("a price"), Response).unwrap();
    let transformed = Header { name: "x-transformed".into(), value: "price".into() };
    assert_eq!(
        answer,
        Response { status: 200u8.into(), headers: vec![transformed], body: b"4.20".to_vec().into() }
    );

    // The nodes disagree: 12 other answers, each its own.
    let (call, request) = fetch();
    let others = (0..12).map(|i| reply(format!("4.2{i}").as_bytes())).collect();
    let mock = MockCanisterHttpResponse {
        subnet_id: request.subnet_id,
        request_id: request.request_id,
        response: reply(b"4.20"),
        additional_responses: others,
    };
    pic.mock_canister_http_response(mock);
    let refused = pic.await_call(call).unwrap_err();
    assert!(refused.reject_message.contains("No consensus could be reached."), "{}", refused.reject_message);
}

/// The workspace's Rust test canister, through ic-cdk's management
/// canister API (which prices each call with `ic0.cost_*`): its public
/// keys are PocketIC's, k256 and ed25519-dalek verify its ECDSA, BIP340 and
/// Ed25519 signatures, ic-vetkeys decrypts and verifies its vetKD key, and
/// its outcall is mocked and transformed.
fn a_rust_wallet_signs_with_every_key_type_and_fetches_through_ic_cdk() {
    use ic_management_canister_types::SchnorrAlgorithm;
    use ic_secp256k1::PocketIcMasterPublicKeyId as Secp256k1;
    use k256::ecdsa::signature::hazmat::PrehashVerifier;
    use pocket_ic::common::rest::{CanisterHttpReply, CanisterHttpResponse, MockCanisterHttpResponse};

    type Keyed = Result<(Vec<u8>, Vec<u8>), String>;
    let pic = PocketIcBuilder::new()
        .with_ii_subnet()
        .with_test_threshold_keys_subnet()
        .with_application_subnet()
        .build();
    let app = pic.topology().get_app_subnets()[0];
    let wallet = pic.create_canister_on_subnet(None, None, app);
    pic.add_cycles(wallet, 100_000_000_000_000);
    let wasm = canister_wasm::test_canister("wallet").expect("the wallet builds");
    pic.install_canister(wallet, wasm, Encode!().unwrap(), None);
    let call = |method: &str, arg: Vec<u8>| {
        let reply = pic.update_call(wallet, user(), method, arg).expect("the wallet replies");
        Decode!(&reply, Keyed).unwrap().unwrap_or_else(|e| panic!("{method}: {e}"))
    };
    let path = vec![b"wallet".to_vec()];
    let message = *b"Hello, world!===================";
    let bytes = |b: &[u8]| serde_bytes::ByteBuf::from(b.to_vec());

    let (public_key, signature) = call("ecdsa", Encode!(&"key_1", &bytes(&message)).unwrap());
    let pocket_ic = ic_secp256k1::PublicKey::derive_pocketic_key(Secp256k1::EcdsaKey1, &wallet, &path).0;
    assert_eq!(public_key, pocket_ic.serialize_sec1(true));
    let verifying = k256::ecdsa::VerifyingKey::from_sec1_bytes(&public_key).unwrap();
    verifying
        .verify_prehash(&message, &k256::ecdsa::Signature::try_from(signature.as_slice()).unwrap())
        .unwrap();

    let no_root: Option<serde_bytes::ByteBuf> = None;
    let arg = Encode!(&SchnorrAlgorithm::Bip340secp256k1, &"test_key_1", &bytes(&message), &no_root).unwrap();
    let (public_key, signature) = call("schnorr", arg);
    let pocket_ic =
        ic_secp256k1::PublicKey::derive_pocketic_key(Secp256k1::SchnorrTestKey1, &wallet, &path).0;
    assert_eq!(public_key, pocket_ic.serialize_sec1(true));
    let verifying = k256::schnorr::VerifyingKey::from_bytes(&public_key[1..]).unwrap();
    verifying
        .verify_prehash(&message, &k256::schnorr::Signature::try_from(signature.as_slice()).unwrap())
        .unwrap();
    // Taproot: the tweaked key verifies, as ic-secp256k1 checks BIP341.
    let root = Some(bytes(&[7; 32]));
    let arg = Encode!(&SchnorrAlgorithm::Bip340secp256k1, &"test_key_1", &bytes(&message), &root).unwrap();
    let (_, signature) = call("schnorr", arg);
    assert!(pocket_ic.verify_bip341_signature(&message, &signature, &[7; 32]));

    let arg = Encode!(&SchnorrAlgorithm::Ed25519, &"dfx_test_key", &bytes(&message), &no_root).unwrap();
    let (public_key, signature) = call("schnorr", arg);
    let pocket_ic = ic_ed25519::PublicKey::derive_pocketic_key(
        ic_ed25519::PocketIcMasterPublicKeyId::DfxTestKey,
        &wallet,
        &path,
    )
    .0;
    assert_eq!(public_key, pocket_ic.serialize_raw().to_vec());
    use ed25519_dalek::Verifier;
    let verifying = ed25519_dalek::VerifyingKey::from_bytes(&public_key.try_into().unwrap()).unwrap();
    verifying.verify(&message, &ed25519_dalek::Signature::from_slice(&signature).unwrap()).unwrap();

    let transport = ic_vetkeys::TransportSecretKey::from_seed(vec![9; 32]).unwrap();
    let arg = Encode!(&"dfx_test_key", &bytes(b"notes"), &bytes(b"alice"), &bytes(&transport.public_key()))
        .unwrap();
    let (public_key, encrypted) = call("vetkd", arg);
    let public_key = ic_vetkeys::DerivedPublicKey::deserialize(&public_key).unwrap();
    let encrypted = ic_vetkeys::EncryptedVetKey::deserialize(&encrypted).unwrap();
    encrypted.decrypt_and_verify(&transport, &public_key, b"alice").expect("ic-vetkeys verifies it");

    let fetch =
        pic.submit_call(wallet, user(), "fetch", Encode!(&"https://prices.example/").unwrap()).unwrap();
    pic.tick();
    let request = pic.get_canister_http().pop().expect("the outcall waits");
    let reply = CanisterHttpReply { status: 200, headers: vec![], body: b"4.20".to_vec() };
    pic.mock_canister_http_response(MockCanisterHttpResponse {
        subnet_id: request.subnet_id,
        request_id: request.request_id,
        response: CanisterHttpResponse::CanisterHttpReply(reply),
        additional_responses: vec![],
    });
    let fetched = Decode!(
        &pic.await_call(fetch).unwrap(),
        Result<ic_management_canister_types::HttpRequestResult, String>
    )
    .unwrap()
    .unwrap();
    assert_eq!((fetched.body, fetched.headers[0].value.as_str()), (b"4.20".to_vec(), "wallet"));
}

/// This project's extension (`/instances/<id>/_/latency`): told
/// `mainnet`, an instance makes the example's calls to another subnet take
/// 2 rounds each way; told back, one round trip a round again. A bad value
/// is refused with the reason, and nothing changes.
fn an_instance_takes_mainnets_rounds_between_subnets_when_told() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIcBuilder::new().with_application_subnet().with_application_subnet().build();
    let subnets = pic.topology().get_app_subnets();
    let caller = pic.create_canister_on_subnet(Some(user()), None, subnets[0]);
    let callee = pic.create_canister_on_subnet(Some(user()), None, subnets[1]);
    for (canister, wasm) in [(callee, wasms.callee), (caller, wasms.caller)] {
        pic.add_cycles(canister, 2_000_000_000_000);
        pic.install_canister(canister, wasm, Encode!().unwrap(), Some(user()));
    }
    pic.update_call(caller, user(), "setup_callee", Encode!(&callee).unwrap()).expect("setup_callee");
    let rounds_for_ten_sequential_calls = || {
        let call = pic.submit_call(caller, user(), "sequential_calls", Encode!(&10u64).unwrap()).unwrap();
        let ticks_before = (0..).find(|_| {
            pic.tick();
            pic.ingress_status(call.clone()).is_some()
        });
        ticks_before.expect("it finishes") + 1
    };
    let latency = pic.get_server_url().join(&format!("instances/{}/_/latency", pic.instance_id())).unwrap();
    let client = reqwest::blocking::Client::new();
    let set = |body: &str| {
        let answer =
            client.post(latency.clone()).header("content-type", "application/json").body(body.to_string());
        let answer = answer.send().expect("an answer");
        (answer.status().as_u16(), answer.text().unwrap())
    };
    let got = || client.get(latency.clone()).send().unwrap().text().unwrap();
    assert_eq!(got(), r#"{"profile":"pocket-ic","xnet_latency_rounds":0}"#);
    let pocket_ic = rounds_for_ten_sequential_calls();
    assert_eq!(
        set(r#"{"profile":"mainnet"}"#),
        (200, r#"{"profile":"mainnet","xnet_latency_rounds":2}"#.into())
    );
    let mainnet = rounds_for_ten_sequential_calls();
    // 10 round trips of at least 4 rounds each, against about 1 each.
    assert!(
        mainnet >= 40 && pocket_ic <= 15,
        "{pocket_ic} rounds on PocketIC's profile, {mainnet} on mainnet's"
    );
    let (status, why) = set(r#"{"xnet_latency_rounds":5000}"#);
    assert_eq!(status, 400);
    assert!(why.contains("more than 1000"), "{why}");
    assert_eq!(set(r#"{"profile":"pocket-ic"}"#).0, 200);
    assert_eq!(rounds_for_ten_sequential_calls(), pocket_ic);
}

/// This project's extension (`/instances/<id>/_/faults`), through
/// `ic-sim-client`: the callee traps on every 2nd execution, so 5 of the
/// example's 10 sequential calls fail, and the report accounts for each;
/// an event stops it and the log says when; an upgrade to its own module
/// keeps its count; turned off, all 10 succeed. A spec naming no canister
/// of the instance is refused with the reason.
fn seeded_faults_are_turned_on_and_off_through_the_extension() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIc::new();
    let (caller, callee) = (pic.create_canister(), pic.create_canister());
    for (canister, wasm) in [(callee, wasms.callee), (caller, wasms.caller)] {
        pic.add_cycles(canister, 2_000_000_000_000);
        pic.install_canister(canister, wasm, Encode!().unwrap(), None);
    }
    pic.update_call(caller, Principal::anonymous(), "setup_callee", Encode!(&callee).unwrap()).unwrap();
    let succeeded = || {
        let reply = pic
            .update_call(caller, Principal::anonymous(), "sequential_calls", Encode!(&10u64).unwrap())
            .unwrap();
        Decode!(&reply, u64).unwrap()
    };
    let pings_received = || {
        let reply = pic.query_call(callee, Principal::anonymous(), "pings_received", Encode!().unwrap());
        Decode!(&reply.unwrap(), u64).unwrap()
    };
    assert_eq!(succeeded(), 10, "no fault by default");
    pic.inject_faults(&FaultSpec::seeded(0).trap_every(callee, 2)).unwrap();
    assert_eq!(succeeded(), 5, "every 2nd ping traps");
    // Every call accounted for: 5 traps on the callee, 5 rejects (code 5)
    // at the caller, nothing open.
    let report = pic.faults_report().unwrap();
    assert_eq!(report.canister(callee).unwrap().traps, 5, "{report:?}");
    assert_eq!(report.canister(caller).unwrap().rejects(5), 5, "{report:?}");
    let pair = &report.canister(caller).unwrap().calls_to;
    assert_eq!((pair.len(), pair[0].callee, pair[0].calls_performed), (1, callee, 20), "{report:?}");
    assert_eq!(pair[0].rejects(5), 5, "{report:?}");
    assert_eq!(report.outstanding, Open::default(), "{report:?}");
    let upgraded_and_stopped = FaultSpec::default()
        .event(callee, 1, Action::Upgrade { wasm: None, arg: Blob(Encode!().unwrap()) })
        .event(callee, 1, Action::Stop);
    pic.inject_faults(&upgraded_and_stopped).unwrap();
    pic.tick();
    pic.tick();
    let log = pic.faults_report().unwrap().log;
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(
        log[0].ends_with(&format!("upgraded {callee}")) && log[1].ends_with(&format!("stopped {callee}"))
    );
    assert_eq!(succeeded(), 0, "a stopped callee answers nothing");
    pic.clear_faults().unwrap();
    pic.start_canister(callee, None).unwrap();
    assert_eq!(pings_received(), 15, "its count survives the upgrade");
    assert_eq!(succeeded(), 10, "turned off");
    // Rounds to the end of time are taken as such, not as a crash.
    let subnet = pic.get_subnet(callee).unwrap();
    let forever =
        FaultSpec::default().stall(subnet, u64::MAX, u64::MAX).event(callee, u64::MAX, Action::Stop);
    pic.inject_faults(&forever).unwrap();
    assert_eq!(succeeded(), 10, "nothing is due before the end of time");
    pic.clear_faults().unwrap();
    let stranger = Principal::from_slice(&[9; 10]);
    match pic.inject_faults(&FaultSpec::default().trap_every(stranger, 2)) {
        Err(ic_sim_client::Error::Refused { status, message, .. }) => {
            assert_eq!(status, 400);
            assert!(message.contains(&stranger.to_string()), "{message}");
        }
        other => panic!("a stranger's trap: {other:?}"),
    }
    // The same endpoints, awaited.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        use ic_sim_client::nonblocking::SimulatorExt as _;
        let pic = pocket_ic::nonblocking::PocketIc::new().await;
        let latency = pic.set_latency(SetLatency::MAINNET).await.unwrap();
        assert_eq!(latency.xnet_latency_rounds, sim::MAINNET_XNET_LATENCY_ROUNDS);
        assert_eq!(pic.latency().await.unwrap(), latency);
        assert_eq!(pic.faults_report().await.unwrap().outstanding, Open::default());
        pic.drop().await;
    });
}

/// `set_certified_time` moves the time on, as `set_time` does.
fn certified_time_is_the_time_set() {
    let pic = PocketIc::new();
    let later = pic.get_time() + std::time::Duration::from_secs(3600);
    pic.set_certified_time(later);
    assert_eq!(pic.get_time(), later);
}
