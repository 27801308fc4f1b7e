#!/usr/bin/env bash
# tests/pg/suite.sh — the end-to-end tests on PostgreSQL: starts a throwaway
# cluster (tests/pg/start.sh), runs the release test binary's server tests
# with SYMD_TEST_PG set (every server the tests start gets a database of its
# own there; the multi-node tests run two symd processes on one; tests of
# the SQLite file itself say "skip"), and stops the cluster. Ends with the
# test binary's "N passed, N failed" line.
#   O=build-b bash tests/pg/suite.sh         another build folder
#   SANITIZE=address,undefined bash tests/pg/suite.sh   the ASan+UBSan build
#   bash tests/pg/suite.sh multinode_        only tests whose names hold an argument
# Environment: SYMD_PG_PORT (default 55433), SYMD_PG_DIR (default a fresh
# directory under /tmp), PG_BINDIR (see start.sh).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
SANITIZE=${SANITIZE:-}
port=${SYMD_PG_PORT:-55433}
if [ -n "$SANITIZE" ]; then
  bin=$PWD/$O/san/symd; tests=$PWD/$O/san/symd-tests
elif [ "$O" = build ]; then
  bin=$PWD/symd; tests=$PWD/$O/rel/symd-tests
else
  bin=$PWD/$O/rel/symd; tests=$PWD/$O/rel/symd-tests
fi
make -s O="$O" SANITIZE="$SANITIZE" "${bin#"$PWD"/}" "${tests#"$PWD"/}" ||
  { echo "0 passed, 1 failed"; exit 1; }

dir=${SYMD_PG_DIR:-$(mktemp -d /tmp/symd-pg.XXXXXX)}
if ! uri=$(bash tests/pg/start.sh "$dir" "$port"); then
  echo "tests/pg/suite.sh: no PostgreSQL cluster (bash scripts/deps.sh installs it)"
  echo "0 passed, 1 failed"
  exit 1
fi
trap 'bash tests/pg/stop.sh "$dir"' EXIT
trap 'exit 143' TERM INT
# shellcheck disable=SC1091
. "$dir/cluster.env" # BINDIR: psql for the harness
echo "postgres: $uri"

filters=("$@")
if [ ${#filters[@]} -eq 0 ]; then
  # The tests that start servers or open a store; the unit tests of parsers
  # and indexes have nothing to do with the backend.
  filters=(e2e_ ops_ roles_ openapi_ store_ upgrade_ cli_ multinode_ workflow_)
fi
start=$(date +%s)
PATH="$BINDIR:$PATH" SYMD_TEST_PG="$uri" SYMD_TEST_PG_DIR="$dir" SYMD_BIN="$bin" \
  "$tests" "${filters[@]}"
rc=$?
echo "postgres suite: $(($(date +%s) - start)) s"
exit $rc
