#!/usr/bin/env bash
# Installs the Node.js packages the MCP and REST tests run against (the official MCP TypeScript SDK,
# two reference MCP servers, a JSON Schema validator) into BUILD_DIR/tests/mcp/node_modules, exactly
# as tests/mcp/package-lock.json pins them. Runs `npm ci` only when the lock file changed since the
# last install, so `make test` uses the network once; the tests themselves never do.
#
# Usage: scripts/install-node-deps.sh [BUILD_DIR]   (default: build)
set -euo pipefail

source_dir="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="${1:-build}"
target="$build_dir/tests/mcp"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "mneme: the MCP tests need Node.js 20 or later with npm; install them (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "mneme: the MCP tests need Node.js 20 or later; this is $(node --version)" >&2
  exit 1
fi

mkdir -p "$target"
lock="$source_dir/tests/mcp/package-lock.json"
stamp="$target/node_modules/.mneme-lock.sha256"
want="$(sha256sum "$source_dir/tests/mcp/package.json" "$lock" | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

cp "$source_dir/tests/mcp/package.json" "$lock" "$target/"
echo "mneme: installing the MCP test packages (npm ci) into $target" >&2
# --ignore-scripts: nothing a package ships runs at install time.
(cd "$target" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
echo "$want" > "$stamp"
