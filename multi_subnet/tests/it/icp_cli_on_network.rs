//! The upstream example's own flow, with the real icp-cli (1.5.0, from
//! npm; `scripts/setup.sh` installs it) against `multi_subnet network`: the
//! simulator as a local IC network behind the IC's HTTP interface.
//!
//! Each test starts the network command as a user would, and deploys a
//! copy of this repository's icp.yaml (its `sim` environment, with the
//! pinned root key; only the port and the build scripts' paths differ).

use crate::common::big_module;
use crate::common::node;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `multi_subnet network`, killed when dropped.
struct Network {
    child: Child,
    port: u16,
    status: serde_json::Value,
    _dir: tempfile::TempDir,
}

impl Network {
    fn start(subnets: u32) -> Self {
        Self::start_with(&["--subnets", &subnets.to_string()])
    }

    /// `multi_subnet network` with `args`.
    fn start_with(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (port_file, status_file) = (dir.path().join("port"), dir.path().join("status.json"));
        let child = Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
            .arg("network")
            .args(args)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--status-file")
            .arg(&status_file)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file)
                && let Ok(port) = text.trim().parse()
            {
                break port;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "the network wrote no port file");
            std::thread::sleep(Duration::from_millis(50));
        };
        let status = loop {
            if let Ok(status) =
                serde_json::from_str(&std::fs::read_to_string(&status_file).unwrap_or_default())
            {
                break status;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Self { child, port, status, _dir: dir }
    }

    fn subnet(&self, index: usize) -> String {
        self.status["subnets"][index].as_str().unwrap().to_string()
    }

    /// Sends `signal` and waits for the network to exit; its exit status.
    fn stop(mut self, signal: &str) -> std::process::ExitStatus {
        let sent = Command::new("kill").args([&format!("-{signal}"), &self.child.id().to_string()]).status();
        assert!(sent.unwrap().success());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "the network did not stop within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A project directory holding the repository's icp.yaml, pointed at
/// `network`, plus `extra` canister definitions; icp-cli's identities live
/// in a home of its own there.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(network: &Network, extra: &str) -> Self {
        let yaml = std::fs::read_to_string(root().join("icp.yaml")).unwrap();
        assert!(yaml.contains("url: http://127.0.0.1:4944"), "icp.yaml declares the sim network");
        let key = network.status["root_key"].as_str().unwrap();
        assert!(yaml.contains(&format!("root-key: {key}")), "icp.yaml pins the root key the network serves");
        let yaml = yaml
            .replace("url: http://127.0.0.1:4944", &format!("url: http://127.0.0.1:{}", network.port))
            .replace("canisters:\n", &format!("canisters:\n{extra}"));
        let project = Self::with_yaml(&yaml);
        // The network's ledgers start with the anonymous principal's funds,
        // as PocketIC's do: alice gets cycles to create canisters with.
        let alice = project.principal("alice");
        project.ok(&["cycles", "transfer", "1000t", &alice, "-e", "sim", "--identity", "anonymous"]);
        project
    }

    /// A project of `yaml` (the build scripts found in this repository)
    /// with the identities alice, the default, and bob.
    fn with_yaml(yaml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let yaml = yaml.replace("bash scripts/", &format!("bash {}/scripts/", root().display()));
        std::fs::write(dir.path().join("icp.yaml"), yaml).unwrap();
        let project = Self { dir };
        project.ok(&["identity", "new", "alice", "--storage", "plaintext"]);
        project.ok(&["identity", "new", "bob", "--storage", "plaintext"]);
        project.ok(&["identity", "default", "alice"]);
        project
    }

    /// The caller on subnet 0 and the callee on subnet 1, as on mainnet,
    /// each with 100T cycles.
    fn create_apart(&self, network: &Network) {
        for (canister, subnet) in [("caller", 0), ("callee", 1)] {
            let subnet = network.subnet(subnet);
            self.ok(&["canister", "create", canister, "-e", "sim", "--cycles", "100t", "--subnet", &subnet]);
        }
    }

    /// The principal of one of the project's identities.
    fn principal(&self, identity: &str) -> String {
        self.ok(&["identity", "principal", "--identity", identity]).trim().to_string()
    }

    fn icp(&self, args: &[&str]) -> Output {
        self.icp_with(args, &[])
    }

    /// icp with `env` set beside what every run gets.
    fn icp_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let icp = root().join(".tools/bin/icp");
        assert!(icp.exists(), "icp-cli is not installed: run scripts/setup.sh (scripts/test.sh does)");
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        let mut command = Command::new(icp);
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("DO_NOT_TRACK", "1")
            .env("ICP_CLI_NETWORK_LAUNCHER_PATH", env!("CARGO_BIN_EXE_network_launcher"))
            .env("HOME", self.dir.path().join("home"));
        // The build scripts run cargo: keep the user's toolchain.
        for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            command.env(var, std::env::var_os(var).unwrap_or_else(|| home.join(default).into()));
        }
        command.envs(env.iter().copied()).output().unwrap()
    }

    /// Runs icp and returns its standard output; fails the test with its
    /// standard error if it fails.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.icp(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "icp {} failed: {}", args.join(" "), first_lines(&stderr));
        String::from_utf8(output.stdout).unwrap()
    }

    /// `icp canister call ...` on the local network, trimmed.
    fn call_local(&self, args: &[&str]) -> String {
        let args = [&["canister", "call"][..], args].concat();
        self.ok(&args).trim().to_string()
    }

    /// `icp canister call -e sim ...`, trimmed.
    fn call(&self, args: &[&str]) -> String {
        let args = [&["canister", "call", "-e", "sim"][..], args].concat();
        self.ok(&args).trim().to_string()
    }
}

/// icp-cli prints a backtrace after its error: the error is enough.
fn first_lines(text: &str) -> String {
    text.lines().take_while(|line| !line.starts_with("Stack backtrace")).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_upstream_flow_on_two_subnets_deploys_calls_upgrades_and_guards() {
    let network = Network::start(2);
    let big_dir = tempfile::tempdir().unwrap();
    let big = big_dir.path().join("big.wasm");
    std::fs::write(&big, big_module::over_2_mib()).unwrap();
    let extra = format!(
        "  - name: big\n    build:\n      steps:\n        - type: pre-built\n          path: {}\n",
        big.display()
    );
    let project = Project::new(&network, &extra);
    project.create_apart(&network);
    project.ok(&["deploy", "-e", "sim", "--cycles", "100t"]);

    assert_eq!(project.call(&["caller", "sequential_calls", "(90)"]), "(90 : nat64)");
    assert_eq!(project.call(&["caller", "parallel_calls", "(90)"]), "(90 : nat64)");
    assert_eq!(project.call(&["callee", "pings_received", "()", "--query"]), "(180 : nat64)");
    let report = project.call(&[
        "caller",
        "run_plan",
        "(record { strategy = variant { bounded }; n = 50 : nat64; k = opt (10 : nat64) })",
    ]);
    assert!(report.contains("succeeded = 50 : nat64"), "{report}");

    let status = project.ok(&["canister", "status", "-e", "sim", "caller"]);
    assert!(status.contains("Status: Running") && status.contains("Module hash: 0x"), "{status}");
    // The settings icp-cli set and changes, as canister_status reports them.
    project.ok(&["canister", "settings", "update", "-e", "sim", "caller", "--freezing-threshold", "86400"]);
    let status = project.ok(&["canister", "status", "-e", "sim", "caller"]);
    for shown in [
        "Freezing threshold: 86_400",
        "Wasm memory limit: 3_221_225_472",
        "Name: PUBLIC_CANISTER_ID:callee, Value: ",
    ] {
        assert!(status.contains(shown), "{shown:?} in {status}");
    }
    assert!(!status.contains("Memory size: 0\n"), "the heap, stable memory and module count: {status}");
    // The frontend's log (fetch_canister_logs): what icp.yaml's sync step stored.
    let logs = project.ok(&["canister", "logs", "-e", "sim", "frontend"]);
    assert!(logs.contains("stored /index.html ("), "{logs}");
    let big_hash = format!("Module hash: 0x{}", hex_sha256(&std::fs::read(&big).unwrap()));
    let big_status = project.ok(&["canister", "status", "-e", "sim", "big"]);
    assert!(big_status.contains(&big_hash), "the 3 MiB module installed in chunks: {big_status}");

    // A second deploy upgrades; the caller still reaches its callee.
    project.ok(&["deploy", "-e", "sim"]);
    assert_eq!(project.call(&["caller", "sequential_calls", "(10)"]), "(10 : nat64)");
    assert_eq!(
        project.call(&["callee", "pings_received", "()", "--query"]),
        "(240 : nat64)",
        "kept across the upgrade"
    );

    // An idempotent job's pings carry nonces, which the callee executes
    // only for callers it admits: the canister icp-cli deployed beside it
    // as `caller` is, with no admit_caller.
    let job = project.call(&[
        "caller",
        "start_job",
        "(record { strategy = variant { parallel }; n = 20 : nat64 }, \
          opt record { max_attempts = 3 : nat32; backoff_ms = 1_000 : nat64; idempotent = true })",
    ]);
    assert_eq!(job, "(1 : nat64)");
    let report = (0..100)
        .map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            project.call(&["caller", "job_status", "(1)", "--query"])
        })
        .find(|report| report.contains("finished = true"))
        .expect("the job finishes");
    assert!(report.contains("succeeded = 20 : nat64"), "{report}");

    let refused = project.icp(&[
        "canister",
        "call",
        "-e",
        "sim",
        "--identity",
        "bob",
        "caller",
        "sequential_calls",
        "(10)",
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("only a controller"), "{}", first_lines(&stderr));
}

#[test]
fn on_one_subnet_2000_parallel_calls_meet_the_500_slot_queue() {
    let network = Network::start(1);
    let project = Project::new(&network, "");
    project.ok(&["deploy", "caller", "callee", "-e", "sim", "--cycles", "100t"]);
    assert_eq!(project.call(&["caller", "parallel_calls", "(2000)"]), "(500 : nat64)");
    assert_eq!(project.call(&["caller", "sequential_calls", "(2000)"]), "(2_000 : nat64)");
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn the_ledgers_keep_the_balances_icp_cli_moves() {
    let network = Network::start(1);
    let project = Project::new(&network, "");
    let (alice, bob) = (project.principal("alice"), project.principal("bob"));
    let balance = |what: &str, identity: &str| {
        project.ok(&[what, "balance", "-e", "sim", "--identity", identity]).trim().to_string()
    };
    assert_eq!(balance("cycles", "alice"), "Balance: 1_000_000_000_000_000 cycles");
    assert_eq!(balance("token", "alice"), "Balance: 0 ICP");
    project.ok(&["token", "transfer", "100", &alice, "-e", "sim", "--identity", "anonymous"]);
    let sent = project.ok(&["token", "transfer", "1.5", &bob, "-e", "sim"]);
    assert!(sent.starts_with(&format!("Transferred 1.50000000 ICP to {bob} in block ")), "{sent}");
    assert_eq!(balance("token", "alice"), "Balance: 98.49990000 ICP", "less 1.5 ICP and the 0.0001 ICP fee");
    assert_eq!(balance("token", "bob"), "Balance: 1.50000000 ICP");

    // Two canisters at icp-cli's 2T each, plus the ledger's 100M fee each.
    project.ok(&["deploy", "caller", "callee", "-e", "sim"]);
    assert_eq!(balance("cycles", "alice"), "Balance: 995_999_800_000_000 cycles");
    // Each call in flight prepays about 42B cycles: the 1.5T left of 2T
    // after the 500B creation fee pay for 34 at once, as on the IC (the
    // README's steps give the caller 100T).
    assert_eq!(project.call(&["caller", "parallel_calls", "(90)"]), "(34 : nat64)");
    let topped = project.icp(&["canister", "top-up", "--amount", "1t", "caller", "-e", "sim"]);
    let stderr = String::from_utf8_lossy(&topped.stderr);
    assert!(
        topped.status.success() && stderr.contains("Topped up canister caller with 1_000_000_000_000 cycles"),
        "{stderr}"
    );
    assert_eq!(balance("cycles", "alice"), "Balance: 994_999_700_000_000 cycles");

    // Bob has no cycles: the cycles ledger refuses to create his canister.
    let refused = project.icp(&["canister", "create", "--detached", "-e", "sim", "--identity", "bob"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("Insufficient cycles. Requested: 2000000000000 cycles, available balance: 0 cycles"),
        "{}",
        first_lines(&stderr)
    );
    // 1 ICP to the cycles minting canister, at its 3.5T cycles an ICP, less
    // the cycles ledger's fee.
    let minted = project.ok(&["cycles", "mint", "--icp", "1", "-e", "sim"]);
    assert_eq!(
        minted.trim(),
        "Minted 3_499_900_000_000 cycles to your account, new balance: 998_499_600_000_000 cycles."
    );
    assert_eq!(balance("token", "alice"), "Balance: 97.49980000 ICP", "less 1 ICP and the fee");
    // A canister paid in ICP: the cycles minting canister creates it with
    // what 1 ICP buys, less the creation fee.
    let created = project.ok(&["canister", "create", "--detached", "--with-icp", "1", "-e", "sim"]);
    let id = created.trim().rsplit(' ').next().unwrap().to_string();
    assert!(created.starts_with("Created canister with ID "), "{created}");
    assert_eq!(balance("token", "alice"), "Balance: 96.49970000 ICP", "less 1 ICP and the fee");
    let status = project.ok(&["canister", "status", &id, "-e", "sim"]);
    assert!(status.contains("3_000_000_000_000"), "3.5T less the 500B creation fee: {status}");

    // Deleting a canister recovers its cycles: icp-cli installs a shim
    // that calls the cycles ledger's `deposit` with them attached (all but
    // 50B), which credits them less the fee.
    let deleted = project.icp(&["canister", "delete", "callee", "-e", "sim"]);
    let stderr = String::from_utf8_lossy(&deleted.stderr);
    assert!(deleted.status.success(), "{}", first_lines(&stderr));
    let recovered: u128 = stderr
        .split("Recovered ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no recovery in: {stderr}"));
    assert!(recovered > 1_000_000_000_000, "most of the callee's 1.5T: {recovered}");
    let expected = 998_499_600_000_000 + recovered - 100_000_000;
    assert_eq!(balance("cycles", "alice"), format!("Balance: {} cycles", underscored(expected)));
    let status = project.icp(&["canister", "status", "callee", "-e", "sim"]);
    assert!(!status.status.success(), "the callee is gone");
}

/// `n` as icp-cli prints cycles: thousands separated by underscores.
fn underscored(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(digit);
    }
    out
}

#[test]
fn icp_token_approve_sets_an_allowance_the_owner_pays_the_fee_for() {
    let network = Network::start(1);
    let project = Project::new(&network, "");
    let (alice, bob) = (project.principal("alice"), project.principal("bob"));
    project.ok(&["token", "transfer", "100", &alice, "-e", "sim", "--identity", "anonymous"]);
    let token = |args: &[&str]| project.ok(&[&["token"], args, &["-e", "sim"]].concat()).trim().to_string();
    let approved = token(&["approve", "5", &bob]);
    assert!(
        approved.starts_with(&format!("Approved {bob} to spend up to 5.00000000 ICP (block ")),
        "{approved}"
    );
    assert_eq!(token(&["allowance", &bob]), "Allowance: 5.00000000 ICP");
    assert_eq!(token(&["balance"]), "Balance: 99.99990000 ICP", "alice paid the 0.0001 ICP fee");
    // Anyone may look, and an approval sets the allowance rather than adds to it.
    let of_alice = ["allowance", &bob, "--of-principal", &alice, "--identity", "bob"];
    assert_eq!(token(&of_alice), "Allowance: 5.00000000 ICP");
    let lapsing = token(&["approve", "2", &bob, "--expires-in", "1h"]);
    assert!(lapsing.contains("Expires at: "), "{lapsing}");
    let allowance = token(&["allowance", &bob]);
    assert!(allowance.starts_with("Allowance: 2.00000000 ICP\nExpires at: "), "{allowance}");
    assert_eq!(token(&["balance"]), "Balance: 99.99980000 ICP");

    // The cycles ledger, by its id: the same, for its 100M fee.
    let cycles = "um5iw-rqaaa-aaaaq-qaaba-cai";
    let approved = token(&[cycles, "approve", "1", &bob]);
    assert!(
        approved.starts_with(&format!("Approved {bob} to spend up to 1.000000000000 TCYCLES (block ")),
        "{approved}"
    );
    assert_eq!(token(&[cycles, "allowance", &bob]), "Allowance: 1.000000000000 TCYCLES");
    let balance = project.ok(&["cycles", "balance", "-e", "sim"]);
    assert_eq!(balance.trim(), "Balance: 999_999_900_000_000 cycles");
}

#[test]
fn a_network_started_again_on_its_state_dir_has_its_canisters_and_counts() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().to_str().unwrap();
    let network = Network::start_with(&["--subnets", "2", "--state-dir", dir, "--checkpoint-secs", "3600"]);
    let port = network.port.to_string();
    let project = Project::new(&network, "");
    project.create_apart(&network);
    project.ok(&["deploy", "-e", "sim", "--cycles", "100t"]);
    assert_eq!(project.call(&["caller", "parallel_calls", "(90)"]), "(90 : nat64)");
    let caller_status = project.ok(&["canister", "status", "-e", "sim", "caller"]);
    let cycles = project.ok(&["cycles", "balance", "-e", "sim"]);
    assert!(network.stop("INT").success(), "SIGINT stops the network, which saves its state");

    // Started again: the same canisters, code, memory, settings and balances.
    let restart = ["--subnets", "2", "--state-dir", dir, "--port", &port, "--checkpoint-secs", "3600"];
    let network = Network::start_with(&restart);
    assert_eq!(project.call(&["callee", "pings_received", "()", "--query"]), "(90 : nat64)");
    assert_eq!(project.ok(&["canister", "status", "-e", "sim", "caller"]), caller_status);
    assert_eq!(project.ok(&["cycles", "balance", "-e", "sim"]), cycles);
    assert_eq!(project.call(&["caller", "parallel_calls", "(90)"]), "(90 : nat64)");
    assert_eq!(project.call(&["callee", "pings_received", "()", "--query"]), "(180 : nat64)");
    // Killed before a checkpoint: back where the last save left it.
    network.stop("KILL");
    let network = Network::start_with(&restart);
    assert_eq!(project.call(&["callee", "pings_received", "()", "--query"]), "(90 : nat64)");

    // Killed after a checkpoint: back at it.
    network.stop("TERM");
    let state_file = state.path().join("state");
    let saved_at = std::fs::metadata(&state_file).unwrap().modified().unwrap();
    let checkpoints = ["--subnets", "2", "--state-dir", dir, "--port", &port, "--checkpoint-secs", "1"];
    let network = Network::start_with(&checkpoints);
    assert_eq!(project.call(&["caller", "sequential_calls", "(20)"]), "(20 : nat64)");
    // A checkpoint follows every change within a second, and none follows
    // a query: once the file has not changed for 3 s, it holds the calls.
    let modified = || std::fs::metadata(&state_file).unwrap().modified().unwrap();
    let (started, mut last, mut since) = (Instant::now(), modified(), Instant::now());
    while since.elapsed() < Duration::from_secs(3) {
        assert!(started.elapsed() < Duration::from_secs(30), "checkpoints did not settle");
        std::thread::sleep(Duration::from_millis(50));
        if modified() != last {
            (last, since) = (modified(), Instant::now());
        }
    }
    assert!(last > saved_at, "a checkpoint was written");
    assert_eq!(project.call(&["callee", "pings_received", "()", "--query"]), "(110 : nat64)");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(modified(), last, "a query writes no checkpoint");
    network.stop("KILL");
    let network = Network::start_with(&restart);
    assert_eq!(project.call(&["callee", "pings_received", "()", "--query"]), "(110 : nat64)");

    // Other flags than the state's are refused with one line.
    let refused = Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
        .args(["network", "--subnets", "1", "--state-dir", dir])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("another process uses the state directory"), "{stderr}");
    drop(network);
    let refused = Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
        .args(["network", "--subnets", "1", "--state-dir", dir])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("holds a network started with --subnets 2 --profile pocket-ic --seed 0"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// The repository's project on its `local` network, which `icp network
/// start` starts with this project's launcher, on a free port, with
/// `settings` (lines of icp.yaml) added to the network's; stopped when
/// dropped, even when the test fails.
struct Local {
    project: Project,
}

impl Local {
    fn start(settings: &str) -> Self {
        Self::start_with(settings, &[])
    }

    /// Started with `env` set for the launcher (`icp network start` passes its own on).
    fn start_with(settings: &str, env: &[(&str, &str)]) -> Self {
        let yaml = std::fs::read_to_string(root().join("icp.yaml")).unwrap();
        let local = "  - name: local\n    mode: managed\n";
        assert!(yaml.contains(local), "icp.yaml declares a managed local network");
        let network = format!("{local}    gateway:\n      port: 0\n{settings}");
        let project = Project::with_yaml(&yaml.replace(local, &network));
        let started = project.icp_with(&["network", "start", "-d"], env);
        assert!(started.status.success(), "{}", first_lines(&String::from_utf8_lossy(&started.stderr)));
        Self { project }
    }

    /// icp.yaml's two application subnets: caller and callee apart, as on
    /// mainnet, placed by the subnet ids the launcher logs.
    fn create_apart(&self) {
        let log = self.project.dir.path().join(".icp/cache/networks/local/network-launcher/stderr.log");
        let log = std::fs::read_to_string(log).unwrap();
        let subnet = |index: usize| {
            let line =
                log.lines().find(|line| line.starts_with(&format!("subnet {index}: "))).expect("logged");
            line.rsplit(' ').next().unwrap().to_string()
        };
        for (canister, index) in [("caller", 0), ("callee", 1)] {
            self.project.ok(&[
                "canister",
                "create",
                canister,
                "--cycles",
                "100t",
                "--subnet",
                &subnet(index),
            ]);
        }
    }

    /// `icp deploy`: what it printed.
    fn deploy(&self) -> String {
        let deployed = self.project.icp(&["deploy"]);
        let printed = [deployed.stdout, deployed.stderr].concat();
        let printed = String::from_utf8_lossy(&printed).into_owned();
        assert!(deployed.status.success(), "icp deploy failed: {}", first_lines(&printed));
        printed
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let _ = self.project.icp(&["network", "stop"]);
    }
}

/// The link `icp deploy` printed for `canister`: its Candid UI
/// (`http://<candid-ui>.localhost:<port>/?id=<canister>`) or, for a
/// frontend, its page.
fn link<'a>(printed: &'a str, canister: &str) -> &'a str {
    let line = printed.lines().find(|line| line.trim_start().starts_with(&format!("{canister}: http")));
    line.and_then(|line| line.split_whitespace().find(|word| word.starts_with("http")))
        .unwrap_or_else(|| panic!("no link for {canister} in {printed}"))
}

#[test]
fn icp_network_start_runs_the_simulators_launcher() {
    let local = Local::start("");
    let project = &local.project;
    // icp-cli funds every identity from the anonymous principal.
    assert_eq!(project.ok(&["cycles", "balance"]).trim(), "Balance: 1_000_000_000_000_000 cycles");
    assert_eq!(project.ok(&["token", "balance"]).trim(), "Balance: 1000000.00000000 ICP");
    local.create_apart();
    let printed = local.deploy();
    // The Candid UI link icp-cli prints for the caller opens the Candid
    // UI's page, served by the gateway on the network's port.
    let link = link(&printed, "caller");
    let url = reqwest::Url::parse(link).unwrap();
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], url.port().unwrap()));
    let client =
        reqwest::blocking::Client::builder().resolve(url.host_str().unwrap(), loopback).build().unwrap();
    let page = client.get(link).send().unwrap();
    assert_eq!(page.status(), 200, "{link}");
    assert!(page.text().unwrap().contains("<title>DFINITY Canister Candid UI</title>"), "{link}");
    assert_eq!(project.call_local(&["caller", "sequential_calls", "(90)"]), "(90 : nat64)");
    assert_eq!(project.call_local(&["caller", "parallel_calls", "(90)"]), "(90 : nat64)");
    assert_eq!(project.call_local(&["caller", "parallel_calls", "(2000)"]), "(500 : nat64)");
    // What icp-cli installs at start: the Candid UI (anonymous controls
    // it) and its proxy.
    let status: serde_json::Value =
        serde_json::from_str(&project.ok(&["network", "status", "--json"])).unwrap();
    for (canister, identity) in [("candid_ui_principal", "anonymous"), ("proxy_canister_principal", "alice")]
    {
        let id = status[canister].as_str().unwrap();
        let shown = project.ok(&["canister", "status", id, "--identity", identity]);
        assert!(
            shown.contains("Status: Running") && shown.contains("Module hash: 0x"),
            "{canister}: {shown}"
        );
    }
    let started = Instant::now();
    project.ok(&["network", "stop"]);
    assert!(started.elapsed() < Duration::from_secs(10), "stopped in {:?}", started.elapsed());
    // A second start is a fresh network, as icp-cli's are.
    project.ok(&["network", "start", "-d"]);
    assert_eq!(project.ok(&["cycles", "balance"]).trim(), "Balance: 1_000_000_000_000_000 cycles");
    project.ok(&["network", "stop"]);
}

/// The launcher with `MULTI_SUBNET_FAULTS`: a third of the best-effort
/// responses dropped (seeded), so the caller counts fewer than 90 of
/// `parallel_calls(90)`; the live view's state and `/_/faults` show the
/// drops and the caller's rejects (`SYS_UNKNOWN`, code 6), one for each
/// ping missing; `DELETE /_/faults` turns them off.
#[test]
fn the_launcher_injects_multi_subnet_faults_and_the_live_view_shows_them() {
    let spec = r#"{"seed": 7, "drop_best_effort_responses": 0.3}"#;
    let local = Local::start_with("", &[("MULTI_SUBNET_FAULTS", spec)]);
    local.create_apart();
    let port = reqwest::Url::parse(link(&local.deploy(), "caller")).unwrap().port().unwrap();
    let delivered = local.project.call_local(&["caller", "parallel_calls", "(90)"]);
    let delivered: u64 = delivered.trim_start_matches('(').split(' ').next().unwrap().parse().unwrap();
    assert!((30..90).contains(&delivered), "{delivered} of 90 delivered with 30% of the responses dropped");
    let get = |path: &str| -> serde_json::Value {
        reqwest::blocking::get(format!("http://127.0.0.1:{port}{path}")).unwrap().json().unwrap()
    };
    let faults = get("/_/dashboard/state")["faults"].clone();
    assert_eq!(faults, get("/_/faults"), "the live view shows the report");
    assert_eq!(faults["dropped_responses"], 90 - delivered, "{faults}");
    // Per (caller, callee) pair: the caller's calls to the callee, and their SYS_UNKNOWN rejects.
    let pairs =
        faults["canisters"].as_array().unwrap().iter().flat_map(|c| c["calls_to"].as_array().unwrap());
    let rejected = pairs.filter_map(|to| to["rejects_received"]["6"].as_u64()).collect::<Vec<_>>();
    assert_eq!(rejected, [90 - delivered], "one pair, every drop: {faults}");
    let client = reqwest::blocking::Client::new();
    let off = client.delete(format!("http://127.0.0.1:{port}/_/faults")).send().unwrap();
    assert_eq!(off.status(), 200);
    assert_eq!(local.project.call_local(&["caller", "parallel_calls", "(90)"]), "(90 : nat64)");
    let bad = client
        .post(format!("http://127.0.0.1:{port}/_/faults"))
        .header("content-type", "application/json")
        .body(r#"{"drop_best_effort_responses": 2}"#)
        .send()
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert!(bad.text().unwrap().contains("not between 0 and 1"));
}

/// In Chromium, as a user after `icp deploy`: the Candid UI link icp-cli
/// printed for the caller calls `parallel_calls` (90, then 2000, which
/// meets the 500 slots), the live view open meanwhile shows a peak of 500,
/// and the frontend's page loads, its certificate verified by the gateway.
/// Screenshots go to `$SCREENSHOTS` (docs/images for the docs), or a
/// temporary directory.
///
/// The caller answers its controllers only, and the Candid UI calls as the
/// anonymous principal: the project deploys with icp-cli's own default
/// identity, the anonymous one.
#[test]
fn in_chromium_the_candid_ui_calls_the_caller_and_the_live_view_shows_500_slots() {
    let local = Local::start("");
    local.project.ok(&["identity", "default", "anonymous"]);
    local.create_apart();
    let printed = local.deploy();
    let (candid_ui, frontend) = (link(&printed, "caller"), link(&printed, "frontend"));
    let port = reqwest::Url::parse(candid_ui).unwrap().port().unwrap();
    let live_view = format!("http://127.0.0.1:{port}/_/dashboard");
    let scratch = tempfile::tempdir().unwrap();
    let screenshots = std::env::var_os("SCREENSHOTS").map_or(scratch.path().to_path_buf(), PathBuf::from);
    let shown = in_chromium(
        "example_in_chromium.mjs",
        &[candid_ui, &live_view, frontend, screenshots.to_str().unwrap(), "90", "2000"],
    );
    assert_eq!(shown["replies"], serde_json::json!({ "90": "(90)", "2000": "(500)" }), "{shown}");
    assert_eq!(shown["peak"], "500", "{shown}");
    assert_eq!(shown["refused"], serde_json::json!(["1500"]), "the caller's calls past the slots: {shown}");
    assert_eq!(shown["refusedPerPair"], serde_json::json!(["1500"]), "all to the callee: {shown}");
    assert_eq!(shown["liveError"], "", "{shown}");
    assert_eq!(
        shown["frontend"],
        serde_json::json!({ "status": 200, "title": "Parallel inter-canister calls" })
    );
    for page in ["candid-ui", "live-view", "frontend"] {
        assert!(screenshots.join(format!("{page}.png")).is_file(), "{page}.png");
    }
}

/// Runs `tests/browser/<script>` with node: Playwright (playwright-core)
/// driving Debian's Chromium, both of which `scripts/setup.sh` installs.
/// What the script printed, as JSON.
fn in_chromium(script: &str, args: &[&str]) -> serde_json::Value {
    node("browser", script, ("PLAYWRIGHT_CORE", "playwright-core/index.mjs"), args)
}

/// A JavaScript app's first requests to a network just started, with no
/// update before them: agent-js queries the ICP ledger (checking the
/// response's signature against node keys it reads from a certificate),
/// then reads and verifies `/time`. Agents refuse a certificate older
/// than 5 minutes and a root delegation older than 30 days, so both must
/// follow the wall clock, not the simulator's start time; again after
/// the network has idled a minute.
#[test]
fn agent_js_queries_and_reads_the_state_of_a_fresh_network_and_of_an_idle_one() {
    let network = Network::start(2);
    let url = format!("http://127.0.0.1:{}", network.port);
    let root_key = network.status["root_key"].as_str().unwrap();
    let read = || {
        node(
            "js",
            "agent_js_first_requests.mjs",
            ("AGENT_JS", "@icp-sdk/core"),
            &[&url, root_key, "ryjl3-tyaaa-aaaaa-aaaba-cai"],
        )
    };
    let fresh = read();
    std::thread::sleep(Duration::from_secs(60));
    let idle = read();
    for (when, read) in [("fresh", fresh), ("idle for 60 s", idle)] {
        assert_eq!(read["symbol"], "ICP", "{when}: {read}");
        let behind = read["now_ms"].as_i64().unwrap() - read["certified_time_ms"].as_i64().unwrap();
        assert!(
            (-1_000..5_000).contains(&behind),
            "{when}: the certified time is {behind} ms behind: {read}"
        );
    }
}

#[test]
fn icp_network_start_shows_why_the_launcher_refused() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let yaml = std::fs::read_to_string(root().join("icp.yaml")).unwrap();
    let local = "  - name: local\n    mode: managed\n";
    let project =
        Project::with_yaml(&yaml.replace(local, &format!("{local}    gateway:\n      port: {port}\n")));
    let started = project.icp(&["network", "start", "-d"]);
    let stderr = String::from_utf8_lossy(&started.stderr);
    assert!(!started.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("{port}")) && stderr.contains("in use"), "{}", first_lines(&stderr));
}

#[test]
fn the_launcher_refuses_what_the_simulator_is_not_in_one_line() {
    let status = tempfile::tempdir().unwrap();
    let launch = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_network_launcher"))
            .args(args)
            .arg("--status-dir")
            .arg(status.path())
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8(output.stderr).unwrap();
        let errors = stderr.lines().filter(|line| !line.starts_with("warning: ")).count();
        assert_eq!(errors, 1, "one line says why: {stderr}");
        stderr
    };
    assert!(launch(&["--interface-version", "2.0.0"]).contains("interface version 2.0.0"));
    assert!(launch(&["--interface-version=1.1.0", "--subnet=system"]).contains("not system"));
    assert!(launch(&["--interface-version=1.1.0", "--ii"]).contains("no Internet Identity"));
    // A flag of a later 1.x is warned about and ignored; a missing one refused.
    let later = launch(&["--interface-version=1.2.0", "--shiny", "on", "--subnet=system"]);
    assert!(later.contains("warning: ignoring --shiny") && later.contains("not system"), "{later}");
    assert!(launch(&[]).contains("--interface-version"));
    let launched = Command::new(env!("CARGO_BIN_EXE_network_launcher"))
        .args(["--interface-version", "1.1.0", "--status-dir"])
        .arg(status.path())
        .env("MULTI_SUBNET_PROFILE", "devnet")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&launched.stderr);
    assert!(!launched.status.success() && stderr.contains("it is pocket-ic or mainnet"), "{stderr}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let in_use = launch(&["--interface-version", "1.1.0", "--gateway-port", &port]);
    assert!(in_use.contains("in use"), "{in_use}");
    assert!(!status.path().join("status.json").exists());
}
