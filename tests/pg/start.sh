#!/usr/bin/env bash
# tests/pg/start.sh DIR PORT — starts a private, throwaway PostgreSQL cluster
# for the tests and benchmarks and prints its URI on stdout:
#   postgresql://symd@/postgres?host=DIR&port=PORT
# The cluster is initdb'd afresh in DIR (whatever was there from an earlier
# run is stopped and removed), trusts every local connection as role
# "symd" (a superuser), listens only on a unix socket in DIR (PG_TCP=1 adds
# 127.0.0.1:PORT), and runs with fsync off: data nobody needs to keep.
# As root (CI) the cluster runs as "postgres" (or "nobody"), which must be
# able to reach DIR: use a directory under /tmp. Stop it with
# tests/pg/stop.sh DIR. Environment: PG_BINDIR (where initdb lives),
# PG_TCP=1, PG_MAX_CONNECTIONS (default 300).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/pg/common.sh
. "$here/common.sh"

[ $# -eq 2 ] || pg_die "usage: tests/pg/start.sh DIR PORT"
dir=$1 port=$2
case $port in ''|*[!0-9]*) pg_die "PORT must be a number, not '$port'" ;; esac
if [ "$port" -lt 1024 ] || [ "$port" -gt 65535 ]; then pg_die "PORT $port is out of range"; fi

BINDIR=$(pg_find_bindir) ||
  pg_die "no PostgreSQL server found (install postgresql: bash scripts/deps.sh)"
RUNAS=$(pg_pick_user)

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# Unix socket paths are limited to 107 bytes.
[ $((${#dir} + 20)) -lt 107 ] || pg_die "DIR $dir is too long for a unix socket path"

# Whatever an earlier run left: a running postmaster is stopped, a stale
# pid or socket lock file (a killed run) removed with the old cluster.
if [ -f "$dir/data/postmaster.pid" ]; then
  if [ -f "$dir/cluster.env" ]; then
    (pg_load_env "$dir"; pg_as "$BINDIR/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop \
       >/dev/null 2>&1) || true
  fi
  pid=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
     grep -q postgres "/proc/$pid/comm" 2>/dev/null &&
     [ "$(readlink -f "/proc/$pid/cwd" 2>/dev/null)" = "$dir/data" ]; then
    kill -9 "$pid" 2>/dev/null || true
    sleep 0.5
  fi
fi
rm -rf "$dir/data" "$dir/log" "$dir/cluster.env"
rm -f "$dir"/.s.PGSQL.* 2>/dev/null || true

# Another server on this socket (another cluster with the same DIR and PORT
# would have been found above; this is one started by hand).
if [ -S "$dir/.s.PGSQL.$port" ]; then pg_die "a server already listens on $dir/.s.PGSQL.$port"; fi
if [ "${PG_TCP:-0}" = 1 ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  pg_die "127.0.0.1:$port is in use (choose another PORT or leave PG_TCP unset)"
fi

if [ -n "$RUNAS" ]; then
  chown "$RUNAS" "$dir"
  pg_as test -w "$dir" ||
    pg_die "$RUNAS cannot write $dir (a parent directory is closed to it: use one under /tmp)"
fi
chmod 755 "$dir" # others (a test run as another user) reach the socket

cat >"$dir/cluster.env" <<ENV
BINDIR='$BINDIR'
RUNAS='$RUNAS'
PORT='$port'
ENV

if ! pg_as "$BINDIR/initdb" -D "$dir/data" -U symd -A trust -E UTF8 --no-locale --no-sync \
       >"$dir/initdb.log" 2>&1; then
  cat "$dir/initdb.log" >&2
  pg_die "initdb failed"
fi
listen=""
[ "${PG_TCP:-0}" = 1 ] && listen=127.0.0.1
cat >>"$dir/data/postgresql.conf" <<CONF
# tests/pg/start.sh: a throwaway cluster
listen_addresses = '$listen'
port = $port
unix_socket_directories = '$dir'
max_connections = ${PG_MAX_CONNECTIONS:-300}
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 64MB
log_min_messages = warning
log_connections = off
CONF
[ -n "$RUNAS" ] && chown "$RUNAS" "$dir/cluster.env"
touch "$dir/log"
[ -n "$RUNAS" ] && chown "$RUNAS" "$dir/log"
if ! pg_as "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 start >/dev/null 2>&1; then
  tail -20 "$dir/log" >&2
  pg_die "the server did not start (log: $dir/log)"
fi
# pg_ctl -w waits for the postmaster; wait for connections as well.
for _ in $(seq 1 100); do
  if "$BINDIR/pg_isready" -q -h "$dir" -p "$port" -U symd -d postgres; then
    echo "postgresql://symd@/postgres?host=$(pg_uri_escape "$dir")&port=$port"
    exit 0
  fi
  sleep 0.1
done
tail -20 "$dir/log" >&2
pg_die "the server does not accept connections (log: $dir/log)"
