#!/usr/bin/env bash
# Checks that symd's build and test dependencies are present. As root it
# installs what is missing from Debian; otherwise it names the packages.
# PostgreSQL (server and libpq) is for the --db postgresql:// backend and the
# suite that runs the end-to-end tests on it (tests/pg/start.sh).
set -euo pipefail

# header-or-command  Debian package
need=(
  "/usr/include/microhttpd.h libmicrohttpd-dev"
  "/usr/include/sqlite3.h libsqlite3-dev"
  "/usr/include/jansson.h libjansson-dev"
  "/usr/include/zip.h libzip-dev"
  "/usr/include/zstd.h libzstd-dev"
  "/usr/include/zlib.h zlib1g-dev"
  "/usr/include/openssl/evp.h libssl-dev"
  "/usr/include/libiberty/demangle.h libiberty-dev"
  "/usr/bin/pkg-config pkg-config"
  "/usr/bin/clang-14 clang-14"
  "/usr/bin/sqlite3 sqlite3"
  "/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a libclang-rt-14-dev"
  "/usr/lib/llvm-14/bin/llvm-symbolizer llvm-14"
  "/usr/bin/ld64.lld-14 lld-14"
  "/usr/bin/curl curl"
  "/usr/bin/wrk wrk"
  "/usr/bin/python3 python3"
  "/usr/include/postgresql/libpq-fe.h libpq-dev"
  "/usr/lib/postgresql/15/bin/initdb postgresql"
  "/usr/bin/lldb-14 lldb-14"
  "/usr/bin/npm npm"
  "/usr/sbin/nginx nginx-light"
)
missing=()
for entry in "${need[@]}"; do
  path=${entry% *}; pkg=${entry#* }
  [ -e "$path" ] || missing+=("$pkg")
done

# Breakpad's minidump_stackwalk, prebuilt inside the npm package minidump
# (pinned by tests/oracle/package-lock.json; its install script, which would
# build from source, is not run): the oracle of the minidump tests, which
# skip and say so without it.
oracle() {
  local dir
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/oracle" && pwd)
  [ -x "$dir/node_modules/minidump/bin/linux-x64/minidump_stackwalk" ] && return 0
  command -v npm >/dev/null || { echo "deps: npm missing: the minidump oracle is not installed" >&2; return 0; }
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >&2) ||
    echo "deps: npm ci in tests/oracle failed: the minidump tests will skip their oracle" >&2
}

if [ ${#missing[@]} -eq 0 ]; then
  oracle
  exit 0
fi

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if [[ " ${missing[*]} " == *" postgresql "* ]] && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    # The tests start clusters of their own (tests/pg/start.sh): no system
    # cluster "main" on port 5432, created and started by the package.
    apt-get install -y -qq --no-install-recommends postgresql-common >&2
    sed -ri 's/^#?\s*create_main_cluster\b.*$/create_main_cluster = false/' \
      /etc/postgresql-common/createcluster.conf
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  oracle
else
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi

