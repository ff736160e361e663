#!/usr/bin/env bash
# Checks the cluster that scripts/pg-cluster.sh started in DIR: a query as the role mneme with the
# password of DIR/pgpass; the same role refused with another password; the pgpass file readable by
# its owner only; the server listening on 127.0.0.1 and on no other address.
set -euo pipefail
dir=$1
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[ -f "$dir/env" ] || fail "no $dir/env: the cluster was not started"
# shellcheck disable=SC1091
. "$dir/env"
psql=/usr/lib/postgresql/15/bin/psql

answer=$("$psql" -X -tA -c "SELECT current_user || ' ' || current_database() || ' ' || current_setting('server_version_num')")
case "$answer" in
  "mneme mneme 15"*) ;;
  *) fail "unexpected answer: $answer" ;;
esac

if PGPASSFILE=/dev/null PGPASSWORD=not-the-password "$psql" -X -tA -c "SELECT 1" >/dev/null 2>&1; then
  fail "a wrong password was accepted"
fi

mode=$(stat -c %a "$PGPASSFILE")
[ "$mode" = 600 ] || fail "$PGPASSFILE has mode $mode, not 600"

listening=$(ss -Hltn "sport = :$PGPORT" | awk '{print $4}' | sort -u)
[ "$listening" = "127.0.0.1:$PGPORT" ] || fail "the server listens on: $listening"
echo "cluster on 127.0.0.1:$PGPORT answers as mneme with its password only"
