#!/usr/bin/env bash
# make bench: symd against llvm-symbolizer on a real third-party binary
# (symbol tables), then against llvm-symbolizer --inlining and llvm-gsymutil
# on a generated program with a dSYM (DWARF: lines and inlined frames), Swift
# names, the crash path and crash store at scale (crash section), and symd on
# PostgreSQL against SQLite, one node and two (postgres section), and real
# minidumps walked against Breakpad's minidump_stackwalk with symd dump-syms
# (minidump section).
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
#   BENCH_SECTIONS="symtab dwarf swift crash postgres"  which parts to run ("pg": postgres)
#   BENCH_DWARF_FUNCTIONS=6000     functions of the generated program
#   BENCH_DWARF_UNITS=20           its translation units (BENCH_DWARF_CXX_UNITS=4 of them C++)
#   BENCH_DWARF_WAIT=30    seconds to wait for the dSYM to become queryable
#   BENCH_JOBS=2           parallel compiles of the generated program
#   BENCH_CRASH_SECONDS=5  length of each wrk run of the crash section
#   BENCH_CRASH_CONNS=4    its wrk connections
#   BENCH_CRASH_ROUNDS=2   rounds of its throughput comparisons (best of each side)
#   BENCH_CRASH_PARTS="frames reports store images"  which parts of it run
#   BENCH_CRASH_LEVELS="2000 20000 200000"  stored crashes at which the listings are timed
#   BENCH_CRASH_GETS=200   sequential GETs per listing route and level
#   BENCH_CRASH_IMAGES=10000  stored images of the cache part
#   BENCH_CRASH_CACHE_MB=  its small --cache-mb (default: about 5% of the indexes)
#   BENCH_CRASH_FIT_MB=256 its --cache-mb that holds every index
#   BENCH_CRASH_REPORTS=   directory of the real reports (default ../shared/real-reports)
#   BENCH_CRASH_SMALL, BENCH_CRASH_BIG  the two real reports (file names in it)
#   BENCH_PG_SECONDS=10    length of each wrk run of the postgres section
#   BENCH_PG_CONNS=8       its wrk connections per node
#   BENCH_PG_ROUNDS=2      its rounds (best of each configuration)
#   BENCH_PG_PORT=55433    the port of its throwaway cluster (tests/pg/start.sh)
#   BENCH_PG_POOL=         symd serve --db-pool on PostgreSQL (default: symd's)
#   BENCH_PG_REPORT=       the real report its crash posts store (default: the crash
#                          section's small one, BENCH_CRASH_SMALL in BENCH_CRASH_REPORTS)
#   BENCH_MD_DIR=          the real minidumps (default ../shared/minidumps)
#   BENCH_MD_STACKWALK=    Breakpad's minidump_stackwalk (default: tests/oracle's npm package)
#   BENCH_MD_SETS="sym binary"  symd's symbol sets: the .sym files; binaries + dSYMs
#   BENCH_MD_SECONDS=2     length of each wrk run of the minidump section (one per dump)
#   BENCH_MD_CONNS=2       its wrk connections, and minidump_stackwalk processes at once
#   BENCH_MD_RUNS=60       processes per dump and round (minidump_stackwalk, symd crash)
#   BENCH_MD_ROUNDS=2      its rounds (best of each side)
#   BENCH_MD_DUMPSYMS_RUNS=3  symd dump-syms runs per binary (the best is kept)
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
# a report's cost step by step, in-process (make bench builds it)
CRASH_COSTS=${BENCH_CRASH_COSTS:-$ROOT/build/rel/crash-costs}
BENCH_SECTIONS=${BENCH_SECTIONS:-"symtab dwarf swift crash postgres minidump"}
BENCH_DWARF_FUNCTIONS=${BENCH_DWARF_FUNCTIONS:-6000}
BENCH_DWARF_UNITS=${BENCH_DWARF_UNITS:-20}
BENCH_DWARF_CXX_UNITS=${BENCH_DWARF_CXX_UNITS:-4}
BENCH_DWARF_WAIT=${BENCH_DWARF_WAIT:-30}
BENCH_JOBS=${BENCH_JOBS:-2}
BENCH_CRASH_SECONDS=${BENCH_CRASH_SECONDS:-5}
BENCH_CRASH_CONNS=${BENCH_CRASH_CONNS:-4}
BENCH_CRASH_ROUNDS=${BENCH_CRASH_ROUNDS:-2}
BENCH_CRASH_PARTS=${BENCH_CRASH_PARTS:-"frames reports store images"}
BENCH_CRASH_LEVELS=${BENCH_CRASH_LEVELS:-"2000 20000 200000"}
BENCH_CRASH_GETS=${BENCH_CRASH_GETS:-200}
BENCH_CRASH_IMAGES=${BENCH_CRASH_IMAGES:-10000}
BENCH_CRASH_CACHE_MB=${BENCH_CRASH_CACHE_MB:-}
BENCH_CRASH_FIT_MB=${BENCH_CRASH_FIT_MB:-256}
BENCH_CRASH_REPORTS=${BENCH_CRASH_REPORTS:-}
BENCH_CRASH_SMALL=${BENCH_CRASH_SMALL:-inket+MacSymbolicator+MacSymbolicatorTests_Resources_Other_ios-crash-with-json-header.crash}
BENCH_CRASH_BIG=${BENCH_CRASH_BIG:-faisalmemon+ios-crash-dump-analysis-book+examples_adventure_pac_crash_ios_adventure_crash_ios.crash}
BENCH_PG_SECONDS=${BENCH_PG_SECONDS:-10}
BENCH_PG_CONNS=${BENCH_PG_CONNS:-8}
BENCH_PG_ROUNDS=${BENCH_PG_ROUNDS:-2}
BENCH_PG_PORT=${BENCH_PG_PORT:-55433}
BENCH_PG_POOL=${BENCH_PG_POOL:-}
BENCH_MD_DIR=${BENCH_MD_DIR:-}
BENCH_MD_STACKWALK=${BENCH_MD_STACKWALK:-$ROOT/tests/oracle/node_modules/minidump/bin/linux-x64/minidump_stackwalk}
BENCH_MD_SETS=${BENCH_MD_SETS:-"sym binary"}
BENCH_MD_SECONDS=${BENCH_MD_SECONDS:-2}
BENCH_MD_CONNS=${BENCH_MD_CONNS:-2}
BENCH_MD_RUNS=${BENCH_MD_RUNS:-60}
BENCH_MD_ROUNDS=${BENCH_MD_ROUNDS:-2}
BENCH_MD_DUMPSYMS_RUNS=${BENCH_MD_DUMPSYMS_RUNS:-3}
BENCH_SECTIONS=" $BENCH_SECTIONS "
BENCH_SECTIONS=${BENCH_SECTIONS// pg / postgres }
want() { [[ " $BENCH_SECTIONS " == *" $1 "* ]]; }

# wrk_rounds PREFIX BODIES SLICE [symbolizer args...]: for each connection
# count, wrk at saturation on /v1/symbolicate with the request bodies of
# BODIES, then llvm-symbolizer once over the same addresses, so every ratio
# compares runs made back to back. Results: $RES/PREFIXwrk-C.json and
# $RES/PREFIXsymbolizer-after-cC.json (repetitions from PREFIXsymbolizer-before).
wrk_rounds() {
    local prefix=$1 bodies=$2 slice=$3 c
    shift 3
    for c in $BENCH_CONNS; do
        $PY wrk --url "$URL" --script "$BENCH/symbolicate.lua" --bodies "$bodies" \
            --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" --server-pid "$SERVER_PID" \
            --conns "$c" --threads "$BENCH_WRK_THREADS" --seconds "$BENCH_SECONDS" \
            --log "$WORK/${prefix}wrk-$c.log" --out "$RES/${prefix}wrk-$c.json"
        $PY symbolizer --phase "after-c$c" --runs 1 --slice "$slice" "$@" \
            --addrs "$bodies/addrs.txt" --reps-from "$RES/${prefix}symbolizer-before.json" \
            --out "$RES/${prefix}symbolizer-after-c$c.json"
    done
}

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
for t in llvm-nm llvm-objdump llvm-lipo llvm-symbolizer llvm-dwarfdump llvm-gsymutil \
         clang ld64.lld dsymutil; do
    if ! command -v $t >/dev/null; then
        case $t in clang) pkg=clang-14 ;; ld64.lld) pkg=lld-14 ;; *) pkg=llvm-14 ;; esac
        apt_install $t $pkg
        PATH=$(llvm-config-14 --bindir):$PATH
    fi
done
if want symtab || want swift || want postgres; then command -v npm >/dev/null || apt_install npm npm; fi
command -v sqlite3 >/dev/null || apt_install sqlite3 sqlite3
command -v python3 >/dev/null || die "python3 is missing"
export PATH
if [ -z "${BENCH_SYMD:-}" ] && [ ! -x "$SYMD" ]; then make -C "$ROOT" symd >/dev/null; fi
[ -x "$SYMD" ] || die "$SYMD is not an executable"
PY="python3 $BENCH/bench.py"

# ---- work directory, server ----------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/symd-bench.XXXXXX")
RES=$WORK/results
mkdir -p "$RES"
SERVER_PID=
SECOND_PID=
THIRD_PID=
PG_DIR=
cleanup() {
    local pid
    for pid in "$SERVER_PID" "$SECOND_PID" "$THIRD_PID"; do
        if [ -n "$pid" ]; then
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    if [ -n "$PG_DIR" ]; then bash "$ROOT/tests/pg/stop.sh" "$PG_DIR" || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_server NAME [ARGS...]: symd serve on an ephemeral port and the
# database $WORK/NAME.db (fresh unless an earlier server of that NAME left
# one), or $SERVER_DB when set (a postgresql:// URI), with ARGS added; sets
# SERVER_PID, URL, DB.
start_server() {
    DB=${SERVER_DB:-$WORK/$1.db}
    say "starting $SYMD serve (database $1.db${2:+; ${*:2}})"
    # The access log stays on, as in production, in a file of its own so
    # stderr keeps only diagnostics.
    local server_args=(serve --listen 127.0.0.1:0 --db "$DB" --access-log "$WORK/access-$1.log")
    [ -n "$BENCH_SERVER_THREADS" ] && server_args+=(--threads "$BENCH_SERVER_THREADS")
    server_args+=("${@:2}")
    "$SYMD" "${server_args[@]}" >"$WORK/serve-$1.out" 2>"$WORK/serve-$1.err" &
    SERVER_PID=$!
    SERVER_NAME=$1
    URL=
    for _ in $(seq 200); do
        # (no file yet when the shell has not started the server yet)
        URL=$(sed -n 's/^symd: listening on \(http:[^ ]*\)$/\1/p' "$WORK/serve-$1.out" 2>/dev/null || true)
        [ -n "$URL" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve-$1.err" >&2; die "symd serve exited"; }
        sleep 0.05
    done
    [ -n "$URL" ] || die "symd serve did not report its address"
    echo "$URL (pid $SERVER_PID, db ${DB%%\?*})"
}
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=
    fi
    if [ -s "$WORK/serve-$SERVER_NAME.err" ]; then
        say "symd serve stderr ($SERVER_NAME)"
        cat "$WORK/serve-$SERVER_NAME.err"
    fi
}

# ---- symbol tables: sentry-cli ---------------------------------------------
# symtab_prepare: sentry-cli from npm (cached), its two slices and
# BENCH_SAMPLES sampled addresses of each; sets FAT. The symtab and postgres
# sections share it.
symtab_prepare() {
    [ -n "${FAT:-}" ] && return 0
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

    say "sampling $BENCH_SAMPLES addresses per arch (seed $BENCH_SEED)"
    for arch in arm64 x86_64; do
        $PY sample --slice "$CACHE/$arch" --arch $arch --n "$BENCH_SAMPLES" \
            --seed "$BENCH_SEED" --out "$WORK/samples-$arch.json"
    done
}

if want symtab; then
    symtab_prepare
    start_server bench
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
    wrk_rounds "" "$WORK/bodies" "$CACHE/arm64"

    stop_server

fi

# ---- DWARF: a generated program with a dSYM ---------------------------------
# build_dwarf_program: bench/gen_program.py's sources, compiled for arm64
# (-O2 -g, DWARF 4), linked by ld64.lld, dSYM by dsymutil 14, all under
# $CACHE/dwarf and rebuilt only when the generator, its arguments, the flags
# or the tools change. The objects are deleted once the dSYM exists.
build_dwarf_program() {
    local dir=$CACHE/dwarf
    local src=$dir/src obj=$dir/obj
    local gen_args=(--seed "$BENCH_SEED" --functions "$BENCH_DWARF_FUNCTIONS"
                    --units "$BENCH_DWARF_UNITS" --cxx-units "$BENCH_DWARF_CXX_UNITS")
    local cflags="-target arm64-apple-macos11 -O2 -g -fdebug-compilation-dir=."
    local key
    key=$({ cat "$BENCH/gen_program.py"; echo "${gen_args[*]} $cflags"; clang --version
            ld64.lld --version; dsymutil --version; } | sha256sum | cut -d' ' -f1)
    if [ -f "$dir/stamp" ] && [ "$(cat "$dir/stamp")" = "$key" ] && [ -f "$dir/prog" ] &&
       [ -f "$dir/prog.dSYM/Contents/Resources/DWARF/prog" ] && [ -f "$dir/stats.json" ]; then
        say "DWARF: program cached in $dir"
        $PY dw-stats --binary "$dir/prog" --dwarf "$dir/prog.dSYM/Contents/Resources/DWARF/prog" \
            --out "$dir/stats.json" >/dev/null
        return
    fi
    say "DWARF: generating and building the program ($BENCH_DWARF_FUNCTIONS functions, $BENCH_DWARF_UNITS units, -j$BENCH_JOBS)"
    rm -rf "$dir"
    mkdir -p "$src" "$obj"
    local t0=$SECONDS
    python3 "$BENCH/gen_program.py" --out "$src" "${gen_args[@]}"
    # shellcheck disable=SC2016
    (cd "$src" && CFLAGS_DW=$cflags xargs -P "$BENCH_JOBS" -I{} sh -c '
        case "$1" in *.cpp) x="-nostdinc++ -fno-exceptions -fno-rtti" ;; *) x= ;; esac
        exec clang $CFLAGS_DW $x -c "$1" -o "$2/$1.o"' sh {} "$obj" <units.txt) ||
        die "compiling the generated program failed"
    ZERO_AR_DATE=1 ld64.lld -arch arm64 -platform_version macos 11.0 11.0 -e _main \
        -undefined dynamic_lookup -oso_prefix "$obj/" -o "$dir/prog" "$obj"/*.o
    dsymutil --num-threads "$BENCH_JOBS" --oso-prepend-path="$obj" -o "$dir/prog.dSYM" "$dir/prog"
    rm -rf "$obj"
    echo "built in $((SECONDS - t0)) s"
    $PY dw-stats --binary "$dir/prog" --dwarf "$dir/prog.dSYM/Contents/Resources/DWARF/prog" \
        --out "$dir/stats.json"
    echo "$key" >"$dir/stamp"
}

if want dwarf; then
    mkdir -p "$CACHE"
    build_dwarf_program
    PROG=$CACHE/dwarf/prog
    DSYM=$CACHE/dwarf/prog.dSYM
    DWFILE=$DSYM/Contents/Resources/DWARF/prog
    cp "$CACHE/dwarf/stats.json" "$RES/dw-stats.json"

    say "DWARF: sampling $BENCH_SAMPLES addresses inside functions (seed $BENCH_SEED)"
    $PY sample --slice "$PROG" --arch arm64 --n "$BENCH_SAMPLES" --seed "$BENCH_SEED" \
        --out "$WORK/dw-samples.json"

    say "DWARF: llvm-gsymutil --convert of the dSYM's DWARF file (best of 3)"
    $PY dw-gsym --dwarf "$DWFILE" --work "$WORK" --out "$RES/dw-gsym.json"

    say "DWARF: reference answers, llvm-symbolizer --inlining --obj=prog --dsym-hint=prog.dSYM"
    $PY dw-reference --binary "$PROG" --dsym "$DSYM" --samples "$WORK/dw-samples.json" \
        --out "$WORK/dw-reference.json"

    start_server dwarf
    say "DWARF: upload the binary, then the dSYM: upload -> queryable with file:line"
    dw_ok=1
    $PY dw-upload --url "$URL" --binary "$PROG" --dwarf "$DWFILE" \
        --reference "$WORK/dw-reference.json" --server-pid "$SERVER_PID" \
        --timeout "$BENCH_DWARF_WAIT" --out "$RES/dw-upload.json" || dw_ok=0
    $PY dw-index --db "$DB" --out "$RES/dw-index.json" || true
    if [ "$dw_ok" = 1 ]; then
        say "DWARF accuracy: symd vs llvm-symbolizer --inlining --no-demangle, every inlined level"
        $PY dw-accuracy --url "$URL" --upload "$RES/dw-upload.json" \
            --reference "$WORK/dw-reference.json" --out "$RES/dw-accuracy.json" || dw_ok=0
    fi

    say "DWARF throughput: $BENCH_BODIES bodies x $BENCH_FRAMES frames, \"adjust\": \"none\""
    $PY bodies --samples "$WORK/dw-samples.json" --upload "$RES/dw-stats.json" \
        --dir "$WORK/dw-bodies" --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" \
        --seed "$BENCH_SEED" --adjust none
    $PY load --out "$RES/dw-load.json"
    say "llvm-symbolizer --inlining --obj=prog --dsym-hint=prog.dSYM on the same addresses"
    $PY symbolizer --phase before --slice "$PROG" --extra=--dsym-hint="$DSYM" --extra=--inlining \
        --addrs "$WORK/dw-bodies/addrs.txt" --out "$RES/dw-symbolizer-before.json"
    if [ "$dw_ok" = 1 ]; then
        say "symd: wrk POST /v1/symbolicate (lines + inlines), each run followed by llvm-symbolizer"
        wrk_rounds dw- "$WORK/dw-bodies" "$PROG" --extra=--dsym-hint="$DSYM" --extra=--inlining
    else
        say "DWARF: FAIL: symd gave no usable line data; its throughput is not measured"
    fi
    stop_server
fi

# ---- Swift: real Swift binaries from npm -------------------------------------
if want swift; then
    say "Swift: fetching real Swift binaries (fixtures/fetch-swift.sh)"
    bash "$ROOT/fixtures/fetch-swift.sh"
    SW=$ROOT/fixtures/.cache/swift
    for arch in arm64 x86_64; do
        llvm-lipo -thin $arch "$SW/aperture" -output "$WORK/aperture-$arch"
        $PY sample --slice "$WORK/aperture-$arch" --arch $arch --n "$BENCH_SAMPLES" \
            --seed "$BENCH_SEED" --out "$WORK/swift-samples-$arch.json"
    done
    say "Swift names per second: symd demangle, both styles"
    $PY swift-names --symd "$SYMD" --work "$WORK" --nm "$SW/aperture.arm64.nm" \
        --nm "$SW/aperture.x86_64.nm" --out "$RES/swift-names.json"
    start_server swift
    say "Swift: upload -> queryable of a Swift-heavy index (aperture, fat)"
    $PY upload --url "$URL" --file "$SW/aperture" --name aperture \
        --samples "$WORK/swift-samples-arm64.json" --out "$RES/swift-upload.json"
    $PY swift-first --slice "$WORK/aperture-arm64" --samples "$WORK/swift-samples-arm64.json" \
        --out "$RES/swift-first.json"
    say "Swift accuracy: symd vs llvm-symbolizer --no-demangle"
    for arch in arm64 x86_64; do
        $PY accuracy --url "$URL" --arch $arch --slice "$WORK/aperture-$arch" \
            --samples "$WORK/swift-samples-$arch.json" --upload "$RES/swift-upload.json" \
            --out "$RES/swift-accuracy-$arch.json"
    done
    stop_server
fi

# ---- crash path and crash store at scale ----------------------------------------
crash_part() { [[ " $BENCH_CRASH_PARTS " == *" $1 "* ]]; }
# crash_wrk LABEL PATH BODIES COUNT CTYPE FRAMES [EXPECT [HEADER]]: one wrk
# run of bench/bodies.lua against the current server; result
# $RES/crash-LABEL.json.
crash_wrk() {
    $PY crash-wrk --url "$URL" --path "$2" --script "$BENCH/bodies.lua" --bodies "$3" \
        --count "$4" --ctype "$5" --frames "$6" ${7:+--expect "$7"} ${8:+--header "$8"} --label "$1" \
        --server-pid "$SERVER_PID" --conns "$BENCH_CRASH_CONNS" --threads "$BENCH_WRK_THREADS" \
        --seconds "$BENCH_CRASH_SECONDS" --log "$WORK/crash-wrk-$1.log" --out "$RES/crash-$1.json"
}

if want crash; then
    CR=$WORK/crash
    FIX=$ROOT/fixtures
    APP=$FIX/bin/bigapp-arm64
    APP_DSYM=$FIX/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64
    mkdir -p "$CR"
    $PY sample --slice "$APP" --arch arm64 --n "$BENCH_SAMPLES" --seed "$BENCH_SEED" \
        --out "$CR/app-samples.json"
    $PY load --out "$RES/crash-load.json"

    if crash_part frames; then
        say "crash 1/4: frames of an uploaded image vs never-uploaded ones (/v1/symbolicate)"
        start_server crash-frames
        $PY crash-upload --url "$URL" --file "$APP" --out "$CR/frames-upload.json"
        $PY crash-frame-bodies --url "$URL" --samples "$CR/app-samples.json" \
            --upload "$CR/frames-upload.json" --found "$CR/found" --missing "$CR/missing" \
            --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" --seed "$BENCH_SEED" \
            --out "$RES/crash-frames-bodies.json"
        for r in $(seq "$BENCH_CRASH_ROUNDS"); do
            crash_wrk "frames-found-$r" /v1/symbolicate "$CR/found" "$BENCH_BODIES" \
                application/json "$BENCH_FRAMES" 200
            crash_wrk "frames-missing-$r" /v1/symbolicate "$CR/missing" "$BENCH_BODIES" \
                application/json "$BENCH_FRAMES" 200
        done
        stop_server
    fi

    if crash_part reports; then
        REPORTS=$BENCH_CRASH_REPORTS
        if [ -z "$REPORTS" ]; then
            for d in "$ROOT/../shared/real-reports" /work/shared/real-reports; do
                [ -d "$d" ] && { REPORTS=$d; break; }
            done
        fi
        for which in small big; do
            if [ $which = small ]; then rep=$REPORTS/$BENCH_CRASH_SMALL; else rep=$REPORTS/$BENCH_CRASH_BIG; fi
            if [ -z "$REPORTS" ] || [ ! -f "$rep" ]; then
                # Not fatal here: the other sections' summaries still come.
                say "crash 2/4: FAIL: no report $rep (set BENCH_CRASH_REPORTS)"
                printf '{"missing": "%s"}\n' "$rep" >"$RES/crash-report-$which-missing.json"
                continue
            fi
            say "crash 2/4: a real report stored vs its frames raw ($which: $(basename "$rep"))"
            if [ -x "$CRASH_COSTS" ]; then
                "$CRASH_COSTS" "$rep" "$CR" >"$RES/crash-costs-$which.json"
            else
                say "crash 2/4: no $CRASH_COSTS (make build/rel/crash-costs): no cost per step"
            fi
            for r in $(seq "$BENCH_CRASH_ROUNDS"); do
                # A fresh database each round: stored reports grow it.
                start_server "crash-report-$which-$r"
                $PY crash-report-prep --url "$URL" --report "$rep" --dir "$CR/rep-$which" \
                    --out "$RES/crash-report-$which.json" >"$CR/rep-$which.txt"
                [ "$r" = 1 ] && cat "$CR/rep-$which.txt"
                frames=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["frames"])' \
                    "$RES/crash-report-$which.json")
                crash_wrk "rep-$which-raw-$r" /v1/symbolicate "$CR/rep-$which/raw" 1 \
                    application/json "$frames" 200
                crash_wrk "rep-$which-nostore-$r" "/v1/crashes?store=false" "$CR/rep-$which/report" 1 \
                    text/plain "$frames" 200
                crash_wrk "rep-$which-stored-$r" /v1/crashes "$CR/rep-$which/report" 1 \
                    text/plain "$frames" 201
                crash_wrk "rep-$which-minimal-$r" /v1/crashes "$CR/rep-$which/report" 1 \
                    text/plain "$frames" 201 "Prefer: return=minimal"
                stop_server
            done
        done
    fi

    if crash_part store; then
        say "crash 3/4: the crash store at $BENCH_CRASH_LEVELS crashes, seeded through the API"
        start_server crash-store
        $PY crash-upload --url "$URL" --file "$APP" --file "$APP_DSYM" \
            --file "$FIX/bin/libfix-arm64.dylib" --out "$CR/store-upload.json"
        $PY crash-seed-data --crash "$FIX/crashes/bigapp-twin.crash" \
            --syms "$FIX/expected/bigapp-arm64.sym.tsv" --seed "$BENCH_SEED" \
            --out "$CR/seed-data.lua" --meta "$RES/crash-seed-data.json"
        $PY crash-db-size --db "$DB" --out "$RES/crash-db-base.json"
        for level in $BENCH_CRASH_LEVELS; do
            $PY crash-seed --url "$URL" --script "$BENCH/seed_crashes.lua" --data "$CR/seed-data.lua" \
                --target "$level" --server-pid "$SERVER_PID" --conns "$BENCH_CRASH_CONNS" \
                --threads "$BENCH_WRK_THREADS" --seed "$BENCH_SEED" \
                --log "$WORK/crash-wrk-seed-$level.log" --out "$RES/crash-seed-$level.json"
            $PY crash-gets --url "$URL" --db "$DB" --level "$level" --n "$BENCH_CRASH_GETS" \
                --out "$RES/crash-gets-$level.json"
        done
        stop_server
    fi

    if crash_part images; then
        say "crash 4/4: $BENCH_CRASH_IMAGES stored images, an index cache smaller than them"
        start_server crash-images
        $PY crash-images-upload --url "$URL" --file "$APP" --n "$BENCH_CRASH_IMAGES" \
            --seed "$BENCH_SEED" --out "$RES/crash-images-upload.json"
        stop_server
        $PY crash-images-bodies --images "$RES/crash-images-upload.json" \
            --samples "$CR/app-samples.json" --uniform "$CR/img-uniform" --skewed "$CR/img-skewed" \
            --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" --seed "$BENCH_SEED" \
            --out "$RES/crash-images-bodies.json"
        small_mb=${BENCH_CRASH_CACHE_MB:-$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cache_mb_auto"])' \
            "$RES/crash-images-upload.json")}
        for cfg in small fit; do
            if [ $cfg = small ]; then mb=$small_mb; else mb=$BENCH_CRASH_FIT_MB; fi
            # The same database, a fresh process with this cache.
            start_server crash-images --cache-mb "$mb"
            $PY crash-state --url "$URL" --server-pid "$SERVER_PID" --cache-mb "$mb" \
                --label "cache $mb MiB, idle" --out "$RES/crash-img-$cfg-idle.json"
            # Warm-up (unmeasured): loads what the cache will hold.
            BENCH_CRASH_SECONDS=2 crash_wrk "img-$cfg-warmup" /v1/symbolicate "$CR/img-uniform" \
                "$BENCH_BODIES" application/json "$BENCH_FRAMES" 200
            BENCH_CRASH_SECONDS=1 crash_wrk "img-$cfg-warmup2" /v1/symbolicate "$CR/img-skewed" \
                "$BENCH_BODIES" application/json "$BENCH_FRAMES" 200
            crash_wrk "img-$cfg-uniform" /v1/symbolicate "$CR/img-uniform" "$BENCH_BODIES" \
                application/json "$BENCH_FRAMES" 200
            crash_wrk "img-$cfg-skewed" /v1/symbolicate "$CR/img-skewed" "$BENCH_BODIES" \
                application/json "$BENCH_FRAMES" 200
            $PY crash-state --url "$URL" --server-pid "$SERVER_PID" --cache-mb "$mb" \
                --label "cache $mb MiB, after the runs" --out "$RES/crash-img-$cfg-end.json"
            stop_server
        done
    fi
fi

# ---- minidumps: symd against minidump_stackwalk; dump-syms ------------------------
if want minidump; then
    MDD=$BENCH_MD_DIR
    if [ -z "$MDD" ]; then
        for d in "$ROOT/../shared/minidumps" /work/shared/minidumps; do
            [ -d "$d" ] && { MDD=$d; break; }
        done
    fi
    if [ -z "$MDD" ] || [ ! -f "$MDD/MODULES.tsv" ]; then
        # Not fatal: the other sections' summaries still come.
        say "minidump: SKIPPED: no ../shared/minidumps (set BENCH_MD_DIR)"
        printf '{"skipped": "no minidump folder (BENCH_MD_DIR)"}\n' >"$RES/md-skipped.json"
    elif [ ! -x "$BENCH_MD_STACKWALK" ]; then
        say "minidump: SKIPPED: no $BENCH_MD_STACKWALK (npm ci in tests/oracle)"
        printf '{"skipped": "no minidump_stackwalk (npm ci in tests/oracle)"}\n' >"$RES/md-skipped.json"
    else
        MW=$WORK/minidump
        mkdir -p "$MW"
        say "minidump: $MDD against $BENCH_MD_STACKWALK"
        $PY md-prepare --dir "$MDD" --stackwalk "$BENCH_MD_STACKWALK" --work "$MW" \
            --out "$MW/prep.json"
        cp "$MW/prep.json" "$RES/md-prepare.json"
        for set in $BENCH_MD_SETS; do
            start_server "md-$set"
            say "minidump ($set): upload, then the crashed threads against minidump_stackwalk's"
            $PY md-upload --url "$URL" --prep "$MW/prep.json" --set "$set" \
                --out "$RES/md-upload-$set.json"
            $PY md-check --url "$URL" --symd "$SYMD" --db "$DB" --prep "$MW/prep.json" \
                --set "$set" --out "$RES/md-check-$set.json"
            say "minidump ($set): wrk POST /v1/crashes?store=false, each run followed by minidump_stackwalk"
            $PY md-server --url "$URL" --server-pid "$SERVER_PID" --prep "$MW/prep.json" \
                --set "$set" --script "$BENCH/bodies.lua" --conns "$BENCH_MD_CONNS" \
                --threads "$BENCH_WRK_THREADS" --seconds "$BENCH_MD_SECONDS" \
                --runs "$BENCH_MD_RUNS" --rounds "$BENCH_MD_ROUNDS" --work "$WORK" \
                --out "$RES/md-server-$set.json"
            stop_server
            say "minidump ($set): one process per dump, symd crash against minidump_stackwalk"
            $PY md-cli --symd "$SYMD" --db "$DB" --prep "$MW/prep.json" --set "$set" \
                --runs "$BENCH_MD_RUNS" --rounds "$BENCH_MD_ROUNDS" --out "$RES/md-cli-$set.json"
        done
        say "minidump: symd dump-syms on real binaries with their dSYMs"
        build_dwarf_program
        $PY md-dump-syms --symd "$SYMD" --prep "$MW/prep.json" --program "$CACHE/dwarf/prog" \
            --runs "$BENCH_MD_DUMPSYMS_RUNS" --work "$MW" --out "$RES/md-dump-syms.json"
    fi
fi

# ---- PostgreSQL: one node against SQLite, two nodes against one -------------------
# pg_wrk LABEL: BENCH_PG_ROUNDS wrk runs of the symtab bodies against the
# current server; results $RES/pg-LABEL-R.json.
pg_wrk() {
    local r
    for r in $(seq "$BENCH_PG_ROUNDS"); do
        $PY wrk --url "$URL" --script "$BENCH/symbolicate.lua" --bodies "$WORK/pg-bodies" \
            --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" --server-pid "$SERVER_PID" \
            --conns "$BENCH_PG_CONNS" --threads "$BENCH_WRK_THREADS" --seconds "$BENCH_PG_SECONDS" \
            --log "$WORK/pg-wrk-$1-$r.log" --out "$RES/pg-$1-$r.json"
    done
}

# pg_crash_wrk LABEL URL PID: one wrk run posting the real report to
# /v1/crashes (stored, Prefer: return=minimal), every post a distinct report
# (its incident identifier replaced per request); result $RES/pg-crash-LABEL.json.
pg_crash_wrk() {
    $PY crash-wrk --url "$2" --path /v1/crashes --script "$BENCH/bodies.lua" \
        --bodies "$WORK/pg-report/report" --count 1 --ctype text/plain --frames "$PG_REPORT_FRAMES" \
        --expect 201 --header "Prefer: return=minimal" --distinct "$PG_REPORT_ID" \
        --label "pg-crash-$1" --server-pid "$3" --conns "$BENCH_PG_CONNS" \
        --threads "$BENCH_WRK_THREADS" --seconds "$BENCH_PG_SECONDS" \
        --log "$WORK/pg-crash-wrk-$1.log" --out "$RES/pg-crash-$1.json"
}

if want postgres; then
    say "postgres: symd on PostgreSQL against SQLite (one node), two nodes against one"
    # Its own directory under /tmp: as root the cluster runs as "postgres",
    # which cannot enter $WORK (mode 700).
    PG_DIR=$(mktemp -d /tmp/symd-bench-pg.XXXXXX)
    if ! PG_URI=$(bash "$ROOT/tests/pg/start.sh" "$PG_DIR" "$BENCH_PG_PORT" 2>"$WORK/pg-start.err"); then
        # Not fatal: the other sections' summaries still come.
        say "postgres: SKIPPED: no PostgreSQL cluster could start: $(tail -1 "$WORK/pg-start.err")"
        say "postgres: (bash scripts/deps.sh installs PostgreSQL; PG_BINDIR names another)"
        printf '{"skipped": "%s"}\n' "$(tail -1 "$WORK/pg-start.err" | tr -d '"\\')" \
            >"$RES/pg-skipped.json"
        PG_DIR=
    else
        # shellcheck disable=SC1091
        . "$PG_DIR/cluster.env"
        "$BINDIR/psql" -X -q -d "$PG_URI" -c "CREATE DATABASE symd_bench"
        PG_DB=${PG_URI/\/postgres\?/\/symd_bench?}
        pool_args=()
        [ -n "$BENCH_PG_POOL" ] && pool_args=(--db-pool "$BENCH_PG_POOL")
        # The crash path's report: a real one with an incident identifier
        # (each post replaces it: distinct reports, as a store that keeps
        # one copy of a report posted twice needs).
        PG_REPORT=${BENCH_PG_REPORT:-}
        if [ -z "$PG_REPORT" ]; then
            for d in "${BENCH_CRASH_REPORTS:-}" "$ROOT/../shared/real-reports" /work/shared/real-reports; do
                [ -n "$d" ] && [ -f "$d/$BENCH_CRASH_SMALL" ] && { PG_REPORT=$d/$BENCH_CRASH_SMALL; break; }
            done
        fi
        PG_REPORT_ID=
        if [ -n "$PG_REPORT" ] && [ -f "$PG_REPORT" ]; then
            PG_REPORT_ID=$(sed -n 's/^Incident Identifier: *\([0-9A-Fa-f-]\{36\}\).*/\1/p' "$PG_REPORT" | head -1)
        fi
        if [ -z "$PG_REPORT_ID" ]; then
            say "postgres: FAIL: no real report with an incident identifier (${PG_REPORT:-none}; set BENCH_PG_REPORT): no crash path"
            printf '{"missing": "%s"}\n' "${PG_REPORT:-$BENCH_CRASH_SMALL}" >"$RES/pg-crash-missing.json"
        fi
        symtab_prepare
        for backend in sqlite postgresql; do
            if [ $backend = sqlite ]; then
                start_server pg-sqlite
            else
                SERVER_DB=$PG_DB start_server pg-node-a "${pool_args[@]}"
            fi
            $PY upload --url "$URL" --file "$FAT" --samples "$WORK/samples-arm64.json" \
                --out "$RES/pg-upload-$backend.json"
            if [ ! -d "$WORK/pg-bodies" ]; then
                $PY bodies --samples "$WORK/samples-arm64.json" --upload "$RES/pg-upload-$backend.json" \
                    --dir "$WORK/pg-bodies" --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" \
                    --seed "$BENCH_SEED"
            fi
            # Warm-up (unmeasured): the index in the node's cache.
            BENCH_PG_ROUNDS=1 BENCH_PG_SECONDS=2 pg_wrk "$backend-warmup"
            pg_wrk "$backend-1node"
            if [ $backend = sqlite ]; then
                # kept (idle) for the crash rounds, which alternate the two
                SQ_PID=$SERVER_PID SQ_URL=$URL THIRD_PID=$SERVER_PID SERVER_PID=
                if [ -n "$PG_REPORT_ID" ]; then
                    $PY crash-report-prep --url "$SQ_URL" --report "$PG_REPORT" \
                        --dir "$WORK/pg-report" --out "$RES/pg-crash-report.json" >/dev/null
                    PG_REPORT_FRAMES=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["frames"])' \
                        "$RES/pg-crash-report.json")
                fi
            fi
        done
        if [ -n "$PG_REPORT_ID" ]; then
            say "postgres: crash posts stored, SQLite and PostgreSQL in turn ($BENCH_PG_ROUNDS rounds)"
            pg_crash_wrk sqlite-warmup "$SQ_URL" "$SQ_PID" >/dev/null
            pg_crash_wrk postgresql-warmup "$URL" "$SERVER_PID" >/dev/null
            for r in $(seq "$BENCH_PG_ROUNDS"); do
                pg_crash_wrk "sqlite-1node-$r" "$SQ_URL" "$SQ_PID"
                pg_crash_wrk "postgresql-1node-$r" "$URL" "$SERVER_PID"
            done
        fi
        A_PID=$SERVER_PID A_URL=$URL
        SERVER_PID=$SQ_PID SERVER_NAME=pg-sqlite THIRD_PID=
        stop_server
        # Node a still runs on PostgreSQL; node b joins it on the same database.
        SERVER_DB=$PG_DB start_server pg-node-b "${pool_args[@]}"
        SECOND_PID=$SERVER_PID B_URL=$URL
        BENCH_PG_ROUNDS=1 BENCH_PG_SECONDS=2 pg_wrk "node-b-warmup"
        say "two nodes at once: wrk on each ($BENCH_PG_CONNS connections per node)"
        for r in $(seq "$BENCH_PG_ROUNDS"); do
            wrk_pids=()
            for n in a b; do
                if [ $n = a ]; then u=$A_URL p=$A_PID; else u=$B_URL p=$SECOND_PID; fi
                $PY wrk --url "$u" --script "$BENCH/symbolicate.lua" --bodies "$WORK/pg-bodies" \
                    --count "$BENCH_BODIES" --frames "$BENCH_FRAMES" --server-pid "$p" \
                    --conns "$BENCH_PG_CONNS" --threads "$BENCH_WRK_THREADS" \
                    --seconds "$BENCH_PG_SECONDS" --log "$WORK/pg-wrk-2nodes-$n-$r.log" \
                    --out "$RES/pg-2nodes-$n-$r.json" &
                wrk_pids+=($!)
            done
            for p in "${wrk_pids[@]}"; do wait "$p" || die "wrk on two nodes failed"; done
            if [ -n "$PG_REPORT_ID" ]; then
                # crash posts on both at once, right after (same cluster, same data)
                pg_crash_wrk "2nodes-a-$r" "$A_URL" "$A_PID" &
                wa=$!
                pg_crash_wrk "2nodes-b-$r" "$B_URL" "$SECOND_PID" &
                wb=$!
                wait "$wa" || die "crash posts on node a failed"
                wait "$wb" || die "crash posts on node b failed"
            fi
        done
        stop_server # node b
        SECOND_PID=
        SERVER_PID=$A_PID SERVER_NAME=pg-node-a
        stop_server
        bash "$ROOT/tests/pg/stop.sh" "$PG_DIR"
        PG_DIR=
    fi
fi

say "summary"
rm -rf "$CACHE/last" && mkdir -p "$CACHE/last" # kept for a look after the run
cp "$RES"/*.json "$CACHE/last/"
cp "$WORK"/*wrk-*.log "$CACHE/last/" 2>/dev/null || true
rc=0
if want symtab; then
    $PY summary --dir "$RES" --out "$CACHE/last-summary.txt" ${BENCH_STRICT:+--strict} || rc=$?
fi
if want swift; then
    $PY swift-summary --dir "$RES" --out "$CACHE/last-summary-swift.txt" ${BENCH_STRICT:+--strict} || rc=1
fi
if want crash; then
    $PY crash-summary --dir "$RES" --out "$CACHE/last-summary-crash.txt" ${BENCH_STRICT:+--strict} || rc=1
fi
if want postgres; then
    $PY pg-summary --dir "$RES" --cores "$(nproc)" --out "$CACHE/last-summary-postgres.txt" || rc=1
fi
if want minidump; then
    $PY md-summary --dir "$RES" --out "$CACHE/last-summary-minidump.txt" ${BENCH_STRICT:+--strict} || rc=1
fi
if want dwarf; then
    $PY dw-summary --dir "$RES" --out "$CACHE/last-summary-dwarf.txt" ${BENCH_STRICT:+--strict} || rc=1
fi
exit $rc
