"""The minidump section: walking and symbolicating real minidumps against minidump_stackwalk, and dump-syms."""
import json
import os
import re
import shutil
import subprocess
import sys

from benchlib.common import MIB, die, read_json, read_result, write_json
from benchlib.httpapi import connect, post
from benchlib.measure import (Figure, Report, ratio_block, ratio_text, run_measured,
                              run_repeated)
from benchlib.wrk import run_wrk

# The dumps of ../shared/minidumps (its README.md) walked and symbolicated
# two ways by symd and by Breakpad's minidump_stackwalk, on the same dumps
# and the same symbols, in the same run:
#   server  POST /v1/crashes?store=false of each dump (wrk, a fixed number of
#           connections) against minidump_stackwalk run as many processes at
#           once: dumps/s, and dumps per CPU-second of the symd server
#           process against those of the minidump_stackwalk processes
#   cli     `symd crash --db DB DUMP`, one process per dump as
#           minidump_stackwalk is run, one at a time: wall and CPU per dump
# Both with two symbol sets in symd's database: "sym", the very .sym files
# minidump_stackwalk reads (the fair comparison), and "binary", the real
# binaries and dSYMs where the folder has them (the .sym elsewhere).
# Correctness comes first, in the same run: the crashed thread's frames,
# module and offset, must equal minidump_stackwalk's for every frame it gives.
# Then `symd dump-syms` on real binaries with their dSYMs: time, size and
# records per kind beside Breakpad's .sym of the same binary.

# The .sym files of the folder: (module name, Breakpad debug id, file, a
# MODULE line to prepend when the file has none). minidump_stackwalk reads
# them as SYMS/NAME/DEBUGID/NAME.sym; symd is given the same bytes.
SYMS = [
    ("crash_macos", "3F58BC3DEABE3361B5FB52A6762985980", "symbolic-crash_macos/crash_macos.sym",
     "MODULE mac x86_64 3F58BC3DEABE3361B5FB52A6762985980 crash_macos"),
    ("crash", "67E9247C814E392BA027DBDE6748FCBF0", "symbolicator-macos/crash.sym", None),
    ("sentry_example", "73781EDEBF5B34EC81B2749A0F1FA5FD0",
     "symbolicator-macos-no-fp/sentry_example.sym.original", None),
]
# The real binaries with their dSYMs: (module name, binary, dSYM bundle).
BINARIES = [
    ("crash_macos", "symbolic-crash_macos/crash_macos", "symbolic-crash_macos/crash_macos.dSYM"),
    ("crash", "symbolicator-macos/crash", "symbolicator-macos/crash.dSYM"),
]
# Other tools' symbol files of the same binaries (the folder's README says
# where each comes from): what symd dump-syms's records are set beside.
REFERENCE_SYMS = {
    "crash_macos": [("crash_macos.sym (STACK CFI only)", "symbolic-crash_macos/crash_macos.sym")],
    "crash": [("Breakpad dump_syms", "symbolicator-macos/crash.sym"),
              ("mozilla dump_syms 2.1.0", "symbolicator-macos/crash.inlines.sym"),
              ("symbolic, CFI of the Mach-O", "symbolic-cfi-snapshots/test_cfi__cfi_macho.snap")],
}
SETS = {"sym": "the .sym files minidump_stackwalk reads",
        "binary": "binaries + dSYMs (crash_macos, crash), sentry_example's .sym"}
TRUST_RANK = {"context": 0, "cfi": 1, "frame_pointer": 2, "scan": 3}


def dwarf_of(dsym):
    """The DWARF file inside a .dSYM bundle (the only file of Contents/Resources/DWARF)."""
    d = os.path.join(dsym, "Contents", "Resources", "DWARF")
    files = sorted(os.listdir(d)) if os.path.isdir(d) else []
    if len(files) != 1:
        die(f"{dsym}: expected one DWARF file in {d}, found {files}")
    return os.path.join(d, files[0])


def modules_tsv(folder):
    """MODULES.tsv: {dump: [{base, size, debug_id, uuid, name}]} in the file's order."""
    out = {}
    with open(os.path.join(folder, "MODULES.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(head, line.rstrip("\n").split("\t")))
            out.setdefault(row["dump"], []).append(row)
    return out


# ---- prepare: symbol folder, bodies, what Breakpad's dump_syms can do --------------


def cmd_md_prepare(a):
    """Lays out the symbol folder minidump_stackwalk reads (WORK/syms), one
    wrk body directory per dump (WORK/bodies/N/body-000), and checks the
    debug ids against MODULES.tsv; probes Breakpad's dump_syms beside
    minidump_stackwalk on a Mach-O."""
    mods = modules_tsv(a.dir)
    ids = {(m["name"].rsplit("/", 1)[-1], m["debug_id"]) for ms in mods.values() for m in ms}
    syms_dir = os.path.join(a.work, "syms")
    syms = []
    for name, debug_id, rel, module_line in SYMS:
        if (name, debug_id) not in ids:
            die(f"MODULES.tsv has no module {name} {debug_id}")
        d = os.path.join(syms_dir, name, debug_id)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(a.dir, rel), "rb") as f:
            data = f.read()
        if module_line:
            data = module_line.encode() + b"\n" + data
        elif not data.startswith(b"MODULE "):
            die(f"{rel} has no MODULE line")
        path = os.path.join(d, name + ".sym")
        with open(path, "wb") as f:
            f.write(data)
        syms.append({"name": name, "debug_id": debug_id, "source": rel, "path": path,
                     "bytes": len(data), "module_line_added": bool(module_line)})
    binaries = [{"name": n, "binary": os.path.join(a.dir, b), "dsym": os.path.join(a.dir, d),
                 "dwarf": dwarf_of(os.path.join(a.dir, d))} for n, b, d in BINARIES]
    dumps = []
    for i, rel in enumerate(sorted(mods)):
        body = os.path.join(a.work, "bodies", str(i))
        os.makedirs(body, exist_ok=True)
        src = os.path.join(a.dir, rel)
        shutil.copyfile(src, os.path.join(body, "body-000"))
        dumps.append({"dump": rel, "name": os.path.basename(rel), "path": src, "bodies": body,
                      "bytes": os.path.getsize(src), "modules": len(mods[rel])})
    # Breakpad's dump_syms, where minidump_stackwalk comes from: the npm
    # package's Linux build reads ELF only.
    probe = {"tool": None, "ok": False, "says": "not found beside minidump_stackwalk"}
    ds = os.path.join(os.path.dirname(a.stackwalk), "dump_syms")
    if os.access(ds, os.X_OK):
        p = subprocess.run([ds, "-v", binaries[0]["binary"]], capture_output=True, text=True)
        probe = {"tool": ds, "ok": p.returncode == 0 and p.stdout.startswith("MODULE "),
                 "says": " / ".join(x.replace(a.dir + "/", "")
                                    for x in p.stderr.strip().splitlines()[:2])}
    doc = {"dir": a.dir, "stackwalk": a.stackwalk, "syms_dir": syms_dir, "syms": syms,
           "binaries": binaries, "dumps": dumps, "breakpad_dump_syms": probe}
    write_json(a.out, doc)
    for d in dumps:
        print(f"  {d['dump']}: {d['bytes']:,} bytes, {d['modules']} modules")
    print(f"  symbols: {', '.join(s['name'] for s in syms)} (.sym); binaries + dSYMs: "
          f"{', '.join(b['name'] for b in binaries)}")


# ---- upload --------------------------------------------------------------------------


def cmd_md_upload(a):
    """POST the symbol set a.set to /v1/images?name=NAME: the .sym files
    (sym), or the binaries and dSYMs with the .sym of the modules that have
    no binary (binary)."""
    prep = read_json(a.prep)
    files = []
    have_binary = {b["name"] for b in prep["binaries"]}
    if a.set == "binary":
        for b in prep["binaries"]:
            files += [(b["name"], b["binary"]), (b["name"], b["dwarf"])]
    files += [(s["name"], s["path"]) for s in prep["syms"]
              if a.set == "sym" or s["name"] not in have_binary]
    conn = connect(a.url)
    out = []
    for name, path in files:
        with open(path, "rb") as f:
            status, body = post(conn, "/v1/images?name=" + name, f.read(),
                                "application/octet-stream")
        if status not in (200, 201):
            die(f"upload of {path} answered {status}: {body[:300]!r}")
        for i in json.loads(body)["images"]:
            out.append({"name": name, "file": path, "uuid": i["uuid"], "arch": i["arch"],
                        "kind": i["kind"], "symbols": i["symbols"]})
            print(f"  {a.set}: {os.path.basename(path)}: {i['uuid']} {i['arch']} {i['kind']}, "
                  f"{i['symbols']} symbols")
    write_json(a.out, {"set": a.set, "images": out})


# ---- correctness: the crashed thread against minidump_stackwalk --------------------


def oracle_crashed(stackwalk, dump, syms_dir):
    """The crashed thread of minidump_stackwalk's readable output: frames
    [{module, pc, function, trust}] (as tests/test_e2e_minidump.c reads it)."""
    p = subprocess.run([stackwalk, dump, syms_dir], capture_output=True, text=True)
    if p.returncode != 0:
        die(f"minidump_stackwalk {dump} failed ({p.returncode}): {p.stderr[-300:]}")
    frames, inside = [], False
    for line in p.stdout.splitlines():
        if re.match(r"^Thread \d+ \(crashed\)", line):
            inside = True
            continue
        if not inside:
            continue
        if not line.strip():
            break
        m = re.match(r"^\s*(\d+)\s+(\S.*)$", line)
        if m and int(m.group(1)) == len(frames) and "=" not in m.group(2).split()[0]:
            rest = m.group(2)
            # a frame outside every module is "0xPC"
            mod = "" if rest.startswith("0x") else re.split(r"[! ]", rest, 1)[0]
            fn = None
            if "!" in rest.split(" ")[0]:
                fn = rest.split("!", 1)[1].split(" [", 1)[0]
            frames.append({"module": mod, "pc": None, "function": fn, "trust": None})
            continue
        pc = re.search(r"\b(?:rip|pc) = 0x([0-9a-f]+)", line)
        if frames and pc and frames[-1]["pc"] is None:
            frames[-1]["pc"] = int(pc.group(1), 16)
        f = re.search(r"Found by: (.*)", line)
        if frames and f:
            s = f.group(1)
            frames[-1]["trust"] = ("context" if "instruction pointer" in s else
                                   "cfi" if "call frame info" in s else
                                   "frame_pointer" if "frame pointer" in s else
                                   "scan" if "scanning" in s else s)
    return frames


def crashed_frames(answer):
    """[{module, pc, offset, symbol, trust}] of the crashed thread of a /v1/crashes answer."""
    images = answer.get("images") or []
    th = next((t for t in answer.get("threads") or [] if t.get("crashed")), None)
    if th is None:
        return None
    out = []
    for f in th.get("frames") or []:
        if f.get("inlined"):
            continue  # the oracle gives one frame per return address
        pc = int(f["address"], 16)
        ix = f.get("image_index")
        base = int(images[ix]["load_address"], 16) if isinstance(ix, int) else None
        out.append({"module": f.get("image") or "", "pc": pc,
                    "offset": pc - base if base is not None else None,
                    "symbol": f.get("symbol"), "trust": f.get("trust")})
    return out


def compare_frames(ours, oracle):
    """Ours against the oracle, frame by frame over the oracle's frames:
    module + pc equal (the same dump's module list, so module + offset
    equal), our trust as good or better, function names equal where the
    oracle names one."""
    if ours is None:
        return {"frames": 0, "oracle": len(oracle), "equal": 0, "trusted": 0, "named": 0,
                "names_equal": 0, "diffs": ["no crashed thread in the answer"]}
    equal = trusted = named = names_equal = 0
    diffs = []
    for i, o in enumerate(oracle):
        f = ours[i] if i < len(ours) else None
        same = f is not None and f["module"] == o["module"] and f["pc"] == o["pc"]
        equal += same
        if same and TRUST_RANK.get(f["trust"], 9) <= TRUST_RANK.get(o["trust"], 9):
            trusted += 1
        if o["function"]:
            named += 1
            # Breakpad writes C++ names with their parameters, symd without
            # them unless demangled so: compare up to the first '('.
            if f and f["symbol"] and f["symbol"].split("(")[0] == o["function"].split("(")[0]:
                names_equal += 1
        if not same:
            diffs.append(f"frame {i}: ours " + (f"{f['module']} 0x{f['pc']:x} ({f['trust']})"
                                                if f else "none")
                         + f", minidump_stackwalk {o['module']} 0x{o['pc'] or 0:x} ({o['trust']})")
    return {"frames": len(ours), "oracle": len(oracle), "equal": equal, "trusted": trusted,
            "named": named, "names_equal": names_equal, "diffs": diffs[:5]}


def cmd_md_check(a):
    """Each dump walked by minidump_stackwalk (the crashed thread), by the
    server (POST /v1/crashes?store=false) and by `symd crash --json --db`:
    the frames compared (compare_frames)."""
    prep = read_json(a.prep)
    conn = connect(a.url)
    res = {"set": a.set, "dumps": []}
    for d in prep["dumps"]:
        oracle = oracle_crashed(prep["stackwalk"], d["path"], prep["syms_dir"])
        with open(d["path"], "rb") as f:
            status, body = post(conn, "/v1/crashes?store=false", f.read(),
                                "application/octet-stream")
        server = (compare_frames(crashed_frames(json.loads(body)), oracle) if status == 200
                  else {"frames": 0, "oracle": len(oracle), "equal": 0, "trusted": 0, "named": 0,
                        "names_equal": 0, "diffs": [f"HTTP {status}: {body[:200]!r}"]})
        p = subprocess.run([a.symd, "crash", "--json", "--db", a.db, d["path"]],
                           capture_output=True)
        cli = (compare_frames(crashed_frames(json.loads(p.stdout)), oracle) if p.returncode == 0
               else {"frames": 0, "oracle": len(oracle), "equal": 0, "trusted": 0, "named": 0,
                     "names_equal": 0, "diffs": [f"exit {p.returncode}: {p.stderr[-200:]!r}"]})
        ok = bool(oracle) and all(x["equal"] == len(oracle) for x in (server, cli))
        res["dumps"].append({"dump": d["name"], "ok": ok, "oracle": oracle, "server": server,
                             "cli": cli})
        print(f"  {a.set}: {d['name']}: crashed thread, {server['equal']}/{len(oracle)} "
              f"minidump_stackwalk frames equal (module + offset) from the server, "
              f"{cli['equal']}/{len(oracle)} from symd crash; trust as good {server['trusted']}; "
              f"names equal {server['names_equal']}/{server['named']}; ours {server['frames']} "
              f"frames {'ok' if ok else 'FAIL'}")
        for x in server["diffs"] + cli["diffs"]:
            print("    " + x)
    write_json(a.out, res)


# ---- speed: the server, and one process per dump ---------------------------------------


def cmd_md_server(a):
    """For each round and dump: wrk POSTs the dump to /v1/crashes?store=false
    over a.conns connections for a.seconds (dumps/s; the server's CPU per
    dump from /proc/PID), then minidump_stackwalk runs a.runs times on it,
    a.conns processes at once (dumps/s; their CPU per dump): every symd
    figure has its reference beside it in time."""
    prep = read_json(a.prep)
    res = {"set": a.set, "connections": a.conns, "seconds": a.seconds, "runs": a.runs,
           "rounds": []}
    for r in range(a.rounds):
        rnd = []
        for d in prep["dumps"]:
            cmd = ["wrk", f"-t{min(a.threads, a.conns)}", f"-c{a.conns}", f"-d{a.seconds}s",
                   "--timeout", "30s", "-s", a.script, a.url + "/v1/crashes?store=false", "--",
                   d["bodies"], "1", "application/octet-stream"]
            log = os.path.join(a.work, f"md-wrk-{a.set}-{r + 1}-{d['name']}.log")
            text, m, counts = run_wrk(cmd, a.server_pid, log)
            lat = re.search(r"lua: latency_us p50 (\d+) p90 (\d+) p99 (\d+)", text)
            ours = {"dumps_per_s": counts["requests_per_s"], "responses": counts["responses"],
                    "bad": counts["non2xx"] + counts["socket_errors"],
                    "server_cpu_s": m.meter.server_cpu_s,
                    "per_cpu_s": (counts["responses"] / m.meter.server_cpu_s
                                  if m.meter.server_cpu_s else None),
                    "p50_ms": int(lat.group(1)) / 1e3 if lat else None,
                    "p99_ms": int(lat.group(3)) / 1e3 if lat else None,
                    "cores": m.cores()}
            rep = run_repeated([prep["stackwalk"], d["path"], prep["syms_dir"]], a.runs, a.conns)
            ref = {"dumps_per_s": rep.per_s(), "per_cpu_s": rep.per_cpu_s(), "runs": rep.runs,
                   "failed": rep.failed, "cores": rep.meter.cores()}
            rnd.append({"dump": d["name"], "symd": ours, "stackwalk": ref})
            print(f"  {a.set} round {r + 1}: {d['name']}: symd {ours['dumps_per_s']:,.0f} dumps/s "
                  f"({ours['per_cpu_s'] or 0:,.0f} per CPU-s, {ours['bad']} bad), "
                  f"minidump_stackwalk {ref['dumps_per_s']:,.0f} dumps/s "
                  f"({ref['per_cpu_s'] or 0:,.0f} per CPU-s, {ref['failed']} failed); "
                  f"other {ours['cores']['other_cores']:.2f} cores")
        res["rounds"].append(rnd)
    write_json(a.out, res)


def cmd_md_cli(a):
    """For each round and dump: minidump_stackwalk a.runs times one after the
    other, then `symd crash --db DB DUMP` as many times: wall and CPU per
    dump of one process per dump."""
    prep = read_json(a.prep)
    res = {"set": a.set, "runs": a.runs, "rounds": [], "start": []}
    for r in range(a.rounds):
        # What starting the process costs alone: usage text, nothing read.
        start = {}
        for side, cmd in (("stackwalk", [prep["stackwalk"], "-h"]), ("symd", [a.symd, "--help"])):
            rep = run_repeated(cmd, a.runs, 1)
            start[side] = {"wall_ms": rep.seconds / rep.runs * 1e3,
                           "cpu_ms": rep.cpu_s / rep.runs * 1e3, "failed": rep.failed}
        res["start"].append(start)
        print(f"  {a.set} round {r + 1}: process start alone: symd --help "
              f"{start['symd']['cpu_ms']:.2f} ms CPU, minidump_stackwalk -h "
              f"{start['stackwalk']['cpu_ms']:.2f} ms CPU")
        rnd = []
        for d in prep["dumps"]:
            sides = {}
            for side, cmd in (("stackwalk", [prep["stackwalk"], d["path"], prep["syms_dir"]]),
                              ("symd", [a.symd, "crash", "--db", a.db, d["path"]])):
                rep = run_repeated(cmd, a.runs, 1)
                sides[side] = {"wall_ms": rep.seconds / rep.runs * 1e3,
                               "cpu_ms": rep.cpu_s / rep.runs * 1e3, "failed": rep.failed,
                               "other_cores": rep.meter.cores()["other_cores"]}
            rnd.append({"dump": d["name"], **sides})
            s, w = sides["symd"], sides["stackwalk"]
            print(f"  {a.set} round {r + 1}: {d['name']}: symd crash {s['wall_ms']:.2f} ms wall "
                  f"{s['cpu_ms']:.2f} ms CPU per dump, minidump_stackwalk {w['wall_ms']:.2f} ms "
                  f"wall {w['cpu_ms']:.2f} ms CPU ({s['failed'] + w['failed']} failed)")
        res["rounds"].append(rnd)
    write_json(a.out, res)


# ---- dump-syms ----------------------------------------------------------------------------


def sym_records(path):
    """Records per kind of a Breakpad .sym: MODULE, INFO, FILE, FUNC, line,
    INLINE, INLINE_ORIGIN, PUBLIC, STACK CFI INIT, STACK CFI, other."""
    kinds = {}
    with open(path, "rb") as f:
        for line in f:
            w = line.split(b" ", 3)
            k = w[0].decode(errors="replace")
            if k == "STACK" and len(w) > 1:
                k = "STACK CFI INIT" if len(w) > 2 and w[1] == b"CFI" and w[2] == b"INIT" \
                    else "STACK " + w[1].decode(errors="replace").strip()
            elif re.match(r"^[0-9a-fA-F]+$", k):
                k = "line"
            kinds[k] = kinds.get(k, 0) + 1
    return kinds


def cmd_md_dump_syms(a):
    """`symd dump-syms BINARY DSYM -o OUT`, best of a.runs: wall, CPU, peak
    RSS, output size and records per kind, beside the records of Breakpad's
    .sym of the same binary where the folder has one."""
    prep = read_json(a.prep)
    targets = [(b["name"], b["binary"], b["dsym"],
                [(label, os.path.join(prep["dir"], rel))
                 for label, rel in REFERENCE_SYMS.get(b["name"], [])])
               for b in prep["binaries"]]
    if a.program:
        targets.append(("generated program (dwarf section)", a.program, a.program + ".dSYM", []))
    res = {"targets": [], "breakpad_dump_syms": prep["breakpad_dump_syms"]}
    for name, binary, dsym, refs in targets:
        out = os.path.join(a.work, "dump-syms-" + os.path.basename(binary) + ".sym")
        best = None
        for _ in range(a.runs):
            m = run_measured([a.symd, "dump-syms", binary, dsym, "-o", out], stdout=os.devnull)
            if best is None or m.seconds < best.seconds:
                best = m
        dwarf = dwarf_of(dsym)
        t = {"name": name, "binary": binary, "binary_bytes": os.path.getsize(binary),
             "dwarf_bytes": os.path.getsize(dwarf), "seconds": best.seconds, "cpu_s": best.cpu_s,
             "max_rss": best.max_rss, "out_bytes": os.path.getsize(out),
             "records": sym_records(out)}
        t["references"] = [{"label": label, "file": os.path.basename(path),
                            "bytes": os.path.getsize(path), "records": sym_records(path)}
                           for label, path in refs if os.path.exists(path)]
        res["targets"].append(t)
        print(f"  {name}: {t['seconds'] * 1e3:.0f} ms wall, {t['cpu_s'] * 1e3:.0f} ms CPU, peak RSS "
              f"{t['max_rss'] / MIB:.1f} MiB; {t['out_bytes']:,} bytes out of a "
              f"{t['binary_bytes']:,}-byte binary and {t['dwarf_bytes']:,} bytes of DWARF")
    write_json(a.out, res)


# ---- summary -----------------------------------------------------------------------------------


def hmean(xs):
    """The rate of an equal mix: each item as often (harmonic mean); 0 when
    one item was not done at all."""
    if not xs or any(not x for x in xs):
        return 0.0
    return len(xs) / sum(1 / x for x in xs)


def best_per_dump(rounds, side, key):
    """{dump: the best (largest) value of side[key] over the rounds}."""
    out = {}
    for rnd in rounds:
        for x in rnd:
            v = x[side][key]
            if v is not None and v > out.get(x["dump"], 0):
                out[x["dump"]] = v
            out.setdefault(x["dump"], 0)
    return out


def server_lines(rep, srv, set_name):
    """Per dump and overall: dumps/s and dumps per CPU-second, symd server
    against minidump_stackwalk processes, best round of each side."""
    rounds = srv["rounds"]
    dumps = [x["dump"] for x in rounds[0]]
    c = srv["connections"]
    rep.lines.append(f"  server, symbols: {SETS[set_name]}: POST /v1/crashes?store=false, wrk "
                     f"{c} connections x {srv['seconds']} s per dump; minidump_stackwalk "
                     f"{srv['runs']} runs, {c} processes at once; best of {len(rounds)} rounds")
    figs = {}
    for side in ("symd", "stackwalk"):
        figs[side] = (best_per_dump(rounds, side, "dumps_per_s"),
                      best_per_dump(rounds, side, "per_cpu_s"))
    for dmp in dumps:
        a = rep.compare(f"{set_name} server {dmp} dumps/s",
                        Figure("symd", figs["symd"][0][dmp], "dumps/s"),
                        Figure("minidump_stackwalk", figs["stackwalk"][0][dmp], "dumps/s"))
        b = rep.compare(f"{set_name} server {dmp} per CPU-s",
                        Figure("symd", figs["symd"][1][dmp], "dumps/CPU-s"),
                        Figure("minidump_stackwalk", figs["stackwalk"][1][dmp], "dumps/CPU-s"))
        rep.lines.append(f"    {dmp}: dumps/s {ratio_text(a)} ({a['ours']['value']:,.0f} vs "
                         f"{a['reference']['value']:,.0f}), per CPU-second {ratio_text(b)} "
                         f"({b['ours']['value']:,.0f} vs {b['reference']['value']:,.0f})")
    bad = sum(x["symd"]["bad"] + x["stackwalk"]["failed"] for rnd in rounds for x in rnd)
    rep.check(bad == 0, f"{set_name} server requests", goal=False)
    other = max(x["symd"]["cores"]["other_cores"] for rnd in rounds for x in rnd)
    for k, unit, title in ((0, "dumps/s", "dumps/s"), (1, "dumps/CPU-s", "per CPU-second")):
        rec = rep.compare(f"{set_name} server overall {title}",
                          Figure(f"symd server ({set_name})",
                                 hmean([figs["symd"][k][d] for d in dumps]), unit),
                          Figure("minidump_stackwalk",
                                 hmean([figs["stackwalk"][k][d] for d in dumps]), unit),
                          goal=1)
        rep.lines += ratio_block(rec, indent="    ")
    rep.lines.append(f"    (overall: every dump equally often; bad answers and failed runs: {bad}; "
                     f"other processes used up to {other:.2f} cores during a wrk run)")


def cli_lines(rep, cli, set_name):
    """Per dump and overall: one process per dump, symd crash against
    minidump_stackwalk, best round of each side (the least wall and CPU)."""
    rounds = cli["rounds"]
    dumps = [x["dump"] for x in rounds[0]]
    rep.lines.append(f"  one process per dump, symbols: {SETS[set_name]}: symd crash --db against "
                     f"minidump_stackwalk, {cli['runs']} runs each per dump, one at a time, best "
                     f"of {len(rounds)} rounds")
    best = {}
    for side in ("symd", "stackwalk"):
        for key in ("wall_ms", "cpu_ms"):
            best[side, key] = {d: min(x[side][key] for rnd in rounds for x in rnd
                                      if x["dump"] == d) for d in dumps}
    for dmp in dumps:
        s_w, s_c = best["symd", "wall_ms"][dmp], best["symd", "cpu_ms"][dmp]
        r_w, r_c = best["stackwalk", "wall_ms"][dmp], best["stackwalk", "cpu_ms"][dmp]
        a = rep.compare(f"{set_name} cli {dmp} dumps/s", Figure("symd crash", 1e3 / s_w, "dumps/s"),
                        Figure("minidump_stackwalk", 1e3 / r_w, "dumps/s"))
        # getrusage counts microseconds: a zero is below its resolution
        b = rep.compare(f"{set_name} cli {dmp} per CPU-s",
                        Figure("symd crash", 1e3 / max(s_c, 1e-3), "dumps/CPU-s"),
                        Figure("minidump_stackwalk", 1e3 / max(r_c, 1e-3), "dumps/CPU-s"))
        rep.lines.append(f"    {dmp}: wall {ratio_text(a)} ({s_w:.2f} vs {r_w:.2f} ms), CPU "
                         f"{ratio_text(b)} ({s_c:.2f} vs {r_c:.2f} ms)")
    bad = sum(x[s]["failed"] for rnd in rounds for x in rnd for s in ("symd", "stackwalk"))
    rep.check(bad == 0, f"{set_name} cli runs", goal=False)
    for key, unit, title in (("wall_ms", "dumps/s", "dumps/s"),
                             ("cpu_ms", "dumps/CPU-s", "per CPU-second")):
        ours = sum(best["symd", key].values()) / len(dumps)
        ref = sum(best["stackwalk", key].values()) / len(dumps)
        rec = rep.compare(f"{set_name} cli overall {title}",
                          Figure(f"symd crash ({set_name})", 1e3 / ours, unit),
                          Figure("minidump_stackwalk", 1e3 / ref, unit), goal=1)
        rep.lines += ratio_block(rec, f"{ours:.2f} ms per dump", f"{ref:.2f} ms per dump",
                                 indent="    ")
    if bad:
        rep.lines.append(f"    FAIL: {bad} runs exited non-zero")
    if cli.get("start"):
        st = {side: min(x[side]["cpu_ms"] for x in cli["start"]) for side in ("symd", "stackwalk")}
        ours = sum(best["symd", "cpu_ms"].values()) / len(dumps)
        ref = sum(best["stackwalk", "cpu_ms"].values()) / len(dumps)
        rec = rep.compare(f"{set_name} cli beyond the process start, per CPU-second",
                          Figure("symd crash", 1e3 / max(ours - st["symd"], 1e-3), "dumps/CPU-s"),
                          Figure("minidump_stackwalk", 1e3 / max(ref - st["stackwalk"], 1e-3),
                                 "dumps/CPU-s"))
        rep.lines.append(
            f"    process start alone (usage text, nothing read): symd --help {st['symd']:.2f} ms "
            f"CPU, minidump_stackwalk -h {st['stackwalk']:.2f} ms; beyond it a dump costs symd "
            f"{ours - st['symd']:.2f} ms, minidump_stackwalk {ref - st['stackwalk']:.2f} ms: "
            f"{rec['ratio']:.2f}x")


def dump_syms_lines(rep, ds):
    kinds = ["FUNC", "line", "INLINE", "PUBLIC", "STACK CFI INIT", "STACK CFI"]
    probe = ds["breakpad_dump_syms"]
    rep.lines.append("symd dump-syms BINARY DSYM -o OUT (best run): time, size, records per kind")
    for t in ds["targets"]:
        r = t["records"]
        rep.lines.append(f"  {t['name']}: {t['seconds'] * 1e3:.0f} ms wall, {t['cpu_s'] * 1e3:.0f} ms "
                         f"CPU, peak RSS {t['max_rss'] / MIB:.1f} MiB; {t['out_bytes']:,} bytes "
                         f"(binary {t['binary_bytes']:,}, DWARF {t['dwarf_bytes']:,})")
        rep.lines.append("    symd: " + ", ".join(f"{k} {r.get(k, 0):,}" for k in kinds))
        for ref in t.get("references", []):
            rep.lines.append(f"    {ref['label']}: " + ", ".join(
                f"{k} {ref['records'].get(k, 0):,}" for k in kinds)
                + f" ({ref['file']}, {ref['bytes']:,} bytes)")
    if probe["ok"]:
        rep.lines.append(f"  note: {probe['tool']} wrote a .sym of a Mach-O; not timed here")
    else:
        rep.lines.append("  no reference timing: Breakpad's dump_syms for Mach-O does not run "
                         "here (Debian has no Breakpad package; the npm minidump package's "
                         "linux-x64 dump_syms reads ELF only: "
                         f"\"{probe['says']}\"; its darwin builds are Mach-O executables)")


def cmd_md_summary(a):
    """The minidump section's summary (or why it was skipped)."""
    d = a.dir
    rep = Report("minidump")
    skipped = read_result(d, "md-skipped.json")
    if skipped:
        rep.lines.append(f"minidump: SKIPPED ({skipped['skipped']})")
        sys.exit(rep.finish(a.out))
    sets = [s for s in SETS if read_result(d, f"md-check-{s}.json")]
    rep.lines.append("Correctness first: the crashed thread of each dump, module + offset of every "
                     "frame minidump_stackwalk gives (same dump, same symbols)")
    for s in sets:
        chk = read_json(os.path.join(d, f"md-check-{s}.json"))
        for x in chk["dumps"]:
            rep.check(x["ok"], f"{s} {x['dump']} frames", goal=False)
            sv, cl = x["server"], x["cli"]
            rep.lines.append(
                f"  {s}: {x['dump']}: {sv['equal']}/{sv['oracle']} equal (server), "
                f"{cl['equal']}/{cl['oracle']} (symd crash); trust as good or better "
                f"{sv['trusted']}/{sv['oracle']}; function names equal {sv['names_equal']}/"
                f"{sv['named']}; symd {sv['frames']} frames: {'ok' if x['ok'] else 'FAIL'}")
            for diff in sv["diffs"] + cl["diffs"]:
                rep.lines.append("    " + diff)
    rep.lines.append("Walking and symbolicating: symd against minidump_stackwalk (ratio: symd's "
                     "speed / minidump_stackwalk's, > 1: symd is faster)")
    for s in sets:
        srv = read_result(d, f"md-server-{s}.json")
        if srv:
            server_lines(rep, srv, s)
    for s in sets:
        cli = read_result(d, f"md-cli-{s}.json")
        if cli:
            cli_lines(rep, cli, s)
    ds = read_result(d, "md-dump-syms.json")
    if ds:
        dump_syms_lines(rep, ds)
    missed = [c for c in rep.comparisons if c["ok"] is False]
    if missed:
        rep.notes.append("goals missed: " + ", ".join(c["name"] for c in missed))
    sys.exit(rep.finish(a.out, a.strict))


def register(sub):
    s = sub.add_parser("md-prepare", help="minidump: symbol folder, wrk bodies, dump_syms probe")
    s.add_argument("--dir", required=True, help="../shared/minidumps")
    s.add_argument("--stackwalk", required=True)
    s.add_argument("--work", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_md_prepare)

    s = sub.add_parser("md-upload", help="minidump: upload a symbol set")
    s.add_argument("--url", required=True)
    s.add_argument("--prep", required=True)
    s.add_argument("--set", choices=sorted(SETS), required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_md_upload)

    s = sub.add_parser("md-check", help="minidump: crashed threads against minidump_stackwalk")
    s.add_argument("--url", required=True)
    s.add_argument("--symd", required=True)
    s.add_argument("--db", required=True)
    s.add_argument("--prep", required=True)
    s.add_argument("--set", choices=sorted(SETS), required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_md_check)

    s = sub.add_parser("md-server", help="minidump: wrk on /v1/crashes?store=false beside "
                                         "minidump_stackwalk")
    s.add_argument("--url", required=True)
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--prep", required=True)
    s.add_argument("--set", choices=sorted(SETS), required=True)
    s.add_argument("--script", required=True, help="bench/bodies.lua")
    s.add_argument("--conns", type=int, default=2)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--seconds", type=int, default=2)
    s.add_argument("--runs", type=int, default=60, help="minidump_stackwalk runs per dump")
    s.add_argument("--rounds", type=int, default=2)
    s.add_argument("--work", required=True, help="directory of the wrk logs")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_md_server)

    s = sub.add_parser("md-cli", help="minidump: symd crash against minidump_stackwalk, a "
                                      "process per dump")
    s.add_argument("--symd", required=True)
    s.add_argument("--db", required=True)
    s.add_argument("--prep", required=True)
    s.add_argument("--set", choices=sorted(SETS), required=True)
    s.add_argument("--runs", type=int, default=60)
    s.add_argument("--rounds", type=int, default=2)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_md_cli)

    s = sub.add_parser("md-dump-syms", help="minidump: symd dump-syms time, size, records")
    s.add_argument("--symd", required=True)
    s.add_argument("--prep", required=True)
    s.add_argument("--program", help="the dwarf section's program (its .dSYM beside it)")
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--work", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_md_dump_syms)

    s = sub.add_parser("md-summary", help="print the minidump summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--strict", action="store_true")
    s.set_defaults(fn=cmd_md_summary)
