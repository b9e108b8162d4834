//! `pocket-ic-sim`'s command line, PocketIC's server's: the version the
//! pocket-ic client checks, the port file, and the TTLs that end a server
//! nobody talks to.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pocket-ic-sim");

/// A port file path in a fresh directory, and the directory (kept alive).
fn port_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pocket-ic.port");
    (dir, path)
}

fn start(args: &[&str], port_file: &Path) -> Child {
    Command::new(BIN)
        .args(args)
        .arg("--port-file")
        .arg(port_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("it starts")
}

/// The port, once the file holds it and its newline (the client waits so).
fn port(file: &Path) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Some(port) = text.strip_suffix('\n')
        {
            return port.parse().expect("a port");
        }
        assert!(Instant::now() < deadline, "no port in {}", file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` to end, at most `limit`; `None` if it still runs (then
/// it is killed).
fn ends_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn get(port: u16, path: &str) -> reqwest::StatusCode {
    reqwest::blocking::get(format!("http://127.0.0.1:{port}{path}")).expect("an answer").status()
}

#[test]
fn version_is_the_rest_api_it_serves_and_stderr_says_what_it_is() {
    let Output { status, stdout, stderr } = Command::new(BIN).arg("--version").output().unwrap();
    assert!(status.success());
    let version = format!("pocket-ic-server {}\n", pocket_ic::LATEST_SERVER_VERSION);
    assert_eq!(String::from_utf8(stdout).unwrap(), version, "one line, as the client parses it");
    assert_eq!(String::from_utf8(stderr).unwrap().trim(), sim_server::DESCRIPTION);
}

/// A pocket-ic 15 client accepts `>=15.0.0, <16`: the 15 API is asked for
/// by a flag or in the environment the client passes on.
#[test]
fn the_15_api_is_asked_for_by_flag_or_environment() {
    let version = |command: &mut Command| String::from_utf8(command.output().unwrap().stdout).unwrap();
    assert_eq!(
        version(Command::new(BIN).args(["--version", "--rest-api", "15"])),
        "pocket-ic-server 15.0.0\n"
    );
    let from_env = version(Command::new(BIN).arg("--version").env("POCKET_IC_SIM_REST_API", "15"));
    assert_eq!(from_env, "pocket-ic-server 15.0.0\n");
    let refused = Command::new(BIN).args(["--version", "--rest-api", "14"]).output().unwrap();
    assert!(!refused.status.success());
}

#[test]
fn a_server_ends_its_ttl_after_its_last_request_and_removes_its_port_file() {
    let (_dir, file) = port_file();
    let mut server = start(&["--ttl", "3"], &file);
    let port = port(&file);
    // Requests keep it alive past its TTL.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_secs(1));
        assert_eq!(get(port, "/instances"), reqwest::StatusCode::OK);
    }
    let last_request = Instant::now();
    let status = ends_within(&mut server, Duration::from_secs(30)).expect("it ends by itself");
    assert!(status.success(), "{status}");
    assert!(last_request.elapsed() >= Duration::from_secs(3), "not before its TTL");
    assert!(!file.exists(), "it removes its port file");
}

#[test]
fn a_hard_ttl_ends_a_server_that_is_talked_to() {
    let (_dir, file) = port_file();
    let mut server = start(&["--hard-ttl", "2"], &file);
    let port = port(&file);
    let started = Instant::now();
    let ended = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "still running after its hard TTL");
        let _ = reqwest::blocking::get(format!("http://127.0.0.1:{port}/instances"));
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(ended.success(), "{ended}");
    assert!(!file.exists());
}

#[test]
fn a_second_server_with_the_same_port_file_leaves_it_to_the_first() {
    let (_dir, file) = port_file();
    let mut first = start(&[], &file);
    let port = port(&file);
    let mut second = start(&[], &file);
    let status = ends_within(&mut second, Duration::from_secs(30)).expect("the second ends at once");
    assert!(status.success(), "{status}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{port}\n"), "the first's file, untouched");
    assert_eq!(get(port, "/instances"), reqwest::StatusCode::OK, "the first serves on");
    first.kill().unwrap();
    first.wait().unwrap();
}

#[test]
fn a_bad_argument_is_refused_with_a_reason() {
    let Output { status, stderr, .. } = Command::new(BIN).args(["--ttl", "soon"]).output().unwrap();
    assert!(!status.success());
    assert!(String::from_utf8(stderr).unwrap().contains("invalid value 'soon' for '--ttl <SECONDS>'"));
}
