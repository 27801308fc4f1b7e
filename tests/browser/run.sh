#!/usr/bin/env bash
# Browser test of the dashboard (web/) in headless Debian Chromium.
#
#   bash tests/browser/run.sh           (from the repo root; SYMD_BIN defaults to ./symd)
#
# Installs what is missing (Debian's chromium as root; playwright-core with
# npm ci), starts two `symd serve` on free loopback ports, each with a fresh
# database: one with an upload token, one with a token for each role (read,
# upload, report), and one with grouping rules (--grouping-rules), runs
# tests/browser/dashboard.mjs against them and stops them. Screenshots and the servers' stderr (symd.log, symd-auth.log) go to
# tests/out/browser/. The last line is "N passed, N failed"; the exit status
# is node's.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SYMD_BIN=${SYMD_BIN:-./symd}
case "$SYMD_BIN" in */*) SYMD_BIN=$(cd "$(dirname "$SYMD_BIN")" && pwd)/$(basename "$SYMD_BIN") ;; esac

fail() { echo "browser: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "browser: installing Debian's chromium" >&2
        export DEBIAN_FRONTEND=noninteractive
        if ! { apt-get update -qq && apt-get install -y -qq chromium; } >&2; then
            fail "apt-get install chromium failed"
        fi
    else
        fail "/usr/bin/chromium missing (apt-get install chromium, as root)"
    fi
fi
command -v node >/dev/null || fail "node missing (Node.js >= 20 with npm)"
if [ ! -d "$HERE/node_modules/playwright-core" ]; then
    (cd "$HERE" && npm ci --no-audit --no-fund >&2) || fail "npm ci failed in tests/browser"
fi
[ -x "$SYMD_BIN" ] || fail "no symd binary at $SYMD_BIN (run make, or set SYMD_BIN)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/symd-browser.XXXXXX")
SERVER_PIDS=()
stop_servers() {
    for pid in "${SERVER_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${SERVER_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    SERVER_PIDS=()
}
cleanup() {
    stop_servers
    rm -rf "$WORK"
}
trap cleanup EXIT

OUT="$HERE/../out/browser"
mkdir -p "$OUT"

# start_symd NAME LOG [serve flags…]: a server on a free loopback port with
# its own fresh database; its address in $STARTED_URL.
start_symd() {
    local name=$1 log=$2 url=
    shift 2
    # the file exists before the server does: the first read below may come
    # before the started process has opened it
    : >"$WORK/$name.out"
    SYMD_ACCESS_LOG=off "$SYMD_BIN" serve --listen 127.0.0.1:0 --db "$WORK/$name.db" "$@" \
        >"$WORK/$name.out" 2>"$log" &
    local pid=$!
    SERVER_PIDS+=("$pid")
    for _ in $(seq 1 100); do   # up to 10 s
        url=$(sed -n '1s/^symd: listening on \(http:\/\/[^ ]*\).*/\1/p' "$WORK/$name.out")
        [ -n "$url" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$url" ]; then
        cat "$WORK/$name.out" "$log" >&2
        fail "symd ($name) did not start"
    fi
    STARTED_URL=$url
}

# The first server has an upload token: the image routes answer 401 until
# the dashboard sends it.
SYMD_UPLOAD_TOKEN="browser-$RANDOM$RANDOM"
export SYMD_UPLOAD_TOKEN
# Its webhook target listens nowhere (port 9 on loopback): every event
# stays pending, retried, and the webhooks view lists why.
start_symd symd "$OUT/symd.log" --webhook http://127.0.0.1:9/symd-hook --webhook-timeout 1
URL=$STARTED_URL

# The second has a token per role (read, upload, report): the dashboard's
# token prompt, from its first GET on. Its tokens go to node by environment.
SYMD_AUTH_READ_TOKEN="read-$RANDOM$RANDOM"
SYMD_AUTH_UPLOAD_TOKEN="upload-$RANDOM$RANDOM"
SYMD_AUTH_REPORT_TOKEN="report-$RANDOM$RANDOM"
export SYMD_AUTH_READ_TOKEN SYMD_AUTH_UPLOAD_TOKEN SYMD_AUTH_REPORT_TOKEN
start_symd symd-auth "$OUT/symd-auth.log" --read-token "$SYMD_AUTH_READ_TOKEN" \
    --upload-token "$SYMD_AUTH_UPLOAD_TOKEN" --report-token "$SYMD_AUTH_REPORT_TOKEN"
AUTH_URL=$STARTED_URL

# The third runs with grouping rules (--grouping-rules): the group page
# says which rule filed a group. The file's path goes to node by environment.
SYMD_RULES_FILE="$WORK/grouping-rules.txt"
export SYMD_RULES_FILE
cat >"$SYMD_RULES_FILE" <<'RULES'
# every crash in libfix is one bug
image:libfix.dylib -> libfix crashes
RULES
start_symd symd-rules "$OUT/symd-rules.log" --grouping-rules "$SYMD_RULES_FILE"
RULES_URL=$STARTED_URL

status=0
node "$HERE/dashboard.mjs" "$URL" "$AUTH_URL" "$RULES_URL" || status=$?

stop_servers
exit "$status"
