"""The dwarf section: a generated dSYM in symd vs llvm-symbolizer --inlining and llvm-gsymutil."""
import json
import os
import re
import sys
import time

from benchlib.common import MIB, die, fastest, read_json, read_result, run, write_json
from benchlib.httpapi import LOAD_ADDRESS, connect, post, symbolicate_body
from benchlib.macho import function_table
from benchlib.measure import (Figure, Report, RssSampler, mark, ratio_block, ratio_line,
                              ratio_row, run_measured, vm_status)

# The generated program (bench/gen_program.py), its dSYM, llvm-gsymutil and
# llvm-symbolizer --inlining on one side, symd with line + inline data on the
# other. The symd response contract these steps check: one input frame gives
# one output frame per inlined level, innermost first ("inlined": true), then
# the function that contains the address ("inlined": false), all with the
# address as sent; each has "file", "line" ("column" when known), "symbol"
# (demangled) and "mangled" (raw, compared with llvm-symbolizer --no-demangle).


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
            m = run_measured(["llvm-gsymutil", "--convert=" + a.dwarf, "--out-file=" + out]
                             + extra)
            text = m.output.decode(errors="replace")
            runs.append({"seconds": m.seconds, "max_rss": m.max_rss, "cpu_s": m.cpu_s})
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
              f"from DWARF; max RSS {c['max_rss'] / MIB:.0f} MiB")
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
    print(f"symd RSS: {res['rss_before'] / MIB:.0f} MiB before, sampled peak "
          f"{res['rss_peak_sampled'] / MIB:.0f} MiB, VmHWM {res['hwm_before'] / MIB:.0f} -> "
          f"{res['hwm_after'] / MIB:.0f} MiB, {res['rss_after'] / MIB:.0f} MiB after")


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
    """The DWARF section's summary: symd's dSYM upload against llvm-gsymutil
    --convert (time, size, RSS), accuracy and throughput against
    llvm-symbolizer --inlining."""
    d = a.dir
    st, gs, up, idx, acc = (read_result(d, "dw-stats.json"), read_result(d, "dw-gsym.json"),
                            read_result(d, "dw-upload.json"), read_result(d, "dw-index.json"),
                            read_result(d, "dw-accuracy.json"))
    before = read_result(d, "dw-symbolizer-before.json")
    load = read_result(d, "dw-load.json")
    runs = sorted((read_json(os.path.join(d, f)) for f in os.listdir(d)
                   if f.startswith("dw-wrk-") and f.endswith(".json")),
                  key=lambda r: r["connections"])
    after = {r["connections"]: read_result(d, f"dw-symbolizer-after-c{r['connections']}.json")
             for r in runs}
    rep = Report("DWARF")
    rep.lines.append(f"DWARF: generated program, {st['functions']} functions, __text "
                     f"{st['text_bytes'] / 1e6:.2f} MB, dSYM DWARF {st['dwarf_bytes'] / 1e6:.1f} MB "
                     f"({st['subprograms']} subprograms, {st['inlined_subroutines']} inlined "
                     "subroutines)")
    gbest = gs["best_s"]
    g1 = gs["configs"][1]["best_s"]
    gsym_note = f"{gs['cores']} threads; 1 thread {g1 * 1e3:.0f} ms"
    symd_ok = rep.check(up is not None and up.get("status") == "ok", "upload", goal=False)
    if symd_ok:
        rec = rep.compare("dSYM upload->queryable/llvm-gsymutil --convert",
                          Figure("symd dSYM upload->queryable", up["queryable_ms"], "ms"),
                          Figure("llvm-gsymutil --convert", gbest * 1e3, "ms"), goal=2, at_most=True)
        rep.lines += ratio_block(rec, f"upload alone {up['dsym_upload_ms']:.0f} ms", gsym_note)
    else:
        msg = up["message"] if up else "dw-upload.json missing"
        rep.lines.append(f"dSYM upload->queryable: FAIL: {msg}")
        rep.lines.append(f"llvm-gsymutil --convert: {gbest * 1e3:.0f} ms ({gsym_note})")
    gsym = gs["gsym_bytes"]
    if rep.check(idx is not None and "lines" in idx["kinds"], "index", goal=False):
        lb = idx["kinds"]["lines"]["bytes"]
        sb = idx["kinds"].get("symbols", {}).get("bytes", 0)
        rec = rep.compare("index lines+symbols/GSYM",
                          Figure("symd index, lines+symbols", lb + sb, "bytes"),
                          Figure("llvm-gsymutil GSYM", gsym, "bytes"), goal=1, at_most=True)
        rep.lines += ratio_block(rec, f"lines alone {lb:,} bytes, {lb / gsym:.2f}x GSYM")
    else:
        have = ", ".join(f"{k} {v['bytes']:,}" for k, v in idx["kinds"].items()) if idx else "?"
        rep.lines.append(f"index: FAIL: no 'lines' blob in image_data (have: {have or 'nothing'}); "
                         f"GSYM {gsym:,} bytes")
    gmax = max(c["max_rss"] for c in gs["configs"])
    if symd_ok:
        rec = rep.compare("peak RSS symd/llvm-gsymutil",
                          Figure("symd VmHWM during the dSYM upload", up["hwm_after"] / MIB, "MiB"),
                          Figure("llvm-gsymutil --convert max RSS", gmax / MIB, "MiB"))
        rep.lines += ratio_block(
            rec, f"was {up['hwm_before'] / MIB:.0f} MiB; RSS {up['rss_before'] / MIB:.0f} MiB "
            f"before, sampled peak {up['rss_peak_sampled'] / MIB:.0f} MiB, "
            f"{up['rss_after'] / MIB:.0f} MiB after")
    else:
        rep.lines.append(f"symd peak RSS: not measured; llvm-gsymutil max RSS {gmax / MIB:.0f} MiB")
    if acc and "error" not in acc:
        acc_ok = rep.check(acc["agree"] == acc["n"], "accuracy", goal=False)
        rep.lines.append(f"accuracy: {acc['agree']}/{acc['n']} addresses match llvm-symbolizer "
                         f"--inlining on every level (function, file, line) {mark(acc_ok)}")
    else:
        rep.check(False, "accuracy", goal=False)
        rep.lines.append("accuracy: FAIL: " + (acc["error"] if acc else "not run (no line data)"))
    head_runs = []
    if before:
        head_runs = before["variants"][0]["runs"] + [
            x for c in sorted(after) if after[c] for x in after[c]["variants"][0]["runs"]]
        head = fastest(head_runs)
        head_note = f"{before['addresses']} addrs x {before['reps']}"
    if runs and before:
        best = fastest(runs)
        bad = sum(r["non2xx"] + r["socket_errors"] for r in runs)
        rep.check(bad == 0, "requests", goal=False)
        rec = rep.compare("ratio symd/llvm-symbolizer --inlining",
                          Figure("symd /v1/symbolicate (lines+inlines)", best["frames_per_s"],
                                 "frames/s"),
                          Figure("llvm-symbolizer --inlining", head["frames_per_s"], "frames/s"),
                          goal=2)
        rep.lines += ratio_block(rec, f"wrk {best['seconds']} s, {best['connections']} conns, "
                                      f"{bad} non-2xx/socket errors", head_note)
    else:
        rep.lines += ["symd /v1/symbolicate (lines+inlines): FAIL: not measured (no line data)",
                      f"llvm-symbolizer --inlining: {head['frames_per_s']:.0f} frames/s "
                      f"({head_note})" if before else "llvm-symbolizer --inlining: not measured"]
    if runs and before:
        rep.details.append(
            f"  symd best run: -t{best['threads']} -c{best['connections']}, latency avg "
            f"{best['latency_avg']} p99 {best['latency_p99']}; symd used "
            f"{best['server_cores']:.2f} cores, wrk {best['wrk_cores']:.2f}; runs: "
            + ", ".join(f"c{r['connections']} {r['frames_per_s']:.0f}" for r in runs))
        each = [rep.compare(f"c{r['connections']}",
                            Figure(f"symd wrk -c{r['connections']}", r["frames_per_s"], "frames/s"),
                            Figure("llvm-symbolizer --inlining right after it",
                                   after[r["connections"]]["variants"][0]["runs"][0]["frames_per_s"],
                                   "frames/s"))
                for r in runs if after.get(r["connections"])]
        rep.details.append(ratio_row("each against the llvm-symbolizer run right after it", each))
        rec = rep.compare("per CPU-second, symd/llvm-symbolizer --inlining",
                          Figure("symd", best["frames_per_s"] / best["server_cores"], "frames"),
                          Figure("llvm-symbolizer", head["frames_per_s"] * head["seconds"]
                                 / head["cpu_s"], "frames"))
        rep.details.append(ratio_line(rec))
    if before:
        rep.details.append(f"  llvm-symbolizer --inlining (default output, stdout to a file, "
                           f"1 core): startup {before['startup_s'] * 1e3:.0f} ms; frames/s "
                           + ", ".join(f"{r['frames_per_s']:.0f}" for r in head_runs))
        if before.get("one_pass_s"):
            rep.details.append(
                f"  llvm-symbolizer --inlining, one cold pass over the {before['addresses']} "
                f"addresses (reading the DWARF included): {before['one_pass_s']:.2f} s = "
                f"{before['addresses'] / before['one_pass_s']:.0f} frames/s")
        for v in before["variants"][1:]:
            r = v["runs"][0]
            rep.details.append(f"  llvm-symbolizer --inlining {v['label']:29} "
                               f"{r['frames_per_s']:8.0f} frames/s")
    if acc and "error" not in acc:
        rep.details.append(
            f"  accuracy levels: {acc['levels_agree']}/{acc['levels']} agree; "
            f"{acc['depth_differs']} addresses with another number of levels; "
            f"{acc['no_lines']} without file:line; demangled names (symbol vs "
            f"llvm-symbolizer's default) {acc['demangled_agree']}/{acc['n']}")
    for c in gs["configs"]:
        rep.details.append(f"  llvm-gsymutil --convert {c['label']}: "
                           + ", ".join(f"{r['seconds'] * 1e3:.0f}" for r in c["runs"])
                           + f" ms; max RSS {c['max_rss'] / MIB:.0f} MiB")
    if idx:
        rep.details.append(f"  database file + WAL after the uploads: {idx['db_bytes']:,} bytes")
    if load and load["busy_cores"] > 0.25:
        rep.notes.append(f"WARNING: other processes used {load['busy_cores']:.2f} cores before "
                         "the throughput runs; frames/s figures are unreliable")
    sys.exit(rep.finish(a.out, a.strict))


def register(sub):
    s = sub.add_parser("dw-stats", help="functions, sizes, DWARF counts, UUID of the generated "
                                        "program")
    s.add_argument("--binary", required=True)
    s.add_argument("--dwarf", required=True, help="the dSYM's DWARF file")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_stats)

    s = sub.add_parser("dw-gsym", help="llvm-gsymutil --convert: best-of-N time, GSYM size, max "
                                       "RSS")
    s.add_argument("--dwarf", required=True)
    s.add_argument("--work", required=True)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_gsym)

    s = sub.add_parser("dw-reference", help="llvm-symbolizer --inlining through the dSYM on the "
                                            "samples")
    s.add_argument("--binary", required=True)
    s.add_argument("--dsym", required=True)
    s.add_argument("--samples", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_reference)

    s = sub.add_parser("dw-upload", help="POST binary, then dSYM: upload -> queryable (file:line), "
                                         "RSS")
    s.add_argument("--url", required=True)
    s.add_argument("--binary", required=True)
    s.add_argument("--dwarf", required=True)
    s.add_argument("--name", default="bench-dwarf")
    s.add_argument("--reference", required=True, help="dw-reference output (picks the probe)")
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--timeout", type=float, default=30.0)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_upload)

    s = sub.add_parser("dw-index", help="bytes of the 'lines' and 'symbols' blobs in the database")
    s.add_argument("--db", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_index)

    s = sub.add_parser("dw-accuracy", help="symd's frames vs llvm-symbolizer's, every inlined "
                                           "level")
    s.add_argument("--url", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--reference", required=True)
    s.add_argument("--batch", type=int, default=2000)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_dw_accuracy)

    s = sub.add_parser("dw-summary", help="print the DWARF summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--strict", action="store_true")
    s.set_defaults(fn=cmd_dw_summary)
