//! Input the harness must refuse: at once, with one line that names the
//! limit, a non-zero exit, and never a panic.

use std::process::Command;
use std::time::{Duration, Instant};

/// Runs the harness on the simulator; its exit status and stderr lines.
fn harness(args: &[&str]) -> (bool, Vec<String>, Duration) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_multi_subnet")).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).lines().map(String::from).collect();
    (output.status.success(), stderr, started.elapsed())
}

fn assert_refused(args: &[&str], names: &str) {
    let (success, stderr, took) = harness(args);
    assert!(!success, "{args:?} must exit non-zero");
    assert_eq!(stderr.len(), 1, "{args:?}: exactly one line on stderr: {stderr:?}");
    let line = &stderr[0];
    assert!(!line.contains("panicked") && !line.contains("overflow"), "{args:?}: {line}");
    assert!(line.contains(names), "{args:?} names the limit ({names}): {line}");
    assert!(took < Duration::from_secs(10), "{args:?} refused at once, not after {took:?}");
}

const MAX: &str = "18446744073709551615";

#[test]
fn a_number_of_calls_beyond_the_callers_maximum() {
    assert_refused(&["--engine", "sim", "--calls", MAX], "0..=10000");
    assert_refused(&["sweep", "--engine", "sim", "--calls", "10001"], "0..=10000");
}

#[test]
fn a_time_step_beyond_an_hour() {
    assert_refused(&["sweep", "--engine", "sim", "--time-step-ns", MAX], "0..=3600000000000");
}

#[test]
fn a_noise_threshold_that_is_not_a_finite_percentage() {
    let baseline = tempfile::NamedTempFile::new().unwrap();
    let path = baseline.path().to_str().unwrap();
    for threshold in ["nan", "inf", "-1"] {
        let threshold = format!("--noise-threshold={threshold}");
        let args = ["sweep", "--engine", "sim", "--compare", path, &threshold];
        assert_refused(&args, "not a finite percentage of 0 or more");
    }
}

#[test]
fn retries_without_time_passing() {
    assert_refused(
        &["sweep", "--engine", "sim", "--retry", "--time-step-ns", "0", "--calls", "10"],
        "--time-step-ns 0",
    );
}

/// The server never passes for a PocketIC binary behind POCKET_IC_BIN, and
/// leaves a port file it does not own to its owner.
#[test]
fn serve_is_not_pocket_ic() {
    let version =
        Command::new(env!("CARGO_BIN_EXE_multi_subnet")).args(["serve", "--version"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&version.stdout).contains("pocket-ic-server"));
    let owned = tempfile::NamedTempFile::new().unwrap();
    let path = owned.path().to_str().unwrap();
    let (success, _, took) = harness(&["serve", "--port-file", path]);
    assert!(success && took < Duration::from_secs(10), "exits 0 at once when the port file exists");
}

#[test]
fn serve_limits_within_their_ranges() {
    assert_refused(&["serve", "--host-memory-gib", "0"], "1..=1024");
    assert_refused(&["serve", "--host-memory-gib", MAX], "1..=1024");
    assert_refused(&["serve", "--max-instructions-per-message", "999999"], "1000000..=40000000000");
}

#[test]
fn network_options_within_their_ranges_and_a_port_file_it_does_not_own() {
    assert_refused(&["network", "--subnets", "0"], "1..=33");
    assert_refused(&["network", "--subnets", "34"], "1..=33");
    assert_refused(&["network", "--round-ms", "60001"], "0..=60000");
    assert_refused(&["network", "--seed", "x"], "--seed");
    let owned = tempfile::NamedTempFile::new().unwrap();
    let (success, _, took) = harness(&["network", "--port-file", owned.path().to_str().unwrap()]);
    assert!(success && took < Duration::from_secs(10), "exits 0 at once when the port file exists");
}

#[test]
fn request_limits_within_their_ranges() {
    for command in ["serve", "network"] {
        assert_refused(&[command, "--max-connections", "0"], "1..=1000000");
        assert_refused(&[command, "--max-requests", "0"], "1..=1000000");
        assert_refused(&[command, "--max-body-mib-in-flight", "63"], "64..=65536");
        assert_refused(&[command, "--header-timeout-secs", "0"], "1..=3600");
        assert_refused(&[command, "--body-timeout-secs", "3601"], "1..=3600");
    }
}

/// SIGINT or SIGTERM: the server stops within 10 s, exits 0 and removes
/// the files that said it was serving.
/// Signalled the moment its port file is written, 50 times over, with
/// both cores kept busy meanwhile: a server catches SIGINT and SIGTERM
/// before it announces itself (icp-cli stops its launcher with SIGINT as
/// soon as it has started), exits 0 and leaves no file behind.
#[test]
fn servers_stop_on_sigint_and_sigterm_and_remove_their_files() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use wait_timeout::ChildExt;
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..2)
        .map(|_| {
            let done = done.clone();
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let cases = [("network", "INT"), ("network", "TERM"), ("serve", "INT"), ("serve", "TERM")];
    for (command, signal) in cases.into_iter().cycle().take(50) {
        let dir = tempfile::tempdir().unwrap();
        let port_file = dir.path().join("port");
        let status_file = dir.path().join("status.json");
        let mut args = vec![command, "--port-file", port_file.to_str().unwrap()];
        if command == "network" {
            args.extend(["--status-file", status_file.to_str().unwrap()]);
        }
        let mut server = Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
            .args(&args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::fs::read_to_string(&port_file).map_or(true, |port| !port.ends_with('\n')) {
            assert!(started.elapsed() < Duration::from_secs(60), "{command} never wrote its port file");
            std::thread::sleep(Duration::from_micros(200));
        }
        let killed = Command::new("kill").args([&format!("-{signal}"), &server.id().to_string()]).status();
        assert!(killed.unwrap().success());
        let status = server.wait_timeout(Duration::from_secs(10)).unwrap();
        let status = status.unwrap_or_else(|| {
            let _ = server.kill();
            panic!("{command} still runs 10 s after SIG{signal}")
        });
        assert!(status.success(), "{command} after SIG{signal}: {status}");
        assert!(!port_file.exists() && !status_file.exists(), "{command} leaves no port or status file");
    }
    done.store(true, Ordering::Relaxed);
    load.into_iter().for_each(|thread| thread.join().unwrap());
}

/// `serve --ttl`: a server nobody talks to ends by itself and removes its
/// port file, as `pocket-ic-sim` and PocketIC's server do.
#[test]
fn serve_with_a_ttl_ends_by_itself() {
    use wait_timeout::ChildExt;
    let dir = tempfile::tempdir().unwrap();
    let port_file = dir.path().join("port");
    let mut server = Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
        .args(["serve", "--ttl", "1", "--port-file", port_file.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = server.wait_timeout(Duration::from_secs(60)).unwrap().unwrap_or_else(|| {
        let _ = server.kill();
        panic!("serve --ttl 1 still runs after 60 s")
    });
    assert!(status.success(), "{status}");
    assert!(!port_file.exists(), "it removes its port file");
}

#[test]
fn the_mainnet_profiles_options_need_the_profile() {
    assert_refused(&["--engine", "sim", "--round-seconds", "2"], "apply to --profile mainnet");
    assert_refused(
        &["--engine", "sim", "--profile", "mainnet", "--round-seconds", "nan"],
        "between 0.001 and 60",
    );
}

#[test]
fn chaos_runs_with_known_faults_and_seeds_on_a_server_it_can_reach() {
    let unreachable = ["chaos", "--engine", "pocket-ic", "--pocket-ic-url", "http://127.0.0.1:9/"];
    assert_refused(&unreachable, "nothing serves PocketIC's REST API at http://127.0.0.1:9/");
    assert_refused(&["chaos", "--faults", "gremlins"], "gremlins");
    assert_refused(&["chaos", "--seeds", "0"], "1..=100");
}

#[test]
fn a_network_refuses_faults_it_cannot_inject_in_one_line() {
    assert_refused(
        &["network", "--faults", "{\"drop\": 1}"],
        "the spec is not a fault spec: unknown field `drop`",
    );
    assert_refused(&["network", "--faults", "@/no/such/spec.json"], "cannot read /no/such/spec.json");
    assert_refused(&["network", "--fault-seed", "3"], "--faults");
    let stranger = r#"{"traps": [{"canister": "2vxsx-fae", "every": 2}]}"#;
    assert_refused(&["network", "--faults", stranger], "the faults: canister 2vxsx-fae");
}

#[test]
fn chaos_prints_the_documented_json() {
    let output = Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
        .args(["chaos", "--engine", "sim", "--seeds", "1", "--faults", "callee-traps", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["engine"], "sim");
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "one row per strategy");
    let fields = [
        "fault",
        "strategy",
        "seed",
        "requested",
        "delivered",
        "failures",
        "unknown",
        "retried",
        "lost",
        "double_counted",
        "rounds",
    ];
    for row in rows {
        for field in fields {
            assert!(row.get(field).is_some(), "{field} in {row}");
        }
        assert_eq!(
            (&row["fault"], &row["lost"], &row["double_counted"]),
            (&"callee-traps".into(), &0.into(), &0.into())
        );
    }
    assert!(rows[1]["failures"]["CanisterError"].as_u64().unwrap() > 0, "{}", rows[1]);
}
