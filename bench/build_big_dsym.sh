#!/usr/bin/env bash
# Builds, once, a generated program whose dSYM's DWARF file is at least MB MiB, and the zip of that dSYM (issue 22).
#
#   bash bench/build_big_dsym.sh [MB]        (default 500; prints the zip's path last)
#
# bench/gen_big_dsym.py writes the sources (enough units for MB: a unit
# gives about 6.9 MiB of DWARF), clang -O0 -g compiles them for arm64 on
# every core (BENCH_JOBS), ld64.lld links, dsymutil 14 makes the dSYM, and
# Python's zipfile stores it (ZIP_STORED: deflate would shrink the DWARF about
# 4x, and the point is a zip of MB). Everything lands in
# bench/.cache/bigdsym-MB/ (prog, prog.dSYM, prog.dSYM.zip, build.txt with the
# figures) and is rebuilt only when the generator, this script, the size or
# the tools change. About 2 minutes for 500 on 2 cores; the objects (as big as
# the dSYM) are deleted once it exists. Not part of CI's default run.
set -euo pipefail

MB=${1:-500}
case $MB in '' | *[!0-9]*) echo "usage: $0 [MB]" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
if command -v llvm-config-14 >/dev/null; then PATH=$(llvm-config-14 --bindir):$PATH; fi
for t in clang ld64.lld dsymutil python3; do
    command -v $t >/dev/null || { echo "$0: $t is missing (clang-14, lld-14, llvm-14)" >&2; exit 1; }
done
JOBS=${BENCH_JOBS:-$(nproc)}
PER_UNIT_MIB=6.5 # a little under what a unit gives, so MB is reached
UNITS=$(python3 -c "import math; print(max(1, math.ceil($MB / $PER_UNIT_MIB)))")
GEN_ARGS=(--seed 1 --units "$UNITS" --records 2000 --fields 100 --functions 250)
CFLAGS="-target arm64-apple-macos11 -O0 -g -w -fdebug-compilation-dir=."

DIR=$BENCH/.cache/bigdsym-$MB
SRC=$DIR/src OBJ=$DIR/obj
DWARF=$DIR/prog.dSYM/Contents/Resources/DWARF/prog
ZIP=$DIR/prog.dSYM.zip
KEY=$({ cat "$BENCH/gen_big_dsym.py" "$BENCH/build_big_dsym.sh"; echo "${GEN_ARGS[*]} $CFLAGS"; clang --version
        ld64.lld --version; dsymutil --version; } | sha256sum | cut -d' ' -f1)
if [ -f "$DIR/stamp" ] && [ "$(cat "$DIR/stamp")" = "$KEY" ] && [ -f "$ZIP" ] && [ -f "$DWARF" ]; then
    echo "big dSYM cached in $DIR" >&2
    echo "$ZIP"
    exit 0
fi
rm -rf "$DIR"
mkdir -p "$SRC" "$OBJ"
t0=$(date +%s.%N)
lap() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
python3 "$BENCH/gen_big_dsym.py" --out "$SRC" "${GEN_ARGS[@]}" >&2
t1=$(date +%s.%N)
# shellcheck disable=SC2016
(cd "$SRC" && CFLAGS_BIG=$CFLAGS nice xargs -P "$JOBS" -I{} sh -c \
    'exec clang $CFLAGS_BIG -c "$1" -o "$2/$1.o"' sh {} "$OBJ" <units.txt) ||
    { echo "$0: compiling the generated program failed" >&2; exit 1; }
t2=$(date +%s.%N)
ZERO_AR_DATE=1 ld64.lld -arch arm64 -platform_version macos 11.0 11.0 -e _main \
    -undefined dynamic_lookup -oso_prefix "$OBJ/" -o "$DIR/prog" "$OBJ"/*.o
t3=$(date +%s.%N)
echo "0 0" >"$DIR/dsymutil.time" # GNU time (package time) measures dsymutil's peak RSS
timer=()
if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -f "%e %M" -o "$DIR/dsymutil.time"); fi
"${timer[@]}" nice dsymutil --num-threads "$JOBS" \
    --oso-prepend-path="$OBJ" -o "$DIR/prog.dSYM" "$DIR/prog" ||
    { echo "$0: dsymutil failed" >&2; exit 1; }
t4=$(date +%s.%N)
objects=$(du -sb "$OBJ" | cut -f1)
rm -rf "$OBJ" "$SRC"
python3 - "$DIR/prog.dSYM" "$ZIP" <<'EOF'
import os, sys, zipfile
dsym, out = sys.argv[1], sys.argv[2]
base = os.path.dirname(dsym)
with zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_STORED, allowZip64=True) as z:
    for d, dirs, files in os.walk(dsym):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            info = zipfile.ZipInfo(os.path.relpath(p, base), (1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            with open(p, "rb") as src, z.open(info, "w", force_zip64=True) as dst:
                while True:
                    b = src.read(8 << 20)
                    if not b:
                        break
                    dst.write(b)
os.replace(out + ".tmp", out)
EOF
t5=$(date +%s.%N)
size=$(stat -c %s "$DWARF")
if [ "$size" -lt $((MB << 20)) ]; then
    echo "$0: the DWARF file is $size bytes, under $MB MiB (raise PER_UNIT_MIB's margin)" >&2
    exit 1
fi
read -r _ ds_kb <"$DIR/dsymutil.time"
{
    echo "units $UNITS (${GEN_ARGS[*]}), -j$JOBS, load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "generate $(lap "$t0" "$t1") s, compile $(lap "$t1" "$t2") s (objects $((objects >> 20)) MiB),"\
         "link $(lap "$t2" "$t3") s, dsymutil $(lap "$t3" "$t4") s (peak RSS $((ds_kb >> 10)) MiB),"\
         "zip $(lap "$t4" "$t5") s, total $(lap "$t0" "$t5") s"
    echo "DWARF file $((size >> 20)) MiB, zip $(($(stat -c %s "$ZIP") >> 20)) MiB"
} >"$DIR/build.txt"
cat "$DIR/build.txt" >&2
echo "$KEY" >"$DIR/stamp"
echo "$ZIP"
