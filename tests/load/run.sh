#!/usr/bin/env bash
# The load tests in sequence: wrk saturation, kill -9 recovery, hostile
# traffic, framing attacks, connection slots under a slow-header flood,
# memory attacks. Each prints its figures and "N passed, N failed"; this
# prints the sum last and exits non-zero if anything failed.
#
#   bash tests/load/run.sh                 # the CI form (about 3 minutes on 2 cores)
#   LOAD_SECONDS=60 KILL_ROUNDS=100 HOSTILE_COUNT=20000 MEM_FULL=1 bash tests/load/run.sh
#
# SYMD_BIN (default: ./symd of the checkout) and every knob of the
# scripts pass through the environment; see the head of each script. Every
# server runs with crash retention on (LOAD_RETENTION_ARGS, default
# "--max-crashes 200 --prune-every 1"; set it empty to turn it off), and each
# script posts enough crashes that retention prunes while it runs.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export SYMD_BIN=${SYMD_BIN:-$ROOT/symd}
case $SYMD_BIN in /*) ;; *) SYMD_BIN=$PWD/$SYMD_BIN ;; esac
export SYMD_ACCESS_LOG=off
export LOAD_RETENTION_ARGS=${LOAD_RETENTION_ARGS---max-crashes 200 --prune-every 1}
PY=${PYTHON:-python3}

passed=0 failed=0
LOG=$(mktemp /tmp/symd-load-run.XXXXXX)
trap 'rm -f "$LOG"' EXIT

one() { # name, command...
  local name=$1; shift
  local t0=$SECONDS
  "$@" 2>&1 | tee "$LOG"
  local rc=${PIPESTATUS[0]}
  local line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$LOG" | tail -1)
  if [ -n "$line" ]; then
    p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
  else
    p=0; f=1
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi # died without saying why
  echo "--- $name: $p passed, $f failed, exit $rc, $((SECONDS - t0)) s"
  passed=$((passed + p)); failed=$((failed + f))
}

one wrk_load bash "$HERE/wrk_load.sh"
one kill9 "$PY" "$HERE/kill9.py"
one hostile "$PY" "$HERE/hostile.py"
one attack_framing "$PY" "$HERE/attack_framing.py"
one attack_slots "$PY" "$HERE/attack_slots.py"
one attack_memory "$PY" "$HERE/attack_memory.py"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
