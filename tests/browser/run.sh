#!/usr/bin/env bash
# Browser test of the dashboard (web/) in headless Debian Chromium.
#
#   bash tests/browser/run.sh           (from the repo root; SYMD_BIN defaults to ./symd)
#
# Installs what is missing (Debian's chromium as root; playwright-core with
# npm ci), starts `symd serve` on a free loopback port with a fresh database
# and an upload token, runs tests/browser/dashboard.mjs against it and stops
# the server. Screenshots and symd's stderr (symd.log) go to
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
SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# The token makes the image routes answer 401 until the dashboard sends it.
SYMD_UPLOAD_TOKEN="browser-$RANDOM$RANDOM"
export SYMD_UPLOAD_TOKEN
OUT="$HERE/../out/browser"
mkdir -p "$OUT"
SYMD_ACCESS_LOG=off "$SYMD_BIN" serve --listen 127.0.0.1:0 --db "$WORK/symd.db" \
    >"$WORK/server.out" 2>"$OUT/symd.log" &
SERVER_PID=$!

URL=
for _ in $(seq 1 100); do   # up to 10 s
    URL=$(sed -n '1s/^symd: listening on \(http:\/\/[^ ]*\).*/\1/p' "$WORK/server.out")
    [ -n "$URL" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$URL" ]; then
    cat "$WORK/server.out" "$OUT/symd.log" >&2
    fail "symd did not start"
fi

status=0
node "$HERE/dashboard.mjs" "$URL" || status=$?

kill -TERM "$SERVER_PID" 2>/dev/null || true
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
exit "$status"
