#!/usr/bin/env bash
# Installs what a fresh machine lacks for this project's tests and builds:
# the wasm32 target, and the IC tools `icp` (icp-cli) and `ic-wasm`, pinned,
# from npm into .tools/ (linked from .tools/bin), and the Motoko compiler
# (npm's `motoko`, moc as JavaScript, run with node). Safe to run again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

ICP_CLI_VERSION=1.5.0
IC_WASM_VERSION=0.11.1
MOTOKO_VERSION=4.10.0

rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || rustup target add wasm32-unknown-unknown

# The chart tests render SVG text, which needs at least one font.
if ! find /usr/share/fonts /usr/local/share/fonts -name '*.ttf' -print -quit 2>/dev/null | grep -q .; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq fonts-dejavu-core) >/dev/null
  else
    echo "setup: no fonts found; install one (e.g. fonts-dejavu-core) for the chart tests" >&2
  fi
fi

have() { [ -x ".tools/bin/$1" ] && ".tools/bin/$1" --version 2>/dev/null | grep -q " $2\$"; }

have_motoko() { [ -f .tools/node_modules/motoko/package.json ] && grep -q "\"version\": \"$MOTOKO_VERSION\"" .tools/node_modules/motoko/package.json; }

if have icp "$ICP_CLI_VERSION" && have ic-wasm "$IC_WASM_VERSION" && have_motoko; then
  exit 0
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "setup: npm ships icp-cli and ic-wasm for linux-x64 only; install icp $ICP_CLI_VERSION and ic-wasm $IC_WASM_VERSION yourself and link them into $root/.tools/bin" >&2
     exit 1 ;;
esac
command -v npm >/dev/null || { echo "setup: npm is needed to install icp-cli and ic-wasm (apt-get install npm)" >&2; exit 1; }
mkdir -p .tools/bin
DO_NOT_TRACK=1 npm install --silent --no-audit --no-fund --prefix .tools \
  "@icp-sdk/icp-cli-linux-x64@$ICP_CLI_VERSION" "@icp-sdk/ic-wasm-linux-x64@$IC_WASM_VERSION" \
  "motoko@$MOTOKO_VERSION" 2>&1 \
  | grep -v 'Unknown user config' >&2 || true
ln -sf ../node_modules/@icp-sdk/icp-cli-linux-x64/bin/icp .tools/bin/icp
ln -sf ../node_modules/@icp-sdk/ic-wasm-linux-x64/bin/ic-wasm .tools/bin/ic-wasm
have icp "$ICP_CLI_VERSION" && have ic-wasm "$IC_WASM_VERSION" && have_motoko || { echo "setup: icp/ic-wasm/motoko did not install" >&2; exit 1; }
