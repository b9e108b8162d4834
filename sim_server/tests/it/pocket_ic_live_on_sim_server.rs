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

/// PocketIC's round duration in live mode (`auto_progress`'s
/// `artificial_delay_ms`): with a round every 2 s, an idle live instance
/// runs at most 3 rounds in 3 s, where one without runs an idle round
/// every half second; a delay beyond a minute is refused with the reason.
#[tokio::test(flavor = "multi_thread")]
async fn auto_progress_takes_pocket_ics_artificial_delay_as_its_round_duration() {
    let server = sim_server::Running::start().unwrap();
    let client = reqwest::Client::new();
    let rounds_in_3_s = |delay: Option<u64>| {
        let (client, server_url) = (client.clone(), server.url.clone());
        async move {
            let mut pic = PocketIcBuilder::new()
                .with_server_url(server_url.parse().unwrap())
                .with_application_subnet()
                .build_async()
                .await;
            let progress =
                format!("{}/instances/{}/auto_progress", server_url.trim_end_matches('/'), pic.instance_id);
            let body = serde_json::json!({ "artificial_delay_ms": delay });
            let answer = client.post(progress).json(&body).send().await.unwrap();
            assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
            let gateway = pic.make_live(None).await;
            let rounds = || async {
                let state = client.get(gateway.join("_/dashboard/state").unwrap()).send().await.unwrap();
                state.json::<serde_json::Value>().await.unwrap()["rounds"].as_u64().unwrap()
            };
            let before = rounds().await;
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            let ran = rounds().await - before;
            pic.stop_live().await;
            ran
        }
    };
    let paced = rounds_in_3_s(Some(2_000)).await;
    assert!(paced <= 3, "{paced} rounds in 3 s with a round every 2 s");
    let unpaced = rounds_in_3_s(None).await;
    assert!(unpaced > paced, "idle rounds every half second: {unpaced}, paced: {paced}");
    let pic = PocketIcBuilder::new()
        .with_server_url(server.url.parse().unwrap())
        .with_application_subnet()
        .build_async()
        .await;
    let progress =
        format!("{}/instances/{}/auto_progress", server.url.trim_end_matches('/'), pic.instance_id);
    let answer = client
        .post(&progress)
        .json(&serde_json::json!({ "artificial_delay_ms": 60_001 }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
    assert!(answer.text().await.unwrap().contains("more than 60000"));
    // Live, it keeps its round duration, and refuses another.
    let delay =
        |ms: u64| client.post(&progress).json(&serde_json::json!({ "artificial_delay_ms": ms })).send();
    assert_eq!(delay(500).await.unwrap().status(), 200);
    assert_eq!(delay(500).await.unwrap().status(), 200, "the same again");
    let other = delay(700).await.unwrap();
    assert_eq!(other.status(), 400);
    assert!(other.text().await.unwrap().contains("a round every 500 ms: stop_progress first"));
}
