//! The pocket-ic client, unchanged, against the simulator served behind
//! PocketIC's REST API (`sim_server`, in-process on 127.0.0.1): the
//! example's scenarios and the strategies' goals must give exactly the
//! simulator engine's counts and rounds; a test written as pocket-ic users
//! write theirs; and the bad requests, which get errors while the server
//! keeps serving.

use crate::common::big_module;
use crate::common::goals::goal_tests;
use crate::common::scenarios::{ONE_SUBNET, TWO_SUBNETS, rounds, suite, suite_placed};
use candid::{Decode, Encode, Principal};
use ic_management_canister_types::CanisterStatusType;
use multi_subnet::engines::pocket_ic::{PocketIcEngine, Server};
use multi_subnet::engines::{Engine, TimeStep};
use multi_subnet::scenario::{CallerSubnet, Topology};
use pocket_ic::common::rest::{RawCanisterCall, RawEffectivePrincipal};
use pocket_ic::{PocketIcBuilder, RejectCode};
use reqwest::StatusCode;
use std::sync::OnceLock;

/// One server for every test of this file; each test has instances of its own.
fn url() -> url::Url {
    static SERVER: OnceLock<sim_server::Running> = OnceLock::new();
    let server = SERVER.get_or_init(|| sim_server::Running::start().expect("the server starts"));
    url::Url::parse(&server.url).expect("a URL")
}

fn engine(subnets: usize, step: TimeStep) -> PocketIcEngine {
    PocketIcEngine::start_with_time_step(Server::Url(url()), subnets, step)
        .unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn pocket_ic_client_on_sim_server_one_subnet() {
    let runs = suite(&mut engine(1, TimeStep::POCKET_IC), Topology::SameSubnet, &ONE_SUBNET, |_, _, _| {});
    assert_eq!(rounds(&runs), [2, 1, 21, 2], "the simulator engine's rounds");
}

#[test]
fn pocket_ic_client_on_sim_server_two_subnets() {
    for caller_subnet in [CallerSubnet::Lower, CallerSubnet::Higher] {
        let mut engine = engine(2, TimeStep::POCKET_IC);
        let runs =
            suite_placed(&mut engine, Topology::CrossSubnet, caller_subnet, &TWO_SUBNETS, |_, _, _| {});
        assert_eq!(rounds(&runs), [91, 2], "caller on the {caller_subnet:?} subnet");
    }
}

fn served() -> Box<dyn Engine> {
    Box::new(engine(2, TimeStep::ONE_SECOND))
}

goal_tests!([pocket_ic_client_on_sim_server => served;]);

/// Written as a pocket-ic user writes a test, with nothing of this project
/// but the canisters.
#[test]
fn pocket_ic_client_on_sim_server_as_a_user_writes_tests() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIcBuilder::new()
        .with_server_url(url())
        .with_application_subnet()
        .with_application_subnet()
        .build();
    let subnets = pic.topology().get_app_subnets();
    assert_eq!(subnets.len(), 2);
    let user = Principal::from_slice(&[7; 29]);
    let caller = pic.create_canister_on_subnet(Some(user), None, subnets[0]);
    let callee = pic.create_canister_on_subnet(Some(user), None, subnets[1]);
    assert_eq!((pic.get_subnet(caller), pic.get_subnet(callee)), (Some(subnets[0]), Some(subnets[1])));
    assert_eq!(pic.topology().get_subnet(callee), Some(subnets[1]), "the topology's ranges hold the ids");
    assert_eq!(pic.get_controllers(caller), [user]);

    let before = pic.cycle_balance(caller);
    assert_eq!(pic.add_cycles(caller, 1_000_000), before + 1_000_000);

    pic.install_canister(callee, wasms.callee.clone(), Encode!().unwrap(), Some(user));
    pic.install_canister(caller, wasms.caller, Encode!().unwrap(), Some(user));
    pic.update_call(caller, user, "setup_callee", Encode!(&callee).unwrap()).expect("setup_callee");
    let reply = pic.update_call(caller, user, "sequential_calls", Encode!(&10u64).unwrap()).expect("replied");
    assert_eq!(Decode!(&reply, u64).unwrap(), 10);
    let pings = |pic: &pocket_ic::PocketIc| {
        let reply = pic.query_call(callee, user, "pings_received", Encode!().unwrap()).expect("a query");
        Decode!(&reply, u64).unwrap()
    };
    assert_eq!(pings(&pic), 10);

    let time = pic.get_time();
    pic.tick();
    assert!(pic.get_time() > time, "a round moves time on");

    pic.upgrade_canister(callee, wasms.callee, Encode!().unwrap(), Some(user)).expect("upgrades");
    pic.stop_canister(callee, Some(user)).expect("stops");
    let status = pic.canister_status(callee, Some(user)).expect("a status");
    assert_eq!(status.status, CanisterStatusType::Stopped);
    let reply = pic.update_call(caller, user, "sequential_calls", Encode!(&1u64).unwrap()).expect("replied");
    assert_eq!(Decode!(&reply, u64).unwrap(), 0, "a stopped callee takes no calls");
    let stranger = Principal::from_slice(&[9; 29]);
    let refused = pic.start_canister(callee, Some(stranger)).expect_err("only controllers start it");
    assert_eq!(refused.reject_code, RejectCode::CanisterError);
}

/// A query reads a data certificate, as on PocketIC: the canister's
/// certified data as of the last round, signed by its subnet with the
/// root's delegation, the same certificate the IC HTTP interface serves;
/// ic-agent verifies it against the instance's root key (seed 0's).
#[test]
fn pocket_ic_client_on_sim_server_gives_queries_a_data_certificate() {
    let pic = PocketIcBuilder::new().with_server_url(url()).with_application_subnet().build();
    let canister = pic.create_canister();
    let wasm = wat::parse_str(include_str!("../../../sim/tests/fixtures/system_api.wat")).unwrap();
    pic.install_canister(canister, wasm, vec![], None);
    let data = [42u8; 32];
    pic.update_call(canister, Principal::anonymous(), "certify", data.to_vec()).expect("certified");
    // ic-agent refuses a certificate older than five minutes: the instance
    // starts at a fixed time, so move it to the wall clock's.
    pic.set_time(std::time::SystemTime::now().into());
    let bytes = pic.query_call(canister, Principal::anonymous(), "certificate", vec![]).expect("a reply");
    let certificate: ic_agent::Certificate = serde_cbor::from_slice(&bytes).expect("a CBOR certificate");

    let agent = ic_agent::Agent::builder().with_url("http://127.0.0.1:9").build().unwrap();
    agent.set_root_key(ic_model::Keys::from_seed(0).root_key_der());
    agent.verify(&certificate, canister).expect("the certificate verifies against the root key");
    let path: [&[u8]; 3] = [b"canister", canister.as_slice(), b"certified_data"];
    assert_eq!(ic_agent::lookup_value(&certificate, path).ok(), Some(&data[..]));
    let mut forged = certificate.clone();
    forged.signature[0] ^= 1;
    assert!(agent.verify(&forged, canister).is_err(), "a tampered signature is refused");
    let elsewhere = sim::canister_id(sim::IDS_PER_SUBNET);
    assert!(agent.verify(&certificate, elsewhere).is_err(), "it speaks for its subnet's canisters only");
}

/// Two instances at once see nothing of each other.
#[test]
fn pocket_ic_client_on_sim_server_instances_are_isolated() {
    let a = PocketIcBuilder::new().with_server_url(url()).with_application_subnet().build();
    let b = PocketIcBuilder::new().with_server_url(url()).with_application_subnet().build();
    let canister = a.create_canister();
    assert!(a.canister_exists(canister));
    assert!(!b.canister_exists(canister));
    let (a_time, b_time) = (a.get_time(), b.get_time());
    b.tick();
    assert_eq!(a.get_time(), a_time, "a round of b's is none of a's");
    assert!(b.get_time() > b_time);
}

/// A module over 2 MB: the client installs it through the chunk store.
#[test]
fn pocket_ic_client_on_sim_server_installs_a_module_in_chunks() {
    use sha2::Digest;
    let pic = PocketIcBuilder::new().with_server_url(url()).with_application_subnet().build();
    let canister = pic.create_canister();
    let wasm = big_module::over_2_mib();
    pic.install_canister(canister, wasm.clone(), Encode!().unwrap(), None);
    let status = pic.canister_status(canister, None).unwrap();
    assert_eq!(status.module_hash, Some(sha2::Sha256::digest(&wasm).to_vec()));
}

/// A gzipped module that would unpack past the replica's 100 MiB is
/// refused as it unpacks, not unpacked in full.
#[test]
fn pocket_ic_client_on_sim_server_refuses_a_gzip_bomb() {
    use flate2::{Compression, write::GzEncoder};
    use ic_management_canister_types::{CanisterInstallMode, InstallCodeArgs};
    use std::io::Write;
    let pic = PocketIcBuilder::new().with_server_url(url()).with_application_subnet().build();
    let canister = pic.create_canister();
    let mut bomb = GzEncoder::new(Vec::new(), Compression::best());
    let mib = vec![0u8; 1 << 20];
    (0..101).for_each(|_| bomb.write_all(&mib).unwrap());
    let bomb = bomb.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
    let install = InstallCodeArgs {
        mode: CanisterInstallMode::Install,
        canister_id: canister,
        wasm_module: bomb,
        arg: vec![],
        sender_canister_version: None,
    };
    let management = Principal::management_canister();
    let effective = RawEffectivePrincipal::CanisterId(canister.as_slice().to_vec());
    let refused = pic
        .update_call_with_effective_principal(
            management,
            effective,
            Principal::anonymous(),
            "install_code",
            Encode!(&install).unwrap(),
        )
        .unwrap_err();
    assert!(
        refused.reject_message.contains("unpacks to more than 104857600 bytes"),
        "{}",
        refused.reject_message
    );
}

fn post(path: &str, body: &str) -> (StatusCode, String) {
    let response = reqwest::blocking::Client::new()
        .post(url().join(path).unwrap())
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .expect("the server answers");
    (response.status(), response.text().unwrap())
}

#[test]
fn pocket_ic_client_on_sim_server_bad_requests_get_errors_and_the_server_keeps_serving() {
    let pic = PocketIcBuilder::new().with_server_url(url()).with_application_subnet().build();
    let instance = pic.instance_id();

    let (status, body) = post(&format!("instances/{instance}/update/tick"), "{");
    assert_eq!(status, StatusCode::BAD_REQUEST, "malformed JSON: {body}");
    assert!(body.contains("\"message\""), "{body}");

    let (status, body) = post("instances/999999/update/tick", "{}");
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("Instance not found"), "{body}");

    let (status, body) = post(&format!("instances/{instance}/update/mock_canister_http_response"), "{}");
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body.contains("/update/mock_canister_http_response") && body.contains("does not support"),
        "{body}"
    );

    let missing = Principal::from_slice(&[0, 0, 0, 0, 0, 0xff, 0, 0, 1, 1]);
    let refused =
        pic.submit_call(missing, Principal::anonymous(), "ping", vec![]).expect_err("no such canister");
    assert_eq!(refused.reject_code, RejectCode::DestinationInvalid);

    let canister = pic.create_canister();
    let subnet = pic.topology().get_app_subnets()[0];
    let call = RawCanisterCall {
        sender: Principal::anonymous().as_slice().to_vec(),
        canister_id: canister.as_slice().to_vec(),
        effective_principal: RawEffectivePrincipal::SubnetId(subnet.as_slice().to_vec()),
        method: "ping".into(),
        payload: vec![],
        sender_info: None,
    };
    let call = serde_json::to_string(&call).unwrap();
    let (status, body) = post(&format!("instances/{instance}/update/submit_ingress_message"), &call);
    assert_eq!(status, StatusCode::BAD_REQUEST, "a wrong effective principal: {body}");

    // Still serving, over HTTP/2 too.
    let http2 = reqwest::blocking::Client::builder().http2_prior_knowledge().build().unwrap();
    let response = http2.get(url().join("instances").unwrap()).send().expect("HTTP/2 answers");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), StatusCode::OK);
    assert!(pic.canister_exists(canister));
}

/// `chaos --engine pocket-ic --pocket-ic-url <serve>` injects every fault
/// through the server's extensions (`ic-sim-client`) and prints the
/// simulator engine's table: the same counts and rounds in every row; only
/// the engine's name differs.
#[test]
fn pocket_ic_client_on_sim_server_chaos_counts_as_the_simulator_engine() {
    let chaos = |engine: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
            .args(["chaos", "--seeds", "1", "--format", "json"])
            .args(engine)
            .output()
            .unwrap();
        assert!(output.status.success(), "{engine:?}: {}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
    };
    let served = chaos(&["--engine", "pocket-ic", "--pocket-ic-url", url().as_str()]);
    let in_process = chaos(&["--engine", "sim"]);
    assert_eq!((&served["engine"], &in_process["engine"]), (&"pocket-ic".into(), &"sim".into()));
    let rows = served["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10 * 5, "every fault, every strategy");
    assert_eq!(served["rows"], in_process["rows"]);
}

/// pic-js, as its users write tests, with the simulator's extensions from
/// `sim_client/js/simulator.mjs`: a fault turned on, the caller's calls
/// fail as the report says, turned off; a bad spec refused with the reason.
#[test]
fn pocket_ic_client_on_sim_server_pic_js_turns_faults_on_and_off() {
    let wasm = |canister| canister_wasm::wasm_path(canister).unwrap().to_str().unwrap().to_string();
    canister_wasm::caller_and_callee().expect("canister wasm");
    let (caller, callee) = (wasm(canister_wasm::Canister::Caller), wasm(canister_wasm::Canister::Callee));
    let seen = crate::common::node(
        "js",
        "pic_js_faults.mjs",
        ("PIC_JS", "@dfinity/pic"),
        &[url().as_str().trim_end_matches('/'), &caller, &callee],
    );
    assert_eq!((&seen["before"], &seen["withTraps"], &seen["after"]), (&10.into(), &5.into(), &10.into()));
    assert_eq!(seen["calleeTraps"], 5, "{seen}");
    assert_eq!(seen["callerRejects"], serde_json::json!({"5": 5}), "{seen}");
    assert_eq!(
        seen["outstanding"],
        serde_json::json!({"ingress": 0, "call_contexts": 0, "calls_in_flight": 0, "messages": 0})
    );
    let refused = seen["refused"].as_str().unwrap();
    assert!(refused.contains("(400)") && refused.contains("not between 0 and 1"), "{refused}");
}
