//! Without a PocketIC server, `--engine pocket-ic` fails fast with one line
//! that says how to fix it, and never downloads anything.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Test threads take turns: a script still open for writing in one thread
/// is inherited by a child forked in another, and running it then fails with
/// "Text file busy" (ETXTBSY) instead of the error under test.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct Outcome {
    success: bool,
    stderr_lines: Vec<String>,
    took: Duration,
}

/// Runs the harness with an empty temp dir (so no cached server is found)
/// and `POCKET_IC_BIN` as given.
fn run_harness(pocket_ic_bin: Option<&Path>) -> Outcome {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_multi_subnet"));
    cmd.args(["--engine", "pocket-ic"]).env("TMPDIR", tmp.path()).env_remove("POCKET_IC_BIN");
    if let Some(bin) = pocket_ic_bin {
        cmd.env("POCKET_IC_BIN", bin);
    }
    let started = Instant::now();
    let output = cmd.output().unwrap();
    Outcome {
        success: output.status.success(),
        stderr_lines: String::from_utf8_lossy(&output.stderr).lines().map(String::from).collect(),
        took: started.elapsed(),
    }
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn assert_explains(outcome: &Outcome, expect: &str) {
    assert!(!outcome.success, "must exit non-zero");
    assert_eq!(outcome.stderr_lines.len(), 1, "exactly one line on stderr: {:?}", outcome.stderr_lines);
    let line = &outcome.stderr_lines[0];
    assert!(line.contains("POCKET_IC_BIN=/path/to/pocket-ic"), "says how to fix it: {line}");
    assert!(line.contains(expect), "says what is wrong ({expect}): {line}");
    assert!(outcome.took < Duration::from_secs(10), "took {:?}", outcome.took);
}

#[test]
fn unset_and_nothing_cached() {
    let _turn = one_at_a_time();
    assert_explains(&run_harness(None), "POCKET_IC_BIN is not set");
}

#[test]
fn set_to_a_missing_file() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    assert_explains(&run_harness(Some(&dir.path().join("pocket-ic"))), "no such file");
}

#[test]
fn set_to_a_program_that_is_not_a_server() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let fake = script(dir.path(), "pocket-ic", "echo hello");
    assert_explains(&run_harness(Some(&fake)), "not a PocketIC server");
}

#[test]
fn set_to_a_server_of_another_version() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let old = script(dir.path(), "pocket-ic", "echo pocket-ic-server 9.0.3");
    assert_explains(&run_harness(Some(&old)), "9.0.3");
}

#[test]
fn set_to_a_program_that_hangs() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let stuck = script(dir.path(), "pocket-ic", "sleep 60");
    assert_explains(&run_harness(Some(&stuck)), "did not answer");
}
