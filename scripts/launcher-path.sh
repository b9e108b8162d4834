#!/usr/bin/env bash
# Builds the simulator's icp-cli network launcher (release) if need be and
# prints its absolute path, for
#   export ICP_CLI_NETWORK_LAUNCHER_PATH=$(./scripts/launcher-path.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --locked -p multi_subnet --bin network_launcher >&2
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
echo "$target/release/network_launcher"
