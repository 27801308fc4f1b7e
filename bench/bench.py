#!/usr/bin/env python3
"""Helpers for bench/run.sh (python3 standard library only).

Each subcommand does one step of the benchmark and, where it measures
something, writes a small JSON result that `summary` turns into the report:

  sample       function table of a slice (llvm-nm + function starts) and N
               seeded random addresses strictly inside functions
  upload       POST the fat binary; time upload and upload -> queryable
  accuracy     server vs llvm-symbolizer (and vs the llvm-nm table) on the
               samples: symbol name and offset must agree for every address
  aliases      synthetic aliases (symbols moved in a copy of the slice): which
               name does each tool report?
  bodies       the wrk request bodies (200 frames each) and their addresses
  symbolizer   time llvm-symbolizer in batch mode on the wrk addresses
  load         how busy the machine is before the throughput runs
  wrk          one wrk run (bench/symbolicate.lua), with the CPU each side used
  summary      print the summary block; exit status says pass or fail

DWARF section (bench/gen_program.py's program and its dSYM):
  dw-stats     functions, sizes, DWARF counts, UUID of the generated program
  dw-gsym      llvm-gsymutil --convert: best-of-3 time, GSYM size, max RSS
  dw-reference llvm-symbolizer --inlining through the dSYM on the samples
  dw-upload    POST binary, then dSYM: upload -> queryable (file:line), RSS
  dw-index     bytes of the 'lines' and 'symbols' blobs in the database
  dw-accuracy  symd's frames vs llvm-symbolizer's, every inlined level
  dw-summary   print the DWARF summary block
(`bodies --adjust none`, `symbolizer --extra=...` and `wrk` serve both.)

Swift section (real Swift binaries from npm, fixtures/fetch-swift.sh; the
`upload` and `accuracy` steps above run on them too):
  swift-names  Swift names per second through `symd demangle` in both styles,
               beside llvm-cxxfilt passing the same lines through
  swift-first  llvm-symbolizer's first answer from the file (its cold start)
  swift-summary print the Swift summary block
"""
import argparse
import http.client
import json
import math
import os
import random
import re
import resource
import struct
import subprocess
import sys
import threading
import time

LOAD_ADDRESS = 0x104A38000  # where the bench pretends the image was loaded
HEX = re.compile(r"^(?:0x)?([0-9a-fA-F]+)$")


def die(msg):
    print(f"bench: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read_json(path):
    with open(path) as f:
        return json.load(f)


def proc_cpu_s(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_s(pid):
    """{tid: utime + stime in seconds} of each thread of a process."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[tid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def machine_cpu():
    """(total, idle) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    return sum(v), v[3] + v[4]


# ---- sample ------------------------------------------------------------------


def text_section(slice_path):
    """(start, end) of __TEXT,__text from llvm-objdump's section headers."""
    for line in run(["llvm-objdump", "--macho", "--section-headers", slice_path]).splitlines():
        f = line.split()
        if len(f) >= 5 and f[1] == "__text" and f[4] == "TEXT":
            start, size = int(f[3], 16), int(f[2], 16)
            return start, start + size
    die(f"{slice_path}: no __text section")


def function_starts(slice_path):
    out = run(["llvm-objdump", "--macho", "--function-starts", slice_path])
    return sorted({int(m.group(1), 16) for m in map(HEX.match, out.split()) if m})


def function_table(slice_path):
    """Functions of __TEXT,__text as llvm-nm sees them.

    A function is a distinct address carrying t/T symbols (all names there
    are aliases); it extends to the next symbol, the next LC_FUNCTION_STARTS
    entry or the end of __text, whichever comes first."""
    start, end = text_section(slice_path)
    names = {}
    nm = run(["llvm-nm", "-n", "--defined-only", slice_path])
    for line in nm.splitlines():
        f = line.split(None, 2)
        if len(f) != 3 or f[1] not in ("t", "T") or f[2] == "__mh_execute_header":
            continue
        addr = int(f[0], 16)
        if start <= addr < end:
            names.setdefault(addr, []).append((f[1], f[2]))
    starts = function_starts(slice_path)
    bounds = sorted(set(names) | {a for a in starts if start <= a < end} | {end})
    funcs = []
    j = 0
    for addr in sorted(names):
        while bounds[j] <= addr:
            j += 1
        funcs.append({"addr": addr, "end": bounds[j], "names": names[addr]})
    return {"text_start": start, "text_end": end, "function_starts": len(starts),
            "functions": funcs}


def cmd_sample(a):
    table = function_table(a.slice)
    funcs = table["functions"]
    # arm64 code is 4-byte instructions: keep sampled addresses on instruction
    # boundaries, like real return addresses. x86_64: any byte.
    align = 4 if a.arch == "arm64" else 1
    usable = [f for f in funcs if f["end"] - f["addr"] > align]
    rng = random.Random(f"{a.seed}/{a.arch}")
    samples = []
    for _ in range(a.n):
        f = rng.choice(usable)  # functions uniformly, then an address inside
        k = rng.randrange(1, (f["end"] - f["addr"] + align - 1) // align)
        samples.append({"vmaddr": f["addr"] + k * align, "function": f["addr"]})
    edges = []
    for f in funcs:
        edges.append({"vmaddr": f["addr"], "function": f["addr"]})
        if f["end"] - f["addr"] > align:
            edges.append({"vmaddr": f["end"] - align, "function": f["addr"]})
    aliases = sum(1 for f in funcs if len(f["names"]) > 1)
    write_json(a.out, {"arch": a.arch, "slice": a.slice, "seed": a.seed,
                       "text_start": table["text_start"], "text_end": table["text_end"],
                       "functions": len(funcs), "alias_groups": aliases,
                       "function_starts": table["function_starts"],
                       "names": {str(f["addr"]): [n for _, n in f["names"]] for f in funcs},
                       "samples": samples, "edges": edges})
    print(f"{a.arch}: {len(funcs)} functions ({aliases} with aliases, "
          f"{table['function_starts']} function starts), {len(samples)} samples")


# ---- HTTP --------------------------------------------------------------------


def connect(url):
    m = re.match(r"^http://([^:/]+):(\d+)", url)
    if not m:
        die(f"bad url {url}")
    return http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=120)


def post(conn, path, body, ctype):
    conn.request("POST", path, body=body, headers={"Content-Type": ctype})
    r = conn.getresponse()
    return r.status, r.read()


def symbolicate_body(uuid, arch, vmaddrs, text_vmaddr, adjust=None):
    slide = LOAD_ADDRESS - text_vmaddr
    frames = [{"address": "0x%x" % (v + slide)} for v in vmaddrs]
    doc = {"images": [{"uuid": uuid, "arch": arch, "load_address": "0x%x" % LOAD_ADDRESS}],
           "threads": [{"id": 0, "frames": frames}]}
    if adjust:
        # The DWARF bench: addresses are looked up as given, as
        # llvm-symbolizer does, not as return addresses.
        doc["adjust"] = adjust
    return json.dumps(doc, separators=(",", ":")).encode()


def cmd_upload(a):
    with open(a.file, "rb") as f:
        data = f.read()
    probe = read_json(a.samples)["samples"][0]["vmaddr"]
    conn = connect(a.url)
    t0 = time.perf_counter()
    status, body = post(conn, "/v1/images?name=" + a.name, data, "application/octet-stream")
    t1 = time.perf_counter()
    if status not in (200, 201):
        die(f"upload answered {status}: {body[:300]!r}")
    images = json.loads(body)["images"]
    arm = next((i for i in images if i["arch"] == "arm64"), None)
    if not arm:
        die(f"upload response has no arm64 slice: {images}")
    req = symbolicate_body(arm["uuid"], "arm64", [probe], int(arm["text_vmaddr"], 16))
    tries = 0
    while True:
        tries += 1
        status, body = post(conn, "/v1/symbolicate", req, "application/json")
        if status == 200:
            frame = json.loads(body)["threads"][0]["frames"][0]
            if frame["status"] == "symbolicated":
                break
        if time.perf_counter() - t0 > 30:
            die(f"image not queryable 30 s after upload: {status} {body[:300]!r}")
        time.sleep(0.001)
    t2 = time.perf_counter()
    write_json(a.out, {"bytes": len(data), "upload_ms": (t1 - t0) * 1e3,
                       "queryable_ms": (t2 - t0) * 1e3, "tries": tries,
                       "images": images})
    for i in images:
        print(f"  {i['arch']:7} {i['uuid']} text {i['text_vmaddr']}+0x{i['text_size']:x} "
              f"{i['symbols']} symbols {i['functions']} functions")
    print(f"upload {len(data) / 1e6:.1f} MB: {(t1 - t0) * 1e3:.0f} ms; "
          f"upload->queryable {(t2 - t0) * 1e3:.0f} ms ({tries} probe(s))")


def image_of(upload_result, arch):
    for i in read_json(upload_result)["images"]:
        if i["arch"] == arch:
            return i["uuid"], int(i["text_vmaddr"], 16)
    die(f"no {arch} slice was uploaded")


# ---- accuracy ----------------------------------------------------------------


def strip1(name):
    return name[1:] if name.startswith("_") else name


def server_answers(url, uuid, arch, text_vmaddr, vmaddrs, batch=2000):
    conn = connect(url)
    out = []
    for i in range(0, len(vmaddrs), batch):
        chunk = vmaddrs[i:i + batch]
        status, body = post(conn, "/v1/symbolicate",
                            symbolicate_body(uuid, arch, chunk, text_vmaddr),
                            "application/json")
        if status != 200:
            die(f"/v1/symbolicate answered {status}: {body[:300]!r}")
        frames = json.loads(body)["threads"][0]["frames"]
        if len(frames) != len(chunk):
            die(f"asked {len(chunk)} frames, got {len(frames)}")
        out.extend(frames)
    return out


def symbolizer_answers(slice_path, vmaddrs):
    out = run(["llvm-symbolizer", "--obj=" + slice_path, "--no-demangle",
               "--output-style=JSON"], input="".join("0x%x\n" % v for v in vmaddrs))
    answers = []
    for line in out.splitlines():
        if not line.strip():
            continue
        sym = json.loads(line)["Symbol"][0]
        name = sym.get("FunctionName", "")
        start = int(sym["StartAddress"], 16) if sym.get("StartAddress") else None
        answers.append((None if name in ("", "<invalid>") else name, start))
    if len(answers) != len(vmaddrs):
        die(f"llvm-symbolizer gave {len(answers)} answers for {len(vmaddrs)} addresses")
    return answers


def compare(a, s, points, uuid, text_vmaddr):
    """Server and llvm-symbolizer on points ({vmaddr, function}): counts and
    the disagreements."""
    vmaddrs = [x["vmaddr"] for x in points]
    server = server_answers(a.url, uuid, a.arch, text_vmaddr, vmaddrs)
    llvm = symbolizer_answers(a.slice, vmaddrs)
    agree = nm_agree = demangled = 0
    bad = []
    for x, got, (lname, lstart) in zip(points, server, llvm):
        v = x["vmaddr"]
        # symd's raw name ("mangled") against llvm-symbolizer --no-demangle;
        # "symbol" is the display name (demangled by libiberty).
        sname = got.get("mangled") if got.get("status") == "symbolicated" else None
        demangled += sname is not None and got.get("symbol") != sname
        soff = got.get("offset")
        loff = v - lstart if lstart is not None else None
        vm_ok = got.get("vmaddr") == "0x%x" % v
        ok = vm_ok and sname is not None and sname == lname and soff == loff
        agree += ok
        # Independent check against the llvm-nm table the point came from.
        nm_names = [strip1(n) for n in s["names"][str(x["function"])]]
        nm_agree += sname in nm_names and soff == v - x["function"]
        if not ok:
            bad.append({"vmaddr": "0x%x" % v, "function": "0x%x" % x["function"],
                        "nm_names": nm_names,
                        "server": {k: got.get(k) for k in
                                   ("status", "vmaddr", "symbol", "mangled", "symbol_address",
                                    "offset")},
                        "llvm_symbolizer": {"symbol": lname, "offset": loff,
                                            "start": None if lstart is None
                                            else "0x%x" % lstart}})
    return {"n": len(points), "agree": agree, "nm_agree": nm_agree, "demangled": demangled,
            "disagreements": len(bad), "first_disagreements": bad[:20]}


def cmd_accuracy(a):
    s = read_json(a.samples)
    uuid, text_vmaddr = image_of(a.upload, a.arch)
    t = time.perf_counter()
    res = compare(a, s, s["samples"], uuid, text_vmaddr)
    # Also the first and last instruction of every function: the edges where
    # an off-by-one in extents or slide arithmetic would show.
    edges = compare(a, s, s["edges"], uuid, text_vmaddr)
    res.update({"arch": a.arch, "functions": s["functions"],
                "alias_groups": s["alias_groups"], "edges": edges,
                "seconds": time.perf_counter() - t})
    write_json(a.out, res)
    print(f"accuracy {a.arch}: {res['agree']}/{res['n']} sampled addresses agree with "
          f"llvm-symbolizer, {res['nm_agree']}/{res['n']} with the llvm-nm table; "
          f"function edges: {edges['agree']}/{edges['n']} and {edges['nm_agree']}/{edges['n']}; "
          f"{res['demangled']}/{res['n']} symbols demangled")
    for b in (res["first_disagreements"] + edges["first_disagreements"])[:5]:
        print("  DISAGREE " + json.dumps(b))


# ---- alias probe -------------------------------------------------------------


def macho_symtab(buf):
    """Symbol table facts of a thin 64-bit Mach-O: symoff, stroff, the index
    ranges of local and external symbols, and the n_sect of __TEXT,__text."""
    if struct.unpack_from("<I", buf, 0)[0] != 0xFEEDFACF:
        die("alias probe needs a thin 64-bit little-endian Mach-O")
    ncmds, off = struct.unpack_from("<I", buf, 16)[0], 32
    symtab = dysym = text_sect = None
    nsect = 0
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", buf, off)
        if cmd == 0x19:  # LC_SEGMENT_64: 72-byte header, 80-byte sections
            for k in range(struct.unpack_from("<I", buf, off + 64)[0]):
                sect, seg = struct.unpack_from("<16s16s", buf, off + 72 + 80 * k)
                nsect += 1
                if (seg.rstrip(b"\0"), sect.rstrip(b"\0")) == (b"__TEXT", b"__text"):
                    text_sect = nsect
        elif cmd == 0x2:  # LC_SYMTAB
            symtab = struct.unpack_from("<IIII", buf, off + 8)
        elif cmd == 0xB:  # LC_DYSYMTAB
            dysym = struct.unpack_from("<IIII", buf, off + 8)
        off += size
    if not symtab or not dysym or not text_sect:
        die("alias probe: no LC_SYMTAB, LC_DYSYMTAB or __TEXT,__text")
    il, nl, ie, ne = dysym
    return symtab[0], symtab[2], range(il, il + nl), range(ie, ie + ne), text_sect


def cmd_aliases(a):
    """Moves symbols of a copy of the slice onto one address, making aliases
    this binary does not have, and asks both tools which name they report."""
    buf = bytearray(open(a.slice, "rb").read())
    symoff, stroff, locs, exts, text_sect = macho_symtab(buf)

    def sym(i):
        strx, ntype, nsect, _, value = struct.unpack_from("<IBBHQ", buf, symoff + 16 * i)
        name = buf[stroff + strx:buf.index(0, stroff + strx)].decode()
        return {"index": i, "name": strip1(name), "value": value,
                # N_SECT (no stab bits) in __TEXT,__text
                "text": ntype & 0xEE == 0x0E and nsect == text_sect}

    def move(s, to):
        struct.pack_into("<Q", buf, symoff + 16 * s["index"] + 8, to["value"])

    # Names nothing demangles (C, assembly, Swift), so that `symd atos`, which
    # prints display names, and llvm-symbolizer --no-demangle name alike.
    def plain(s):
        return s["text"] and not s["name"].startswith(("_Z", "_R", "___Z"))

    text_locs = [s for s in map(sym, locs) if plain(s)]
    text_exts = [s for s in map(sym, exts) if plain(s)]
    cases = []
    # 1. an external and a local with a greater name: symd keeps externals first.
    e = text_exts[len(text_exts) // 2]
    l = next(s for s in text_locs[:len(text_locs) // 2] if s["name"] > e["name"])
    move(l, e)
    cases.append(("external + local (greater name)", e, [l, e]))
    # 2. two locals, the first in the symbol table with the greater name.
    x = text_locs[len(text_locs) // 2]
    y = next(s for s in text_locs[len(text_locs) // 2 + 1:] if s["name"] < x["name"])
    move(y, x)
    cases.append(("two locals (first has the greater name)", x, [x, y]))
    probe = os.path.join(os.path.dirname(os.path.abspath(a.out)), "alias-probe.macho")
    with open(probe, "wb") as f:
        f.write(buf)
    addrs = [c[1]["value"] for c in cases]  # the shared address itself
    llvm = symbolizer_answers(probe, addrs)
    res = []
    for (label, at, members), addr, (lname, _) in zip(cases, addrs, llvm):
        out = run([a.symd, "atos", "-o", probe, "-s", "0", "0x%x" % addr])
        sname = out.split(" (in ")[0].strip()
        res.append({"case": label, "names_in_symtab_order": [m["name"] for m in
                                                              sorted(members, key=lambda m: m["index"])],
                    "symd": sname, "llvm_symbolizer": lname, "agree": sname == lname})
        print(f"alias probe, {label}: symd {sname[:50]}, llvm-symbolizer {lname[:50]}: "
              + ("agree" if sname == lname else "DISAGREE"))
    os.unlink(probe)
    write_json(a.out, {"cases": res})


# ---- wrk bodies and llvm-symbolizer timing -------------------------------------


def cmd_bodies(a):
    s = read_json(a.samples)
    uuid, text_vmaddr = image_of(a.upload, "arm64")
    rng = random.Random(f"{a.seed}/bodies")
    pool = [x["vmaddr"] for x in s["samples"]]
    os.makedirs(a.dir, exist_ok=True)
    addrs = []
    for i in range(a.count):
        chosen = [rng.choice(pool) for _ in range(a.frames)]
        addrs.extend(chosen)
        with open(os.path.join(a.dir, "body-%03d.json" % i), "wb") as f:
            f.write(symbolicate_body(uuid, "arm64", chosen, text_vmaddr, a.adjust))
    with open(os.path.join(a.dir, "addrs.txt"), "w") as f:
        f.writelines("0x%x\n" % v for v in addrs)
    print(f"{a.count} bodies of {a.frames} frames, {len(addrs)} addresses, in {a.dir}")


def time_symbolizer(slice_path, infile, outfile, extra):
    """Wall clock of `llvm-symbolizer --obj=SLICE EXTRA < infile > outfile`."""
    with open(infile, "rb") as i, open(outfile, "wb") as o:
        t = time.perf_counter()
        subprocess.run(["llvm-symbolizer", "--obj=" + slice_path] + extra,
                       stdin=i, stdout=o, check=True)
        return time.perf_counter() - t


def count_answers(outfile, style):
    with open(outfile) as f:
        text = f.read()
    return text.count("\n\n") if style == "LLVM" else text.count("\n")


# What is timed. The first is the headline: the tool as the issue names it,
# default output style (which demangles, as symd does), answers written to a
# file.
SYMBOLIZER_VARIANTS = [
    ("default", [], "file"),
    ("default, stdout to /dev/null", [], "null"),
    ("--no-demangle", ["--no-demangle"], "file"),
    ("--output-style=JSON", ["--output-style=JSON"], "file"),
]


def timed_variant(slice_path, infile, outfile, variant, expect, base=()):
    """One run of a variant: seconds, the CPU it used and the CPU others used.
    base: arguments every variant gets (the DWARF bench: --dsym-hint, --inlining)."""
    label, extra, sink = variant
    extra = list(base) + extra
    m0, r0 = machine_cpu(), resource.getrusage(resource.RUSAGE_CHILDREN)
    dt = time_symbolizer(slice_path, infile, os.devnull if sink == "null" else outfile, extra)
    m1, r1 = machine_cpu(), resource.getrusage(resource.RUSAGE_CHILDREN)
    if sink == "file":
        got = count_answers(outfile, "JSON" if "--output-style=JSON" in extra else "LLVM")
        if got != expect:
            die(f"llvm-symbolizer ({label}) answered {got} of {expect}")
    cores = os.cpu_count() or 1
    busy = (1 - (m1[1] - m0[1]) / max(1, m1[0] - m0[0])) * cores * dt
    own = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    return {"seconds": dt, "frames_per_s": expect / dt, "cpu_s": own,
            "other_cores": max(0.0, (busy - own) / dt)}


def cmd_symbolizer(a):
    """Times llvm-symbolizer. Phase "before" (ahead of wrk) calibrates the
    repeat count and runs every variant; later phases (one after each wrk run)
    run the headline again with the same input, so each wrk run has an
    llvm-symbolizer run next to it in time: a shared host whose speed drifts
    shows up as a spread rather than a skewed ratio."""
    with open(a.addrs) as f:
        one = f.read()
    n = one.count("\n")
    if a.phase != "before" and not a.reps_from:
        die("--reps-from is needed after the first phase")
    base = a.extra or []
    work = os.path.dirname(os.path.abspath(a.out))
    infile = os.path.join(work, "symbolizer-in.txt")
    outfile = os.path.join(work, "symbolizer-out.txt")
    res = {"addresses": n, "phase": a.phase, "base_args": base}
    if a.reps_from:
        reps = read_json(a.reps_from)["reps"]
        with open(infile, "w") as f:
            f.write(one * reps)
    else:
        # Process start (reading the slice, sorting its symbols) counts, as it
        # would for any batch. Startup alone, for the record: one address.
        with open(infile, "w") as f:
            f.write(one[:one.index("\n") + 1])
        res["startup_s"] = time_symbolizer(a.slice, infile, os.devnull, base)
        print(f"llvm-symbolizer startup (1 address): {res['startup_s'] * 1e3:.0f} ms")
        # Repeat the address list until the headline run lasts >= min_seconds.
        reps = 1
        while True:
            with open(infile, "w") as f:
                f.write(one * reps)
            dt = time_symbolizer(a.slice, infile, outfile, base)
            if reps == 1:
                # One pass over the list, process start included: for DWARF
                # that includes reading it (cold); the repeats run warm.
                res["one_pass_s"] = dt
            if dt >= a.min_seconds:
                break
            reps = max(reps + 1, math.ceil(reps * a.min_seconds * 1.15 / dt))
    res["reps"] = reps
    variants = SYMBOLIZER_VARIANTS if a.phase == "before" else SYMBOLIZER_VARIANTS[:1]
    res["variants"] = []
    for i, v in enumerate(variants):
        runs = [timed_variant(a.slice, infile, outfile, v, n * reps, base)
                for _ in range(a.runs if i == 0 else 1)]
        res["variants"].append({"label": v[0], "args": v[1], "sink": v[2], "runs": runs})
        print(f"llvm-symbolizer {v[0]:30} {n} addrs x {reps}: " + ", ".join(
            f"{r['seconds']:.2f} s = {r['frames_per_s']:,.0f} frames/s"
            + (f" (other load {r['other_cores']:.2f} cores)" if r["other_cores"] > 0.25 else "")
            for r in runs))
    for p in (infile, outfile):
        if os.path.exists(p):
            os.unlink(p)
    write_json(a.out, res)


def cmd_load(a):
    """CPU busy on the machine, in cores, over a.seconds (from /proc/stat)."""
    def snap():
        with open("/proc/stat") as f:
            v = list(map(int, f.readline().split()[1:]))
        return sum(v), v[3] + v[4]
    t0, i0 = snap()
    time.sleep(a.seconds)
    t1, i1 = snap()
    cores = os.cpu_count() or 1
    busy = (1 - (i1 - i0) / max(1, t1 - t0)) * cores
    write_json(a.out, {"busy_cores": busy, "cores": cores})
    print(f"background load: {busy:.2f} of {cores} cores busy")
    if busy > 0.25:
        print(f"WARNING: something else is using {busy:.1f} cores; throughput figures "
              "will be low and noisy")


# ---- wrk ---------------------------------------------------------------------


def cmd_wrk(a):
    """One wrk run; also the CPU that symd, wrk and everything else used."""
    t = min(a.threads, a.conns)
    cmd = ["wrk", f"-t{t}", f"-c{a.conns}", f"-d{a.seconds}s", "--latency",
           "-s", a.script, a.url + "/v1/symbolicate", "--", a.bodies, str(a.count)]
    m0, s0 = machine_cpu(), proc_cpu_s(a.server_pid)
    th0 = thread_cpu_s(a.server_pid)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m1, s1 = machine_cpu(), proc_cpu_s(a.server_pid)
    th1 = thread_cpu_s(a.server_pid)
    # Busy threads only (the main thread waits for a signal).
    per_thread = sorted((round((th1[t] - th0.get(t, 0)) / wall, 2) for t in th1), reverse=True)
    per_thread = [c for c in per_thread if c >= 0.01]
    # symd's MHD thread pool keeps a connection on the thread that accepted
    # it; when one thread accepted them all, the others idle.
    one_thread = (len(th1) > 2 and bool(per_thread)
                  and per_thread[0] >= 0.9 * (s1 - s0) / wall)
    text = p.stdout + p.stderr
    with open(a.log, "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    rps = re.search(r"Requests/sec:\s*([\d.]+)", text)
    lua = re.search(r"lua: responses (\d+) non2xx (\d+) errors (\d+)", text)
    lat = re.search(r"^\s*Latency\s+(\S+)", text, re.M)
    p99 = re.search(r"^\s*99%\s+(\S+)", text, re.M)
    if p.returncode != 0 or not rps or not lua:
        die(f"wrk failed ({p.returncode}):\n{text}")
    cores = os.cpu_count() or 1
    busy = (1 - (m1[1] - m0[1]) / max(1, m1[0] - m0[0])) * cores
    server = (s1 - s0) / wall
    client = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / wall
    res = {"connections": a.conns, "threads": t, "seconds": a.seconds,
           "frames_per_request": a.frames, "requests_per_s": float(rps.group(1)),
           "frames_per_s": float(rps.group(1)) * a.frames,
           "responses": int(lua.group(1)), "non2xx": int(lua.group(2)),
           "socket_errors": int(lua.group(3)),
           "latency_avg": lat.group(1) if lat else "?",
           "latency_p99": p99.group(1) if p99 else "?",
           "server_cores": server, "server_threads_cores": per_thread,
           "one_thread": one_thread,
           "wrk_cores": client,
           "other_cores": max(0.0, busy - server - client)}
    write_json(a.out, res)
    print(f"wrk -t{t} -c{a.conns}: {res['requests_per_s']:.0f} req/s = "
          f"{res['frames_per_s']:,.0f} frames/s; latency avg {res['latency_avg']} "
          f"p99 {res['latency_p99']}; {res['non2xx']} non-2xx, "
          f"{res['socket_errors']} socket errors; cores used: symd {server:.2f} "
          f"({' + '.join(map(str, per_thread))}), wrk {client:.2f}, "
          f"other {res['other_cores']:.2f}"
          + ("; ONE symd thread served every connection" if one_thread else ""))


# ---- DWARF -------------------------------------------------------------------
#
# The generated program (bench/gen_program.py), its dSYM, llvm-gsymutil and
# llvm-symbolizer --inlining on one side, symd with line + inline data on the
# other. The symd response contract these steps check: one input frame gives
# one output frame per inlined level, innermost first ("inlined": true), then
# the function that contains the address ("inlined": false), all with the
# address as sent; each has "file", "line" ("column" when known), "symbol"
# (demangled) and "mangled" (raw, compared with llvm-symbolizer --no-demangle).


def vm_status(pid):
    """VmRSS and VmHWM of a process, in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out


class RssSampler(threading.Thread):
    """Samples a process's VmRSS every `period` seconds; keeps the maximum."""

    def __init__(self, pid, period=0.01):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.peak, self.samples = 0, 0
        self.halt = threading.Event()

    def run(self):
        while True:
            try:
                rss = vm_status(self.pid).get("VmRSS", 0)
            except OSError:
                return
            self.peak = max(self.peak, rss)
            self.samples += 1
            if self.halt.wait(self.period):
                return

    def stop(self):
        self.halt.set()
        self.join()
        return self.peak


def run_measured(cmd):
    """Runs cmd; returns (wall seconds, max RSS bytes of that child, output)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    p.stdout.close()
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if p.returncode != 0:
        die(f"{' '.join(cmd)} failed ({p.returncode}):\n{out}")
    return dt, ru.ru_maxrss * 1024, out


def cmd_dw_stats(a):
    """What the generated program is: functions, text, dSYM, DWARF counts; and
    its image (UUID, __TEXT vmaddr) as bench.py bodies wants it."""
    table = function_table(a.binary)
    text_start, text_end = table["text_start"], table["text_end"]
    m = re.search(r"UUID: (\S+) \(arm64\)", run(["llvm-dwarfdump", "--uuid", a.binary]))
    if not m:
        die(f"{a.binary}: no arm64 UUID")
    dm = re.search(r"UUID: (\S+) \(arm64\)", run(["llvm-dwarfdump", "--uuid", a.dwarf]))
    if not dm or dm.group(1) != m.group(1):
        die(f"{a.dwarf} does not belong to {a.binary} (UUID)")
    st = json.loads(run(["llvm-dwarfdump", "--statistics", a.dwarf]))
    text_vmaddr = seg = None
    for line in run(["llvm-objdump", "--macho", "--private-headers", a.binary]).splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "segname":
            seg = f[1]
        elif len(f) == 2 and f[0] == "vmaddr" and seg == "__TEXT" and text_vmaddr is None:
            text_vmaddr = int(f[1], 16)
    res = {"functions": len(table["functions"]), "text_bytes": text_end - text_start,
           "binary_bytes": os.path.getsize(a.binary), "dwarf_bytes": os.path.getsize(a.dwarf),
           "subprograms": st.get("#functions"), "inlined_subroutines": st.get("#inlined functions"),
           "uuid": m.group(1), "text_vmaddr": "0x%x" % text_vmaddr,
           # What `bodies` reads (image_of): the image as an upload answer has it.
           "images": [{"arch": "arm64", "uuid": m.group(1), "text_vmaddr": "0x%x" % text_vmaddr}]}
    write_json(a.out, res)
    print(f"{a.binary}: {res['functions']} functions, __text {res['text_bytes'] / 1e6:.2f} MB, "
          f"binary {res['binary_bytes'] / 1e6:.1f} MB; dSYM DWARF {res['dwarf_bytes'] / 1e6:.1f} MB "
          f"with {res['subprograms']} subprograms and {res['inlined_subroutines']} inlined "
          f"subroutines; UUID {res['uuid']}")


def cmd_dw_gsym(a):
    """llvm-gsymutil --convert of the dSYM's DWARF file: best of N wall times
    with its default thread count (one per core) and with one thread."""
    out = os.path.join(a.work, "bench.gsym")
    res = {"input_bytes": os.path.getsize(a.dwarf), "cores": os.cpu_count(), "configs": []}
    for label, extra in (("default threads", []), ("--num-threads=1", ["--num-threads=1"])):
        runs = []
        for _ in range(a.runs):
            if os.path.exists(out):
                os.unlink(out)
            dt, rss, text = run_measured(["llvm-gsymutil", "--convert=" + a.dwarf,
                                          "--out-file=" + out] + extra)
            runs.append({"seconds": dt, "max_rss": rss})
        loaded = re.search(r"Loaded (\d+) functions from DWARF", text)
        res["configs"].append({"label": label, "args": extra, "runs": runs,
                               "best_s": min(r["seconds"] for r in runs),
                               "max_rss": max(r["max_rss"] for r in runs),
                               "gsym_bytes": os.path.getsize(out),
                               "functions_from_dwarf": int(loaded.group(1)) if loaded else None})
        c = res["configs"][-1]
        print(f"llvm-gsymutil --convert ({label}): best {c['best_s'] * 1e3:.0f} ms of "
              + ", ".join(f"{r['seconds'] * 1e3:.0f}" for r in runs)
              + f" ms; GSYM {c['gsym_bytes']:,} bytes; {c['functions_from_dwarf']} functions "
              f"from DWARF; max RSS {c['max_rss'] / 2**20:.0f} MiB")
    os.unlink(out)
    res["gsym_bytes"] = res["configs"][0]["gsym_bytes"]
    res["best_s"] = res["configs"][0]["best_s"]
    write_json(a.out, res)


def reference_frames(binary, dsym, vmaddrs, demangle):
    """llvm-symbolizer --inlining through the dSYM, as fixtures/gen_expected.py
    asks it: --obj=BINARY --dsym-hint=DSYM, file addresses (vmaddrs) on stdin.
    One list of [function, file, line, column] per address, innermost first."""
    args = ["llvm-symbolizer", "--obj=" + binary, "--dsym-hint=" + dsym, "--inlining",
            "--output-style=JSON"] + ([] if demangle else ["--no-demangle"])
    out = run(args, input="".join("0x%x\n" % v for v in vmaddrs))
    res = []
    for line in out.splitlines():
        if line.strip():
            j = json.loads(line)
            if "Error" in j:
                die(f"llvm-symbolizer: {j['Error']}")
            res.append([[s["FunctionName"], s["FileName"], s["Line"], s["Column"]]
                        for s in j["Symbol"]])
    if len(res) != len(vmaddrs):
        die(f"llvm-symbolizer answered {len(res)} of {len(vmaddrs)} addresses")
    return res


def cmd_dw_reference(a):
    s = read_json(a.samples)
    vmaddrs = [x["vmaddr"] for x in s["samples"]]
    t = time.perf_counter()
    raw = reference_frames(a.binary, a.dsym, vmaddrs, False)
    dem = reference_frames(a.binary, a.dsym, vmaddrs, True)
    dt = time.perf_counter() - t
    hist = {}
    for fr in raw:
        hist[len(fr)] = hist.get(len(fr), 0) + 1
    nolines = sum(1 for fr in raw if not fr[0][1])
    nframes = sum(len(fr) for fr in raw)
    write_json(a.out, {"vmaddrs": vmaddrs, "raw": raw, "demangled": dem})
    print(f"llvm-symbolizer --inlining: {len(raw)} addresses, {nframes} frames "
          f"({nframes / len(raw):.2f} per address; addresses with N frames: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(hist.items()))
          + f"), {nolines} without line info; {dt:.1f} s for both runs")
    if nolines == len(raw):
        die("llvm-symbolizer found no line info through the dSYM")


def frame_groups(frames, n):
    """Splits symd's output frames into n groups, one per input frame: the
    inlined levels (inlined: true) and the frame that ends them."""
    groups, cur = [], []
    for f in frames:
        cur.append(f)
        if f.get("inlined") is not True:
            groups.append(cur)
            cur = []
    if cur or len(groups) != n:
        raise ValueError(f"{len(frames)} output frames do not split into {n} groups "
                         f"(got {len(groups)} groups, {len(cur)} frames left over); "
                         "is every output frame's \"inlined\" set?")
    return groups


def symd_frames(conn, uuid, text_vmaddr, vmaddrs):
    """The frame groups symd gives for vmaddrs (adjust none), in order."""
    status, body = post(conn, "/v1/symbolicate",
                        symbolicate_body(uuid, "arm64", vmaddrs, text_vmaddr, "none"),
                        "application/json")
    if status != 200:
        raise ValueError(f"/v1/symbolicate answered {status}: {body[:300]!r}")
    frames = json.loads(body)["threads"][0]["frames"]
    groups = frame_groups(frames, len(vmaddrs))
    slide = LOAD_ADDRESS - text_vmaddr
    for v, g in zip(vmaddrs, groups):
        want = "0x%x" % (v + slide)
        if any(f.get("address") != want for f in g):
            raise ValueError(f"frames of {want} carry other addresses: {g}")
    return groups


def has_line(group):
    return any(f.get("file") and isinstance(f.get("line"), int) for f in group)


def cmd_dw_upload(a):
    """Binary first, then the dSYM's DWARF file. Upload -> queryable of the
    dSYM: from sending it until a symbolicate of one sampled address returns
    a frame with file and line. The server's peak RSS meanwhile: VmHWM before
    and after, and VmRSS sampled every 10 ms."""
    res = {"status": "fail"}

    def fail(msg):
        res["message"] = msg
        write_json(a.out, res)
        print("FAIL: " + msg)
        sys.exit(1)

    conn = connect(a.url)
    with open(a.binary, "rb") as f:
        binary = f.read()
    t = time.perf_counter()
    status, body = post(conn, "/v1/images?name=" + a.name, binary, "application/octet-stream")
    res["binary_upload_ms"] = (time.perf_counter() - t) * 1e3
    if status not in (200, 201):
        fail(f"binary upload answered {status}: {body[:300]!r}")
    images = json.loads(body)["images"]
    arm = next((i for i in images if i["arch"] == "arm64"), None)
    if not arm:
        fail(f"binary upload answer has no arm64 image: {images}")
    res["images"] = images
    uuid, text_vmaddr = arm["uuid"], int(arm["text_vmaddr"], 16)
    # The probe: the first sample whose every level has a file and a line > 0
    # in llvm-symbolizer's answer (line 0 is "no line" to some readers).
    ref = read_json(a.reference)
    probe = next((v for v, fr in zip(ref["vmaddrs"], ref["raw"])
                  if all(x[1] and x[2] > 0 for x in fr)), None)
    if probe is None:
        fail("no sampled address has a file and line on every level in llvm-symbolizer's answer")
    with open(a.dwarf, "rb") as f:
        dwarf = f.read()
    res["dwarf_bytes"] = len(dwarf)
    before = vm_status(a.server_pid)
    res["rss_before"], res["hwm_before"] = before["VmRSS"], before["VmHWM"]
    sampler = RssSampler(a.server_pid)
    sampler.start()
    t0 = time.perf_counter()
    status, body = post(conn, "/v1/images?name=" + a.name + ".dSYM", dwarf,
                        "application/octet-stream")
    t1 = time.perf_counter()
    res["dsym_upload_ms"] = (t1 - t0) * 1e3
    res["dsym_upload_status"] = status
    try:
        res["dsym_images"] = json.loads(body).get("images")
    except ValueError:
        res["dsym_images"] = None
    if status not in (200, 201, 202):
        sampler.stop()
        fail(f"dSYM upload answered {status}: {body[:300]!r}")
    tries, last = 0, None
    while True:
        tries += 1
        try:
            g = symd_frames(conn, uuid, text_vmaddr, [probe])[0]
            last = g
            if has_line(g):
                break
        except ValueError as e:
            last = str(e)
        if time.perf_counter() - t0 > a.timeout:
            sampler.stop()
            fail(f"symd returned no line data (no frame with file and line) for "
                 f"0x{probe:x} within {a.timeout:.0f} s of the dSYM upload "
                 f"(answered {status}); the last answer: {json.dumps(last)[:400]}. "
                 "Does this symd read DWARF?")
        time.sleep(0.001)
    t2 = time.perf_counter()
    time.sleep(0.05)  # let the sampler see the settled process too
    res["rss_peak_sampled"] = sampler.stop()
    res["rss_samples"] = sampler.samples
    after = vm_status(a.server_pid)
    res["rss_after"], res["hwm_after"] = after["VmRSS"], after["VmHWM"]
    res.update({"status": "ok", "queryable_ms": (t2 - t0) * 1e3, "tries": tries,
                "probe": "0x%x" % probe, "probe_frames": last})
    write_json(a.out, res)
    print(f"binary upload {res['binary_upload_ms']:.0f} ms; dSYM ({len(dwarf) / 1e6:.1f} MB) "
          f"upload {res['dsym_upload_ms']:.0f} ms (status {status}), upload->queryable "
          f"{res['queryable_ms']:.0f} ms ({tries} probes)")
    print(f"symd RSS: {res['rss_before'] / 2**20:.0f} MiB before, sampled peak "
          f"{res['rss_peak_sampled'] / 2**20:.0f} MiB, VmHWM {res['hwm_before'] / 2**20:.0f} -> "
          f"{res['hwm_after'] / 2**20:.0f} MiB, {res['rss_after'] / 2**20:.0f} MiB after")


def cmd_dw_index(a):
    """Bytes of each kind of index blob in the database (image_data)."""
    out = run(["sqlite3", a.db, "SELECT kind, count(*), sum(length(data)) FROM image_data "
               "GROUP BY kind ORDER BY kind"])
    kinds = {}
    for line in out.splitlines():
        k, n, b = line.split("|")
        kinds[k] = {"blobs": int(n), "bytes": int(b or 0)}
    wal = a.db + "-wal"
    res = {"kinds": kinds, "db_bytes": os.path.getsize(a.db)
           + (os.path.getsize(wal) if os.path.exists(wal) else 0)}
    write_json(a.out, res)
    print("image_data: " + (", ".join(f"{k} {v['bytes']:,} bytes ({v['blobs']} blob(s))"
                                      for k, v in kinds.items()) or "empty")
          + f"; database file + WAL {res['db_bytes']:,} bytes")
    if "lines" not in kinds:
        print("FAIL: no image_data row with kind 'lines' (the line + inline index)")


def norm_file(f):
    return os.path.normpath(f) if f else ""


def cmd_dw_accuracy(a):
    """symd against llvm-symbolizer --inlining on every sampled address: the
    same number of levels, and on each level the same function (symd's
    "mangled", else "symbol", vs --no-demangle), file (both normalized: "./a.c"
    and "a.c" are one file) and line. Demangled names ("symbol" vs the default
    output) are counted too, for information."""
    ref = read_json(a.reference)
    up = read_json(a.upload)
    arm = next(i for i in up["images"] if i["arch"] == "arm64")
    uuid, text_vmaddr = arm["uuid"], int(arm["text_vmaddr"], 16)
    conn = connect(a.url)
    vmaddrs = ref["vmaddrs"]
    res = {"n": len(vmaddrs), "agree": 0, "levels": 0, "levels_agree": 0,
           "depth_differs": 0, "no_lines": 0, "demangled_agree": 0, "first_disagreements": []}
    try:
        groups = []
        for i in range(0, len(vmaddrs), a.batch):
            groups += symd_frames(conn, uuid, text_vmaddr, vmaddrs[i:i + a.batch])
    except ValueError as e:
        res["error"] = str(e)
        write_json(a.out, res)
        print(f"FAIL: accuracy: {e}")
        sys.exit(1)
    for v, g, want, wdem in zip(vmaddrs, groups, ref["raw"], ref["demangled"]):
        got = [[f.get("mangled") or f.get("symbol"), f.get("file") or "", f.get("line") or 0]
               for f in g]
        exp = [[x[0], x[1], x[2]] for x in want]
        res["levels"] += len(exp)
        res["no_lines"] += not has_line(g)
        res["depth_differs"] += len(got) != len(exp)
        ok_levels = sum(1 for x, y in zip(got, exp)
                        if x[0] == y[0] and norm_file(x[1]) == norm_file(y[1]) and x[2] == y[2])
        res["levels_agree"] += ok_levels if len(got) == len(exp) else 0
        ok = len(got) == len(exp) and ok_levels == len(exp)
        res["agree"] += ok
        res["demangled_agree"] += [f.get("symbol") for f in g] == [x[0] for x in wdem]
        if not ok and len(res["first_disagreements"]) < 20:
            res["first_disagreements"].append({
                "vmaddr": "0x%x" % v,
                "symd": [{k: f.get(k) for k in ("symbol", "mangled", "file", "line", "column",
                                                "inlined", "status")} for f in g],
                "llvm_symbolizer": want})
    write_json(a.out, res)
    print(f"accuracy: {res['agree']}/{res['n']} addresses agree with llvm-symbolizer "
          f"--inlining on every level (function, file, line); levels {res['levels_agree']}/"
          f"{res['levels']}; {res['depth_differs']} with another number of levels; "
          f"{res['no_lines']} without any file:line; demangled names {res['demangled_agree']}/"
          f"{res['n']}")
    for b in res["first_disagreements"][:3]:
        print("  DISAGREE " + json.dumps(b))


def cmd_dw_summary(a):
    d = a.dir

    def opt(name):
        p = os.path.join(d, name)
        return read_json(p) if os.path.exists(p) else None

    st, gs, up, idx, acc = (opt("dw-stats.json"), opt("dw-gsym.json"), opt("dw-upload.json"),
                            opt("dw-index.json"), opt("dw-accuracy.json"))
    before = opt("dw-symbolizer-before.json")
    load = opt("dw-load.json")
    runs = sorted((read_json(os.path.join(d, f)) for f in os.listdir(d)
                   if f.startswith("dw-wrk-") and f.endswith(".json")),
                  key=lambda r: r["connections"])
    after = {r["connections"]: opt(f"dw-symbolizer-after-c{r['connections']}.json") for r in runs}

    def mark(ok):
        return "ok" if ok else "FAIL"

    mib = 2 ** 20
    failed, perf_failed = [], []
    lines = [f"DWARF: generated program, {st['functions']} functions, __text "
             f"{st['text_bytes'] / 1e6:.2f} MB, dSYM DWARF {st['dwarf_bytes'] / 1e6:.1f} MB "
             f"({st['subprograms']} subprograms, {st['inlined_subroutines']} inlined subroutines)"]
    gbest = gs["best_s"]
    g1 = gs["configs"][1]["best_s"]
    symd_ok = up is not None and up.get("status") == "ok"
    if symd_ok:
        q = up["queryable_ms"] / 1e3
        conv_ok = q <= 2 * gbest
        if not conv_ok:
            perf_failed.append("conversion")
        lines.append(f"dSYM upload->queryable: {q * 1e3:.0f} ms (upload alone "
                     f"{up['dsym_upload_ms']:.0f} ms); llvm-gsymutil --convert: {gbest * 1e3:.0f} ms "
                     f"({gs['cores']} threads; 1 thread {g1 * 1e3:.0f} ms): {q / gbest:.2f}x "
                     f"(goal <= 2x) {mark(conv_ok)}")
    else:
        failed.append("upload")
        msg = up["message"] if up else "dw-upload.json missing"
        lines.append(f"dSYM upload->queryable: FAIL: {msg}")
        lines.append(f"llvm-gsymutil --convert: {gbest * 1e3:.0f} ms ({gs['cores']} threads; "
                     f"1 thread {g1 * 1e3:.0f} ms)")
    gsym = gs["gsym_bytes"]
    if idx and "lines" in idx["kinds"]:
        lb = idx["kinds"]["lines"]["bytes"]
        sb = sum(v["bytes"] for k, v in idx["kinds"].items() if k == "symbols")
        size_ok = lb + sb <= gsym
        if not size_ok:
            perf_failed.append("size")
        lines.append(f"index: lines {lb:,} bytes, lines+symbols {lb + sb:,} bytes; GSYM "
                     f"{gsym:,} bytes: {lb / gsym:.2f}x and {(lb + sb) / gsym:.2f}x "
                     f"(goal lines+symbols <= GSYM) {mark(size_ok)}")
    else:
        failed.append("index")
        have = ", ".join(f"{k} {v['bytes']:,}" for k, v in idx["kinds"].items()) if idx else "?"
        lines.append(f"index: FAIL: no 'lines' blob in image_data (have: {have or 'nothing'}); "
                     f"GSYM {gsym:,} bytes")
    gmax = max(c["max_rss"] for c in gs["configs"])
    if symd_ok:
        lines.append(f"symd peak RSS during the dSYM upload: {up['hwm_after'] / mib:.0f} MiB "
                     f"VmHWM (was {up['hwm_before'] / mib:.0f} MiB; RSS {up['rss_before'] / mib:.0f} "
                     f"MiB before, sampled peak {up['rss_peak_sampled'] / mib:.0f} MiB, "
                     f"{up['rss_after'] / mib:.0f} MiB after); llvm-gsymutil max RSS "
                     f"{gmax / mib:.0f} MiB")
    else:
        lines.append(f"symd peak RSS: not measured; llvm-gsymutil max RSS {gmax / mib:.0f} MiB")
    if acc and "error" not in acc:
        acc_ok = acc["agree"] == acc["n"]
        if not acc_ok:
            failed.append("accuracy")
        lines.append(f"accuracy: {acc['agree']}/{acc['n']} addresses match llvm-symbolizer "
                     f"--inlining on every level (function, file, line) {mark(acc_ok)}")
    else:
        failed.append("accuracy")
        lines.append("accuracy: FAIL: " + (acc["error"] if acc else "not run (no line data)"))
    head_runs = []
    if before:
        head_runs = before["variants"][0]["runs"] + [
            x for c in sorted(after) if after[c] for x in after[c]["variants"][0]["runs"]]
        head = max(head_runs, key=lambda r: r["frames_per_s"])
    if runs and before:
        best = max(runs, key=lambda r: r["frames_per_s"])
        ratio = best["frames_per_s"] / head["frames_per_s"]
        if ratio < 2:
            perf_failed.append("throughput")
        bad = sum(r["non2xx"] + r["socket_errors"] for r in runs)
        if bad:
            failed.append("requests")
        lines += [
            f"symd /v1/symbolicate (lines+inlines): {best['frames_per_s']:8.0f} frames/s (wrk "
            f"{best['seconds']} s, {best['connections']} conns, {bad} non-2xx/socket errors)",
            f"llvm-symbolizer --inlining:          {head['frames_per_s']:8.0f} frames/s "
            f"({before['addresses']} addrs x {before['reps']})",
            f"ratio: {ratio:.2f}x (goal >= 2x) {mark(ratio >= 2)}"]
    else:
        lines += ["symd /v1/symbolicate (lines+inlines): FAIL: not measured (no line data)",
                  f"llvm-symbolizer --inlining:          {head['frames_per_s']:8.0f} frames/s "
                  f"({before['addresses']} addrs x {before['reps']})" if before else
                  "llvm-symbolizer --inlining: not measured"]
    lines.append("details:")
    if runs and before:
        lines.append(f"  symd best run: -t{best['threads']} -c{best['connections']}, latency avg "
                     f"{best['latency_avg']} p99 {best['latency_p99']}; symd used "
                     f"{best['server_cores']:.2f} cores, wrk {best['wrk_cores']:.2f}; runs: "
                     + ", ".join(f"c{r['connections']} {r['frames_per_s']:.0f}" for r in runs))
        lines.append("  each against the llvm-symbolizer run right after it: " + ", ".join(
            f"c{r['connections']} "
            f"{r['frames_per_s'] / after[r['connections']]['variants'][0]['runs'][0]['frames_per_s']:.2f}x"
            for r in runs if after.get(r["connections"])))
        symd_cpu = best["frames_per_s"] / best["server_cores"]
        llvm_cpu = head["frames_per_s"] * head["seconds"] / head["cpu_s"]
        lines.append(f"  per CPU-second: symd {symd_cpu:.0f} frames, llvm-symbolizer {llvm_cpu:.0f} "
                     f"({symd_cpu / llvm_cpu:.2f}x)")
    if before:
        lines.append(f"  llvm-symbolizer --inlining (default output, stdout to a file, 1 core): "
                     f"startup {before['startup_s'] * 1e3:.0f} ms; frames/s "
                     + ", ".join(f"{r['frames_per_s']:.0f}" for r in head_runs))
        if before.get("one_pass_s"):
            lines.append(f"  llvm-symbolizer --inlining, one cold pass over the {before['addresses']} "
                         f"addresses (reading the DWARF included): {before['one_pass_s']:.2f} s = "
                         f"{before['addresses'] / before['one_pass_s']:.0f} frames/s")
        for v in before["variants"][1:]:
            r = v["runs"][0]
            lines.append(f"  llvm-symbolizer --inlining {v['label']:29} {r['frames_per_s']:8.0f} "
                         "frames/s")
    if acc and "error" not in acc:
        lines.append(f"  accuracy levels: {acc['levels_agree']}/{acc['levels']} agree; "
                     f"{acc['depth_differs']} addresses with another number of levels; "
                     f"{acc['no_lines']} without file:line; demangled names (symbol vs "
                     f"llvm-symbolizer's default) {acc['demangled_agree']}/{acc['n']}")
    for c in gs["configs"]:
        lines.append(f"  llvm-gsymutil --convert {c['label']}: "
                     + ", ".join(f"{r['seconds'] * 1e3:.0f}" for r in c["runs"])
                     + f" ms; max RSS {c['max_rss'] / mib:.0f} MiB")
    if idx:
        lines.append(f"  database file + WAL after the uploads: {idx['db_bytes']:,} bytes")
    if load and load["busy_cores"] > 0.25:
        lines.append(f"WARNING: other processes used {load['busy_cores']:.2f} cores before the "
                     "throughput runs; frames/s figures are unreliable")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(a.out, "w") as f:
        f.write(text)
    if failed:
        print(f"DWARF bench: symd failed: {', '.join(failed)}", file=sys.stderr)
    fail = bool(failed) or (a.strict and bool(perf_failed))
    sys.exit(1 if fail else 0)


# ---- summary -----------------------------------------------------------------


def cmd_summary(a):
    d = a.dir
    up = read_json(os.path.join(d, "upload.json"))
    acc = [read_json(os.path.join(d, f"accuracy-{arch}.json")) for arch in ("arm64", "x86_64")]
    runs = sorted((read_json(os.path.join(d, f)) for f in os.listdir(d)
                   if f.startswith("wrk-") and f.endswith(".json")),
                  key=lambda r: r["connections"])
    before = read_json(os.path.join(d, "symbolizer-before.json"))
    after = {r["connections"]: read_json(os.path.join(d, f"symbolizer-after-c{r['connections']}.json"))
             for r in runs}
    load = read_json(os.path.join(d, "load.json"))
    best = max(runs, key=lambda r: r["frames_per_s"])
    head_runs = before["variants"][0]["runs"] + [
        x for c in sorted(after) for x in after[c]["variants"][0]["runs"]]
    head = max(head_runs, key=lambda r: r["frames_per_s"])
    ratio = best["frames_per_s"] / head["frames_per_s"]
    non2xx = sum(r["non2xx"] for r in runs)
    sockerr = sum(r["socket_errors"] for r in runs)
    acc_ok = all(x["agree"] == x["n"] and x["nm_agree"] == x["n"] for x in acc)
    edges_ok = all(x["edges"]["agree"] == x["edges"]["n"] and
                   x["edges"]["nm_agree"] == x["edges"]["n"] for x in acc)
    q_ok = up["queryable_ms"] <= 1000
    r_ok = ratio >= 2
    # CPU that other processes took: during the two runs the ratio rests on,
    # and during any timing at all.
    other_head = max(load["busy_cores"], best["other_cores"], head["other_cores"])
    other_any = max([other_head] + [r["other_cores"] for r in runs + head_runs]
                    + [v["runs"][0]["other_cores"] for v in before["variants"]])

    def mark(ok):
        return "ok" if ok else "FAIL"

    def after_ratio(r):
        return r["frames_per_s"] / after[r["connections"]]["variants"][0]["runs"][0]["frames_per_s"]

    # Per CPU-second: what each side gets out of one core's worth of time.
    symd_cpu = best["frames_per_s"] / best["server_cores"]
    llvm_cpu = head["frames_per_s"] * head["seconds"] / head["cpu_s"]
    probes = [c for arch in ("arm64", "x86_64")
              for c in read_json(os.path.join(d, f"aliases-{arch}.json"))["cases"]]
    kinds = {}
    for c in probes:
        kinds.setdefault(c["case"], []).append(c["agree"])
    lopsided = [r for r in runs if r.get("one_thread")]

    lines = [
        # The five lines the issue asks for.
        f"upload {up['bytes'] / 1e6:.1f} MB fat: {up['upload_ms']:.0f} ms; "
        f"upload->queryable: {up['queryable_ms']:.0f} ms (limit 1000 ms) {mark(q_ok)}",
        "accuracy " + "; ".join(f"{x['arch']}: {x['agree']}/{x['n']} agree" for x in acc)
        + f" {mark(acc_ok)}",
        f"symd /v1/symbolicate: {best['frames_per_s']:8.0f} frames/s (wrk {best['seconds']} s, "
        f"{best['connections']} conns, {best['non2xx']} non-2xx)",
        f"llvm-symbolizer:      {head['frames_per_s']:8.0f} frames/s ({before['addresses']} "
        f"addrs x {before['reps']})",
        f"ratio: {ratio:.2f}x (goal >= 2x) {mark(r_ok)}",
        "details:",
        "  accuracy vs the llvm-nm table: "
        + "; ".join(f"{x['arch']} {x['nm_agree']}/{x['n']}" for x in acc)
        + "; first and last instruction of every function: "
        + "; ".join(f"{x['arch']} {x['edges']['agree']}/{x['edges']['n']}" for x in acc)
        + f" {mark(edges_ok)}",
        "  alias probe (synthetic, informational): " + "; ".join(
            f"{k}: {sum(v)}/{len(v)} agree" for k, v in kinds.items()),
        f"  symd best run: -t{best['threads']} -c{best['connections']}, latency avg "
        f"{best['latency_avg']} p99 {best['latency_p99']}; symd used "
        f"{best['server_cores']:.2f} cores, wrk {best['wrk_cores']:.2f}",
        "  wrk runs, frames/s: "
        + ", ".join(f"c{r['connections']} {r['frames_per_s']:.0f}" for r in runs)
        + f"; {non2xx} non-2xx, {sockerr} socket errors in all",
        "  each against the llvm-symbolizer run right after it: "
        + ", ".join(f"c{r['connections']} {after_ratio(r):.2f}x" for r in runs),
        f"  llvm-symbolizer (default flags, stdout to a file, one process, 1 core): best "
        f"{head['seconds']:.2f} s of its {len(head_runs)} runs, frames/s "
        + ", ".join(f"{r['frames_per_s']:.0f}" for r in head_runs),
    ]
    for v in before["variants"][1:]:
        r = v["runs"][0]
        lines.append(f"  llvm-symbolizer {v['label']:29} {r['frames_per_s']:8.0f} frames/s "
                     f"(symd is {best['frames_per_s'] / r['frames_per_s']:.2f}x)"
                     + (f" [others used {r['other_cores']:.2f} cores meanwhile]"
                        if r["other_cores"] > 0.25 else ""))
    lines.append(f"  per CPU-second: symd {symd_cpu:.0f} frames, llvm-symbolizer {llvm_cpu:.0f} "
                 f"({symd_cpu / llvm_cpu:.2f}x; symd's HTTP and JSON included, wrk's CPU not)")
    if lopsided:
        lines.append(f"  note: in {len(lopsided)} of {len(runs)} wrk runs one symd thread served "
                     "every connection while the others idled (MHD thread pool); "
                     "such a run shows about half the throughput")
    if other_head > 0.25:
        lines.append(f"WARNING: other processes used up to {other_head:.2f} cores during the "
                     "runs the ratio rests on; throughput figures are unreliable")
    elif other_any > 0.25:
        lines.append(f"  note: other processes used up to {other_any:.2f} cores during some "
                     "timings (see bench/.cache/last/), not during the best runs above")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(a.out, "w") as f:
        f.write(text)
    failed = not acc_ok or not edges_ok or non2xx > 0 or sockerr > 0
    if a.strict:
        failed = failed or not q_ok or not r_ok
    sys.exit(1 if failed else 0)


# ---- Swift ---------------------------------------------------------------------

SWIFT_PREFIXES = ("$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0")


def swift_names(nm_files):
    """Distinct Swift names (leading '_' of the symbol table removed) of
    llvm-nm listings."""
    names = set()
    for path in nm_files:
        with open(path) as f:
            for line in f:
                name = line.rstrip("\n").rsplit(" ", 1)[-1]
                name = strip1(name)
                if name.startswith(SWIFT_PREFIXES):
                    names.add(name)
    return sorted(names)


def timed_filter(cmd, infile):
    """Seconds, CPU seconds and output lines of cmd < infile > /dev/null-ish."""
    t = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(infile, "rb") as fin:
        out = subprocess.run(cmd, stdin=fin, stdout=subprocess.PIPE, check=True).stdout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter() - t, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
            out.count(b"\n"), out)


def cmd_swift_names(a):
    names = swift_names(a.nm)
    if not names:
        die("no Swift names in " + " ".join(a.nm))
    reps = max(1, a.lines // len(names))
    infile = os.path.join(a.work, "swift-names.txt")
    with open(infile, "w") as f:
        for _ in range(reps):
            f.write("\n".join(names) + "\n")
    total = reps * len(names)
    res = {"distinct": len(names), "lines": total, "styles": {}}
    for label, cmd in (("simplified", [a.symd, "demangle"]),
                       ("full", [a.symd, "demangle", "--style", "full"]),
                       ("llvm-cxxfilt", ["llvm-cxxfilt"])):
        best = None
        for _ in range(a.runs):
            secs, cpu, lines, out = timed_filter(cmd, infile)
            if lines != total:
                die(f"{label}: {lines} lines out for {total} in")
            if best is None or secs < best["seconds"]:
                changed = sum(1 for x, y in zip(out.split(b"\n")[:len(names)], names)
                              if x.decode() != y)
                best = {"seconds": secs, "cpu_s": cpu, "names_per_s": total / secs,
                        "changed": changed}
        res["styles"][label] = best
        print(f"{label:13} {best['names_per_s']:10.0f} names/s ({total} lines in "
              f"{best['seconds']:.2f} s; {best['changed']}/{len(names)} distinct names changed)")
    write_json(a.out, res)


def cmd_swift_first(a):
    probe = read_json(a.samples)["samples"][0]["vmaddr"]
    best = None
    for _ in range(a.runs):
        t = time.perf_counter()
        out = run(["llvm-symbolizer", "--obj=" + a.slice, "--no-demangle", "0x%x" % probe])
        secs = time.perf_counter() - t
        if not out.strip() or out.startswith("??"):
            die(f"llvm-symbolizer gave no name for 0x{probe:x}: {out!r}")
        best = secs if best is None else min(best, secs)
    write_json(a.out, {"first_answer_ms": best * 1e3, "probe": "0x%x" % probe})
    print(f"llvm-symbolizer's first answer from {os.path.basename(a.slice)}: {best * 1e3:.0f} ms")


def cmd_swift_summary(a):
    d = a.dir
    names = read_json(os.path.join(d, "swift-names.json"))
    up = read_json(os.path.join(d, "swift-upload.json"))
    first = read_json(os.path.join(d, "swift-first.json"))
    acc = [read_json(os.path.join(d, f"swift-accuracy-{arch}.json")) for arch in ("arm64", "x86_64")]
    st = names["styles"]
    floor = st["llvm-cxxfilt"]["names_per_s"]
    q_ok = up["queryable_ms"] <= 1000
    acc_ok = all(x["agree"] == x["n"] and x["edges"]["agree"] == x["edges"]["n"] for x in acc)
    syms = sum(i["symbols"] for i in up["images"])

    def mark(ok):
        return "ok" if ok else "FAIL"

    lines = [
        f"Swift names demangled (symd demangle, {names['distinct']} real names of aperture, "
        f"{names['lines']} lines): simplified {st['simplified']['names_per_s']:.0f}/s, "
        f"full {st['full']['names_per_s']:.0f}/s",
        f"  llvm-cxxfilt passes the same lines through (it reads no Swift) at "
        f"{floor:.0f}/s: symd demangles at {st['simplified']['names_per_s'] / floor:.2f}x "
        f"the speed llvm-cxxfilt copies them",
        f"  distinct names shown demangled: simplified {st['simplified']['changed']}/"
        f"{names['distinct']}, full {st['full']['changed']}/{names['distinct']}",
        f"Swift-heavy index: aperture {up['bytes'] / 1e6:.1f} MB fat, {syms} symbols: upload "
        f"{up['upload_ms']:.0f} ms; upload->queryable {up['queryable_ms']:.0f} ms (limit 1000 ms) "
        f"{mark(q_ok)}; llvm-symbolizer's first answer from the file "
        f"{first['first_answer_ms']:.0f} ms "
        f"(ratio {up['queryable_ms'] / first['first_answer_ms']:.2f}x)",
        "Swift accuracy vs llvm-symbolizer --no-demangle: " + "; ".join(
            f"{x['arch']} {x['agree']}/{x['n']}, edges {x['edges']['agree']}/{x['edges']['n']}, "
            f"{x['demangled']}/{x['n']} shown demangled" for x in acc) + f" {mark(acc_ok)}",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(a.out, "w") as f:
        f.write(text)
    failed = not acc_ok or (a.strict and not q_ok)
    sys.exit(1 if failed else 0)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("sample")
    s.add_argument("--slice", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--n", type=int, default=20000)
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_sample)

    s = sub.add_parser("upload")
    s.add_argument("--url", required=True)
    s.add_argument("--file", required=True)
    s.add_argument("--name", default="sentry-cli")
    s.add_argument("--samples", required=True, help="arm64 samples (first one is the probe)")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_upload)

    s = sub.add_parser("accuracy")
    s.add_argument("--url", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--slice", required=True)
    s.add_argument("--samples", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_accuracy)

    s = sub.add_parser("aliases")
    s.add_argument("--slice", required=True)
    s.add_argument("--symd", default="symd", help="symd binary (for symd atos)")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_aliases)

    s = sub.add_parser("bodies")
    s.add_argument("--samples", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--count", type=int, default=64)
    s.add_argument("--frames", type=int, default=200)
    s.add_argument("--seed", default="1")
    s.add_argument("--adjust", help='request-level "adjust" (the DWARF bench: none)')
    s.set_defaults(fn=cmd_bodies)

    s = sub.add_parser("symbolizer")
    s.add_argument("--slice", required=True)
    s.add_argument("--addrs", required=True)
    s.add_argument("--min-seconds", type=float, default=2.0)
    s.add_argument("--phase", default="before",
                   help='"before" calibrates and runs every variant; any other name '
                        'runs the headline again (e.g. after a wrk run)')
    s.add_argument("--reps-from", help="reuse the repeat count of an earlier phase")
    s.add_argument("--runs", type=int, default=2, help="runs of the headline variant")
    s.add_argument("--extra", action="append",
                   help="an argument for every llvm-symbolizer run (repeat; use --extra=--x)")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_symbolizer)

    s = sub.add_parser("load")
    s.add_argument("--seconds", type=float, default=1.0)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_load)

    s = sub.add_parser("wrk")
    s.add_argument("--url", required=True)
    s.add_argument("--script", required=True)
    s.add_argument("--bodies", required=True)
    s.add_argument("--count", type=int, default=64)
    s.add_argument("--frames", type=int, default=200)
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--conns", type=int, required=True)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--seconds", type=int, default=10)
    s.add_argument("--log", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_wrk)

    s = sub.add_parser("summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--strict", action="store_true",
                   help="also fail when a performance goal is missed")
    s.set_defaults(fn=cmd_summary)

    s = sub.add_parser("dw-stats")
    s.add_argument("--binary", required=True)
    s.add_argument("--dwarf", required=True, help="the dSYM's DWARF file")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_stats)

    s = sub.add_parser("dw-gsym")
    s.add_argument("--dwarf", required=True)
    s.add_argument("--work", required=True)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_gsym)

    s = sub.add_parser("dw-reference")
    s.add_argument("--binary", required=True)
    s.add_argument("--dsym", required=True)
    s.add_argument("--samples", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_reference)

    s = sub.add_parser("dw-upload")
    s.add_argument("--url", required=True)
    s.add_argument("--binary", required=True)
    s.add_argument("--dwarf", required=True)
    s.add_argument("--name", default="bench-dwarf")
    s.add_argument("--reference", required=True, help="dw-reference output (picks the probe)")
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--timeout", type=float, default=30.0)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_upload)

    s = sub.add_parser("dw-index")
    s.add_argument("--db", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_index)

    s = sub.add_parser("dw-accuracy")
    s.add_argument("--url", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--reference", required=True)
    s.add_argument("--batch", type=int, default=2000)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_accuracy)

    s = sub.add_parser("dw-summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--strict", action="store_true")
    s.set_defaults(fn=cmd_dw_summary)

    s = sub.add_parser("swift-names")
    s.add_argument("--nm", action="append", required=True, help="an llvm-nm listing (repeat)")
    s.add_argument("--symd", required=True)
    s.add_argument("--work", required=True)
    s.add_argument("--lines", type=int, default=500000)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_swift_names)

    s = sub.add_parser("swift-first")
    s.add_argument("--slice", required=True)
    s.add_argument("--samples", required=True)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_swift_first)

    s = sub.add_parser("swift-summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--strict", action="store_true")
    s.set_defaults(fn=cmd_swift_summary)

    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
