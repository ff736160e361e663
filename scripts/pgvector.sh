#!/usr/bin/env bash
# Builds the vendored pgvector (third_party/pgvector) against the PostgreSQL 15 server headers and
# makes a private server installation that can load it, without writing into any system folder:
#
#   scripts/pgvector.sh OUT   builds into OUT (once; again when the sources or the server changed)
#                             and prints the private installation's bin folder
#
# PostgreSQL finds its share folder (where the extension control files are) and its module folder
# relative to the running postgres binary. OUT/root mirrors the server's folders: the bin folder
# copied (a symbolic link would be resolved back to the system's), the module folder's files linked
# with vector.so beside them, and the share folder's entries linked with a real extension folder
# holding links to the system's extension files plus pgvector's. A cluster started from OUT's bin
# folder (scripts/pg-cluster.sh start DIR --with-pgvector OUT) can CREATE EXTENSION vector.
# Needs the Debian packages postgresql-15 and postgresql-server-dev-15 (scripts/install-deps.sh).
set -euo pipefail

[ $# -eq 1 ] || {
  echo "usage: $0 OUT" >&2
  exit 2
}
out=$1
source_dir=$(cd "$(dirname "$0")/../third_party/pgvector" && pwd)
pg_config=${MNEME_PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
if [ ! -x "$pg_config" ] || [ ! -f "$("$pg_config" --pgxs 2>/dev/null || echo /nonexistent)" ]; then
  echo "mneme: building pgvector needs the PostgreSQL 15 server headers ($pg_config with PGXS); run scripts/install-deps.sh" >&2
  exit 1
fi
bindir=$("$pg_config" --bindir)
pkglibdir=$("$pg_config" --pkglibdir)
sharedir=$("$pg_config" --sharedir)
root=$out/root
private_bin=$root$bindir
# One build at a time into OUT (the tests' fixture and a benchmark may ask at once).
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9

# What the installation is made of: the vendored sources and the server's binaries.
stamp=$( (
  cd "$source_dir" && find . -type f -print0 | sort -z | xargs -0 sha256sum
  "$bindir/postgres" --version
  sha256sum "$bindir/postgres"
) | sha256sum | cut -c1-64)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] && [ -x "$private_bin/postgres" ]; then
  echo "$private_bin"
  exit 0
fi

if [ -e "$out" ] && [ ! -f "$out/stamp" ] && [ -n "$(ls -A "$out")" ]; then
  echo "mneme: $out is not empty and holds no pgvector build of this script; name another folder" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out"
# pgvector builds in its source folder: build a copy. Portable code (no -march=native), no LLVM bitcode.
cp -a "$source_dir" "$out/src"
make -C "$out/src" -s -j"$(nproc)" PG_CONFIG="$pg_config" OPTFLAGS="" with_llvm=no >"$out/build.log" 2>&1 || {
  cat "$out/build.log" >&2
  echo "mneme: building pgvector failed (log above)" >&2
  exit 1
}
make -C "$out/src" -s PG_CONFIG="$pg_config" OPTFLAGS="" with_llvm=no DESTDIR="$out/stage" install >>"$out/build.log" 2>&1 || {
  cat "$out/build.log" >&2
  echo "mneme: staging pgvector failed (log above)" >&2
  exit 1
}

mkdir -p "$private_bin" "$root$pkglibdir" "$root$sharedir/extension"
cp -a "$bindir/." "$private_bin/"
for f in "$pkglibdir"/*; do
  ln -s "$f" "$root$pkglibdir/"
done
cp "$out/stage$pkglibdir/vector.so" "$root$pkglibdir/"
for f in "$sharedir"/*; do
  [ "$(basename "$f")" = extension ] || ln -s "$f" "$root$sharedir/"
done
for f in "$sharedir"/extension/*; do
  ln -s "$f" "$root$sharedir/extension/"
done
cp "$out/stage$sharedir"/extension/vector* "$root$sharedir/extension/"
# The server may run as another user (postgres, when the tests run as root): it reads the tree.
chmod -R a+rX "$out"
echo "$stamp" >"$out/stamp"
echo "$private_bin"
