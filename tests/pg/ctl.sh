#!/usr/bin/env bash
# tests/pg/ctl.sh DIR restart|stop|start|status — pg_ctl on the cluster
# tests/pg/start.sh started in DIR, as the user it runs as (the multi-node
# tests restart PostgreSQL under load with it). stop is a fast shutdown,
# restart a fast shutdown and a start; both wait.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/pg/common.sh
. "$here/common.sh"
[ $# -eq 2 ] || pg_die "usage: tests/pg/ctl.sh DIR restart|stop|start|status"
dir=$1
pg_load_env "$dir"
case $2 in
  restart|stop) pg_as "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/log" -m fast -w -t 60 "$2" ;;
  start) pg_as "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 start ;;
  status) pg_as "$BINDIR/pg_ctl" -D "$dir/data" status ;;
  *) pg_die "unknown action $2" ;;
esac
