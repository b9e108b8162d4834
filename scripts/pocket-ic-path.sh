#!/usr/bin/env bash
# Builds pocket-ic-sim (this project's simulator behind PocketIC's REST API,
# with PocketIC's server's command line) if need be and prints its absolute
# path, so that a suite written for PocketIC runs on it unchanged:
#   POCKET_IC_BIN=$(./scripts/pocket-ic-path.sh) cargo test
# --debug builds it without optimisation: quicker to build, slower to run.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
case "${1:-}" in
  "") ;;
  --debug) profile=debug ;;
  *) echo "usage: $0 [--debug]" >&2; exit 2 ;;
esac
flags=(--quiet --locked -p sim_server --bin pocket-ic-sim)
[ "$profile" = release ] && flags+=(--release)
cargo build "${flags[@]}" >&2
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
echo "$target/$profile/pocket-ic-sim"
