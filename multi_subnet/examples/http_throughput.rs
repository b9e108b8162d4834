//! Update calls per second through the IC's HTTP interface
//! (`multi_subnet network`'s server, in-process on 127.0.0.1, rounds as
//! fast as there is work), with 1, 8 and 64 concurrent clients, against the
//! same calls on the in-process simulator in the same run.
//!
//! Each client signs its envelopes with its own Ed25519 identity and sends
//! them to `/api/v4/.../call` (icp-cli's route), one at a time, so the
//! server authenticates, executes, certifies (one BLS signature per round
//! per subnet) and answers each; the clients do not verify the BLS
//! certificates (ic-agent does, at a pairing check per reply, which would
//! measure the client). The call is the callee's `ping`.
//!
//! `cargo run --release -p multi_subnet --example http_throughput`;
//! docs/network.md gives the figures.

use candid::{Encode, Principal};
use comfy_table::Table;
use ic_agent::Identity;
use ic_agent::identity::BasicIdentity;
use ic_transport_types::{Envelope, EnvelopeContent, TransportCallResponse};
use std::borrow::Cow;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const CALLS: usize = 2_048;
const CONCURRENCY: [usize; 3] = [1, 8, 64];

/// One call's latency, in ms and in the network's rounds.
struct Latency {
    ms: f64,
    rounds: u64,
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn envelope(identity: &BasicIdentity, callee: Principal, nonce: u64) -> Vec<u8> {
    let content = EnvelopeContent::Call {
        nonce: Some(nonce.to_be_bytes().to_vec()),
        ingress_expiry: now_ns() + 120_000_000_000,
        sender: identity.sender().unwrap(),
        canister_id: callee,
        method_name: "ping".into(),
        arg: Encode!().unwrap(),
        sender_info: None,
    };
    let signature = identity.sign(&content).unwrap();
    Envelope {
        content: Cow::Owned(content),
        sender_pubkey: signature.public_key,
        sender_sig: signature.signature,
        sender_delegation: None,
    }
    .encode_bytes()
}

/// `clients` clients make `CALLS` calls between them; the wall time and each call's latency.
async fn http_calls(
    url: &str,
    network: &ic_http::Network,
    callee: Principal,
    clients: usize,
) -> (Duration, Vec<Latency>) {
    let http = reqwest::Client::new();
    let started = Instant::now();
    let workers = (0..clients).map(|client| {
        let (http, network, endpoint) =
            (http.clone(), network.clone(), format!("{url}/api/v4/canister/{callee}/call"));
        tokio::spawn(async move {
            let identity = BasicIdentity::from_raw_key(&[client as u8; 32]);
            let mut latencies = vec![];
            for call in 0..CALLS / clients {
                let body = envelope(&identity, callee, call as u64);
                let (sent, round) = (Instant::now(), network.rounds());
                let response = http
                    .post(&endpoint)
                    .header("content-type", "application/cbor")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200, "a synchronous call answered within its wait");
                let answer: TransportCallResponse =
                    serde_cbor::from_slice(&response.bytes().await.unwrap()).unwrap();
                assert!(matches!(answer, TransportCallResponse::Replied { .. }), "{answer:?}");
                latencies.push(Latency {
                    ms: sent.elapsed().as_secs_f64() * 1e3,
                    rounds: network.rounds() - round,
                });
            }
            latencies
        })
    });
    let mut latencies = vec![];
    for worker in workers.collect::<Vec<_>>() {
        latencies.extend(worker.await.unwrap());
    }
    (started.elapsed(), latencies)
}

/// The same calls on the simulator in-process: `clients` at a time,
/// ticking until all are answered.
fn sim_calls(wasm: &[u8], clients: usize) -> Duration {
    let mut sim = sim::Sim::builder().with_subnet().build();
    let callee = sim.create_canister(0, vec![Principal::anonymous()]).unwrap();
    sim.install_canister(callee, wasm, Encode!().unwrap(), Principal::anonymous()).unwrap();
    let started = Instant::now();
    for _ in 0..CALLS / clients {
        let ids: Vec<_> = (0..clients)
            .map(|_| sim.submit_call(callee, Principal::anonymous(), "ping", Encode!().unwrap()).unwrap())
            .collect();
        while ids.iter().any(|&id| sim.ingress_status(id).is_none()) {
            sim.tick();
        }
    }
    started.elapsed()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let wasms = canister_wasm::caller_and_callee()?;
    let callee_wasm = wasms.callee.clone();
    let (ids, made) = std::sync::mpsc::channel();
    let make = move || {
        let mut sim = sim::Sim::builder().with_subnet().build();
        let callee = sim.create_canister(0, vec![Principal::anonymous()]).unwrap();
        sim.install_canister(callee, &callee_wasm, Encode!().unwrap(), Principal::anonymous()).unwrap();
        ids.send(callee).unwrap();
        Box::new(ic_model::sim_engine::network(sim, ic_model::Keys::from_seed(0)).unwrap())
            as Box<dyn ic_http::Backend>
    };
    let network = ic_http::Network::start(make, ic_http::Options::default()).map_err(anyhow::Error::msg)?;
    let callee = made.recv()?;
    let url = ic_http::serve_locally(network.clone()).await?;

    let mut table = Table::new();
    table.set_header([
        "clients",
        "calls",
        "calls/s (HTTP)",
        "p50 ms",
        "p99 ms",
        "p50 rounds",
        "p99 rounds",
        "calls/s (sim in-process)",
        "in-process / HTTP",
    ]);
    for clients in CONCURRENCY {
        let (wall, latencies) = http_calls(&url, &network, callee, clients).await;
        let in_process = sim_calls(&wasms.callee, clients);
        let mut ms: Vec<f64> = latencies.iter().map(|l| l.ms).collect();
        let mut rounds: Vec<f64> = latencies.iter().map(|l| l.rounds as f64).collect();
        ms.sort_by(f64::total_cmp);
        rounds.sort_by(f64::total_cmp);
        let per_second = |d: Duration| latencies.len() as f64 / d.as_secs_f64();
        table.add_row([
            clients.to_string(),
            latencies.len().to_string(),
            format!("{:.0}", per_second(wall)),
            format!("{:.2}", percentile(&ms, 0.5)),
            format!("{:.2}", percentile(&ms, 0.99)),
            format!("{:.0}", percentile(&rounds, 0.5)),
            format!("{:.0}", percentile(&rounds, 0.99)),
            format!("{:.0}", per_second(in_process)),
            format!("{:.1}x", wall.as_secs_f64() / in_process.as_secs_f64()),
        ]);
    }
    println!("engine: {}", multi_subnet::commands::network::DESCRIPTION);
    println!("{table}");
    Ok(())
}
