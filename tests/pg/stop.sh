#!/usr/bin/env bash
# tests/pg/stop.sh DIR — stops the cluster tests/pg/start.sh started in DIR
# and removes it (PG_KEEP=1 keeps the files). Stopping nothing is no error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/pg/common.sh
. "$here/common.sh"
[ $# -eq 1 ] || pg_die "usage: tests/pg/stop.sh DIR"
dir=$1
[ -d "$dir" ] || exit 0
if [ -f "$dir/cluster.env" ]; then
  pg_load_env "$dir"
  if [ -f "$dir/data/postmaster.pid" ]; then
    pg_as "$BINDIR/pg_ctl" -D "$dir/data" -m fast -w -t 20 stop >/dev/null 2>&1 ||
      pg_as "$BINDIR/pg_ctl" -D "$dir/data" -m immediate -w -t 20 stop >/dev/null 2>&1 ||
      echo "tests/pg: could not stop the cluster in $dir" >&2
  fi
fi
[ "${PG_KEEP:-0}" = 1 ] && exit 0
rm -rf "$dir/data" "$dir/log" "$dir/initdb.log" "$dir/cluster.env"
rm -f "$dir"/.s.PGSQL.* 2>/dev/null
rmdir "$dir" 2>/dev/null || true
exit 0
