#!/usr/bin/env bash
# Installs Mneme from a build tree into a temporary prefix (or, with --system, uses what the Debian
# packages installed into /usr), hides the build tree and the source tree, and then uses Mneme as a
# user would: the C++ quick start built with find_package() and with pkg-config, every installed
# header compiled, the installed command line run, every installed plugin's libraries resolved.
#
#   tests/package/check_install.sh BUILD_DIR [--system]
#
# Exit status: 0 passed, 1 failed, 77 skipped (no way to hide the trees: not root and no user
# namespaces).
set -euo pipefail

build=$(cd "$1" && pwd)
mode=${2:-prefix}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/mneme-package.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ "$mode" = --system ]; then
  prefix=/usr
else
  prefix=$work/prefix
  cmake --install "$build" --prefix "$prefix" > "$work/install.log"
fi
mkdir -p "$work/consumer" "$work/home"
# The installed programs' default store and settings go to a home of their own, never the user's.
export HOME="$work/home" XDG_DATA_HOME="$work/home/.local/share" XDG_CONFIG_HOME="$work/home/.config"
unset MNEME_STORAGE_DIR
cp "$src/tests/package/consumer/CMakeLists.txt" "$src/examples/quick_start/main.cpp" "$work/consumer/"
cp "$src/tests/package/use_installed.sh" "$work/"

# A mount namespace of our own, where the build and source trees are empty folders.
if unshare -m true 2>/dev/null; then
  ns=(unshare -m --propagation private)
elif unshare -r -m true 2>/dev/null; then
  ns=(unshare -r -m --propagation private)
else
  echo "check_install: cannot hide the build tree here (needs root or user namespaces): skipped" >&2
  exit 77
fi
"${ns[@]}" bash -c '
  set -e
  mount -t tmpfs -o size=1m mneme-hidden "$2"
  if [ -d "$3" ]; then mount -t tmpfs -o size=1m mneme-hidden "$3"; fi
  exec bash "$1/use_installed.sh" "$1" "$4" "$2"
' bash "$work" "$build" "$src" "$prefix"
