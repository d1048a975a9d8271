#!/usr/bin/env bash
# Installs the pinned Bun into .tools/ from the npm registry (no other network needed) and the
# project's dependencies. Idempotent and quiet when everything is already in place.
set -euo pipefail
BUN_VERSION="1.4.5"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
bun="$tools/node_modules/.bin/bun"
if [ ! -x "$bun" ] || [ "$("$bun" --version 2>/dev/null)" != "$BUN_VERSION" ]; then
  echo "installing bun@$BUN_VERSION into .tools/ (npm registry)" >&2
  mkdir -p "$tools"
  [ -f "$tools/package.json" ] || echo '{"name":"spar-tools","private":true}' > "$tools/package.json"
  (cd "$tools" && npm install --no-audit --no-fund --silent "bun@$BUN_VERSION" >&2)
fi
stamp="$root/node_modules/.spar-install-stamp"
if [ ! -f "$stamp" ] || [ "$root/bun.lock" -nt "$stamp" ] || [ "$root/package.json" -nt "$stamp" ]; then
  (cd "$root" && "$bun" install --frozen-lockfile >&2 || (cd "$root" && "$bun" install >&2))
  touch "$stamp"
fi
echo "$bun"
