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

Crash section (the crash path and the crash store at scale; wrk runs through
bench/bodies.lua, seeding through bench/seed_crashes.lua):
  crash-upload        POST files to /v1/images
  crash-frame-bodies  /v1/symbolicate bodies: frames of an uploaded image, and
                      the same frames in never-uploaded images (random UUIDs)
  crash-wrk           one wrk run against any route: frames/s, statuses,
                      latency percentiles, the server's sampled RSS
  crash-report-prep   a real report's own answer (?store=false) made into one
                      raw /v1/symbolicate request with the same frames
  crash-seed-data     the report template and groups seed_crashes.lua draws from
  crash-seed          seed the store up to N crashes through the API; the rate
  crash-gets          p50/p99 of sequential GETs of the listing routes; groups;
                      the database's size
  crash-db-size       the database's logical size and largest tables
  crash-images-upload N copies of a binary with new LC_UUIDs, uploaded and timed;
                      the size of one loaded index
  crash-images-bodies bodies whose frames hit those images (uniform, skewed)
  crash-state         the server's RSS and index-cache series at a moment
  crash-summary       print the crash summary block

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


# ---- postgres section ------------------------------------------------------------
#
# symd on PostgreSQL against SQLite: one node each on the symtab bodies with
# the index cached (what a symbolication costs once the image is in the
# node's cache), then two nodes on one PostgreSQL database, wrk on both at
# once, summed, against the one node.

def cmd_pg_summary(a):
    d = a.dir
    skipped = os.path.join(d, "pg-skipped.json")
    if os.path.exists(skipped):
        text = ("PostgreSQL: SKIPPED (" + read_json(skipped)["skipped"] +
                "); bash scripts/deps.sh installs it\n")
        print(text, end="")
        with open(a.out, "w") as f:
            f.write(text)
        return

    def best(label):
        runs = []
        r = 1
        while os.path.exists(os.path.join(d, f"pg-{label}-{r}.json")):
            runs.append(read_json(os.path.join(d, f"pg-{label}-{r}.json")))
            r += 1
        if not runs:
            die(f"no pg-{label}-*.json results")
        return max(runs, key=lambda x: x["frames_per_s"])

    sq, pg = best("sqlite-1node"), best("postgresql-1node")
    rounds = []
    r = 1
    while os.path.exists(os.path.join(d, f"pg-2nodes-a-{r}.json")):
        ra = read_json(os.path.join(d, f"pg-2nodes-a-{r}.json"))
        rb = read_json(os.path.join(d, f"pg-2nodes-b-{r}.json"))
        rounds.append((ra["frames_per_s"] + rb["frames_per_s"], ra, rb))
        r += 1
    two, ra, rb = max(rounds, key=lambda x: x[0])
    bad = sum(x["non2xx"] + x["socket_errors"] for x in (sq, pg, ra, rb))
    up_sq = read_json(os.path.join(d, "pg-upload-sqlite.json"))
    up_pg = read_json(os.path.join(d, "pg-upload-postgresql.json"))
    lines = [
        f"PostgreSQL vs SQLite, one node, the index cached ({sq['connections']} connections, "
        f"{sq['frames_per_request']} frames per request):",
        f"  SQLite     {sq['frames_per_s']:>12,.0f} frames/s  (p99 {sq['latency_p99']}, "
        f"symd {sq['server_cores']:.2f} cores)",
        f"  PostgreSQL {pg['frames_per_s']:>12,.0f} frames/s  (p99 {pg['latency_p99']}, "
        f"symd {pg['server_cores']:.2f} cores, PostgreSQL and the rest {pg['other_cores']:.2f})",
        f"  ratio PostgreSQL/SQLite {pg['frames_per_s'] / sq['frames_per_s']:.2f}x",
        f"  upload of sentry-cli ({up_sq['bytes'] / 1e6:.1f} MB): SQLite {up_sq['upload_ms']:.0f} ms, "
        f"PostgreSQL {up_pg['upload_ms']:.0f} ms; upload->queryable "
        f"{up_sq['queryable_ms']:.0f} / {up_pg['queryable_ms']:.0f} ms",
        f"Two nodes on one PostgreSQL database, wrk on both at once ({ra['connections']} "
        f"connections each):",
        f"  node a {ra['frames_per_s']:,.0f} + node b {rb['frames_per_s']:,.0f} = "
        f"{two:,.0f} frames/s; one node {pg['frames_per_s']:,.0f}",
        f"  ratio two nodes/one {two / pg['frames_per_s']:.2f}x",
        f"  (on this {a.cores}-core machine the two nodes, both wrk and PostgreSQL share the "
        f"cores: this shows the overhead of a second node more than scaling, which needs a "
        f"machine per node)",
        f"  non-2xx answers and socket errors in all runs: {bad}",
    ]
    # In a one-node run nothing else should use the CPU (PostgreSQL idles
    # while the index is cached); in the two-node runs the other node and
    # its wrk count as "other" by design.
    busy = [(n, x["other_cores"]) for n, x in (("SQLite", sq), ("PostgreSQL", pg))
            if x["other_cores"] > 0.25]
    for n, c in busy:
        lines.append(f"  note: other processes used {c:.2f} cores during the best {n} run: "
                     f"its ratios are not reliable; run again on an idle machine")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(a.out, "w") as f:
        f.write(text)
    sys.exit(1 if bad else 0)


# ---- crash section -------------------------------------------------------------
#
# The crash path and the crash store at scale (bench/README.md, "Crash
# section"). Four parts, each against a fresh server and database:
#   frames   /v1/symbolicate: frames of an uploaded image against the same
#            frames in never-uploaded images (random UUIDs)
#   reports  real reports: POST /v1/crashes (stored) against the same frames
#            as one raw /v1/symbolicate request, and ?store=false
#   store    the store seeded through the API to each level; listing routes
#            timed at each; database bytes per crash
#   images   10,000 stored images, an index cache smaller than the working
#            set: latency and RSS against the same run with a cache that
#            holds them all

MIB = 2 ** 20
UUID_STEP = 0x1000000  # between the load addresses of a body's images


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, r.read()


def read_metrics(url):
    """The unlabeled series of GET /metrics, as {name: float}."""
    conn = connect(url)
    status, body = get(conn, "/metrics")
    conn.close()
    if status != 200:
        die(f"/metrics answered {status}")
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#") and "{" not in line:
            k, _, v = line.partition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def pct(values, p):
    """Nearest-rank percentile of a list (p in 0..100)."""
    v = sorted(values)
    if not v:
        return None
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]


def uuid_str(b):
    h = b.hex().upper()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def write_body(d, i, data):
    with open(os.path.join(d, "body-%03d" % i), "wb") as f:
        f.write(data)


def cmd_crash_upload(a):
    """POST each file to /v1/images (name: its file name); the answers."""
    conn = connect(a.url)
    images = []
    for path in a.file:
        with open(path, "rb") as f:
            data = f.read()
        t = time.perf_counter()
        status, body = post(conn, "/v1/images?name=" + os.path.basename(path), data,
                            "application/octet-stream")
        dt = time.perf_counter() - t
        if status not in (200, 201):
            die(f"upload of {path} answered {status}: {body[:300]!r}")
        for i in json.loads(body)["images"]:
            images.append(i)
            print(f"  {os.path.basename(path)}: {i['uuid']} {i['arch']} {i['kind']} "
                  f"{i['symbols']} symbols, debug_info {i['debug_info']}, {i['status']} "
                  f"({dt * 1e3:.0f} ms)")
    write_json(a.out, {"images": images})


def cmd_crash_frame_bodies(a):
    """Bodies of a.frames sampled addresses of the uploaded image (found), and
    the same addresses spread over a.images images with random, never
    uploaded UUIDs (missing): frames i of a body goes to image i % a.images,
    at the same offset from that image's load address."""
    s = read_json(a.samples)
    img = next((i for i in read_json(a.upload)["images"] if i["arch"] == "arm64"), None)
    if not img:
        die("no arm64 image uploaded")
    uuid, text = img["uuid"], int(img["text_vmaddr"], 16)
    pool = [x["vmaddr"] for x in s["samples"]]
    rng = random.Random(f"{a.seed}/crash-frames")
    for d in (a.found, a.missing):
        os.makedirs(d, exist_ok=True)
    fake = set()
    for i in range(a.count):
        chosen = [rng.choice(pool) for _ in range(a.frames)]
        write_body(a.found, i, symbolicate_body(uuid, "arm64", chosen, text))
        ids = [uuid_str(rng.getrandbits(128).to_bytes(16, "big")) for _ in range(a.images)]
        fake.update(ids)
        doc = {"images": [{"uuid": u, "arch": "arm64",
                           "load_address": "0x%x" % (LOAD_ADDRESS + j * UUID_STEP)}
                          for j, u in enumerate(ids)],
               "threads": [{"id": 0, "frames": [
                   {"address": "0x%x" % (LOAD_ADDRESS + (n % a.images) * UUID_STEP + v - text)}
                   for n, v in enumerate(chosen)]}]}
        write_body(a.missing, i, json.dumps(doc, separators=(",", ":")).encode())
    # One of each answered as expected: every frame symbolicated, resp. missing.
    conn = connect(a.url)
    checks = {}
    for label, d, want in (("found", a.found, "symbolicated"), ("missing", a.missing,
                                                                 "missing_image")):
        with open(os.path.join(d, "body-000"), "rb") as f:
            status, body = post(conn, "/v1/symbolicate", f.read(), "application/json")
        if status != 200:
            die(f"/v1/symbolicate ({label} body) answered {status}: {body[:300]!r}")
        frames = json.loads(body)["threads"][0]["frames"]
        st = {}
        for fr in frames:
            st[fr.get("status")] = st.get(fr.get("status"), 0) + 1
        checks[label] = st
        if st.get(want, 0) != len(frames) or len(frames) != a.frames:
            die(f"{label} body: expected {a.frames} frames {want}, got {st}")
    write_json(a.out, {"bodies": a.count, "frames": a.frames, "images_per_missing_body": a.images,
                       "distinct_missing_uuids": len(fake), "image": img["name"],
                       "symbols": img["symbols"], "statuses": checks})
    print(f"{a.count} found and {a.count} missing bodies of {a.frames} frames "
          f"({len(fake)} distinct never-uploaded UUIDs, {a.images} per body); "
          f"checked: found {checks['found']}, missing {checks['missing']}")


def cmd_crash_wrk(a):
    """One wrk run of bench/bodies.lua against a.path; requests/s, frames/s
    (requests/s x a.frames), statuses, latency percentiles (µs, from wrk's
    own histogram), the CPU each side used and the server's RSS sampled
    every 20 ms."""
    t = min(a.threads, a.conns)
    cmd = ["wrk", f"-t{t}", f"-c{a.conns}", f"-d{a.seconds}s", "--timeout", "30s",
           "-s", a.script, a.url + a.path, "--", a.bodies, str(a.count), a.ctype]
    if a.header:
        cmd.append(a.header)
    rss0 = vm_status(a.server_pid)
    sampler = RssSampler(a.server_pid, 0.02)
    sampler.start()
    m0, s0 = machine_cpu(), proc_cpu_s(a.server_pid)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m1, s1 = machine_cpu(), proc_cpu_s(a.server_pid)
    peak = sampler.stop()
    rss1 = vm_status(a.server_pid)
    text = p.stdout + p.stderr
    with open(a.log, "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    rps = re.search(r"Requests/sec:\s*([\d.]+)", text)
    lua = re.search(r"lua: responses (\d+) non2xx (\d+) errors (\d+)", text)
    lat = re.search(r"lua: latency_us p50 (\d+) p90 (\d+) p99 (\d+) p999 (\d+) max (\d+) "
                    r"mean ([\d.]+)", text)
    if p.returncode != 0 or not rps or not lua or not lat:
        die(f"wrk failed ({p.returncode}):\n{text}")
    statuses = {m.group(1): int(m.group(2))
                for m in re.finditer(r"lua: status (\d+) (\d+)", text)}
    cores = os.cpu_count() or 1
    busy = (1 - (m1[1] - m0[1]) / max(1, m1[0] - m0[0])) * cores
    server = (s1 - s0) / wall
    client = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / wall
    responses = int(lua.group(1))
    unexpected = responses - statuses.get(str(a.expect), 0) if a.expect else 0
    res = {"label": a.label, "path": a.path, "connections": a.conns, "threads": t,
           "seconds": a.seconds, "frames_per_request": a.frames,
           "requests_per_s": float(rps.group(1)),
           "frames_per_s": float(rps.group(1)) * a.frames,
           "responses": responses, "non2xx": int(lua.group(2)),
           "socket_errors": int(lua.group(3)), "statuses": statuses,
           "expect": a.expect, "unexpected": unexpected,
           "latency_us": {k: int(lat.group(i + 1)) for i, k in
                          enumerate(("p50", "p90", "p99", "p999", "max"))},
           "latency_mean_us": float(lat.group(6)),
           "rss_before": rss0["VmRSS"], "rss_peak": max(peak, rss1["VmRSS"]),
           "rss_after": rss1["VmRSS"], "hwm_after": rss1["VmHWM"],
           "server_cores": server, "wrk_cores": client,
           "other_cores": max(0.0, busy - server - client)}
    write_json(a.out, res)
    l = res["latency_us"]
    print(f"wrk {a.label}: {res['requests_per_s']:.0f} req/s = {res['frames_per_s']:,.0f} "
          f"frames/s; latency p50 {l['p50'] / 1e3:.2f} ms p99 {l['p99'] / 1e3:.2f} ms; "
          f"statuses {statuses}, {res['socket_errors']} socket errors; RSS peak "
          f"{res['rss_peak'] / MIB:.1f} MiB; cores: symd {server:.2f}, wrk {client:.2f}, "
          f"other {res['other_cores']:.2f}")
    if res["non2xx"] or res["socket_errors"] or unexpected:
        print(f"FAIL: {a.label}: {res['non2xx']} non-2xx, {res['socket_errors']} socket "
              f"errors, {unexpected} answers other than {a.expect}")


# ---- crash: real reports --------------------------------------------------------


def cmd_crash_report_prep(a):
    """The report's own answer (POST /v1/crashes?store=false) turned into one
    raw /v1/symbolicate request with the same frames: its images with a UUID
    and a load address, and every thread's non-inlined frames (address, and
    image when the report names one). Writes DIR/report/body-000 (the report
    as it is) and DIR/raw/body-000."""
    with open(a.report, "rb") as f:
        data = f.read()
    conn = connect(a.url)
    status, body = post(conn, "/v1/crashes?store=false", data, "text/plain")
    if status != 200:
        die(f"{a.report}: /v1/crashes?store=false answered {status}: {body[:300]!r}")
    j = json.loads(body)
    images, newidx = [], {}
    for k, im in enumerate(j.get("images") or []):
        if im.get("uuid") and im.get("load_address") is not None:
            newidx[k] = len(images)
            x = {"uuid": im["uuid"], "load_address": im["load_address"]}
            if im.get("arch"):
                x["arch"] = im["arch"]
            images.append(x)
    threads, nframes, st = [], 0, {}
    for k, t in enumerate(j["threads"]):
        frames = []
        for fr in t["frames"]:
            if fr.get("inlined"):
                continue
            st[fr.get("status")] = st.get(fr.get("status"), 0) + 1
            x = {"address": fr["address"]}
            if fr.get("image_index") in newidx:
                x["image"] = newidx[fr["image_index"]]
            frames.append(x)
        nframes += len(frames)
        th = {"id": k, "frames": frames}
        if isinstance(t.get("name"), str):
            th["name"] = t["name"]
        if t.get("crashed"):
            th["crashed"] = True
        threads.append(th)
    raw = json.dumps({"images": images, "threads": threads}, separators=(",", ":")).encode()
    for sub, content in (("report", data), ("raw", raw)):
        os.makedirs(os.path.join(a.dir, sub), exist_ok=True)
        write_body(os.path.join(a.dir, sub), 0, content)
    status, body = post(conn, "/v1/symbolicate", raw, "application/json")
    if status != 200:
        die(f"the raw request of {a.report} answered {status}: {body[:300]!r}")
    rj = json.loads(body)
    raw_st = {}
    for t in rj["threads"]:
        for fr in t["frames"]:
            if not fr.get("inlined"):
                raw_st[fr.get("status")] = raw_st.get(fr.get("status"), 0) + 1
    if sum(raw_st.values()) != nframes:
        die(f"the raw request of {a.report} gave {sum(raw_st.values())} frames for {nframes}")
    res = {"file": os.path.basename(a.report), "bytes": len(data), "raw_bytes": len(raw),
           "kind": j.get("kind"), "format": j.get("format"), "threads": len(j["threads"]),
           "frames": nframes, "images": len(j.get("images") or []),
           "images_in_raw": len(images), "statuses": st, "raw_statuses": raw_st,
           "signature": j.get("signature")}
    write_json(a.out, res)
    print(f"{res['file']}: {res['kind']}, {res['threads']} threads, {nframes} frames, "
          f"{res['images']} images ({len(images)} with UUID and load address), "
          f"{len(data):,} bytes; frames {st}; raw request {len(raw):,} bytes, frames {raw_st}")


# ---- crash: the store at scale ----------------------------------------------------


def lua_str(s):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif o < 32 or o == 127:
            out.append("\\%03d" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


SEED_VERSIONS = ["2.1 (41)", "2.0 (30)", "1.2 (12)", "1.1 (7)", "1.0.1 (3)", "1.0 (1)"]
SEED_OS = ["iPhone OS 16.1 (20B82)", "iPhone OS 15.3 (19D50)", "iPhone OS 16.0 (20A362)",
           "iPhone OS 15.4 (19E241)", "iPhone OS 15.2 (19C56)", "iPhone OS 15.1 (19B74)",
           "iPhone OS 15.0 (19A346)", "iPhone OS 14.8 (18H17)"]
SEED_MODELS = ["iPhone14,2", "iPhone14,5", "iPhone13,2", "iPhone15,2", "iPhone12,1",
               "iPhone14,3", "iPhone13,4", "iPad13,1", "iPhone11,8", "iPhone12,8"]


def cmd_crash_seed_data(a):
    """The data bench/seed_crashes.lua draws reports from: the text report
    a.crash (fixtures/crashes/bigapp-twin.crash) cut at its Incident
    Identifier, Hardware Model, Version, OS Version, the crashed thread's
    frames and the app's UUID in Binary Images; and the groups:
      - one per function of the app (a.syms: its start addresses): the
        crashed thread's app frame (frame 1) is a return address 4 bytes
        into that function, so the signature is its name (the app and its
        dSYM are uploaded);
      - a.unsymbolicated more: the app's UUID is one of a.builds builds
        never uploaded and frame 0 is an app frame at its own offset, so no
        frame has a name and the signature is "bigapp-arm64 + 0xOFFSET".
    The groups are shuffled (seeded), so both kinds mix among the frequent
    ones."""
    with open(a.crash) as f:
        text = f.read()
    lines = text.split("\n")
    app = a.app_name
    # The crashed thread's frame lines.
    start = next(i for i, l in enumerate(lines) if re.match(r"^Thread \d+ Crashed:", l)) + 1
    end = start
    while end < len(lines) and lines[end].strip():
        end += 1
    frame_re = re.compile(r"^(\d+)\s+(\S+)\s+0x([0-9a-fA-F]+) 0x([0-9a-fA-F]+) \+ (\d+)$")
    frames = [frame_re.match(l) for l in lines[start:end]]
    if not frames or not all(frames):
        die(f"{a.crash}: crashed thread frames not as expected")
    app_rows = [m for m in frames if m.group(2) == app]
    if not app_rows:
        die(f"{a.crash}: no {app} frame in the crashed thread")
    load = int(app_rows[0].group(4), 16)

    def frame_line(n, image, pc, base):
        return f"{n:<4}{image:<30}\t0x{pc:016x} 0x{base:x} + {pc - base}"

    orig = [(m.group(2), int(m.group(3), 16), int(m.group(4), 16)) for m in frames]
    bi = next((l for l in lines if f" {app} " in l and "<" in l and l.startswith("0x")), None)
    um = re.search(r"<([0-9a-fA-F]{32})>", bi or "")
    if not um:
        die(f"{a.crash}: no Binary Images line of {app}")
    app_uuid = um.group(1)
    text_vmaddr = 0x100000000
    funcs = {}
    with open(a.syms) as f:
        next(f)
        for row in f:
            c = row.rstrip("\n").split("\t")
            if len(c) >= 3:
                funcs[int(c[2], 16)] = c[1]
    rng = random.Random(f"{a.seed}/seed-data")
    groups = []
    for s in sorted(funcs):
        if s + 4 >= text_vmaddr + 0x4000:
            continue
        pc = load + (s - text_vmaddr) + 4
        fl = [frame_line(0, orig[0][0], orig[0][1], orig[0][2]), frame_line(1, app, pc, load)]
        fl += [frame_line(n, im, p, b) for n, (im, p, b) in enumerate(orig[2:], 2)]
        groups.append({"kind": "named", "function": funcs[s], "frames": "\n".join(fl),
                       "app_uuid": app_uuid})
    builds = [rng.getrandbits(128).to_bytes(16, "big").hex() for _ in range(a.builds)]
    for k in range(a.unsymbolicated):
        pc = load + 0x900 + 4 * k
        fl = [frame_line(0, app, pc, load)]
        fl += [frame_line(n, im, p, b) for n, (im, p, b) in enumerate(orig[1:], 1)]
        groups.append({"kind": "unsymbolicated", "offset": pc - load, "frames": "\n".join(fl),
                       "app_uuid": builds[k % len(builds)]})
    rng.shuffle(groups)
    # The template: text and slot names alternate.
    marked = "\n".join(lines[:start]) + "\n\0FRAMES\0\n" + "\n".join(lines[end:])
    for label, key in (("Incident Identifier", "INCIDENT"), ("Hardware Model", "HW"),
                       ("Version", "VERSION"), ("OS Version", "OS")):
        marked, n = re.subn(r"^(%s:\s+)(.*)$" % re.escape(label), lambda m: m.group(1) +
                            "\0" + key + "\0", marked, count=1, flags=re.M)
        if n != 1:
            die(f"{a.crash}: no '{label}:' line")
    marked = marked.replace(app_uuid, "\0APPUUID\0")
    parts = marked.split("\0")
    with open(a.out, "w") as f:
        f.write("-- written by bench.py crash-seed-data from %s\nreturn {\n" % a.crash)
        f.write("parts = {" + ", ".join(lua_str(p) for p in parts) + "},\n")
        f.write("versions = {" + ", ".join(map(lua_str, SEED_VERSIONS)) + "},\n")
        f.write("os_versions = {" + ", ".join(map(lua_str, SEED_OS)) + "},\n")
        f.write("models = {" + ", ".join(map(lua_str, SEED_MODELS)) + "},\n")
        f.write("groups = {\n")
        for g in groups:
            f.write("{frames = %s, app_uuid = %s},\n" % (lua_str(g["frames"]),
                                                         lua_str(g["app_uuid"])))
        f.write("},\n}\n")
    named = sum(1 for g in groups if g["kind"] == "named")
    write_json(a.meta, {"template": a.crash, "template_bytes": len(text), "groups": len(groups),
                        "named": named, "unsymbolicated": len(groups) - named,
                        "builds": len(builds), "versions": len(SEED_VERSIONS),
                        "os_versions": len(SEED_OS), "models": len(SEED_MODELS)})
    print(f"seed data: {len(groups)} groups ({named} named after {app}'s functions, "
          f"{len(groups) - named} unsymbolicated in {len(builds)} never-uploaded builds), "
          f"{len(SEED_VERSIONS)} versions, {len(SEED_OS)} OS versions, {len(SEED_MODELS)} devices")


def crash_count(url):
    return int(read_metrics(url).get("symd_crashes", -1))


def cmd_crash_seed(a):
    """Seeds the store up to a.target crashes with bench/seed_crashes.lua;
    the time from starting wrk until the server counts a.target crashes
    (GET /metrics, polled) gives the rate."""
    before = crash_count(a.url)
    need = a.target - before
    res = {"level": a.target, "before": before}
    if need <= 0:
        res.update({"added": 0, "seconds": 0, "rate": None})
        write_json(a.out, res)
        return
    t = min(a.threads, a.conns)
    cmd = ["wrk", f"-t{t}", f"-c{a.conns}", "-d3600s", "--timeout", "30s", "-s", a.script,
           a.url + "/v1/crashes", "--", a.data, str(need), str(t), str(a.seed)]
    s0, m0 = proc_cpu_s(a.server_pid), machine_cpu()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    limit = max(60.0, need / 50.0)  # 50 crashes/s would be a failure anyway
    n, last, t_last, t1 = before, before, t0, None
    while True:
        now = time.perf_counter()
        if p.poll() is not None or now - t0 > limit:
            break
        n = crash_count(a.url)
        now = time.perf_counter()
        if n >= a.target:
            t1 = now
            break
        rate = (n - last) / max(1e-3, now - t_last) if n > last else 0
        last, t_last = n, now
        # Poll less often far from the target, often close to it.
        eta = (a.target - n) / rate if rate > 0 else 1.0
        time.sleep(min(0.25, max(0.01, eta / 3)))
    s1, m1 = proc_cpu_s(a.server_pid), machine_cpu()
    if p.poll() is None:
        p.send_signal(2)  # SIGINT: wrk prints its results and done()
    out, _ = p.communicate(timeout=60)
    after = crash_count(a.url)
    with open(a.log, "w") as f:
        f.write(" ".join(cmd) + "\n" + out)
    lua = re.search(r"lua: posted (\d+) bytes (\d+) created (\d+) non2xx (\d+) errors (\d+)", out)
    if not lua:
        die(f"seeding wrk gave no lua line ({p.returncode}):\n{out}")
    secs = (t1 or time.perf_counter()) - t0
    cores = os.cpu_count() or 1
    busy = (1 - (m1[1] - m0[1]) / max(1, m1[0] - m0[0])) * cores
    res.update({"added": after - before, "after": after, "seconds": secs,
                "rate": (after - before) / secs if secs > 0 else None,
                "posted": int(lua.group(1)), "bytes": int(lua.group(2)),
                "created": int(lua.group(3)), "non2xx": int(lua.group(4)),
                "socket_errors": int(lua.group(5)), "reached": t1 is not None,
                "avg_report_bytes": int(lua.group(2)) / max(1, int(lua.group(1))),
                "server_cores": (s1 - s0) / secs, "busy_cores": busy})
    write_json(a.out, res)
    print(f"seeded {res['added']} crashes ({before} -> {after}) in {secs:.1f} s: "
          f"{res['rate']:.0f} crashes/s; average report {res['avg_report_bytes']:.0f} bytes; "
          f"{res['non2xx']} non-2xx, {res['socket_errors']} socket errors; symd used "
          f"{res['server_cores']:.2f} cores")
    if not res["reached"] or res["non2xx"] or res["socket_errors"] or after != a.target:
        print(f"FAIL: seeding to {a.target}: the server counts {after}")


CRASH_ROUTES = [("groups", "/v1/crashes/groups"),
                ("groups_trend", "/v1/crashes/groups?trend=30"),
                ("crashes", "/v1/crashes?limit=50"),
                ("trend", "/v1/crashes/trend?days=30"),
                ("missing", "/v1/missing")]


def db_size(db):
    """Logical size of the database (page_count x page_size: the file after a
    checkpoint, WAL content included), the files on disk, and the largest
    tables and indexes (dbstat), read with sqlite3 -readonly."""
    out = run(["sqlite3", "-readonly", db, "PRAGMA page_count;", "PRAGMA page_size;",
               "PRAGMA freelist_count;"]).split()
    pages, psize, free = int(out[0]), int(out[1]), int(out[2])
    files = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
    tables = {}
    try:
        for line in run(["sqlite3", "-readonly", db, "SELECT name, sum(pgsize) FROM dbstat "
                         "GROUP BY name ORDER BY 2 DESC LIMIT 8"]).splitlines():
            k, _, v = line.rpartition("|")
            tables[k] = int(v)
    except subprocess.CalledProcessError:
        pass  # a sqlite3 without dbstat
    return {"logical": (pages - free) * psize, "files": files, "tables": tables}


def cmd_crash_gets(a):
    """a.n sequential GETs of each listing route (one keep-alive connection,
    3 unmeasured first); p50/p99 in ms. The groups there are, and the
    database's size."""
    conn = connect(a.url)
    res = {"level": a.level, "crashes": crash_count(a.url), "n": a.n, "routes": {}}
    for label, path in CRASH_ROUTES:
        times, size = [], 0
        for i in range(a.n + 3):
            t = time.perf_counter()
            status, body = get(conn, path)
            dt = time.perf_counter() - t
            if status != 200:
                die(f"GET {path} answered {status}: {body[:300]!r}")
            if i >= 3:
                times.append(dt * 1e3)
            size = len(body)
        res["routes"][label] = {"path": path, "p50_ms": pct(times, 50), "p99_ms": pct(times, 99),
                                "max_ms": max(times), "mean_ms": sum(times) / len(times),
                                "bytes": size}
    status, body = get(conn, "/v1/crashes/groups?limit=1000")
    groups = json.loads(body)["groups"]
    counts = sorted((g["count"] for g in groups), reverse=True)
    total = sum(counts)
    res["groups"] = len(groups)
    res["groups_capped"] = len(groups) >= 1000
    res["top_group_share"] = counts[0] / total if total else 0
    res["top10_share"] = sum(counts[:10]) / total if total else 0
    res["named_groups"] = sum(1 for g in groups if " + 0x" not in g["signature"])
    status, body = get(conn, "/v1/missing?limit=1000")
    res["missing_images"] = len(json.loads(body)["missing"])
    res["db"] = db_size(a.db)
    write_json(a.out, res)
    r = res["routes"]
    print(f"{res['crashes']} crashes, {res['groups']} groups (top one {res['top_group_share']:.0%}, "
          f"top 10 {res['top10_share']:.0%}), {res['missing_images']} missing images; "
          f"database {res['db']['logical']:,} bytes: "
          + "; ".join(f"{k} p50 {v['p50_ms']:.2f} p99 {v['p99_ms']:.2f} ms" for k, v in r.items()))


# ---- crash: many images, a small cache ------------------------------------------


def macho_uuid_offset(buf):
    """File offset of the 16 UUID bytes of a thin 64-bit Mach-O (LC_UUID, 0x1b)."""
    if struct.unpack_from("<I", buf, 0)[0] != 0xFEEDFACF:
        die("needs a thin 64-bit little-endian Mach-O")
    ncmds, off = struct.unpack_from("<I", buf, 16)[0], 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", buf, off)
        if cmd == 0x1B:
            return off + 8
        off += size
    die("no LC_UUID")


def cmd_crash_images_upload(a):
    """a.n copies of a.file, each with its LC_UUID rewritten to a seeded
    random UUID, POSTed to /v1/images by a.conns connections; per-upload
    latency and the total time. Then one symbolicate over a.probe of them
    gives the size of one loaded index (GET /metrics)."""
    with open(a.file, "rb") as f:
        buf = f.read()
    off = macho_uuid_offset(buf)
    head, tail = buf[:off], buf[off + 16:]
    rng = random.Random(f"{a.seed}/images")
    uuids = []
    seen = {buf[off:off + 16]}
    while len(uuids) < a.n:
        u = rng.getrandbits(128).to_bytes(16, "big")
        if u not in seen:
            seen.add(u)
            uuids.append(u)
    lat = [None] * a.n
    answers = [None] * a.n
    errors = []

    def worker(k):
        conn = connect(a.url)
        for i in range(k, a.n, a.conns):
            t = time.perf_counter()
            try:
                status, body = post(conn, "/v1/images?name=img-%05d" % i,
                                    head + uuids[i] + tail, "application/octet-stream")
            except (OSError, http.client.HTTPException) as e:
                errors.append(f"{i}: {e}")
                conn = connect(a.url)
                continue
            lat[i] = time.perf_counter() - t
            if status != 201:
                errors.append(f"{i}: {status} {body[:200]!r}")
            elif i == 0:
                answers[0] = json.loads(body)["images"][0]
    t0 = time.perf_counter()
    ths = [threading.Thread(target=worker, args=(k,)) for k in range(a.conns)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        die(f"{len(errors)} uploads failed: {errors[:3]}")
    img = answers[0]
    text = int(img["text_vmaddr"], 16)
    # One loaded index: symbolicate one frame in each of a.probe images.
    m0 = read_metrics(a.url)
    probe = list(range(min(a.probe, a.n)))
    doc = {"images": [{"uuid": uuid_str(uuids[i]), "arch": "arm64",
                       "load_address": "0x%x" % (0x200000000 + i * 0x100000)} for i in probe],
           "threads": [{"id": 0, "frames": [{"address": "0x%x" % (0x200000000 + i * 0x100000
                                                                   + 0x800), "image": k}
                                            for k, i in enumerate(probe)]}]}
    conn = connect(a.url)
    status, body = post(conn, "/v1/symbolicate", json.dumps(doc).encode(), "application/json")
    if status != 200:
        die(f"probe symbolicate answered {status}: {body[:300]!r}")
    m1 = read_metrics(a.url)
    entries = m1.get("symd_index_cache_entries", 0) - m0.get("symd_index_cache_entries", 0)
    nbytes = m1.get("symd_index_cache_bytes", 0) - m0.get("symd_index_cache_bytes", 0)
    per = nbytes / entries if entries > 0 else None
    first, last = lat[:max(1, a.n // 10)], lat[-max(1, a.n // 10):]
    working = per * a.n if per else None
    auto = max(1, math.ceil(working * a.cache_share / MIB)) if working else 1
    res = {"n": a.n, "file": os.path.basename(a.file), "file_bytes": len(buf),
           "uuid_offset": off, "conns": a.conns, "seconds": wall, "per_s": a.n / wall,
           "p50_ms": pct(lat, 50) * 1e3, "p99_ms": pct(lat, 99) * 1e3,
           "first_p50_ms": pct(first, 50) * 1e3, "last_p50_ms": pct(last, 50) * 1e3,
           "text_vmaddr": img["text_vmaddr"], "symbols": img["symbols"],
           "index_bytes": per, "probe_entries": entries, "working_set_bytes": working,
           "cache_mb_auto": auto, "uuids": [uuid_str(u) for u in uuids]}
    write_json(a.out, res)
    print(f"uploaded {a.n} copies of {res['file']} ({len(buf):,} bytes, LC_UUID at {off}) in "
          f"{wall:.1f} s = {res['per_s']:.0f} images/s ({a.conns} connections); latency p50 "
          f"{res['p50_ms']:.1f} ms p99 {res['p99_ms']:.1f} ms; first tenth p50 "
          f"{res['first_p50_ms']:.1f} ms, last tenth {res['last_p50_ms']:.1f} ms")
    if per:
        print(f"one loaded index: {per:.0f} bytes ({entries:.0f} probed); all {a.n}: "
              f"{working / MIB:.1f} MiB; a cache of {auto} MiB holds "
              f"{auto * MIB / working:.0%} of them")


def cmd_crash_images_bodies(a):
    """Bodies of a.frames frames, each in an image drawn among the a.n
    uploaded ones: uniform, or skewed (rank = floor(n^u) - 1: log-uniform,
    about Zipf with s = 1, the ranks mapped onto images by a seeded
    permutation). A body lists each image it uses once (its own load
    address); every frame names its image by index."""
    up = read_json(a.images)
    uuids, text = up["uuids"], int(up["text_vmaddr"], 16)
    n = len(uuids)
    pool = [x["vmaddr"] for x in read_json(a.samples)["samples"]]
    res = {}
    for mode, d in (("uniform", a.uniform), ("skewed", a.skewed)):
        os.makedirs(d, exist_ok=True)
        rng = random.Random(f"{a.seed}/images/{mode}")
        perm = list(range(n))
        rng.shuffle(perm)
        used = {}
        per_body = []
        for b in range(a.count):
            idx, frames = {}, []
            for _ in range(a.frames):
                if mode == "uniform":
                    i = rng.randrange(n)
                else:
                    i = perm[min(n - 1, int(n ** rng.random()) - 1)]
                used[i] = used.get(i, 0) + 1
                k = idx.setdefault(i, len(idx))
                frames.append({"address": "0x%x" % (0x200000000 + i * 0x100000
                                                    + rng.choice(pool) - text), "image": k})
            images = [{"uuid": uuids[i], "arch": "arm64",
                       "load_address": "0x%x" % (0x200000000 + i * 0x100000)} for i in idx]
            per_body.append(len(images))
            write_body(d, b, json.dumps({"images": images, "threads": [{"id": 0, "frames": frames}]},
                                        separators=(",", ":")).encode())
        top = sorted(used.values(), reverse=True)
        total = sum(top)
        res[mode] = {"distinct_images": len(used), "images_per_body": sum(per_body) / len(per_body),
                     "top5pct_share": sum(top[:max(1, n // 20)]) / total}
        print(f"{mode}: {a.count} bodies x {a.frames} frames over {len(used)} distinct images "
              f"({res[mode]['images_per_body']:.0f} per body; the 5% most used images take "
              f"{res[mode]['top5pct_share']:.0%} of the frames)")
    write_json(a.out, res)


def cmd_crash_state(a):
    """The server's RSS and the index cache's series, at a moment."""
    vm = vm_status(a.server_pid)
    m = read_metrics(a.url)
    res = {"label": a.label, "rss": vm["VmRSS"], "hwm": vm["VmHWM"],
           "cache_bytes": m.get("symd_index_cache_bytes"),
           "cache_entries": m.get("symd_index_cache_entries"),
           "cache_hits": m.get("symd_index_cache_hits_total"),
           "cache_misses": m.get("symd_index_cache_misses_total"),
           "cache_mb": a.cache_mb}
    write_json(a.out, res)
    print(f"{a.label}: RSS {vm['VmRSS'] / MIB:.1f} MiB (peak {vm['VmHWM'] / MIB:.1f}); index "
          f"cache {res['cache_bytes'] or 0:,.0f} bytes in {res['cache_entries'] or 0:.0f} entries "
          f"(--cache-mb {a.cache_mb}), {res['cache_hits'] or 0:.0f} hits, "
          f"{res['cache_misses'] or 0:.0f} misses")


# ---- crash: summary ---------------------------------------------------------------


def short_name(f):
    """A real report's file name without the repository prefix
    (owner+repo[@commit]+path_in_repo)."""
    return f.rsplit("+", 1)[-1]


def cmd_crash_summary(a):
    d = a.dir

    def opt(name):
        p = os.path.join(d, name)
        return read_json(p) if os.path.exists(p) else None

    def runs(prefix):
        """wrk results crash-PREFIX-R.json, in round order."""
        out = []
        for f in sorted(os.listdir(d)):
            m = re.match(re.escape(f"crash-{prefix}-") + r"(\d+)\.json$", f)
            if m:
                out.append((int(m.group(1)), read_json(os.path.join(d, f))))
        return [r for _, r in sorted(out, key=lambda x: x[0])]

    def best(rs):
        return max(rs, key=lambda r: r["frames_per_s"]) if rs else None

    def mark(ok):
        return "ok" if ok else "FAIL"

    def ms(us):
        return f"{us / 1e3:.2f}"

    failed, perf_failed = [], []
    every_run = []
    lines, details = [], []

    # 1. found vs never-uploaded frames
    fb = opt("crash-frames-bodies.json")
    found, missing = runs("frames-found"), runs("frames-missing")
    if fb and found and missing:
        every_run += found + missing
        bf, bm = best(found), best(missing)
        ratio = bm["frames_per_s"] / bf["frames_per_s"]
        ok = ratio >= 0.8
        if not ok:
            perf_failed.append("missing/found")
        lines += [
            f"found vs never-uploaded frames: {fb['image']} ({fb['symbols']} symbols, symbol table "
            f"only), {fb['bodies']} bodies x {fb['frames']} frames; the missing bodies spread the "
            f"same frames over {fb['images_per_missing_body']} random UUIDs each "
            f"({fb['distinct_missing_uuids']} in all)",
            f"  found   {bf['frames_per_s']:10,.0f} frames/s (p50 {ms(bf['latency_us']['p50'])} ms, "
            f"p99 {ms(bf['latency_us']['p99'])} ms)",
            f"  missing {bm['frames_per_s']:10,.0f} frames/s (p50 {ms(bm['latency_us']['p50'])} ms, "
            f"p99 {ms(bm['latency_us']['p99'])} ms)",
            f"  missing/found: {ratio:.2f}x (goal >= 0.8) {mark(ok)}"]
        details.append("  frames, each round (found, missing, missing/found): " + "; ".join(
            f"{f['frames_per_s']:,.0f}, {m['frames_per_s']:,.0f}, "
            f"{m['frames_per_s'] / f['frames_per_s']:.2f}x" for f, m in zip(found, missing))
            + f"; symd used {bf['server_cores']:.2f} / {bm['server_cores']:.2f} cores, "
            f"wrk {bf['wrk_cores']:.2f} / {bm['wrk_cores']:.2f}")
    elif fb or found or missing:
        failed.append("frames")
        lines.append("found vs never-uploaded frames: FAIL: incomplete results")

    # 2. real reports
    for w in ("small", "big"):
        m = opt(f"crash-report-{w}-missing.json")
        if m:
            failed.append(f"report {w}")
            lines.append(f"real report ({w}): FAIL: not measured: no file {m['missing']}")
    reps = [(w, opt(f"crash-report-{w}.json")) for w in ("small", "big")]
    reps = [(w, r) for w, r in reps if r]
    if reps:
        lines.append("real reports, frames/s: stored (POST /v1/crashes, 201, the whole answer) | "
                     "stored, short answer (Prefer: return=minimal) | parsed and symbolicated, "
                     "not stored (?store=false) | the same frames as one raw /v1/symbolicate "
                     "request")
    for w, r in reps:
        st, ns, raw = runs(f"rep-{w}-stored"), runs(f"rep-{w}-nostore"), runs(f"rep-{w}-raw")
        mn = runs(f"rep-{w}-minimal")
        if not (st and ns and raw and mn):
            failed.append(f"report {w}")
            lines.append(f"  {r['file']}: FAIL: incomplete results")
            continue
        every_run += st + ns + raw + mn
        bs, bn, br, bm = best(st), best(ns), best(raw), best(mn)
        ratio = bs["frames_per_s"] / br["frames_per_s"]
        mratio = bm["frames_per_s"] / br["frames_per_s"]
        ok = max(ratio, mratio) >= 0.7
        if not ok:
            perf_failed.append(f"stored/raw {w}")
        lines += [
            f"  {short_name(r['file'])}",
            f"    ({r['kind']}, {r['frames']} frames, {r['threads']} threads, {r['images']} images, "
            f"{r['bytes']:,} bytes): stored {bs['frames_per_s']:,.0f} | short answer "
            f"{bm['frames_per_s']:,.0f} | store=false {bn['frames_per_s']:,.0f} | raw "
            f"{br['frames_per_s']:,.0f}",
            f"    stored/raw {ratio:.2f}x, with the short answer {mratio:.2f}x (goal >= 0.7) "
            f"{mark(ok)}; store=false/raw {bn['frames_per_s'] / br['frames_per_s']:.2f}x; "
            f"stored/store=false {bs['frames_per_s'] / bn['frames_per_s']:.2f}x"]
        cc = opt(f"crash-costs-{w}.json")
        if cc:
            # the floor: the raw request's whole cost in symd's CPU against
            # the steps a stored report cannot skip, measured in-process
            u = cc["us"]
            raw_us = br["server_cores"] / br["requests_per_s"] * 1e6
            must = u["parse"] + u["symbolicate"] + u["short_answer"] + u["store_8_threads"]
            lines += [
                f"    CPU per report in-process (crash-costs, µs): parse {u['parse']:.0f}, "
                f"symbolicate {u['symbolicate']:.0f}, whole answer {u['whole_answer']:.0f} "
                f"({cc['whole_answer_bytes']:,} bytes), short answer {u['short_answer']:.1f} "
                f"({cc['short_answer_bytes']:,} bytes), compress {u['compress']:.0f} "
                f"({cc['compressed_bytes']:,} bytes), store (compression included) "
                f"{u['store_one_per_transaction']:.0f} one per transaction, "
                f"{u['store_8_threads']:.0f} from 8 threads",
                f"    the raw request costs symd {raw_us:.0f} µs of CPU over HTTP; at 0.7x a "
                f"stored report may cost {raw_us / 0.7:.0f}; parse + symbolicate + short answer "
                f"+ store alone cost {must:.0f} in-process ({must / (raw_us / 0.7):.1f}x that)"]
        details.append(
            f"  report {w}: reports/s stored {bs['requests_per_s']:.0f} (p50 "
            f"{ms(bs['latency_us']['p50'])} ms, p99 {ms(bs['latency_us']['p99'])} ms), short answer "
            f"{bm['requests_per_s']:.0f} (p50 {ms(bm['latency_us']['p50'])} ms), store=false "
            f"{bn['requests_per_s']:.0f} (p50 {ms(bn['latency_us']['p50'])} ms), raw "
            f"{br['requests_per_s']:.0f} (p50 {ms(br['latency_us']['p50'])} ms); rounds stored/raw "
            + ", ".join(f"{s['frames_per_s'] / x['frames_per_s']:.2f}x" for s, x in zip(st, raw))
            + f"; frame statuses {r['statuses']}; symd used {bs['server_cores']:.2f} cores stored, "
            f"{br['server_cores']:.2f} raw")

    # 3. the store at scale
    sd = opt("crash-seed-data.json")
    base = opt("crash-db-base.json")
    levels = sorted({int(m.group(1)) for f in os.listdir(d)
                     for m in [re.match(r"crash-gets-(\d+)\.json$", f)] if m})
    if sd and levels:
        gets = {lv: read_json(os.path.join(d, f"crash-gets-{lv}.json")) for lv in levels}
        seeds = {lv: opt(f"crash-seed-{lv}.json") for lv in levels}
        lo, hi = levels[0], levels[-1]
        lines.append(
            f"crash store seeded through the API: {os.path.basename(sd['template'])} varied over "
            f"{sd['groups']} groups ({sd['named']} named, {sd['unsymbolicated']} unsymbolicated; "
            f"skewed), {sd['versions']} versions, {sd['os_versions']} OS versions, "
            f"{sd['models']} devices")
        lines.append(f"  p50/p99 ms of {gets[lo]['n']} sequential GETs at each level:")
        lines.append(f"  {'crashes':>8} {'seeded/s':>9} {'#groups':>7} {'groups':>12} "
                     f"{'groups?trend':>13} {'crashes?limit':>13} {'trend?days':>12} "
                     f"{'missing':>12} {'db B/crash':>10}")
        base_logical = base["logical"] if base else 0
        for lv in levels:
            g, s = gets[lv], seeds[lv]
            r = g["routes"]
            per = (g["db"]["logical"] - base_logical) / max(1, g["crashes"])
            cells = " ".join(f"{r[k]['p50_ms']:5.2f}/{r[k]['p99_ms']:<6.2f}".rjust(w)
                             for k, w in (("groups", 12), ("groups_trend", 13), ("crashes", 13),
                                          ("trend", 12), ("missing", 12)))
            rate = f"{s['rate']:,.0f}" if s and s.get("rate") else "-"
            lines.append(f"  {g['crashes']:>8} {rate:>9} {g['groups']:>7} {cells} {per:>10,.0f}")
        g_lo, g_hi = gets[lo]["routes"]["groups"], gets[hi]["routes"]["groups"]
        r50 = g_hi["p50_ms"] / g_lo["p50_ms"]
        ok = g_hi["p99_ms"] < 20 and r50 <= 1.5
        if not ok:
            perf_failed.append("groups at scale")
        lines.append(f"  GET /v1/crashes/groups at {hi} vs {lo} crashes: p50 {g_hi['p50_ms']:.2f} vs "
                     f"{g_lo['p50_ms']:.2f} ms = {r50:.2f}x (goal <= 1.5x); p99 at {hi} "
                     f"{g_hi['p99_ms']:.2f} ms (goal < 20 ms) {mark(ok)}")
        s_hi = [seeds[lv] for lv in levels if seeds[lv] and seeds[lv].get("posted")]
        posted = sum(s["posted"] for s in s_hi)
        avg = sum(s["bytes"] for s in s_hi) / max(1, posted)
        per = (gets[hi]["db"]["logical"] - base_logical) / max(1, gets[hi]["crashes"])
        ok = per <= avg
        if not ok:
            perf_failed.append("database size")
        lines.append(f"  database at {gets[hi]['crashes']} crashes: {per:,.0f} bytes per crash, "
                     f"average report {avg:,.0f} bytes: {per / avg:.2f}x (goal <= 1.0x) {mark(ok)}")
        first = seeds[lo]
        details.append("  seeding: " + "; ".join(
            f"to {lv}: {seeds[lv]['added']} in {seeds[lv]['seconds']:.1f} s = "
            f"{seeds[lv]['rate']:,.0f}/s ({seeds[lv]['rate'] / first['rate']:.2f}x the first level's; "
            f"symd {seeds[lv]['server_cores']:.2f} cores)"
            for lv in levels if seeds[lv] and seeds[lv].get("rate")))
        gh = gets[hi]
        details.append(f"  groups at {hi}: {gh['groups']}{'+' if gh['groups_capped'] else ''} "
                       f"({gh['named_groups']} named), the largest holds {gh['top_group_share']:.0%} "
                       f"of the crashes, the 10 largest {gh['top10_share']:.0%}; "
                       f"{gh['missing_images']} missing images")
        details.append(f"  database at {hi}: {gh['db']['logical']:,} bytes (files with WAL "
                       f"{gh['db']['files']:,}; {base_logical:,} before seeding, the images); largest: "
                       + ", ".join(f"{k} {v / max(1, gh['crashes']):,.0f} B/crash"
                                   for k, v in list(gh["db"]["tables"].items())[:4]))
        for lv in levels:
            s = seeds[lv]
            if s and (s.get("non2xx") or s.get("socket_errors") or not s.get("reached")
                      or s.get("after") != lv):
                failed.append(f"seeding {lv}")
                lines.append(f"  FAIL: seeding to {lv}: {s.get('non2xx')} non-2xx, "
                             f"{s.get('socket_errors')} socket errors, the server counts "
                             f"{s.get('after')}")
        for lv in levels[1:]:
            r = gets[lv]["routes"]
            details.append(f"  GETs at {lv}, ratio of p50 to that at {lo}: " + ", ".join(
                f"{k} {r[k]['p50_ms'] / gets[lo]['routes'][k]['p50_ms']:.2f}x"
                for k in r) + "; answer bytes: " + ", ".join(f"{k} {r[k]['bytes']:,}" for k in r))

    # 4. many images, a small cache
    up = opt("crash-images-upload.json")
    ib = opt("crash-images-bodies.json")
    cfg = {c: {"idle": opt(f"crash-img-{c}-idle.json"), "end": opt(f"crash-img-{c}-end.json"),
               "uniform": opt(f"crash-img-{c}-uniform.json"),
               "skewed": opt(f"crash-img-{c}-skewed.json")} for c in ("small", "fit")}
    if up and ib and all(cfg["small"].values()) and all(cfg["fit"].values()):
        sm, ft = cfg["small"], cfg["fit"]
        every_run += [sm["uniform"], sm["skewed"], ft["uniform"], ft["skewed"]]
        cmb, fmb = sm["idle"]["cache_mb"], ft["idle"]["cache_mb"]
        per = up["index_bytes"] or 0
        ws = up["working_set_bytes"] or 0
        lines.append(f"{up['n']} stored images (copies of {up['file']} with new LC_UUIDs), one "
                     f"loaded index {per:,.0f} bytes, {ws / MIB:.1f} MiB for all; --cache-mb {cmb} "
                     f"holds {cmb * MIB / ws:.0%} of them, --cache-mb {fmb} all")
        for mode in ("uniform", "skewed"):
            s, f = sm[mode]["latency_us"], ft[mode]["latency_us"]
            lines.append(
                f"  {mode:7}: p50 {ms(s['p50'])} ms p99 {ms(s['p99'])} ms with {cmb} MiB vs p50 "
                f"{ms(f['p50'])} ms p99 {ms(f['p99'])} ms all cached: {s['p50'] / f['p50']:.2f}x and "
                f"{s['p99'] / f['p99']:.2f}x; frames/s {sm[mode]['frames_per_s']:,.0f} vs "
                f"{ft[mode]['frames_per_s']:,.0f} ({sm[mode]['frames_per_s'] / ft[mode]['frames_per_s']:.2f}x)")
        peak_s = max(sm["uniform"]["rss_peak"], sm["skewed"]["rss_peak"], sm["end"]["rss"])
        peak_f = max(ft["uniform"]["rss_peak"], ft["skewed"]["rss_peak"], ft["end"]["rss"])
        idle_s, idle_f = sm["idle"]["rss"], ft["idle"]["rss"]
        grow_s, grow_f = peak_s - idle_s, peak_f - idle_f
        cache_ok = (sm["end"]["cache_bytes"] or 0) <= cmb * MIB
        rss_ok = grow_s <= cmb * MIB + a.rss_slack_mb * MIB
        if not (cache_ok and rss_ok):
            perf_failed.append("RSS")
        held_s, held_f = sm["end"]["cache_bytes"] or 0, ft["end"]["cache_bytes"] or 0
        lines.append(
            f"  RSS with --cache-mb {cmb}: peak {peak_s / MIB:.1f} MiB = idle {idle_s / MIB:.1f} + "
            f"{grow_s / MIB:.1f} MiB ({grow_s / (cmb * MIB):.1f}x --cache-mb); the cache held "
            f"{held_s / MIB:.2f} MiB, the rest {(grow_s - held_s) / MIB:.1f} MiB")
        lines.append(
            f"  RSS all cached:     peak {peak_f / MIB:.1f} MiB = idle {idle_f / MIB:.1f} + "
            f"{grow_f / MIB:.1f} MiB; the cache held {held_f / MIB:.2f} MiB, the rest "
            f"{(grow_f - held_f) / MIB:.1f} MiB: small/all-cached RSS {peak_s / peak_f:.2f}x")
        lines.append(f"  goal: RSS over idle <= --cache-mb + {a.rss_slack_mb} MiB (memory --cache-mb "
                     f"does not count: SQLite page caches, malloc's retained heap; see the README) "
                     f"and the cache <= --cache-mb: {mark(rss_ok and cache_ok)}")
        lines.append(f"  upload: {up['n']} images in {up['seconds']:.1f} s = {up['per_s']:,.0f}/s "
                     f"({up['conns']} connections); p50 of the last tenth vs the first: "
                     f"{up['last_p50_ms']:.2f} vs {up['first_p50_ms']:.2f} ms = "
                     f"{up['last_p50_ms'] / up['first_p50_ms']:.2f}x")
        for c, label in (("small", f"--cache-mb {cmb}"), ("fit", f"--cache-mb {fmb}")):
            e = cfg[c]["end"]
            hits, misses = e["cache_hits"] or 0, e["cache_misses"] or 0
            details.append(f"  images, {label}: cache {e['cache_entries'] or 0:.0f} entries "
                           f"{(e['cache_bytes'] or 0) / MIB:.2f} MiB, hit rate "
                           f"{hits / max(1, hits + misses):.0%} over the runs and warm-up; RSS idle "
                           f"{cfg[c]['idle']['rss'] / MIB:.1f} MiB, peaks uniform "
                           f"{cfg[c]['uniform']['rss_peak'] / MIB:.1f} skewed "
                           f"{cfg[c]['skewed']['rss_peak'] / MIB:.1f}, VmHWM {e['hwm'] / MIB:.1f} MiB")
        details.append("  image bodies: " + "; ".join(
            f"{m} {ib[m]['distinct_images']} distinct images, {ib[m]['images_per_body']:.0f} per "
            f"body, the 5% most used take {ib[m]['top5pct_share']:.0%} of the frames"
            for m in ("uniform", "skewed")))
    elif up or any(v for c in cfg.values() for v in c.values()):
        failed.append("images")
        lines.append("images: FAIL: incomplete results")

    if every_run:
        r0 = every_run[0]
        rounds = len(found) or max((len(runs(f"rep-{w}-raw")) for w, _ in reps), default=1)
        lines.insert(0, f"crash section: wrk runs of {r0['seconds']} s, {r0['connections']} "
                        f"connections, {r0['threads']} threads; throughput best of {rounds} rounds")
    bad = sum(r["non2xx"] + r["socket_errors"] + r.get("unexpected", 0) for r in every_run)
    if bad:
        failed.append("requests")
    if every_run:
        lines.append(f"every wrk run: {sum(r['responses'] for r in every_run):,} answers, {bad} "
                     f"non-2xx, socket errors or unexpected statuses {mark(bad == 0)}")
    load = opt("crash-load.json")
    other = max([r.get("other_cores", 0) for r in every_run] + [0])
    if not lines:
        lines.append("crash section: no results")
        failed.append("nothing")
    text = "\n".join(lines + (["details:"] + details if details else [])) + "\n"
    if load and load["busy_cores"] > 0.25:
        text += (f"WARNING: other processes used {load['busy_cores']:.2f} cores before the runs; "
                 "figures are unreliable\n")
    elif other > 0.25:
        text += (f"note: other processes used up to {other:.2f} cores during some wrk runs "
                 "(bench/.cache/last/crash-*.json)\n")
    print(text, end="")
    with open(a.out, "w") as f:
        f.write(text)
    if failed:
        print(f"crash bench: failed: {', '.join(failed)}", file=sys.stderr)
    if a.strict and perf_failed:
        print(f"crash bench: goals missed: {', '.join(perf_failed)}", file=sys.stderr)
    sys.exit(1 if failed or (a.strict and perf_failed) else 0)


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

    s = sub.add_parser("pg-summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_pg_summary)

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

    # crash section
    s = sub.add_parser("crash-upload")
    s.add_argument("--url", required=True)
    s.add_argument("--file", action="append", required=True, help="a file to upload (repeat)")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_upload)

    s = sub.add_parser("crash-frame-bodies")
    s.add_argument("--url", required=True, help="the server, to check one body of each")
    s.add_argument("--samples", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--found", required=True, help="directory of the found bodies")
    s.add_argument("--missing", required=True, help="directory of the missing bodies")
    s.add_argument("--count", type=int, default=64)
    s.add_argument("--frames", type=int, default=200)
    s.add_argument("--images", type=int, default=8, help="never-uploaded UUIDs per missing body")
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_frame_bodies)

    s = sub.add_parser("crash-wrk")
    s.add_argument("--url", required=True)
    s.add_argument("--path", required=True, help="route and query, e.g. /v1/crashes?store=false")
    s.add_argument("--script", required=True, help="bench/bodies.lua")
    s.add_argument("--bodies", required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--ctype", default="application/json")
    s.add_argument("--header", help="one more request header, 'Name: value'")
    s.add_argument("--frames", type=int, required=True, help="frames per request")
    s.add_argument("--expect", type=int, help="the status every answer must have")
    s.add_argument("--label", required=True)
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--conns", type=int, default=4)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--seconds", type=int, default=5)
    s.add_argument("--log", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_wrk)

    s = sub.add_parser("crash-report-prep")
    s.add_argument("--url", required=True)
    s.add_argument("--report", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_report_prep)

    s = sub.add_parser("crash-seed-data")
    s.add_argument("--crash", required=True, help="fixtures/crashes/bigapp-twin.crash")
    s.add_argument("--syms", required=True, help="fixtures/expected/bigapp-arm64.sym.tsv")
    s.add_argument("--app-name", default="bigapp-arm64")
    s.add_argument("--unsymbolicated", type=int, default=476)
    s.add_argument("--builds", type=int, default=8)
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True, help="the Lua data file")
    s.add_argument("--meta", required=True)
    s.set_defaults(fn=cmd_crash_seed_data)

    s = sub.add_parser("crash-seed")
    s.add_argument("--url", required=True)
    s.add_argument("--script", required=True, help="bench/seed_crashes.lua")
    s.add_argument("--data", required=True)
    s.add_argument("--target", type=int, required=True)
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--conns", type=int, default=4)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--log", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_seed)

    s = sub.add_parser("crash-gets")
    s.add_argument("--url", required=True)
    s.add_argument("--db", required=True)
    s.add_argument("--level", type=int, required=True)
    s.add_argument("--n", type=int, default=200)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_gets)

    s = sub.add_parser("crash-db-size")
    s.add_argument("--db", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=lambda a: write_json(a.out, db_size(a.db)))

    s = sub.add_parser("crash-images-upload")
    s.add_argument("--url", required=True)
    s.add_argument("--file", required=True)
    s.add_argument("--n", type=int, default=10000)
    s.add_argument("--conns", type=int, default=4)
    s.add_argument("--probe", type=int, default=200, help="images loaded to size one index")
    s.add_argument("--cache-share", type=float, default=0.05,
                   help="share of the images the small cache should hold")
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_images_upload)

    s = sub.add_parser("crash-images-bodies")
    s.add_argument("--images", required=True, help="crash-images-upload's output")
    s.add_argument("--samples", required=True)
    s.add_argument("--uniform", required=True)
    s.add_argument("--skewed", required=True)
    s.add_argument("--count", type=int, default=64)
    s.add_argument("--frames", type=int, default=200)
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_images_bodies)

    s = sub.add_parser("crash-state")
    s.add_argument("--url", required=True)
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--cache-mb", type=int, required=True)
    s.add_argument("--label", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_state)

    s = sub.add_parser("crash-summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--rss-slack-mb", type=int, default=16,
                   help="what RSS may grow beyond --cache-mb before the RSS goal fails")
    s.add_argument("--strict", action="store_true")
    s.set_defaults(fn=cmd_crash_summary)

    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
