#!/usr/bin/env bash
# The user's side of check_install.sh, run where the build and source trees are hidden:
#   use_installed.sh WORK PREFIX HIDDEN_BUILD_DIR
set -euo pipefail
work=$1
prefix=$2
hidden=$3
unset MNEME_PLUGIN_PATH
fail() { echo "check_install: $*" >&2; exit 1; }
if [ -d "$hidden" ] && [ -n "$(ls -A "$hidden")" ]; then fail "the build tree is not hidden"; fi

libdir=
for d in lib/x86_64-linux-gnu lib64 lib; do
  if [ -e "$prefix/$d/libmneme_core.so" ]; then libdir=$prefix/$d; break; fi
done
[ -n "$libdir" ] || fail "no libmneme_core.so under $prefix"
include_root=$prefix/include

echo "== nothing private is installed"
if find "$include_root/mneme" -name '*_p.h' | grep -q .; then fail "private headers installed"; fi

echo "== every installed plugin's libraries resolve"
plugins=$(find "$libdir/mneme/plugins" -name '*.so')
[ -n "$plugins" ] || fail "no plugins in $libdir/mneme/plugins"
for p in $plugins; do
  if ldd "$p" | grep -q 'not found'; then ldd "$p" >&2; fail "$p has unresolved libraries"; fi
done

echo "== find_package(Mneme): configure, build, run the quick start"
# A system install (/usr, from the Debian packages) is found without any path.
prefix_path=()
[ "$prefix" = /usr ] || prefix_path=(-DCMAKE_PREFIX_PATH="$prefix")
cmake -S "$work/consumer" -B "$work/consumer-build" "${prefix_path[@]}" \
      -DMNEME_INCLUDE_ROOT="$include_root" > "$work/consumer-configure.log" 2>&1 \
  || { cat "$work/consumer-configure.log" >&2; fail "configuring the consumer failed"; }
cmake --build "$work/consumer-build" -j 2 > "$work/consumer-build.log" 2>&1 \
  || { cat "$work/consumer-build.log" >&2; fail "building the consumer failed"; }
mkdir -p "$work/run-cmake"
(cd "$work/run-cmake" && "$work/consumer-build/hello") > "$work/hello-cmake.out" 2>&1 \
  || { cat "$work/hello-cmake.out" >&2; fail "the quick start built with CMake failed"; }
grep -q '\] We decided to use PostgreSQL' "$work/hello-cmake.out" \
  || { cat "$work/hello-cmake.out" >&2; fail "the quick start printed something else"; }

echo "== pkg-config: build and run the quick start"
[ "$prefix" = /usr ] || export PKG_CONFIG_PATH=$libdir/pkgconfig
pkg-config --exists --print-errors mneme mneme-memory || fail "pkg-config does not find mneme"
[ "$(pkg-config --modversion mneme)" = 0.2.0 ] || fail "pkg-config's version is $(pkg-config --modversion mneme)"
# shellcheck disable=SC2046
g++ -std=c++20 -fPIC "$work/consumer/main.cpp" -o "$work/hello-pc" \
    $(pkg-config --cflags --libs mneme-memory) -Wl,-rpath,"$(pkg-config --variable=libdir mneme-memory)" \
  || fail "building the quick start with pkg-config failed"
mkdir -p "$work/run-pc"
(cd "$work/run-pc" && "$work/hello-pc") > "$work/hello-pc.out" 2>&1 \
  || { cat "$work/hello-pc.out" >&2; fail "the quick start built with pkg-config failed"; }
grep -q '\] We decided to use PostgreSQL' "$work/hello-pc.out" || fail "the pkg-config quick start printed something else"

echo "== the installed command line"
mneme=$prefix/bin/mneme
[ "$("$mneme" --version)" = "mneme 0.2.0" ] || fail "mneme --version says $("$mneme" --version)"
db=$work/cli.db
"$mneme" --db "$db" remember "The deploy window is Friday afternoon." --scope /ops > /dev/null
"$mneme" --db "$db" --json recall "when do we deploy" | grep -q 'deploy window' || fail "the installed mneme did not recall"

echo "== the installed desktop app"
studio=$prefix/bin/mneme-studio
[ "$(QT_QPA_PLATFORM=offscreen "$studio" --version)" = "mneme-studio 0.2.0" ] \
  || fail "mneme-studio --version says $(QT_QPA_PLATFORM=offscreen "$studio" --version 2>&1)"

echo "check_install: passed ($prefix)"
