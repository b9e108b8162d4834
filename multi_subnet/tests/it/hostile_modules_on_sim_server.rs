//! Hostile modules (`sim/tests/fixtures/hostile_modules`) installed and
//! called through the pocket-ic client on one served simulator
//! (`sim_server`, in-process on 127.0.0.1), as a pocket-ic user would: each
//! install and call may succeed or be refused, but the simulator must
//! answer it as the replica would (no panic answered as a 500, no hang,
//! no abort), the server
//! must keep answering after each, the instance that ran them must still
//! run a canister, and another instance on the same server must still run
//! the example with the simulator engine's rounds.
//!
//! Each reproducer runs on a thread of its own with a handle to instance A,
//! under a time limit (`HOSTILE_MODULE_TIMEOUT_SECS`, 300 s unless set): a
//! reproducer that hangs the instance is reported as such and the rest run
//! on a fresh instance, so that one run tells every reproducer's fate.
//! `HOSTILE_MODULES=name,name` runs only those (a reproducer that aborts
//! the process ends the run); `HOSTILE_SERVER_URL` runs them on a server
//! already running instead of one in-process.

use crate::common::scenarios::{ONE_SUBNET, rounds, suite};
use candid::{Encode, Principal};
use multi_subnet::engines::TimeStep;
use multi_subnet::engines::pocket_ic::{PocketIcEngine, Server};
use multi_subnet::scenario::Topology;
use pocket_ic::common::rest::InstanceId;
use pocket_ic::{PocketIc, PocketIcBuilder, RejectResponse};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use url::Url;

/// One server for the file, or the one `HOSTILE_SERVER_URL` names (say a
/// `cargo run --release -- serve`). It is never dropped: dropping it would
/// wait for the connections of a hung reproducer.
fn url() -> Url {
    static SERVER: OnceLock<String> = OnceLock::new();
    let url = SERVER.get_or_init(|| match std::env::var("HOSTILE_SERVER_URL") {
        Ok(url) => url,
        Err(_) => {
            // 1 B instructions a message (not 40 B) so that the two
            // reproducers that loop forever take seconds, not minutes; a
            // 2 GiB budget that the grow_and_fill canister reaches.
            let limits = sim_server::Limits {
                host_memory_budget: 2 << 30,
                max_instructions_per_message: 1_000_000_000,
            };
            let server = sim_server::Running::start_with(limits).expect("the server starts");
            let url = server.url.clone();
            std::mem::forget(server);
            url
        }
    });
    Url::parse(url).expect("a URL")
}

struct Reproducer {
    name: &'static str,
    wat: &'static str,
    /// Update methods called, in order, after the install (whatever it gave).
    calls: &'static [&'static str],
    /// What the answers to the install and the calls must say, as the replica would.
    expect: &'static str,
}

macro_rules! reproducer {
    ($name:literal, $calls:expr, $expect:literal) => {
        Reproducer {
            name: $name,
            wat: include_str!(concat!("../../../sim/tests/fixtures/hostile_modules/", $name, ".wat")),
            calls: $calls,
            expect: $expect,
        }
    };
}

static REPRODUCERS: [Reproducer; 8] = [
    reproducer!("start_calls_ic0", &["go"], "\"ic0_canister_self_size\" cannot be executed in start mode"),
    reproducer!("start_traps_later", &["go"], "unreachable"),
    reproducer!("mutable_funcref_global", &["go"], "Unsupported global type: funcref"),
    reproducer!("start_loops", &["go"], "exceeded the limit of 1000000000 instructions"),
    reproducer!("tail_call_loop", &["go"], "exceeded the limit of 1000000000 instructions"),
    reproducer!("memory_4gib", &["go"], "of the simulator's host-memory budget"),
    reproducer!("huge_table", &["go"], "of the simulator's host-memory budget"),
    reproducer!(
        "grow_and_fill",
        &["grow_and_fill", "grow_and_fill", "grow_then_trap"],
        "Canister cannot grow its memory usage. growing linear memory by 256 MiB"
    ),
];

/// A trivial canister: `hello` replies "ok".
const HELLO: &str = r#"(module
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (memory 1)
  (data (i32.const 0) "ok")
  (func (export "canister_update hello") (call $append (i32.const 0) (i32.const 2)) (call $reply)))"#;

fn timeout() -> Duration {
    let secs = std::env::var("HOSTILE_MODULE_TIMEOUT_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    Duration::from_secs(secs)
}

/// The reproducers `HOSTILE_MODULES` names, or all.
fn selected() -> Vec<&'static Reproducer> {
    let names = std::env::var("HOSTILE_MODULES").unwrap_or_default();
    let names: Vec<&str> = names.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    for name in &names {
        assert!(REPRODUCERS.iter().any(|r| r.name == *name), "HOSTILE_MODULES: no reproducer {name}");
    }
    REPRODUCERS.iter().filter(|r| names.is_empty() || names.contains(&r.name)).collect()
}

fn user() -> Principal {
    Principal::from_slice(&[7; 29])
}

fn describe<T: std::fmt::Debug>(result: &Result<T, RejectResponse>) -> String {
    match result {
        Ok(reply) => format!("Ok({reply:?})"),
        Err(reject) => format!("Err({:?}: {})", reject.reject_code, reject.reject_message),
    }
}

/// What a worker thread tells as it goes.
enum Event {
    Step(String),
    Done,
    /// The client panicked: the server answered an HTTP error (a panic in
    /// the simulator is answered 500) or the connection failed.
    Panicked(String),
}

enum Outcome {
    /// Every install and call was answered, as a reply or a reject.
    Answered,
    Panicked(String),
    Hung,
}

/// Runs `work` on a thread of its own with a handle to `instance`, printing
/// its steps as they come, for at most `limit`.
fn on_worker(
    label: &str,
    instance: InstanceId,
    limit: Duration,
    work: impl FnOnce(&PocketIc, &dyn Fn(String)) + Send + 'static,
) -> Outcome {
    let (events, inbox) = mpsc::channel::<Event>();
    let server = url();
    std::thread::Builder::new()
        .name(label.to_string())
        .spawn(move || {
            let pic = PocketIc::new_from_existing_instance(server, instance, None);
            let step = |s: String| {
                let _ = events.send(Event::Step(s));
            };
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&pic, &step)));
            let _ = events.send(match done {
                Ok(()) => Event::Done,
                Err(panic) => Event::Panicked(
                    panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "a panic".into()),
                ),
            });
        })
        .expect("a thread");
    let deadline = Instant::now() + limit;
    loop {
        match inbox.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Step(step)) => eprintln!("  {label}: {step}"),
            Ok(Event::Done) => return Outcome::Answered,
            Ok(Event::Panicked(why)) => return Outcome::Panicked(why),
            Err(mpsc::RecvTimeoutError::Timeout) => return Outcome::Hung,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Outcome::Panicked("the thread ended".into()),
        }
    }
}

/// Creates a canister, installs the reproducer (a fallible reinstall: the
/// client's `install_canister` panics on a refusal) and calls its methods.
fn run(r: &'static Reproducer, pic: &PocketIc, step: &dyn Fn(String)) {
    let wasm = wat::parse_str(r.wat).unwrap_or_else(|e| panic!("{}: {e}", r.name));
    let canister = pic.create_canister_with_settings(Some(user()), None);
    let start = Instant::now();
    let installed = pic.reinstall_canister(canister, wasm, Encode!().unwrap(), Some(user()));
    step(format!("install -> {} in {:.2?}", describe(&installed), start.elapsed()));
    let mut answers = describe(&installed);
    for method in r.calls {
        let start = Instant::now();
        let result = pic.update_call(canister, user(), method, Encode!().unwrap());
        step(format!("{method} -> {} in {:.2?}", describe(&result), start.elapsed()));
        answers += &format!("{method} -> {}", describe(&result));
    }
    assert!(answers.contains(r.expect), "{}: expected {:?} in {answers}", r.name, r.expect);
}

/// The server answers a request that no instance serves.
fn server_answers() -> Result<(), String> {
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    match client.get(url().join("instances").unwrap()).send() {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(response) => Err(format!("GET /instances: {}", response.status())),
        Err(e) => Err(format!("GET /instances: {e}")),
    }
}

fn instance() -> PocketIc {
    PocketIcBuilder::new().with_server_url(url()).with_application_subnet().build()
}

#[test]
fn hostile_modules_on_sim_server() {
    let started = Instant::now();
    let limit = timeout();
    let mut a = instance();
    let original_a = a.instance_id();
    let mut failures = vec![];
    let mut summary = vec![];
    for r in selected() {
        eprintln!("{} on instance {}", r.name, a.instance_id());
        let start = Instant::now();
        let outcome = on_worker(r.name, a.instance_id(), limit, move |pic, step| run(r, pic, step));
        let took = start.elapsed();
        let what = match outcome {
            Outcome::Answered => "answered".to_string(),
            Outcome::Panicked(why) => {
                failures.push(format!("{}: the client panicked (an HTTP error?): {why}", r.name));
                format!("HTTP ERROR / CLIENT PANIC: {why}")
            }
            Outcome::Hung => {
                failures.push(format!("{}: no answer within {limit:?}", r.name));
                // The instance's thread is busy with it: the rest run on a fresh one.
                a = instance();
                format!("HUNG (> {limit:?}); the rest run on instance {}", a.instance_id())
            }
        };
        summary.push(format!("{:<24} {:>10.2?}  {what}", r.name, took));
        if let Err(why) = server_answers() {
            panic!("the server stopped answering after {}: {why}", r.name);
        }
    }

    // Another user's instance on the same server runs the example.
    let start = Instant::now();
    let mut b = PocketIcEngine::start_with_time_step(Server::Url(url()), 1, TimeStep::POCKET_IC)
        .unwrap_or_else(|e| panic!("instance B: {e:#}"));
    let runs = suite(&mut b, Topology::SameSubnet, &ONE_SUBNET, |_, _, _| {});
    summary.push(format!(
        "{:<24} {:>10.2?}  rounds {:?}",
        "instance B: example",
        start.elapsed(),
        rounds(&runs)
    ));

    // Instance A (or the one that replaced it) still runs a canister.
    let start = Instant::now();
    let hello = on_worker("hello", a.instance_id(), limit, |pic, step| {
        let canister = pic.create_canister_with_settings(Some(user()), None);
        pic.install_canister(canister, wat::parse_str(HELLO).unwrap(), vec![], Some(user()));
        let reply = pic.update_call(canister, user(), "hello", vec![]);
        step(format!("hello -> {}", describe(&reply)));
        assert_eq!(reply.expect("hello replies"), b"ok");
    });
    let hello = match hello {
        Outcome::Answered => Ok(()),
        Outcome::Panicked(why) => Err(why),
        Outcome::Hung => Err(format!("no answer within {limit:?}")),
    };
    summary.push(format!(
        "{:<24} {:>10.2?}  {:?}",
        format!("instance {}: hello", a.instance_id()),
        start.elapsed(),
        hello
    ));

    eprintln!("\nsummary (total {:.2?}):", started.elapsed());
    for line in &summary {
        eprintln!("  {line}");
    }
    assert_eq!(rounds(&runs), [2, 1, 21, 2], "instance B: the simulator engine's rounds");
    assert_eq!(failures, Vec::<String>::new(), "every install and call is answered, as a reply or a reject");
    assert_eq!(a.instance_id(), original_a, "instance A was never replaced");
    hello.expect("instance A still runs a canister");
}
