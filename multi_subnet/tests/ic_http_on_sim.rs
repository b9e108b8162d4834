//! The example through the IC's HTTP interface (`ic_http`) with the
//! simulator behind it, as ic-agent 0.49.1 (icp-cli's agent) calls it: the
//! real canister wasm, caller and callee on separate subnets, every
//! certificate and query signature checked by the agent's verifier.

use candid::{Decode, Encode, Principal};
use ic_agent::identity::BasicIdentity;
use ic_agent::{Agent, AgentError};
use ic_http::{Network, Options};
use sim::Sim;

/// The caller on subnet 0 and the callee on the last of `subnets`, both
/// controlled by `controller`, served on 127.0.0.1; returns the URL and
/// the two canister ids.
async fn network(subnets: usize, controller: Principal) -> (String, Principal, Principal) {
    let wasms = canister_wasm::caller_and_callee().expect("the canisters build");
    let (ids, made) = std::sync::mpsc::channel();
    let make = move || {
        let mut sim = (0..subnets).fold(Sim::builder(), |b, _| b.with_subnet()).build();
        let caller = sim.create_canister(0, vec![controller]).unwrap();
        let callee = sim.create_canister(subnets - 1, vec![controller]).unwrap();
        sim.install_canister(caller, &wasms.caller, Encode!().unwrap(), controller).unwrap();
        sim.install_canister(callee, &wasms.callee, Encode!().unwrap(), controller).unwrap();
        ids.send((caller, callee)).unwrap();
        sim_server::ic_http_backend(sim).unwrap()
    };
    let network = Network::start(make, Options::default()).unwrap();
    let (caller, callee) = made.recv().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, ic_http::router(network)).await.unwrap() });
    (url, caller, callee)
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
    controller
        .update(&caller, "setup_callee")
        .with_arg(Encode!(&callee).unwrap())
        .call_and_wait()
        .await
        .unwrap();
    assert_eq!(calls(&controller, caller, "parallel_calls", 2000).await, 500);
    assert_eq!(calls(&controller, caller, "sequential_calls", 2000).await, 2000);
}
