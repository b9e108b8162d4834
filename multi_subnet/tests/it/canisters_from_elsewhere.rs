//! Canisters this project did not write, run as a user's tools run them:
//! the example's twin in Motoko, as the Motoko compiler builds it (wasm64);
//! and, on the simulator behind the IC's HTTP interface, DFINITY's Candid
//! UI canister (taken from the `icp` binary, which installs it on every
//! local network), and certified data read back through a query's
//! certificate, which ic-agent 0.49.1 (icp-cli's agent) verifies against
//! the root key.

use candid::{CandidType, Decode, Encode, Principal};
use ic_agent::{Agent, Certificate, identity::BasicIdentity};
use ic_http::Network;
use ic_model::Keys;
use serde::Deserialize;
use sim::Sim;

const SYSTEM_API: &str = include_str!("../../../sim/tests/fixtures/system_api.wat");

/// `wasm` installed with `arg` as dfx installs it (created with
/// `provisional_create_canister_with_cycles`, then `install_code`) on a
/// network of two subnets served on 127.0.0.1; an agent of [`controller`]
/// that trusts the network's root key.
async fn serve(wasm: Vec<u8>, arg: Vec<u8>) -> (Agent, Principal) {
    use ic_management_canister_types::{
        CanisterIdRecord, CanisterInstallMode, InstallCodeArgs, ProvisionalCreateCanisterWithCyclesArgs,
    };
    let make = || {
        let sim = Sim::builder().with_subnet().with_subnet().build();
        Box::new(ic_model::sim_engine::network(sim, Keys::from_seed(0)).unwrap()) as Box<dyn ic_http::Backend>
    };
    let network = Network::start(make, ic_http::Options::default()).unwrap();
    let url = ic_http::serve_locally(network).await.unwrap();
    let agent =
        Agent::builder().with_url(url).with_identity(BasicIdentity::from_raw_key(&[1; 32])).build().unwrap();
    agent.fetch_root_key().await.unwrap();
    let management = Principal::management_canister();
    let create = ProvisionalCreateCanisterWithCyclesArgs {
        amount: None,
        settings: None,
        specified_id: None,
        sender_canister_version: None,
    };
    let created = agent
        .update(&management, "provisional_create_canister_with_cycles")
        .with_effective_canister_id(Principal::from_text("rwlgt-iiaaa-aaaaa-aaaaa-cai").unwrap())
        .with_arg(Encode!(&create).unwrap())
        .call_and_wait()
        .await
        .unwrap();
    let canister = Decode!(&created, CanisterIdRecord).unwrap().canister_id;
    let install = InstallCodeArgs {
        mode: CanisterInstallMode::Install,
        canister_id: canister,
        wasm_module: wasm,
        arg,
        sender_canister_version: None,
    };
    agent
        .update(&management, "install_code")
        .with_effective_canister_id(canister)
        .with_arg(Encode!(&install).unwrap())
        .call_and_wait()
        .await
        .unwrap();
    (agent, canister)
}

#[tokio::test]
async fn certified_data_comes_back_in_a_query_certificate_that_ic_agent_verifies() {
    let (agent, canister) = serve(wat::parse_str(SYSTEM_API).unwrap(), vec![]).await;
    let data = [42u8; 32];
    agent.update(&canister, "certify").with_arg(data.to_vec()).call_and_wait().await.unwrap();

    // The network certifies the data at the end of the round that set it;
    // a query sees the last certified state.
    let path: [&[u8]; 3] = [b"canister", canister.as_slice(), b"certified_data"];
    let mut certified = None;
    for _ in 0..50 {
        let bytes = agent.query(&canister, "certificate").with_arg(vec![]).call().await.unwrap();
        let certificate: Certificate = serde_cbor::from_slice(&bytes).expect("a CBOR certificate");
        agent.verify(&certificate, canister).expect("the certificate verifies against the root key");
        if ic_agent::lookup_value(&certificate, path).ok() == Some(&data[..]) {
            certified = Some(certificate);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let certificate = certified.expect("the certified data reaches a query's certificate");
    assert!(certificate.delegation.is_some(), "a subnet's certificate carries the root's delegation");

    // A certificate of other data does not pass for this one.
    let mut forged = certificate.clone();
    forged.signature[0] ^= 1;
    assert!(agent.verify(&forged, canister).is_err(), "a tampered signature is refused");
}

#[derive(CandidType)]
struct HttpRequest {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

#[derive(CandidType, Deserialize)]
struct HttpResponse {
    status_code: u16,
    headers: Vec<(String, String)>,
    #[serde(with = "serde_bytes")]
    body: Vec<u8>,
}

#[tokio::test]
async fn the_candid_ui_canister_icp_cli_installs_runs_and_serves_its_page() {
    let wasm = canister_wasm::elsewhere::candid_ui().expect("icp-cli embeds the Candid UI canister");
    let (agent, canister) = serve(wasm, Encode!().unwrap()).await;
    let request = HttpRequest { method: "GET".into(), url: "/".into(), headers: vec![], body: vec![] };
    let reply =
        agent.query(&canister, "http_request").with_arg(Encode!(&request).unwrap()).call().await.unwrap();
    let response = Decode!(&reply, HttpResponse).unwrap();
    assert_eq!(response.status_code, 200);
    let page = String::from_utf8_lossy(&response.body);
    assert!(page.contains("<html") || page.contains("<!DOCTYPE html"), "an HTML page: {page:.200}");
    let certified = response.headers.iter().find(|(name, _)| name.eq_ignore_ascii_case("IC-Certificate"));
    let (_, value) = certified.expect("the page comes with its certificate, read by data_certificate_copy");

    // What a browser's service worker checks: the certificate verifies,
    // and the canister's certified data is the root of the header's tree.
    let field = |name: &str| {
        use base64::Engine;
        let start = value.find(&format!("{name}=:")).unwrap_or_else(|| panic!("no {name} in {value}"));
        let rest = &value[start + name.len() + 2..];
        base64::engine::general_purpose::STANDARD.decode(&rest[..rest.find(':').unwrap()]).unwrap()
    };
    let certificate: Certificate = serde_cbor::from_slice(&field("certificate")).unwrap();
    agent.verify(&certificate, canister).expect("the page's certificate verifies against the root key");
    let tree: ic_agent::hash_tree::HashTree<Vec<u8>> = serde_cbor::from_slice(&field("tree")).unwrap();
    let path: [&[u8]; 3] = [b"canister", canister.as_slice(), b"certified_data"];
    let certified_data = ic_agent::lookup_value(&certificate, path).unwrap();
    assert_eq!(certified_data, tree.digest(), "the assets' tree is what canister_init certified");
}

/// The Motoko caller and callee on `subnets` subnets (the caller on the
/// first, the callee on the last), set up.
fn motoko_twin(subnets: usize) -> (Sim, Principal, Principal) {
    let [caller_wasm, callee_wasm] =
        ["caller", "callee"].map(|name| canister_wasm::elsewhere::motoko(name).expect("moc builds it"));
    assert!(sim::is_memory64(&caller_wasm), "moc builds wasm64 by default");
    let mut sim = (0..subnets).fold(Sim::builder(), |b, _| b.with_subnet()).build();
    let controller = Principal::anonymous();
    let caller = sim.create_canister(0, vec![controller]).unwrap();
    let callee = sim.create_canister(subnets - 1, vec![controller]).unwrap();
    sim.install_canister(caller, &caller_wasm, Encode!().unwrap(), controller).unwrap();
    sim.install_canister(callee, &callee_wasm, Encode!().unwrap(), controller).unwrap();
    sim.update_call(caller, controller, "setup_callee", Encode!(&callee).unwrap()).unwrap();
    (sim, caller, callee)
}

fn motoko_calls(sim: &mut Sim, caller: Principal, endpoint: &str, n: u64) -> u64 {
    let reply = sim.update_call(caller, Principal::anonymous(), endpoint, Encode!(&n).unwrap());
    Decode!(&reply.unwrap_or_else(|e| panic!("{endpoint}({n}): {e}")), u64).unwrap()
}

#[test]
fn the_motoko_twin_runs_the_examples_table_on_one_subnet() {
    let (mut sim, caller, callee) = motoko_twin(1);
    assert_eq!(motoko_calls(&mut sim, caller, "sequential_calls", 10), 10);
    assert_eq!(motoko_calls(&mut sim, caller, "parallel_calls", 10), 10);
    assert_eq!(motoko_calls(&mut sim, caller, "sequential_calls", 2000), 2000);
    // 2000 at once meet the 500-slot queue: the rest fail at once, and
    // nothing traps (wasmi's default stack of 1,000 frames trapped here).
    assert_eq!(motoko_calls(&mut sim, caller, "parallel_calls", 2000), 500);
    let pings = sim.query_call(callee, Principal::anonymous(), "pings_received", Encode!().unwrap());
    assert_eq!(Decode!(&pings.unwrap(), u64).unwrap(), 10 + 10 + 2000 + 500);
}

#[test]
fn the_motoko_twin_makes_90_calls_each_way_across_two_subnets() {
    let (mut sim, caller, _) = motoko_twin(2);
    let rounds = |sim: &mut Sim, endpoint| {
        let before = sim.ticks();
        let done = motoko_calls(sim, caller, endpoint, 90);
        (done, sim.ticks() - before)
    };
    let (sequential, sequential_rounds) = rounds(&mut sim, "sequential_calls");
    let (parallel, parallel_rounds) = rounds(&mut sim, "parallel_calls");
    assert_eq!((sequential, parallel), (90, 90));
    assert!(sequential_rounds > 90 && parallel_rounds < 5, "{sequential_rounds} vs {parallel_rounds} rounds");
}

/// A composite query that Motoko compiled (`await` on other canisters'
/// queries in a `composite query func`) runs: its own count changed in the
/// evaluation is seen after every call and gone after the query, and a
/// counter on another subnet cannot be called.
#[test]
fn a_motoko_composite_query_adds_up_counters_on_its_subnet() {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/composite_counter.mo");
    let wasm = canister_wasm::elsewhere::motoko_source(&source).expect("moc builds it");
    let mut sim = Sim::builder().with_subnet().with_subnet().build();
    let controller = Principal::anonymous();
    let counters: Vec<_> = [(0, 1), (0, 2), (0, 3), (1, 4)]
        .into_iter()
        .map(|(subnet, count)| {
            let id = sim.create_canister(subnet, vec![controller]).unwrap();
            sim.install_canister(id, &wasm, Encode!().unwrap(), controller).unwrap();
            for _ in 0..count {
                sim.update_call(id, controller, "inc", Encode!().unwrap()).unwrap();
            }
            id
        })
        .collect();
    let sum = |sim: &mut Sim, others: &[Principal]| {
        let reply = sim.query_call(counters[0], controller, "sum", Encode!(&others).unwrap())?;
        Ok::<_, sim::Reject>(Decode!(&reply, candid::Nat).unwrap())
    };
    // (1 + 1) + 2 + 3 + (1 + 1): the first count, the others, the count again.
    assert_eq!(sum(&mut sim, &counters[1..3]), Ok(candid::Nat::from(9u32)));
    let count = sim.query_call(counters[0], controller, "get", Encode!().unwrap()).unwrap();
    assert_eq!(Decode!(&count, candid::Nat).unwrap(), candid::Nat::from(1u32));
    let refused = sum(&mut sim, &counters[3..]).unwrap_err();
    assert!(refused.message.contains(&format!("Canister {} not found", counters[3])), "{}", refused.message);
}
