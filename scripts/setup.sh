#!/usr/bin/env bash
# Installs what a fresh machine lacks for this project's tests and builds:
# the wasm32 target, and the IC tools `icp` (icp-cli) and `ic-wasm`, pinned,
# from npm into .tools/ (linked from .tools/bin), and the Motoko compiler
# (npm's `motoko`, moc as JavaScript, run with node), and for the browser
# tests Debian's Chromium driven by Playwright (npm's `playwright-core`,
# which downloads no browser), and agent-js (npm's `@icp-sdk/core`) for the
# tests that call a network as a JavaScript app would, and pic-js (npm's
# `@dfinity/pic`). Install scripts are skipped: only pic-js has one, which
# would download a PocketIC server; its tests use this project's. Safe to
# run again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

ICP_CLI_VERSION=1.5.0
IC_WASM_VERSION=0.11.1
MOTOKO_VERSION=4.10.0
PLAYWRIGHT_VERSION=1.65.1
AGENT_JS_VERSION=6.1.0
PIC_JS_VERSION=0.23.0

rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || rustup target add wasm32-unknown-unknown

# The chart tests render SVG text, which needs at least one font.
if ! find /usr/share/fonts /usr/local/share/fonts -name '*.ttf' -print -quit 2>/dev/null | grep -q .; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq fonts-dejavu-core) >/dev/null
  else
    echo "setup: no fonts found; install one (e.g. fonts-dejavu-core) for the chart tests" >&2
  fi
fi

# The browser tests open the pages a user would in Chromium.
if ! command -v chromium >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null
  else
    echo "setup: the browser tests need Chromium at /usr/bin/chromium (apt-get install chromium)" >&2
  fi
fi

have() { [ -x ".tools/bin/$1" ] && ".tools/bin/$1" --version 2>/dev/null | grep -q " $2\$"; }

has_npm() { [ -f ".tools/node_modules/$1/package.json" ] && grep -q "\"version\": \"$2\"" ".tools/node_modules/$1/package.json"; }

if have icp "$ICP_CLI_VERSION" && have ic-wasm "$IC_WASM_VERSION" && has_npm motoko "$MOTOKO_VERSION" && has_npm playwright-core "$PLAYWRIGHT_VERSION" \
  && has_npm @icp-sdk/core "$AGENT_JS_VERSION" && has_npm @dfinity/pic "$PIC_JS_VERSION"; then
  exit 0
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "setup: npm ships icp-cli and ic-wasm for linux-x64 only; install icp $ICP_CLI_VERSION and ic-wasm $IC_WASM_VERSION yourself and link them into $root/.tools/bin" >&2
     exit 1 ;;
esac
command -v npm >/dev/null || { echo "setup: npm is needed to install icp-cli and ic-wasm (apt-get install npm)" >&2; exit 1; }
mkdir -p .tools/bin
DO_NOT_TRACK=1 npm install --silent --no-audit --no-fund --ignore-scripts --prefix .tools \
  "@icp-sdk/icp-cli-linux-x64@$ICP_CLI_VERSION" "@icp-sdk/ic-wasm-linux-x64@$IC_WASM_VERSION" \
  "motoko@$MOTOKO_VERSION" "playwright-core@$PLAYWRIGHT_VERSION" "@icp-sdk/core@$AGENT_JS_VERSION" \
  "@dfinity/pic@$PIC_JS_VERSION" 2>&1 \
  | grep -v 'Unknown user config' >&2 || true
ln -sf ../node_modules/@icp-sdk/icp-cli-linux-x64/bin/icp .tools/bin/icp
ln -sf ../node_modules/@icp-sdk/ic-wasm-linux-x64/bin/ic-wasm .tools/bin/ic-wasm
have icp "$ICP_CLI_VERSION" && have ic-wasm "$IC_WASM_VERSION" && has_npm motoko "$MOTOKO_VERSION" \
  && has_npm playwright-core "$PLAYWRIGHT_VERSION" && has_npm @icp-sdk/core "$AGENT_JS_VERSION" \
  && has_npm @dfinity/pic "$PIC_JS_VERSION" \
  || { echo "setup: icp/ic-wasm/motoko/playwright-core/@icp-sdk/core/@dfinity/pic did not install" >&2; exit 1; }
