# shellcheck shell=bash
# Shared by tests/pg/start.sh, stop.sh and ctl.sh (sourced, not run).
# A throwaway cluster lives in one directory DIR:
#   DIR/data      the cluster (initdb), owned by the user that runs it
#   DIR/log       the server log
#   DIR/cluster.env  BINDIR, RUNAS and PORT, written by start.sh
#   DIR/.s.PGSQL.PORT  the unix socket (no TCP unless PG_TCP=1)

pg_die() { echo "tests/pg: $*" >&2; exit 1; }

# The directory of initdb/pg_ctl/postgres: $PG_BINDIR, else the newest
# /usr/lib/postgresql/*/bin (Debian), else pg_config --bindir, else PATH.
pg_find_bindir() {
  if [ -n "${PG_BINDIR:-}" ]; then echo "$PG_BINDIR"; return; fi
  local d best
  # */bin globs sort 10 < 11 < ... < 9: pick the highest version number.
  best=$(for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && echo "$d"; done |
         sort -t/ -k5,5n | tail -1)
  if [ -n "$best" ]; then echo "$best"; return; fi
  if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then
    pg_config --bindir; return
  fi
  if command -v initdb >/dev/null; then dirname "$(command -v initdb)"; return; fi
  return 1
}

# initdb and postgres refuse to run as root: as root the cluster belongs to
# "postgres" (the Debian package's user) or else "nobody".
pg_pick_user() {
  if [ "$(id -u)" -ne 0 ]; then echo ""; return; fi
  if id postgres >/dev/null 2>&1; then echo postgres; else echo nobody; fi
}

# Runs a command as RUNAS (or as ourselves when RUNAS is empty), from /:
# RUNAS may not be able to enter the caller's working directory.
pg_as() {
  if [ -z "${RUNAS:-}" ]; then "$@"; return; fi
  if command -v runuser >/dev/null; then
    (cd / && runuser -u "$RUNAS" -- "$@")
  else
    (cd / && su -s /bin/sh "$RUNAS" -c "$(printf '%q ' "$@")")
  fi
}

pg_load_env() { # DIR
  [ -f "$1/cluster.env" ] || pg_die "$1 holds no cluster (no cluster.env)"
  # shellcheck disable=SC1091
  . "$1/cluster.env"
}

# Percent-encodes a path for the host= parameter of a libpq URI.
pg_uri_escape() {
  local s=$1 out="" c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
      [A-Za-z0-9/._~-]) out+=$c ;;
      *) out+=$(printf '%%%02X' "'$c") ;;
    esac
  done
  echo "$out"
}
