"""The crash section: found vs missing frames, real reports stored vs raw, and its summary."""
import json
import os
import random
import re
import sys
import time

from benchlib.common import MIB, die, fastest, numbered_results, read_json, read_result, write_json
from benchlib.httpapi import LOAD_ADDRESS, connect, post, symbolicate_body, uuid_str, write_body
from benchlib.measure import (Figure, Report, RssSampler, mark, ratio_block, ratio_line, ratio_row,
                              vm_status)
from benchlib.wrk import run_wrk
from sections import crash_images, crash_store

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
# Parts 3 and 4 live in crash_store.py and crash_images.py.

UUID_STEP = 0x1000000  # between the load addresses of a body's images


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
    if a.header or a.distinct:
        cmd.append(a.header or "")
    if a.distinct:
        cmd.append(a.distinct)
    rss0 = vm_status(a.server_pid)
    sampler = RssSampler(a.server_pid, 0.02)
    sampler.start()
    text, measured, counts = run_wrk(cmd, a.server_pid, a.log)
    peak = sampler.stop()
    rss1 = vm_status(a.server_pid)
    lat = re.search(r"lua: latency_us p50 (\d+) p90 (\d+) p99 (\d+) p999 (\d+) max (\d+) "
                    r"mean ([\d.]+)", text)
    if not lat:
        die(f"wrk gave no latency line:\n{text}")
    statuses = {x.group(1): int(x.group(2))
                for x in re.finditer(r"lua: status (\d+) (\d+)", text)}
    cores = measured.cores()
    responses = counts["responses"]
    unexpected = responses - statuses.get(str(a.expect), 0) if a.expect else 0
    res = {"label": a.label, "path": a.path, "connections": a.conns, "threads": t,
           "seconds": a.seconds, "frames_per_request": a.frames,
           "requests_per_s": counts["requests_per_s"],
           "frames_per_s": counts["requests_per_s"] * a.frames,
           "responses": responses, "non2xx": counts["non2xx"],
           "socket_errors": counts["socket_errors"], "statuses": statuses,
           "expect": a.expect, "unexpected": unexpected,
           "latency_us": {k: int(lat.group(i + 1)) for i, k in
                          enumerate(("p50", "p90", "p99", "p999", "max"))},
           "latency_mean_us": float(lat.group(6)),
           "rss_before": rss0["VmRSS"], "rss_peak": max(peak, rss1["VmRSS"]),
           "rss_after": rss1["VmRSS"], "hwm_after": rss1["VmHWM"],
           "server_cores": cores["server_cores"], "wrk_cores": cores["client_cores"],
           "other_cores": cores["other_cores"]}
    write_json(a.out, res)
    l = res["latency_us"]
    print(f"wrk {a.label}: {res['requests_per_s']:.0f} req/s = {res['frames_per_s']:,.0f} "
          f"frames/s; latency p50 {l['p50'] / 1e3:.2f} ms p99 {l['p99'] / 1e3:.2f} ms; "
          f"statuses {statuses}, {res['socket_errors']} socket errors; RSS peak "
          f"{res['rss_peak'] / MIB:.1f} MiB; cores: symd {res['server_cores']:.2f}, "
          f"wrk {res['wrk_cores']:.2f}, other {res['other_cores']:.2f}")
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



# ---- crash: summary ---------------------------------------------------------------


def short_name(f):
    """A real report's file name without the repository prefix
    (owner+repo[@commit]+path_in_repo)."""
    return f.rsplit("+", 1)[-1]



def frames_summary(rep, d):
    """Part 1 of the crash summary: never-uploaded frames against found
    ones. Returns (its wrk runs, its rounds)."""
    fb = read_result(d, "crash-frames-bodies.json")
    found = numbered_results(d, "crash-frames-found")
    missing = numbered_results(d, "crash-frames-missing")
    if not (fb and found and missing):
        if fb or found or missing:
            rep.check(False, "frames", goal=False)
            rep.lines.append("found vs never-uploaded frames: FAIL: incomplete results")
        return [], 0
    bf, bm = fastest(found), fastest(missing)
    rep.lines.append(
        f"found vs never-uploaded frames: {fb['image']} ({fb['symbols']} symbols, symbol table "
        f"only), {fb['bodies']} bodies x {fb['frames']} frames; the missing bodies spread the "
        f"same frames over {fb['images_per_missing_body']} random UUIDs each "
        f"({fb['distinct_missing_uuids']} in all)")
    rec = rep.compare("missing/found", Figure("missing", bm["frames_per_s"], "frames/s"),
                      Figure("found", bf["frames_per_s"], "frames/s"), goal=0.8)
    rep.lines += ratio_block(rec, latency_note(bm, True), latency_note(bf, True), indent="  ")
    rounds = [rep.compare(f"round {i}", Figure("missing", m["frames_per_s"], "frames/s"),
                          Figure("found", f["frames_per_s"], "frames/s"))
              for i, (f, m) in enumerate(zip(found, missing), 1)]
    rep.details.append(ratio_row("frames, missing/found each round", rounds)
                       + f"; symd used {bf['server_cores']:.2f} / {bm['server_cores']:.2f} cores, "
                       f"wrk {bf['wrk_cores']:.2f} / {bm['wrk_cores']:.2f} (found / missing)")
    return found + missing, len(found)


def latency_note(r, p99=False):
    """'p50 X ms[, p99 Y ms]' of a crash-wrk result."""
    lat = r["latency_us"]
    return f"p50 {lat['p50'] / 1e3:.2f} ms" + (f", p99 {lat['p99'] / 1e3:.2f} ms" if p99 else "")


def reports_summary(rep, d):
    """Part 2 of the crash summary: real reports stored, with the short
    answer and not stored, against their frames sent raw; and the in-process
    cost of each step. Returns (its wrk runs, its rounds)."""
    every_run, rounds = [], 0
    for w in ("small", "big"):
        m = read_result(d, f"crash-report-{w}-missing.json")
        if m:
            rep.check(False, f"report {w}", goal=False)
            rep.lines.append(f"real report ({w}): FAIL: not measured: no file {m['missing']}")
    reps = [(w, read_result(d, f"crash-report-{w}.json")) for w in ("small", "big")]
    reps = [(w, r) for w, r in reps if r]
    if reps:
        rep.lines.append("real reports, frames/s: stored (POST /v1/crashes, 201, the whole "
                         "answer) | stored, short answer (Prefer: return=minimal) | parsed and "
                         "symbolicated, not stored (?store=false) | the same frames as one raw "
                         "/v1/symbolicate request")
    for w, r in reps:
        st, ns, raw, mn = (numbered_results(d, f"crash-rep-{w}-{kind}")
                           for kind in ("stored", "nostore", "raw", "minimal"))
        if not (st and ns and raw and mn):
            rep.check(False, f"report {w}", goal=False)
            rep.lines.append(f"  {r['file']}: FAIL: incomplete results")
            continue
        every_run += st + ns + raw + mn
        rounds = max(rounds, len(raw))
        bs, bn, br, bm = fastest(st), fastest(ns), fastest(raw), fastest(mn)
        stored = Figure("stored", bs["frames_per_s"], "frames/s")
        short = Figure("stored, short answer", bm["frames_per_s"], "frames/s")
        nostore = Figure("store=false", bn["frames_per_s"], "frames/s")
        rawf = Figure("raw", br["frames_per_s"], "frames/s")
        rep.lines += [
            f"  {short_name(r['file'])}",
            f"    ({r['kind']}, {r['frames']} frames, {r['threads']} threads, {r['images']} images, "
            f"{r['bytes']:,} bytes): stored {bs['frames_per_s']:,.0f} | short answer "
            f"{bm['frames_per_s']:,.0f} | store=false {bn['frames_per_s']:,.0f} | raw "
            f"{br['frames_per_s']:,.0f}"]
        # The goal: a stored report, with either answer, at 0.7x its frames raw.
        better = max(stored, short, key=lambda x: x.value)
        rec = rep.compare(f"{w} report: stored (the better answer)/raw", better, rawf, goal=0.7)
        rep.lines.append(ratio_line(rec, "    "))
        rep.lines.append(ratio_row("ratios", [
            rep.compare(f"{w} stored/raw", stored, rawf),
            rep.compare(f"{w} short answer/raw", short, rawf),
            rep.compare(f"{w} store=false/raw", nostore, rawf),
            rep.compare(f"{w} stored/store=false", stored, nostore)], "    "))
        cc = read_result(d, f"crash-costs-{w}.json")
        if cc:
            # the floor: the raw request's whole cost in symd's CPU against
            # the steps a stored report cannot skip, measured in-process
            u = cc["us"]
            raw_us = br["server_cores"] / br["requests_per_s"] * 1e6
            must = u["parse"] + u["symbolicate"] + u["short_answer"] + u["store_8_threads"]
            rep.lines.append(
                f"    CPU per report in-process (crash-costs, µs): parse {u['parse']:.0f}, "
                f"symbolicate {u['symbolicate']:.0f}, whole answer {u['whole_answer']:.0f} "
                f"({cc['whole_answer_bytes']:,} bytes), short answer {u['short_answer']:.1f} "
                f"({cc['short_answer_bytes']:,} bytes), compress {u['compress']:.0f} "
                f"({cc['compressed_bytes']:,} bytes), store (compression included) "
                f"{u['store_one_per_transaction']:.0f} one per transaction, "
                f"{u['store_8_threads']:.0f} from 8 threads")
            rec = rep.compare(f"{w} report: in-process floor/allowance at 0.7x",
                              Figure("parse + symbolicate + short answer + store", must, "µs"),
                              Figure("raw request's CPU / 0.7", raw_us / 0.7, "µs"))
            rep.lines.append(ratio_line(rec, "    ") + f"; the raw request costs symd {raw_us:.0f} "
                             "µs of CPU over HTTP")
        each = [rep.compare(f"round {i}", Figure("stored", s["frames_per_s"], "frames/s"),
                            Figure("raw", x["frames_per_s"], "frames/s"))
                for i, (s, x) in enumerate(zip(st, raw), 1)]
        rep.details.append(
            f"  report {w}: reports/s stored {bs['requests_per_s']:.0f} ({latency_note(bs, True)}), "
            f"short answer {bm['requests_per_s']:.0f} ({latency_note(bm)}), store=false "
            f"{bn['requests_per_s']:.0f} ({latency_note(bn)}), raw {br['requests_per_s']:.0f} "
            f"({latency_note(br)}); " + ratio_row("stored/raw", each, "")
            + f"; frame statuses {r['statuses']}; symd used {bs['server_cores']:.2f} cores "
            f"stored, {br['server_cores']:.2f} raw")
    return every_run, rounds


def cmd_crash_summary(a):
    """The crash section's summary, part by part; the exit status says
    whether every run answered as expected (and, --strict, met its goal)."""
    d = a.dir
    rep = Report("crash")
    frame_runs, frame_rounds = frames_summary(rep, d)
    report_runs, report_rounds = reports_summary(rep, d)
    crash_store.store_summary(rep, d)
    image_runs = crash_images.images_summary(rep, d, a.rss_slack_mb)
    every_run = frame_runs + report_runs + image_runs
    if every_run:
        r0 = every_run[0]
        rep.lines.insert(0, f"crash section: wrk runs of {r0['seconds']} s, {r0['connections']} "
                            f"connections, {r0['threads']} threads; throughput best of "
                            f"{frame_rounds or report_rounds or 1} rounds")
        bad = sum(r["non2xx"] + r["socket_errors"] + r.get("unexpected", 0) for r in every_run)
        rep.check(bad == 0, "requests", goal=False)
        rep.lines.append(f"every wrk run: {sum(r['responses'] for r in every_run):,} answers, "
                         f"{bad} non-2xx, socket errors or unexpected statuses {mark(bad == 0)}")
    if not rep.lines:
        rep.lines.append("crash section: no results")
        rep.check(False, "nothing", goal=False)
    load = read_result(d, "crash-load.json")
    other = max([r.get("other_cores", 0) for r in every_run] + [0])
    if load and load["busy_cores"] > 0.25:
        rep.notes.append(f"WARNING: other processes used {load['busy_cores']:.2f} cores before "
                         "the runs; figures are unreliable")
    elif other > 0.25:
        rep.notes.append(f"note: other processes used up to {other:.2f} cores during some wrk "
                         "runs (bench/.cache/last/crash-*.json)")
    sys.exit(rep.finish(a.out, a.strict))


def register(sub):
    s = sub.add_parser("crash-upload", help="POST files to /v1/images")
    s.add_argument("--url", required=True)
    s.add_argument("--file", action="append", required=True, help="a file to upload (repeat)")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_upload)

    s = sub.add_parser("crash-frame-bodies", help="/v1/symbolicate bodies: frames of an uploaded "
                                                  "image, and the same frames in never-uploaded "
                                                  "images")
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

    s = sub.add_parser("crash-wrk", help="one wrk run against any route: frames/s, statuses, "
                                         "latency percentiles, the server's sampled RSS")
    s.add_argument("--url", required=True)
    s.add_argument("--path", required=True, help="route and query, e.g. /v1/crashes?store=false")
    s.add_argument("--script", required=True, help="bench/bodies.lua")
    s.add_argument("--bodies", required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--ctype", default="application/json")
    s.add_argument("--header", help="one more request header, 'Name: value'")
    s.add_argument("--distinct", help="a string of the bodies (an incident identifier) each "
                   "request replaces with a UUID of its own: every report posted is distinct")
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

    s = sub.add_parser("crash-report-prep", help="a real report's own answer (?store=false) made "
                                                 "into one raw /v1/symbolicate request")
    s.add_argument("--url", required=True)
    s.add_argument("--report", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_report_prep)

    s = sub.add_parser("crash-summary", help="print the crash summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--rss-slack-mb", type=int, default=16,
                   help="what RSS may grow beyond --cache-mb before the RSS goal fails")
    s.add_argument("--strict", action="store_true")
    s.set_defaults(fn=cmd_crash_summary)
