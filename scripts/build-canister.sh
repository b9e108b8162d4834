#!/usr/bin/env bash
# Builds one canister for wasm32 and embeds its candid interface as public
# `candid:service` metadata. Used by icp.yaml; dfx does the same for dfx.json.
# Usage: scripts/build-canister.sh caller|callee|frontend OUTPUT.wasm
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: build-canister.sh caller|callee|frontend OUTPUT.wasm}
out=${2:?usage: build-canister.sh caller|callee|frontend OUTPUT.wasm}
case "$name" in caller|callee|frontend) ;; *) echo "build-canister: unknown canister '$name' (caller, callee or frontend)" >&2; exit 2 ;; esac

target_dir=${CARGO_TARGET_DIR:-$root/target/wasm}
ic_wasm=$(command -v ic-wasm || echo "$root/.tools/bin/ic-wasm")
[ -x "$ic_wasm" ] || { echo "build-canister: ic-wasm not found: run scripts/setup.sh" >&2; exit 1; }

(cd "$root" && cargo build --locked --release --target wasm32-unknown-unknown -p "$name" --target-dir "$target_dir")
"$ic_wasm" "$target_dir/wasm32-unknown-unknown/release/$name.wasm" -o "$out" \
  metadata candid:service -f "$root/src/$name/$name.did" -v public
