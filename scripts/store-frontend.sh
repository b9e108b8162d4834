#!/usr/bin/env bash
# Stores src/frontend/assets in the frontend canister (its `store` method),
# as icp.yaml's sync step after `icp deploy`: icp-cli gives the canister id
# and environment. Usage: scripts/store-frontend.sh [CANISTER] [ENVIRONMENT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
canister=${1:-${ICP_CLI_CID:?usage: store-frontend.sh CANISTER [ENVIRONMENT] (or run as an icp-cli sync step)}}
environment=${2:-${ICP_CLI_ENVIRONMENT:-local}}
icp=$(command -v icp || echo "$root/.tools/bin/icp")

content_type() {
  case "$1" in
    *.html) echo "text/html; charset=utf-8" ;;
    *.css) echo "text/css" ;;
    *.js) echo "text/javascript" ;;
    *.svg) echo "image/svg+xml" ;;
    *.png) echo "image/png" ;;
    *) echo "application/octet-stream" ;;
  esac
}

# icp runs in the directory icp-cli ran this script in: its project's.
assets=$root/src/frontend/assets
find "$assets" -type f | sort | while read -r file; do
  path=${file#"$assets"/}
  # Every byte as \xx: a Candid blob literal of any file.
  body=$(od -An -v -tx1 "$file" | tr -d ' \n' | sed 's/../\\&/g')
  "$icp" canister call -e "$environment" "$canister" store \
    "(record { path = \"$path\"; content_type = \"$(content_type "$path")\"; body = blob \"$body\" })" >/dev/null
  echo "stored /$path"
done
