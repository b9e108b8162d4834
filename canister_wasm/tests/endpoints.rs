//! Both canisters build for wasm32, and each module exports exactly the
//! methods its .did file declares (checked by ic-wasm, as the IC tools do).

use canister_wasm::{Canister, wasm_path, workspace_root};
use std::path::PathBuf;
use std::process::Command;

/// `IC_WASM` if set, else the copy `scripts/setup.sh` installs.
fn ic_wasm() -> PathBuf {
    let path = std::env::var_os("IC_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".tools/bin/ic-wasm"));
    assert!(path.is_file(), "ic-wasm not found at {}: run scripts/setup.sh (or set IC_WASM)", path.display());
    path
}

fn check_endpoints(canister: Canister) {
    let wasm = wasm_path(canister).expect("the canister builds for wasm32");
    // Exports that are not candid methods: system entry points and
    // ic-cdk's own (the candid pointer, the timer task method).
    let hidden = workspace_root().join(format!("canister_wasm/hidden/{}.txt", canister.package()));
    let output = Command::new(ic_wasm())
        .arg(&wasm)
        .arg("check-endpoints")
        .arg("--candid")
        .arg(canister.did_file())
        .arg("--hidden")
        .arg(&hidden)
        .output()
        .expect("ic-wasm runs");
    assert!(
        output.status.success(),
        "ic-wasm check-endpoints failed for {}:\n{}{}",
        canister.package(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn caller_exports_what_caller_did_declares() {
    check_endpoints(Canister::Caller);
}

#[test]
fn callee_exports_what_callee_did_declares() {
    check_endpoints(Canister::Callee);
}
