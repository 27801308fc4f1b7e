"""The symtab section: symd against llvm-symbolizer on a real binary (accuracy, throughput)."""
import json
import math
import os
import random
import struct
import sys
import time

from benchlib.common import die, fastest, read_json, run, write_json
from benchlib.httpapi import connect, image_of, post, symbolicate_body
from benchlib.macho import function_table, macho_symtab, strip1
from benchlib.measure import Figure, Report, mark, ratio_block, ratio_line, ratio_row, run_measured


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



# ---- accuracy ----------------------------------------------------------------


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


def run_symbolizer(slice_path, infile, outfile, extra):
    """`llvm-symbolizer --obj=SLICE EXTRA < infile > outfile`, measured."""
    return run_measured(["llvm-symbolizer", "--obj=" + slice_path] + extra,
                        stdin=infile, stdout=outfile)


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
    m = run_symbolizer(slice_path, infile, os.devnull if sink == "null" else outfile, extra)
    if sink == "file":
        got = count_answers(outfile, "JSON" if "--output-style=JSON" in extra else "LLVM")
        if got != expect:
            die(f"llvm-symbolizer ({label}) answered {got} of {expect}")
    return {"seconds": m.seconds, "frames_per_s": expect / m.seconds, "cpu_s": m.cpu_s,
            "other_cores": m.cores()["other_cores"]}


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
        res["startup_s"] = run_symbolizer(a.slice, infile, os.devnull, base).seconds
        print(f"llvm-symbolizer startup (1 address): {res['startup_s'] * 1e3:.0f} ms")
        # Repeat the address list until the headline run lasts >= min_seconds.
        reps = 1
        while True:
            with open(infile, "w") as f:
                f.write(one * reps)
            dt = run_symbolizer(a.slice, infile, outfile, base).seconds
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


# ---- summary -----------------------------------------------------------------


def cmd_summary(a):
    """The symtab section's summary: upload -> queryable, accuracy, and symd's
    throughput against llvm-symbolizer's; the exit status says pass or fail."""
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
    best = fastest(runs)
    head_runs = before["variants"][0]["runs"] + [
        x for c in sorted(after) for x in after[c]["variants"][0]["runs"]]
    head = fastest(head_runs)
    rep = Report("symtab")
    non2xx = sum(r["non2xx"] for r in runs)
    sockerr = sum(r["socket_errors"] for r in runs)
    acc_ok = rep.check(all(x["agree"] == x["n"] and x["nm_agree"] == x["n"] for x in acc),
                       "accuracy", goal=False)
    edges_ok = rep.check(all(x["edges"]["agree"] == x["edges"]["n"] and
                             x["edges"]["nm_agree"] == x["edges"]["n"] for x in acc),
                         "function edges", goal=False)
    rep.check(non2xx == 0 and sockerr == 0, "requests", goal=False)
    q_ok = rep.check(up["queryable_ms"] <= 1000, "upload->queryable")
    headline = rep.compare("ratio symd/llvm-symbolizer",
                           Figure("symd /v1/symbolicate", best["frames_per_s"], "frames/s"),
                           Figure("llvm-symbolizer", head["frames_per_s"], "frames/s"), goal=2)
    # CPU that other processes took: during the two runs the ratio rests on,
    # and during any timing at all.
    other_head = max(load["busy_cores"], best["other_cores"], head["other_cores"])
    other_any = max([other_head] + [r["other_cores"] for r in runs + head_runs]
                    + [v["runs"][0]["other_cores"] for v in before["variants"]])
    probes = [c for arch in ("arm64", "x86_64")
              for c in read_json(os.path.join(d, f"aliases-{arch}.json"))["cases"]]
    kinds = {}
    for c in probes:
        kinds.setdefault(c["case"], []).append(c["agree"])
    lopsided = [r for r in runs if r.get("one_thread")]

    # The five lines the issue asks for.
    rep.lines += [
        f"upload {up['bytes'] / 1e6:.1f} MB fat: {up['upload_ms']:.0f} ms; "
        f"upload->queryable: {up['queryable_ms']:.0f} ms (limit 1000 ms) {mark(q_ok)}",
        "accuracy " + "; ".join(f"{x['arch']}: {x['agree']}/{x['n']} agree" for x in acc)
        + f" {mark(acc_ok)}"]
    rep.lines += ratio_block(
        headline, f"wrk {best['seconds']} s, {best['connections']} conns, {best['non2xx']} non-2xx",
        f"{before['addresses']} addrs x {before['reps']}")
    each = [rep.compare(f"c{r['connections']}",
                        Figure(f"symd wrk -c{r['connections']}", r["frames_per_s"], "frames/s"),
                        Figure("llvm-symbolizer right after it",
                               after[r["connections"]]["variants"][0]["runs"][0]["frames_per_s"],
                               "frames/s"))
            for r in runs]
    rep.details += [
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
        ratio_row("each against the llvm-symbolizer run right after it", each),
        f"  llvm-symbolizer (default flags, stdout to a file, one process, 1 core): best "
        f"{head['seconds']:.2f} s of its {len(head_runs)} runs, frames/s "
        + ", ".join(f"{r['frames_per_s']:.0f}" for r in head_runs),
    ]
    for v in before["variants"][1:]:
        r = v["runs"][0]
        rec = rep.compare(f"symd/llvm-symbolizer {v['label']}",
                          Figure("symd", best["frames_per_s"], "frames/s"),
                          Figure(f"llvm-symbolizer {v['label']}", r["frames_per_s"], "frames/s"))
        rep.details.append(ratio_line(rec) + (f" [others used {r['other_cores']:.2f} cores "
                                              "meanwhile]" if r["other_cores"] > 0.25 else ""))
    # Per CPU-second: what each side gets out of one core's worth of time.
    rec = rep.compare("per CPU-second, symd/llvm-symbolizer",
                      Figure("symd", best["frames_per_s"] / best["server_cores"], "frames"),
                      Figure("llvm-symbolizer", head["frames_per_s"] * head["seconds"]
                             / head["cpu_s"], "frames"))
    rep.details.append(ratio_line(rec) + "; symd's HTTP and JSON included, wrk's CPU not")
    if lopsided:
        rep.details.append(f"  note: in {len(lopsided)} of {len(runs)} wrk runs one symd thread "
                           "served every connection while the others idled (MHD thread pool); "
                           "such a run shows about half the throughput")
    if other_head > 0.25:
        rep.notes.append(f"WARNING: other processes used up to {other_head:.2f} cores during the "
                         "runs the ratio rests on; throughput figures are unreliable")
    elif other_any > 0.25:
        rep.notes.append(f"  note: other processes used up to {other_any:.2f} cores during some "
                         "timings (see bench/.cache/last/), not during the best runs above")
    sys.exit(rep.finish(a.out, a.strict))


def register(sub):
    s = sub.add_parser("sample", help="function table of a slice (llvm-nm + function starts) and N "
                                      "seeded random addresses strictly inside functions")
    s.add_argument("--slice", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--n", type=int, default=20000)
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_sample)

    s = sub.add_parser("upload", help="POST the fat binary; time upload and upload -> queryable")
    s.add_argument("--url", required=True)
    s.add_argument("--file", required=True)
    s.add_argument("--name", default="sentry-cli")
    s.add_argument("--samples", required=True, help="arm64 samples (first one is the probe)")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_upload)

    s = sub.add_parser("accuracy", help="server vs llvm-symbolizer (and vs the llvm-nm table) on "
                                        "the samples")
    s.add_argument("--url", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--slice", required=True)
    s.add_argument("--samples", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_accuracy)

    s = sub.add_parser("aliases", help="synthetic aliases (symbols moved in a copy of the slice): "
                                       "which name does each tool report?")
    s.add_argument("--slice", required=True)
    s.add_argument("--symd", default="symd", help="symd binary (for symd atos)")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_aliases)

    s = sub.add_parser("bodies", help="the wrk request bodies (200 frames each) and their "
                                      "addresses")
    s.add_argument("--samples", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--count", type=int, default=64)
    s.add_argument("--frames", type=int, default=200)
    s.add_argument("--seed", default="1")
    s.add_argument("--adjust", help='request-level "adjust" (the DWARF bench: none)')
    s.set_defaults(fn=cmd_bodies)

    s = sub.add_parser("symbolizer", help="time llvm-symbolizer in batch mode on the wrk addresses")
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

    s = sub.add_parser("summary", help="print the symtab summary; exit status says pass or fail")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--strict", action="store_true",
                   help="also fail when a performance goal is missed")
    s.set_defaults(fn=cmd_summary)
