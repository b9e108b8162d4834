//! PocketIC's live mode on the served simulator (`sim_server`, in-process):
//! `make_live` starts auto progress and an HTTP gateway, and hands back a
//! URL that ic-agent (icp-cli's, verifying every certificate and query
//! signature) uses, while the pocket-ic client's REST calls keep working.

use candid::{Decode, Encode, Principal};
use ic_agent::Agent;
use pocket_ic::PocketIcBuilder;

async fn pings(agent: &Agent, callee: Principal) -> u64 {
    let reply = agent.query(&callee, "pings_received").with_arg(Encode!().unwrap()).call().await.unwrap();
    Decode!(&reply, u64).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn make_live_hands_back_a_url_an_agent_uses() {
    let server = sim_server::Running::start().unwrap();
    let wasm = canister_wasm::caller_and_callee().unwrap().callee;
    let mut pic = PocketIcBuilder::new()
        .with_server_url(server.url.parse().unwrap())
        .with_application_subnet()
        .build_async()
        .await;
    let callee = pic.create_canister().await;
    pic.install_canister(callee, wasm, Encode!().unwrap(), None).await;

    let url = pic.make_live(None).await;
    let agent = Agent::builder().with_url(url.as_str()).build().unwrap();
    agent.fetch_root_key().await.unwrap();
    // A canister installed before the instance went live is certified from
    // its first certificate on.
    let hash = agent.read_state_canister_module_hash(callee).await.expect("its module hash at once");
    assert_eq!(hash.len(), 32);
    agent.update(&callee, "ping").with_arg(Encode!().unwrap()).call_and_wait().await.unwrap();
    assert_eq!(pings(&agent, callee).await, 1, "the update ran with no tick asked for");
    let rest = pic.query_call(callee, Principal::anonymous(), "pings_received", Encode!().unwrap()).await;
    assert_eq!(Decode!(&rest.unwrap(), u64).unwrap(), 1, "the REST API sees the same instance");

    // The instance's own URL serves the interface too.
    let instance_url = pic.auto_progress().await;
    let at_instance = Agent::builder().with_url(instance_url.as_str()).build().unwrap();
    at_instance.fetch_root_key().await.unwrap();
    assert_eq!(pings(&at_instance, callee).await, 1);

    pic.stop_live().await;
    assert!(agent.status().await.is_err(), "the gateway stopped");
}
