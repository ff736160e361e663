#!/usr/bin/env bash
# Installs the Debian 12 packages Mneme builds with, when any is missing.
# As root it runs apt-get; otherwise it prints the one command to run and fails.
#   scripts/install-deps.sh             the build and the tests (PostgreSQL 15 for the tests of a shared
#                                       store, run as throwaway clusters by scripts/pg-cluster.sh, and its
#                                       server headers, which scripts/pgvector.sh builds the vendored
#                                       pgvector with; Xvfb for `make screenshots`)
#   scripts/install-deps.sh sanitizers  clang and its sanitizer and libFuzzer runtimes (make fuzz)
set -euo pipefail

packages=(
  cmake
  g++
  make
  ninja-build
  qt6-base-dev
  nlohmann-json3-dev
  libsqlite3-dev
  libstemmer-dev
  libhnswlib-dev
  pkgconf
  dpkg-dev
  file
  postgresql-15
  postgresql-server-dev-15
  libpq-dev
  xvfb
  xauth
)
if [ "${1:-}" = sanitizers ]; then
  packages=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  echo "mneme: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "mneme: missing packages; run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
