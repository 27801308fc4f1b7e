#!/usr/bin/env bash
# Saturation load on /v1/symbolicate with wrk: throughput, latency, errors and
# RSS drift of one `symd serve` on a fresh database.
#
#   bash tests/load/wrk_load.sh                       # CI form: 3 s warm-up, 10 s load
#   LOAD_SECONDS=60 bash tests/load/wrk_load.sh       # the full form
#
# Environment: SYMD_BIN (./symd of the checkout), LOAD_SECONDS (10),
# WARMUP_SECONDS (3), WRK_THREADS (2), WRK_CONNECTIONS (32), WRK_TIMEOUT (2s,
# a slower answer counts as a timeout error), BODY_COUNT (64) and BODY_FRAMES
# (50): the request bodies, RSS_DRIFT_MAX_PCT (10), SYMD_SERVE_ARGS (extra
# `symd serve` flags, e.g. "--request-timeout 30"), LOAD_RETENTION_ARGS
# (retention flags, default "--max-crashes 200 --prune-every 1"; empty: none)
# and LOAD_CRASH_RATE (30: synthetic crash reports posted per second beside
# the load, from the warm-up on, so retention prunes during it; 0: none).
#
# Checks: zero non-2xx, zero socket errors (connect/read/write/timeout), RSS
# after the load within RSS_DRIFT_MAX_PCT of RSS after the warm-up, a known
# address still symbolicates to the fixture's symbol afterwards, every crash
# posted beside the load stored (201) and the store pruned back to
# --max-crashes, the server is alive, never logged a 5xx or a retention
# error, and exits 0 on SIGTERM. Ends with "N passed, N failed"; exit status
# 1 on any failure.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LIB="$HERE/symdlib.py"
PY=${PYTHON:-python3}

SYMD_BIN=${SYMD_BIN:-$ROOT/symd}
case $SYMD_BIN in /*) ;; *) SYMD_BIN=$PWD/$SYMD_BIN ;; esac
export SYMD_BIN SYMD_ACCESS_LOG=off
LOAD_SECONDS=${LOAD_SECONDS:-10}
WARMUP_SECONDS=${WARMUP_SECONDS:-3}
WRK_THREADS=${WRK_THREADS:-2}
WRK_CONNECTIONS=${WRK_CONNECTIONS:-32}
WRK_TIMEOUT=${WRK_TIMEOUT:-2s}
BODY_COUNT=${BODY_COUNT:-64}
BODY_FRAMES=${BODY_FRAMES:-50}
RSS_DRIFT_MAX_PCT=${RSS_DRIFT_MAX_PCT:-10}
read -r -a SERVE_ARGS <<<"${SYMD_SERVE_ARGS:-}"
read -r -a RETENTION_ARGS <<<"${LOAD_RETENTION_ARGS---max-crashes 200 --prune-every 1}"
LOAD_CRASH_RATE=${LOAD_CRASH_RATE:-30}
MAX_CRASHES=0
for ((i = 0; i + 1 < ${#RETENTION_ARGS[@]}; i++)); do
  [ "${RETENTION_ARGS[i]}" = --max-crashes ] && MAX_CRASHES=${RETENTION_ARGS[i + 1]}
done

passed=0 failed=0
check() { # name, ok(0/1), detail
  if [ "$2" = 1 ]; then
    passed=$((passed + 1)); echo "  ok    $1${3:+  ($3)}"
  else
    failed=$((failed + 1)); echo "  FAIL  $1${3:+  ($3)}"
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

for tool in wrk "$PY" curl; do
  if ! command -v "$tool" >/dev/null; then
    check "tool $tool installed" 0 "apt-get install wrk curl python3"
    finish
  fi
done
if [ ! -x "$SYMD_BIN" ]; then
  check "symd binary at $SYMD_BIN" 0 "build it with make"
  finish
fi

TMP=$(mktemp -d /tmp/symd-wrk.XXXXXX)
PID=
CHURN_PID=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  if [ -n "$CHURN_PID" ] && kill -0 "$CHURN_PID" 2>/dev/null; then kill -KILL "$CHURN_PID" 2>/dev/null; fi
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

echo "=== wrk_load: ${WARMUP_SECONDS}s warm-up, ${LOAD_SECONDS}s at -t$WRK_THREADS -c$WRK_CONNECTIONS ($SYMD_BIN)"
"$SYMD_BIN" serve --listen 127.0.0.1:0 --db "$TMP/load.db" "${SERVE_ARGS[@]}" "${RETENTION_ARGS[@]}" \
  >"$TMP/stdout" 2>"$TMP/stderr" </dev/null &
PID=$!
PORT=
for _ in $(seq 1 500); do
  PORT=$(sed -n '1s|^symd: listening on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$TMP/stdout")
  [ -n "$PORT" ] && break
  kill -0 "$PID" 2>/dev/null || break
  sleep 0.02
done
if [ -z "$PORT" ]; then
  check "server starts" 0 "$(tail -5 "$TMP/stderr")"
  finish
fi
URL=http://127.0.0.1:$PORT

up() { # file, query -> HTTP status
  curl -s -o "$TMP/up.json" -w '%{http_code}' --data-binary @"$1" "$URL/v1/images$2"
}
s1=$(up "$ROOT/fixtures/bin/bigapp-arm64" "?name=bigapp")
s2=$(up "$ROOT/fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64" "")
[ "$s1" = 201 ] && [ "$s2" = 201 ] && ok=1 || ok=0
check "upload bigapp-arm64 and its dSYM" "$ok" "binary $s1, dSYM $s2"

"$PY" "$LIB" bodies "$TMP/bodies" "$BODY_COUNT" "$BODY_FRAMES"
SCRIPT=$ROOT/bench/symbolicate.lua

wrk_run() { # seconds, output file
  wrk -t"$WRK_THREADS" -c"$WRK_CONNECTIONS" -d"$1"s --timeout "$WRK_TIMEOUT" --latency \
    -s "$SCRIPT" "$URL/v1/symbolicate" -- "$TMP/bodies" "$BODY_COUNT" >"$2" 2>"$2.err"
}
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$PID/status" 2>/dev/null; }

# crash reports beside the load, from the warm-up on: retention prunes
# while wrk runs
if [ "$LOAD_CRASH_RATE" != 0 ]; then
  "$PY" "$LIB" churn "$PORT" "$((WARMUP_SECONDS + LOAD_SECONDS + 30))" "$LOAD_CRASH_RATE" \
    >"$TMP/churn.txt" 2>&1 &
  CHURN_PID=$!
fi
wrk_run "$WARMUP_SECONDS" "$TMP/warmup.txt"
sleep 0.5
rss_before=$(rss)
t0=$(date +%s.%N)
wrk_run "$LOAD_SECONDS" "$TMP/load.txt"
t1=$(date +%s.%N)
rss_after=$(rss)
posted=0 stored=0 other=0 errors=0
if [ -n "$CHURN_PID" ]; then
  kill -TERM "$CHURN_PID" 2>/dev/null
  wait "$CHURN_PID" 2>/dev/null
  CHURN_PID=
  eval "$(tr ' ' '\n' <"$TMP/churn.txt" | grep -E '^(posted|stored|other|errors)=[0-9]+$')"
fi
churn_errors=$errors
# retention catches up: the newest MAX_CRASHES stay
crashes=-1
for _ in $(seq 1 100); do
  crashes=$(curl -s "$URL/metrics" | sed -n 's/^symd_crashes \([0-9]*\)$/\1/p')
  { [ "$MAX_CRASHES" = 0 ] || [ "${crashes:-0}" -le "$MAX_CRASHES" ]; } && break
  sleep 0.1
done
requests=0 rps=0 p50_ms=-1 p99_ms=-1 non2xx=0 lua_non2xx=-1 errors=0
err_connect=0 err_read=0 err_write=0 err_timeout=0
eval "$("$PY" "$LIB" wrk "$TMP/load.txt")"

echo "--- wrk output"
sed 's/^/    /' "$TMP/load.txt"
[ -s "$TMP/load.txt.err" ] && sed 's/^/    stderr: /' "$TMP/load.txt.err" | head -10

drift=$(awk -v a="${rss_after:-0}" -v b="${rss_before:-0}" \
  'BEGIN { if (b > 0) printf "%.1f", (a - b) * 100 / b; else print "nan" }')
echo "--- figures"
printf '  requests/s       %s  (%s requests in %.1fs)\n' "$rps" "$requests" \
  "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')"
printf '  latency p50      %s ms\n' "$p50_ms"
printf '  latency p99      %s ms\n' "$p99_ms"
printf '  non-2xx          %s (lua count %s)\n' "$non2xx" "$lua_non2xx"
printf '  socket errors    %s (connect %s, read %s, write %s, timeout %s)\n' \
  "$errors" "$err_connect" "$err_read" "$err_write" "$err_timeout"
printf '  RSS after warm-up %s kB, after load %s kB, drift %s%%\n' \
  "${rss_before:-?}" "${rss_after:-?}" "$drift"
printf '  crashes beside    %s posted, %s stored, %s other answers, %s errors; %s kept (%s)\n' \
  "$posted" "$stored" "$other" "$churn_errors" "${crashes:-?}" "${RETENTION_ARGS[*]:-no retention}"

echo "--- checks"
[ "$requests" -gt 0 ] && ok=1 || ok=0
check "wrk ran" "$ok" "$requests requests"
n2=$non2xx
[ "$lua_non2xx" -gt "$n2" ] && n2=$lua_non2xx
[ "$n2" -eq 0 ] && ok=1 || ok=0
check "zero non-2xx answers" "$ok" "$n2"
[ "$errors" -eq 0 ] && ok=1 || ok=0
check "zero socket errors" "$ok" "connect $err_connect, read $err_read, write $err_write, timeout $err_timeout"
ok=$(awk -v d="$drift" -v m="$RSS_DRIFT_MAX_PCT" \
  'BEGIN { if (d != "nan" && d <= m + 0 && -d <= m + 0) print 1; else print 0 }')
check "RSS drift within ${RSS_DRIFT_MAX_PCT}%" "$ok" "${rss_before:-?} -> ${rss_after:-?} kB, $drift%"
if [ "$LOAD_CRASH_RATE" != 0 ]; then
  [ "$posted" -gt 0 ] && [ "$stored" = "$posted" ] && [ "$churn_errors" = 0 ] && ok=1 || ok=0
  check "every crash posted beside the load stored" "$ok" "$stored of $posted, $other other, $churn_errors errors"
  if [ "$MAX_CRASHES" != 0 ]; then
    want=$MAX_CRASHES
    [ "$stored" -lt "$want" ] && want=$stored
    [ "${crashes:--1}" = "$want" ] && ok=1 || ok=0
    check "retention kept the newest $MAX_CRASHES crashes" "$ok" "$crashes stored of $stored posted"
  fi
fi
spot=$("$PY" "$LIB" spot "$PORT" 2>&1) && ok=1 || ok=0
check "known addresses still symbolicate after the load" "$ok" "$spot"
hz=$(curl -s -o /dev/null -w '%{http_code}' "$URL/healthz")
kill -0 "$PID" 2>/dev/null && [ "$hz" = 200 ] && ok=1 || ok=0
check "server alive, /healthz 200" "$ok" "healthz $hz"
if grep -qE '^symd: 5[0-9][0-9] ' "$TMP/stderr"; then
  check "server logged no 5xx" 0 "$(grep -E '^symd: 5[0-9][0-9] ' "$TMP/stderr" | head -3)"
else
  check "server logged no 5xx" 1
fi
if grep -q 'retention' "$TMP/stderr"; then
  check "server logged no retention error" 0 "$(grep 'retention' "$TMP/stderr" | head -3)"
else
  check "server logged no retention error" 1
fi
kill -TERM "$PID"
rc=timeout
for _ in $(seq 1 150); do
  if ! kill -0 "$PID" 2>/dev/null; then wait "$PID"; rc=$?; break; fi
  sleep 0.1
done
[ "$rc" = 0 ] && ok=1 || ok=0
check "SIGTERM stops the server with status 0 within 15 s" "$ok" "status $rc"
PID=
finish
