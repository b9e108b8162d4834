#!/usr/bin/env bash
# The project's test command: installs what is missing, then runs every test
# of the workspace. PocketIC tests are ignored (and shown as such) unless
# POCKET_IC_BIN names a server; then they run too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
if [ -n "${POCKET_IC_BIN:-}" ]; then
  cargo test --locked --workspace -- --include-ignored
else
  cargo test --locked --workspace
fi
