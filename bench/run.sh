#!/usr/bin/env bash
# make bench: symd against llvm-symbolizer on a real third-party binary.
# See bench/README.md for what is measured and how to read the output.
#
# Knobs (environment):
#   BENCH_SECONDS=10       length of each wrk run
#   BENCH_CONNS="2 4 8 16" wrk connection counts to try; the best is reported
#   BENCH_WRK_THREADS=2    wrk threads (capped at the connection count)
#   BENCH_SAMPLES=20000    sampled addresses per arch for the accuracy check
#   BENCH_SEED=1           seed of the samples and the wrk bodies
#   BENCH_BODIES=64        distinct wrk request bodies, BENCH_FRAMES frames each
#   BENCH_FRAMES=200
#   BENCH_SERVER_THREADS=  symd serve --threads (default: symd's, one per core)
#   BENCH_SYMD=./symd      the symd binary to measure (e.g. another build)
#   BENCH_STRICT=1         also exit non-zero when a performance goal is missed
set -euo pipefail

if [ -n "${BENCH_SYMD:-}" ]; then BENCH_SYMD=$(realpath "$BENCH_SYMD"); fi
cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH=$ROOT/bench
CACHE=$BENCH/.cache
BENCH_SECONDS=${BENCH_SECONDS:-10}
BENCH_CONNS=${BENCH_CONNS:-"2 4 8 16"}
BENCH_WRK_THREADS=${BENCH_WRK_THREADS:-2}
BENCH_SAMPLES=${BENCH_SAMPLES:-20000}
BENCH_SEED=${BENCH_SEED:-1}
BENCH_BODIES=${BENCH_BODIES:-64}
BENCH_FRAMES=${BENCH_FRAMES:-200}
BENCH_SERVER_THREADS=${BENCH_SERVER_THREADS:-}
BENCH_STRICT=${BENCH_STRICT:-}
SYMD=${BENCH_SYMD:-$ROOT/symd}

PKG=@sentry/cli-darwin@3.8.0
TARBALL=sentry-cli-darwin-3.8.0.tgz
TARBALL_SHA1=6dc657e8486d3c30149e535af57b4bef165ed5aa # npm's shasum for 3.8.0

say() { printf '== %s\n' "$*"; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# ---- tools --------------------------------------------------------------------
if command -v llvm-config-14 >/dev/null; then
    PATH=$(llvm-config-14 --bindir):$PATH
fi
apt_install() {
    if [ "$(id -u)" != 0 ]; then
        die "$1 is missing; install it (apt-get install $2)"
    fi
    say "installing $2"
    apt-get install -y "$2" >/dev/null 2>&1 ||
        { apt-get update >/dev/null && apt-get install -y "$2" >/dev/null; } ||
        die "apt-get install $2 failed"
}
command -v wrk >/dev/null || apt_install wrk wrk
for t in llvm-nm llvm-objdump llvm-lipo llvm-symbolizer; do
    if ! command -v $t >/dev/null; then
        apt_install $t llvm-14
        PATH=$(llvm-config-14 --bindir):$PATH
    fi
done
command -v npm >/dev/null || apt_install npm npm
command -v python3 >/dev/null || die "python3 is missing"
export PATH
if [ -z "${BENCH_SYMD:-}" ] && [ ! -x "$SYMD" ]; then make -C "$ROOT" symd >/dev/null; fi
[ -x "$SYMD" ] || die "$SYMD is not an executable"
PY="python3 $BENCH/bench.py"

# ---- fetch --------------------------------------------------------------------
mkdir -p "$CACHE"
if [ -f "$CACHE/$TARBALL" ] && [ "$(sha1sum <"$CACHE/$TARBALL" | cut -d' ' -f1)" != "$TARBALL_SHA1" ]; then
    say "cached $TARBALL has the wrong checksum; fetching again"
    rm -f "$CACHE/$TARBALL" "$CACHE/sentry-cli"
fi
if [ ! -f "$CACHE/$TARBALL" ]; then
    say "fetching $PKG"
    (cd "$CACHE" && npm pack --silent "$PKG" >/dev/null)
    [ -f "$CACHE/$TARBALL" ] || die "npm pack did not produce $TARBALL"
fi
FAT=$CACHE/sentry-cli
if [ ! -f "$FAT" ] || [ ! -f "$CACHE/arm64" ] || [ ! -f "$CACHE/x86_64" ]; then
    tar -xzf "$CACHE/$TARBALL" -C "$CACHE" package/bin/sentry-cli
    mv "$CACHE/package/bin/sentry-cli" "$FAT"
    rm -rf "$CACHE/package"
    llvm-lipo -thin arm64 "$FAT" -output "$CACHE/arm64"
    llvm-lipo -thin x86_64 "$FAT" -output "$CACHE/x86_64"
fi
say "binary: $(llvm-lipo -info "$FAT" | sed 's/.*: //') ($(stat -c %s "$FAT") bytes)"

# ---- server -------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/symd-bench.XXXXXX")
RES=$WORK/results
mkdir -p "$RES"
SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

say "sampling $BENCH_SAMPLES addresses per arch (seed $BENCH_SEED)"
for arch in arm64 x86_64; do
    $PY sample --slice "$CACHE/$arch" --arch $arch --n "$BENCH_SAMPLES" \
        --seed "$BENCH_SEED" --out "$WORK/samples-$arch.json"
done

say "starting $SYMD serve"
server_args=(serve --listen 127.0.0.1:0 --db "$WORK/bench.db")
[ -n "$BENCH_SERVER_THREADS" ] && server_args+=(--threads "$BENCH_SERVER_THREADS")
"$SYMD" "${server_args[@]}" >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER_PID=$!
URL=
for _ in $(seq 200); do
    URL=$(sed -n 's/^symd: listening on \(http:[^ ]*\)$/\1/p' "$WORK/serve.out")
    [ -n "$URL" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve.err" >&2; die "symd serve exited"; }
    sleep 0.05
done
[ -n "$URL" ] || die "symd serve did not report its address"
echo "$URL (pid $SERVER_PID, db $WORK/bench.db)"

say "upload -> queryable"
$PY upload --url "$URL" --file "$FAT" --samples "$WORK/samples-arm64.json" \
    --out "$RES/upload.json"

say "accuracy: symd vs llvm-symbolizer --no-demangle (and vs llvm-nm)"
for arch in arm64 x86_64; do
    $PY accuracy --url "$URL" --arch $arch --slice "$CACHE/$arch" \
        --samples "$WORK/samples-$arch.json" --upload "$RES/upload.json" \
        --out "$RES/accuracy-$arch.json"
done

say "alias probe: symbols moved onto one address in a copy of the slice (symd atos)"
for arch in arm64 x86_64; do
    $PY aliases --slice "$CACHE/$arch" --symd "$SYMD" --out "$RES/aliases-$arch.json"
done

say "throughput: $BENCH_BODIES bodies x $BENCH_FRAMES frames of arm64 addresses"
$PY bodies --samples "$WORK/samples-arm64.json" --upload "$RES/upload.json" \
    --dir "$WORK/bodies" --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" \
    --seed "$BENCH_SEED"
$PY load --out "$RES/load.json"

# llvm-symbolizer first (calibration and every variant), then after each wrk
# run again: each symd figure has an llvm-symbolizer figure next to it in time,
# which matters on a shared host whose speed drifts.
say "llvm-symbolizer --obj=arm64 on the same addresses (batch on stdin)"
$PY symbolizer --phase before --slice "$CACHE/arm64" --addrs "$WORK/bodies/addrs.txt" \
    --out "$RES/symbolizer-before.json"

say "symd: wrk POST /v1/symbolicate, each run followed by llvm-symbolizer"
for c in $BENCH_CONNS; do
    $PY wrk --url "$URL" --script "$BENCH/symbolicate.lua" --bodies "$WORK/bodies" \
        --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" --server-pid "$SERVER_PID" \
        --conns "$c" --threads "$BENCH_WRK_THREADS" --seconds "$BENCH_SECONDS" \
        --log "$WORK/wrk-$c.log" --out "$RES/wrk-$c.json"
    $PY symbolizer --phase "after-c$c" --runs 1 --slice "$CACHE/arm64" \
        --addrs "$WORK/bodies/addrs.txt" --reps-from "$RES/symbolizer-before.json" \
        --out "$RES/symbolizer-after-c$c.json"
done

if [ -s "$WORK/serve.err" ]; then
    say "symd serve stderr"
    cat "$WORK/serve.err"
fi

say "summary"
rm -rf "$CACHE/last" && mkdir -p "$CACHE/last" # kept for a look after the run
cp "$RES"/*.json "$WORK"/wrk-*.log "$CACHE/last/"
rc=0
$PY summary --dir "$RES" --out "$CACHE/last-summary.txt" ${BENCH_STRICT:+--strict} || rc=$?
exit $rc
