#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster, for the tests and benchmarks that need a real server.
#
#   scripts/pg-cluster.sh start DIR   create a cluster, start it on a free loopback port, and write
#                                     DIR/env (shell assignments) and DIR/pgpass
#   scripts/pg-cluster.sh start DIR --with-pgvector OUT
#                                     the same, run from the private installation scripts/pgvector.sh
#                                     builds in OUT, whose server has the `vector` extension available
#                                     (created in the database "mneme" by nobody: a test or a store
#                                     opened with "vector_search": "pgvector" creates it)
#   scripts/pg-cluster.sh stop DIR    stop the cluster and remove it and DIR
#   scripts/pg-cluster.sh status DIR  exit 0 when the cluster of DIR accepts connections
#
# DIR/env sets PGHOST, PGPORT, PGUSER, PGDATABASE and PGPASSFILE, which libpq and psql read:
#   . DIR/env && psql -c 'SELECT 1'
# The role "mneme" logs in with a random password (SCRAM), kept only in DIR/pgpass (mode 600); the
# database "mneme" belongs to it. The cluster's files live in a folder of their own under the system's
# temporary folder (named in DIR/env as MNEME_PG_DATA). As root the server runs as the user
# "postgres", since PostgreSQL refuses to run as root. Needs the Debian package postgresql-15
# (scripts/install-deps.sh postgres installs it).
set -euo pipefail

usage() {
  echo "usage: $0 start DIR [--with-pgvector OUT] | stop DIR | status DIR" >&2
  exit 2
}

[ $# -eq 2 ] || [ $# -eq 4 ] || usage
command=$1
dir=$2
bindir=${MNEME_PG_BINDIR:-/usr/lib/postgresql/15/bin}
if [ $# -eq 4 ]; then
  [ "$command" = start ] && [ "$3" = --with-pgvector ] || usage
  bindir=$(bash "$(dirname "$0")/pgvector.sh" "$4")
fi

# Runs a server program as the user that owns the cluster.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if [ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
      echo "$port"
      return 0
    fi
  done
  echo "mneme: no free loopback port found for PostgreSQL" >&2
  return 1
}

start() {
  if [ ! -x "$bindir/initdb" ]; then
    echo "mneme: PostgreSQL 15 is not installed ($bindir/initdb is missing); run scripts/install-deps.sh postgres" >&2
    exit 1
  fi
  if [ -f "$dir/env" ]; then
    # Left by a run that was interrupted before its stop: a throwaway cluster, so replace it.
    echo "mneme: stopping the cluster an earlier run left in $dir" >&2
    stop
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local data password
  data=$(mktemp -d "${TMPDIR:-/tmp}/mneme-pg.XXXXXX")
  chmod 700 "$data"
  password=$(head -c 24 /dev/urandom | base64 | tr -d '/+=\n')
  # initdb reads the password from a file, removed as soon as it has read it.
  printf '%s\n' "$password" > "$data/pwfile"
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres: "$data"
  fi
  as_owner "$bindir/initdb" -D "$data/cluster" -U mneme --pwfile="$data/pwfile" -A scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >"$data/initdb.log" 2>&1 || {
    cat "$data/initdb.log" >&2
    rm -rf "$data"
    exit 1
  }
  rm -f "$data/pwfile"

  local port started=0
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$bindir/pg_ctl" -D "$data/cluster" -l "$data/server.log" -w -t 60 \
      -o "-p $port -k $data -c listen_addresses=127.0.0.1" start >/dev/null 2>&1; then
      started=1
      break
    fi
    # Another program may have taken the port between the check and the start: try another.
  done
  if [ $started -ne 1 ]; then
    echo "mneme: the PostgreSQL server did not start; its log:" >&2
    cat "$data/server.log" >&2 || true
    rm -rf "$data"
    exit 1
  fi

  umask 077
  printf '127.0.0.1:%s:*:mneme:%s\n' "$port" "$password" > "$dir/pgpass"
  cat > "$dir/env" <<EOF
PGHOST=127.0.0.1
PGPORT=$port
PGUSER=mneme
PGDATABASE=mneme
PGPASSFILE=$dir/pgpass
MNEME_PG_DATA=$data
MNEME_PG_BINDIR=$bindir
export PGHOST PGPORT PGUSER PGDATABASE PGPASSFILE
EOF
  PGHOST=127.0.0.1 PGPORT=$port PGUSER=mneme PGPASSFILE=$dir/pgpass \
    "$bindir/psql" -X -q -d postgres -c "CREATE DATABASE mneme OWNER mneme" >/dev/null
  echo "mneme: PostgreSQL listens on 127.0.0.1:$port (settings in $dir/env)" >&2
}

stop() {
  if [ ! -f "$dir/env" ]; then
    echo "mneme: $dir holds no cluster (no $dir/env)" >&2
    exit 1
  fi
  local data
  data=$(sed -n 's/^MNEME_PG_DATA=//p' "$dir/env")
  # The server's own pg_ctl (the private installation's, for a cluster started --with-pgvector).
  local server_bindir
  server_bindir=$(sed -n 's/^MNEME_PG_BINDIR=//p' "$dir/env")
  server_bindir=${server_bindir:-$bindir}
  case "$data" in
    */mneme-pg.*) ;;
    *)
      echo "mneme: $dir/env names no cluster folder of this script; remove it by hand" >&2
      exit 1
      ;;
  esac
  if [ -d "$data/cluster" ]; then
    as_owner "$server_bindir/pg_ctl" -D "$data/cluster" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$data" "$dir"
}

status() {
  [ -f "$dir/env" ] || exit 1
  # shellcheck disable=SC1091
  . "$dir/env"
  "$bindir/pg_isready" -q -h "$PGHOST" -p "$PGPORT"
}

case "$command" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) usage ;;
esac
