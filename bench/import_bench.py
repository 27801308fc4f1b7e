#!/usr/bin/env python3
"""symd import against reading the same files (issue 19 item 7).

Generates a DeviceSupport-sized tree: --files dylibs (3,000 by default), copies
of a few real arm64 dylibs assembled here by clang-14 and linked by ld64.lld-14
from generated code (from 60 to 6,000 functions each, so sizes and symbol counts
spread as a real folder's do), each copy with its own LC_UUID (the 16 bytes
patched in place). Then, in the same run and on the same files:

  read    cat of every file to /dev/null (find | xargs cat), page cache warm
  import  symd import of the tree into a fresh SQLite store, warm the same way
  again   the same import again (everything stored: headers only)
  small   symd import of a tenth of the tree (fresh store), for peak RSS

and, when this process may drop the page cache (root, not in a container
that forbids it), the read and the import once more from a cold cache.
Reports files/s, MB/s, the import/read ratio (acceptance: >= 0.5), the
peak RSS of both imports (flat: not growing with the number of files), and
the bytes stored per image. Prints a table and one JSON line.

usage: bench/import_bench.py [--symd ./symd] [--files 3000] [--dir DIR] [--keep]
"""
import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

LLVM = "/usr/lib/llvm-14/bin"
LC_UUID = 0x1B
# Functions per base dylib, and how many of the copies each base gets: most
# system libraries are small, a few are large.
BASES = [(60, 0.40), (400, 0.30), (1500, 0.20), (6000, 0.10)]


def gen_source(nfunc, seed):
    """arm64 assembly of nfunc functions of 40 to 200 instructions (a real
    library's few hundred bytes of code per symbol), a third of them local:
    assembled in a moment, where C of this size takes minutes to compile."""
    rnd = random.Random(seed)
    out = [".section __TEXT,__text,regular,pure_instructions"]
    for i in range(nfunc):
        name = f"_bench_fn_{seed}_{i}"
        if i % 3 != 1:
            out.append(f".globl {name}")
        out.append(".p2align 2")
        out.append(f"{name}:")
        for _ in range(rnd.randint(40, 200)):
            out.append(f"  add x0, x0, #{rnd.randint(1, 4095)}")
        out.append("  ret")
    return "\n".join(out) + "\n"


_bases = {}


def build_base(work, nfunc, seed):
    """A dylib of nfunc functions (built once per run)."""
    if seed in _bases:
        return _bases[seed]
    src = os.path.join(work, f"base{seed}.s")
    obj = os.path.join(work, f"base{seed}.o")
    dylib = os.path.join(work, f"libbase{seed}.dylib")
    with open(src, "w") as f:
        f.write(gen_source(nfunc, seed))
    subprocess.run([f"{LLVM}/clang", "-target", "arm64-apple-ios14", "-c", src, "-o", obj],
                   check=True)
    subprocess.run([f"{LLVM}/ld64.lld", "-arch", "arm64", "-platform_version", "ios", "14.0",
                    "14.0", "-dylib", "-install_name", f"/usr/lib/libbase{seed}.dylib", "-o",
                    dylib, obj], check=True)
    with open(dylib, "rb") as f:
        _bases[seed] = bytearray(f.read())
    return _bases[seed]


def uuid_offset(macho):
    """Offset of the LC_UUID bytes of a thin 64-bit Mach-O."""
    magic, _, _, _, ncmds, _, _, _ = struct.unpack_from("<IiiIIIII", macho, 0)
    assert magic == 0xFEEDFACF
    off = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", macho, off)
        if cmd == LC_UUID:
            return off + 8
        off += size
    raise ValueError("no LC_UUID")


def make_tree(root, nfiles, work):
    bases = [build_base(work, n, i) for i, (n, _) in enumerate(BASES)]
    weights = [w for _, w in BASES]
    rnd = random.Random(19)
    folder = os.path.join(root, "iOS DeviceSupport", "iPhone99,1 99.0 (99Z999)")
    total = 0
    for i in range(nfiles):
        b = bases[rnd.choices(range(len(bases)), weights)[0]]
        copy = bytearray(b)
        u = uuid_offset(copy)
        copy[u:u + 16] = struct.pack(">QQ", 0x5359_4D44_0000_0000 | i, rnd.getrandbits(64))
        d = os.path.join(folder, "Symbols", "usr", "lib", f"d{i % 50:02d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"libbench{i:05d}.dylib"), "wb") as f:
            f.write(copy)
        total += len(copy)
    return folder, total


def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def run_measured(cmd):
    """cmd in a helper process of its own, so that its peak RSS is its own."""
    helper = ("import resource, subprocess, sys, time, json\n"
              "t0 = time.monotonic()\n"
              "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
              "t = time.monotonic() - t0\n"
              "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
              "print(json.dumps({'rc': p.returncode, 's': t, 'rss': r.ru_maxrss,"
              " 'err': p.stderr.decode(errors='replace')[-4000:]}))\n")
    out = subprocess.run([sys.executable, "-c", helper] + cmd, capture_output=True, text=True,
                         check=True).stdout
    r = json.loads(out)
    if r["rc"] != 0:
        sys.exit(f"import_bench: {' '.join(cmd)} failed ({r['rc']}):\n{r['err']}")
    return r


def cat_all(folder):
    return run_measured(["sh", "-c", f"find '{folder}/Symbols' -type f -print0 | "
                                     "xargs -0 cat > /dev/null"])


def import_tree(symd, db, folder):
    return run_measured([symd, "import", "--quiet", "--db", db, folder])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--symd", default="./symd")
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    symd = os.path.abspath(a.symd)
    work = a.dir or tempfile.mkdtemp(prefix="symd-import-bench.")
    os.makedirs(work, exist_ok=True)
    try:
        t0 = time.monotonic()
        big, total = make_tree(os.path.join(work, "big"), a.files, work)
        small, small_total = make_tree(os.path.join(work, "small"), max(a.files // 10, 1), work)
        gen_s = time.monotonic() - t0
        # The tree's pages on disk before anything is timed: writeback of a
        # fresh tree would slow the store's fsyncs and not the reads.
        subprocess.run(["sync"], check=True)
        mb = total / 1e6
        res = {"files": a.files, "mb": round(mb, 1), "generate_s": round(gen_s, 1)}

        cat_all(big)  # warm the page cache: both sides read from memory
        read = cat_all(big)
        db = os.path.join(work, "bench.db")
        imp = import_tree(symd, db, big)
        again = import_tree(symd, db, big)
        small_db = os.path.join(work, "small.db")
        imp_small = import_tree(symd, small_db, small)
        con = sqlite3.connect(db)
        images, blob_bytes = con.execute(
            "SELECT (SELECT count(*) FROM images), (SELECT sum(length(data)) FROM image_data)"
        ).fetchone()
        con.close()
        db_bytes = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
        res.update({
            "read_s": round(read["s"], 3),
            "read_mb_s": round(mb / read["s"], 1),
            "read_files_s": round(a.files / read["s"]),
            "import_s": round(imp["s"], 3),
            "import_mb_s": round(mb / imp["s"], 1),
            "import_files_s": round(a.files / imp["s"]),
            "ratio": round(read["s"] / imp["s"], 2),
            "again_s": round(again["s"], 3),
            "again_files_s": round(a.files / again["s"]),
            "rss_kib": imp["rss"],
            "rss_small_kib": imp_small["rss"],
            "small_files": max(a.files // 10, 1),
            "images": images,
            "index_bytes_per_image": round(blob_bytes / images),
            "db_bytes_per_image": round(db_bytes / images),
            "file_bytes_per_image": round(total / a.files),
        })
        summary = [l for l in imp["err"].splitlines() if "set:" in l or "sets:" in l]
        res["summary"] = summary[-1] if summary else ""
        again_summary = [l for l in again["err"].splitlines() if "set:" in l or "sets:" in l]
        res["again_summary"] = again_summary[-1] if again_summary else ""

        if drop_caches():
            read_cold = cat_all(big)
            drop_caches()
            cold_db = os.path.join(work, "cold.db")
            imp_cold = import_tree(symd, cold_db, big)
            res.update({"cold_read_s": round(read_cold["s"], 3),
                        "cold_import_s": round(imp_cold["s"], 3),
                        "cold_ratio": round(read_cold["s"] / imp_cold["s"], 2)})
        else:
            res["cold"] = "not measured: this process may not drop the page cache"

        print(f"import bench: {a.files} dylibs, {mb:.1f} MB "
              f"({res['file_bytes_per_image']} bytes per file), generated in {gen_s:.1f} s")
        print(f"  read (cat, warm)    {res['read_s']:8.3f} s  {res['read_mb_s']:8.1f} MB/s  "
              f"{res['read_files_s']:7d} files/s")
        print(f"  symd import (warm)  {res['import_s']:8.3f} s  {res['import_mb_s']:8.1f} MB/s  "
              f"{res['import_files_s']:7d} files/s  = {res['ratio']}x the read "
              f"(acceptance >= 0.5)")
        print(f"  import again        {res['again_s']:8.3f} s  {res['again_files_s']:7d} files/s "
              f"(everything stored: {res['again_summary']})")
        if "cold_ratio" in res:
            print(f"  cold cache: read {res['cold_read_s']} s, import {res['cold_import_s']} s "
                  f"= {res['cold_ratio']}x")
        else:
            print(f"  cold cache: {res['cold']}")
        print(f"  peak RSS: {res['rss_kib']} KiB importing {a.files} files, "
              f"{res['rss_small_kib']} KiB importing {res['small_files']}")
        print(f"  stored: {images} images, {res['index_bytes_per_image']} bytes of index per "
              f"image, {res['db_bytes_per_image']} bytes of database per image")
        print(f"  {res['summary']}")
        print(json.dumps(res))
        # The acceptance is against reading the files from disk: the cold
        # ratio when it could be measured, else the warm one.
        ok = res.get("cold_ratio", res["ratio"]) >= 0.5
        return 0 if ok else 1
    finally:
        if not a.keep and not a.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
