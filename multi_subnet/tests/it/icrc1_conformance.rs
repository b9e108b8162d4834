//! DFINITY's ICRC-1 and ICRC-2 conformance suite (`icrc1-test-suite` from
//! crates.io, the one the real ICRC and cycles ledgers run in their CI)
//! against both ledgers of `multi_subnet network`: the ICP ledger and the
//! cycles ledger, reached as a user's tools reach them, through the IC's
//! HTTP interface with ic-agent.
//!
//! The suite talks to a ledger through `icrc1-test-env`'s `LedgerEnv`;
//! [`AgentLedger`] implements it over the workspace's own ic-agent (the
//! crate `icrc1-test-env-replica` would bring a third ic-agent into the
//! lock). Each ledger's suite runs as one identity, funded first by the
//! anonymous principal, which holds the ledgers' initial tokens; every
//! identity the suite forks is a fresh one.
//!
//! The ICP ledger's stand-in passes `icrc1:tx_deduplication`, which the real
//! ICP ledger would not: it deduplicates `icrc1_transfer` by account
//! identifier and its own fee (`ic_model/src/ledger.rs` says more).

use candid::Principal;
use candid::utils::{ArgumentDecoder, ArgumentEncoder};
use ic_agent::Agent;
use ic_agent::identity::BasicIdentity;
use icrc1_test_env::LedgerEnv;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// The ICP ledger (`ic_model::system_canisters::ICP_LEDGER`).
const ICP_LEDGER: &str = "ryjl3-tyaaa-aaaaa-aaaba-cai";
/// The cycles ledger (`ic_model::system_canisters::CYCLES_LEDGER`).
const CYCLES_LEDGER: &str = "um5iw-rqaaa-aaaaq-qaaba-cai";

/// `multi_subnet network` on one subnet and any free port, killed when
/// dropped.
struct Network {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Network {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status_file = dir.path().join("status.json");
        let child = Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
            .args(["network", "--subnets", "1", "--status-file"])
            .arg(&status_file)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut network = Self { child, url: String::new(), _dir: dir };
        let started = Instant::now();
        network.url = loop {
            let status = std::fs::read_to_string(&status_file).unwrap_or_default();
            if let Ok(status) = serde_json::from_str::<serde_json::Value>(&status) {
                break status["url"].as_str().expect("the status names the URL").to_string();
            }
            assert!(network.child.try_wait().unwrap().is_none(), "the network exited");
            assert!(started.elapsed() < Duration::from_secs(60), "the network wrote no status file");
            std::thread::sleep(Duration::from_millis(50));
        };
        network
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A ledger as the suite's environment sees it: an agent of one identity,
/// and the keys of the identities forked from it.
#[derive(Clone)]
struct AgentLedger {
    agent: Agent,
    ledger: Principal,
    /// The number the next fresh identity's key is made from.
    next_key: Arc<AtomicU64>,
}

impl AgentLedger {
    /// An agent of a fresh identity on `ledger`.
    fn new(agent: &Agent, ledger: Principal, next_key: Arc<AtomicU64>) -> Self {
        let mut agent = agent.clone();
        agent.set_identity(fresh_identity(&next_key));
        Self { agent, ledger, next_key }
    }
}

/// An Ed25519 identity no other holds.
fn fresh_identity(next_key: &AtomicU64) -> BasicIdentity {
    let n = next_key.fetch_add(1, Ordering::Relaxed);
    let mut key = [7u8; 32];
    key[..8].copy_from_slice(&n.to_be_bytes());
    BasicIdentity::from_raw_key(&key)
}

#[async_trait::async_trait(?Send)]
impl LedgerEnv for AgentLedger {
    fn fork(&self) -> Self {
        Self::new(&self.agent, self.ledger, self.next_key.clone())
    }

    fn principal(&self) -> Principal {
        self.agent.get_principal().expect("an identity has a principal")
    }

    async fn time(&self) -> SystemTime {
        // The network's time follows the wall clock.
        SystemTime::now()
    }

    async fn query<Input, Output>(&self, method: &str, input: Input) -> anyhow::Result<Output>
    where
        Input: ArgumentEncoder + std::fmt::Debug,
        Output: for<'a> ArgumentDecoder<'a>,
    {
        let what = format!("query {method}{input:?} to {}", self.ledger);
        let arg = candid::encode_args(input)?;
        let reply = self.agent.query(&self.ledger, method).with_arg(arg).call().await;
        let reply = reply.map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        candid::decode_args(&reply).map_err(|e| anyhow::anyhow!("{what}: its reply: {e}"))
    }

    async fn update<Input, Output>(&self, method: &str, input: Input) -> anyhow::Result<Output>
    where
        Input: ArgumentEncoder + std::fmt::Debug,
        Output: for<'a> ArgumentDecoder<'a>,
    {
        let what = format!("update {method}{input:?} to {}", self.ledger);
        let arg = candid::encode_args(input)?;
        let reply = self.agent.update(&self.ledger, method).with_arg(arg).call_and_wait().await;
        let reply = reply.map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        candid::decode_args(&reply).map_err(|e| anyhow::anyhow!("{what}: its reply: {e}"))
    }
}

/// Every test of the suite on both ledgers, each funded for it: all pass.
/// The suite prints each test's name and outcome (TAP), shown with
/// `--nocapture` or when a test fails.
#[tokio::test]
async fn both_ledgers_pass_dfinitys_icrc1_and_icrc2_conformance_suite() {
    let network = Network::start();
    let anonymous = Agent::builder().with_url(&network.url).build().unwrap();
    anonymous.fetch_root_key().await.unwrap();
    let next_key = Arc::new(AtomicU64::new(1));
    let mut failed = vec![];
    // The suite's tests move at most a few fees each.
    for (ledger, funds) in [(ICP_LEDGER, 1_000_000_000_000u128), (CYCLES_LEDGER, 1_000_000_000_000_000)] {
        let ledger = Principal::from_text(ledger).unwrap();
        let env = AgentLedger::new(&anonymous, ledger, next_key.clone());
        let funder = AgentLedger { agent: anonymous.clone(), ..env.clone() };
        let funding = icrc1_test_env::Transfer::amount_to(funds, env.principal());
        let funded = icrc1_test_env::icrc1::transfer(&funder, funding).await.unwrap();
        funded.expect("the anonymous principal funds the suite's identity");
        println!("# {ledger}");
        let tests = icrc1_test_suite::test_suite(env.clone()).await;
        assert_eq!(tests.len(), 16, "the ledger supports ICRC-1 and ICRC-2: 8 tests each");
        if !icrc1_test_suite::execute_tests(tests).await {
            failed.push(format!("{ledger}: the suite"));
        }
        // The suite's tests run at once, which keeps rounds coming one after
        // another. Alone, on a network idle since its last round: an
        // approval that expired before it was sent is refused, as the round
        // that executes it is later than the expiry (as on the IC), whatever
        // time the network last certified.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let alone = icrc1_test_suite::icrc2_test_approve_expiration(env).await;
        println!("{} - icrc2:approve_expiration, alone on an idle network", ok(&alone));
        if let Err(why) = alone {
            println!("# {why:#}");
            failed.push(format!("{ledger}: icrc2:approve_expiration alone"));
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?}; the output above says which tests and why");
}

fn ok(outcome: &icrc1_test_suite::TestResult) -> &'static str {
    if outcome.is_ok() { "ok" } else { "not ok" }
}
