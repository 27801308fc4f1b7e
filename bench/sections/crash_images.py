"""The crash section's many images: new LC_UUIDs uploaded, and latency and RSS with a small cache."""
import http.client
import json
import math
import os
import random
import threading
import time

from benchlib.common import MIB, die, pct, read_json, read_result, write_json
from benchlib.httpapi import connect, post, read_metrics, uuid_str, write_body
from benchlib.macho import macho_uuid_offset
from benchlib.measure import Figure, mark, ratio_line, vm_status

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



def images_summary(rep, d, rss_slack_mb):
    """Part 4 of the crash summary: a small index cache against one that
    holds every image (latency, frames/s, RSS). Returns its measured wrk runs."""
    up = read_result(d, "crash-images-upload.json")
    ib = read_result(d, "crash-images-bodies.json")
    cfg = {c: {"idle": read_result(d, f"crash-img-{c}-idle.json"),
               "end": read_result(d, f"crash-img-{c}-end.json"),
               "uniform": read_result(d, f"crash-img-{c}-uniform.json"),
               "skewed": read_result(d, f"crash-img-{c}-skewed.json")} for c in ("small", "fit")}
    if not (up and ib and all(cfg["small"].values()) and all(cfg["fit"].values())):
        if up or any(v for c in cfg.values() for v in c.values()):
            rep.check(False, "images", goal=False)
            rep.lines.append("images: FAIL: incomplete results")
        return []
    sm, ft = cfg["small"], cfg["fit"]
    cmb, fmb = sm["idle"]["cache_mb"], ft["idle"]["cache_mb"]
    per = up["index_bytes"] or 0
    ws = up["working_set_bytes"] or 0
    rep.lines.append(f"{up['n']} stored images (copies of {up['file']} with new LC_UUIDs), one "
                     f"loaded index {per:,.0f} bytes, {ws / MIB:.1f} MiB for all; --cache-mb {cmb} "
                     f"holds {cmb * MIB / ws:.0%} of them, --cache-mb {fmb} all")
    small, fit = f"--cache-mb {cmb}", "all cached"
    for mode in ("uniform", "skewed"):
        s, f = sm[mode]["latency_us"], ft[mode]["latency_us"]
        rep.lines.append(f"  {mode} frames, {small} against {fit}:")
        for name, ours, ref, unit in (
                ("p50", s["p50"] / 1e3, f["p50"] / 1e3, "ms"),
                ("p99", s["p99"] / 1e3, f["p99"] / 1e3, "ms"),
                ("frames/s", sm[mode]["frames_per_s"], ft[mode]["frames_per_s"], "frames/s")):
            rec = rep.compare(f"{mode} {name}", Figure(small, ours, unit), Figure(fit, ref, unit))
            rep.lines.append(ratio_line(rec, "    "))
    peak_s = max(sm["uniform"]["rss_peak"], sm["skewed"]["rss_peak"], sm["end"]["rss"])
    peak_f = max(ft["uniform"]["rss_peak"], ft["skewed"]["rss_peak"], ft["end"]["rss"])
    idle_s, idle_f = sm["idle"]["rss"], ft["idle"]["rss"]
    grow_s, grow_f = peak_s - idle_s, peak_f - idle_f
    held_s, held_f = sm["end"]["cache_bytes"] or 0, ft["end"]["cache_bytes"] or 0
    rss_ok = rep.check(held_s <= cmb * MIB and grow_s <= cmb * MIB + rss_slack_mb * MIB, "RSS")
    rep.lines.append(
        f"  RSS with --cache-mb {cmb}: peak {peak_s / MIB:.1f} MiB = idle {idle_s / MIB:.1f} + "
        f"{grow_s / MIB:.1f} MiB ({grow_s / (cmb * MIB):.1f}x --cache-mb); the cache held "
        f"{held_s / MIB:.2f} MiB, the rest {(grow_s - held_s) / MIB:.1f} MiB")
    rep.lines.append(
        f"  RSS all cached:     peak {peak_f / MIB:.1f} MiB = idle {idle_f / MIB:.1f} + "
        f"{grow_f / MIB:.1f} MiB; the cache held {held_f / MIB:.2f} MiB, the rest "
        f"{(grow_f - held_f) / MIB:.1f} MiB")
    rep.lines.append(ratio_line(rep.compare("peak RSS", Figure(small, peak_s / MIB, "MiB"),
                                            Figure(fit, peak_f / MIB, "MiB"))))
    rep.lines.append(f"  goal: RSS over idle <= --cache-mb + {rss_slack_mb} MiB (memory --cache-mb "
                     f"does not count: SQLite page caches, malloc's retained heap; see the README) "
                     f"and the cache <= --cache-mb: {mark(rss_ok)}")
    rep.lines.append(f"  upload: {up['n']} images in {up['seconds']:.1f} s = {up['per_s']:,.0f}/s "
                     f"({up['conns']} connections)")
    rec = rep.compare("upload p50, last tenth/first", Figure("last tenth", up["last_p50_ms"], "ms"),
                      Figure("first tenth", up["first_p50_ms"], "ms"))
    rep.lines.append(ratio_line(rec))
    for c, label in (("small", f"--cache-mb {cmb}"), ("fit", f"--cache-mb {fmb}")):
        e = cfg[c]["end"]
        hits, misses = e["cache_hits"] or 0, e["cache_misses"] or 0
        rep.details.append(f"  images, {label}: cache {e['cache_entries'] or 0:.0f} entries "
                           f"{(e['cache_bytes'] or 0) / MIB:.2f} MiB, hit rate "
                           f"{hits / max(1, hits + misses):.0%} over the runs and warm-up; RSS idle "
                           f"{cfg[c]['idle']['rss'] / MIB:.1f} MiB, peaks uniform "
                           f"{cfg[c]['uniform']['rss_peak'] / MIB:.1f} skewed "
                           f"{cfg[c]['skewed']['rss_peak'] / MIB:.1f}, VmHWM {e['hwm'] / MIB:.1f} MiB")
    rep.details.append("  image bodies: " + "; ".join(
        f"{m} {ib[m]['distinct_images']} distinct images, {ib[m]['images_per_body']:.0f} per "
        f"body, the 5% most used take {ib[m]['top5pct_share']:.0%} of the frames"
        for m in ("uniform", "skewed")))
    return [sm["uniform"], sm["skewed"], ft["uniform"], ft["skewed"]]


def register(sub):
    s = sub.add_parser("crash-images-upload", help="N copies of a binary with new LC_UUIDs, "
                                                   "uploaded and timed; the size of one loaded "
                                                   "index")
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

    s = sub.add_parser("crash-images-bodies", help="bodies whose frames hit those images (uniform, "
                                                   "skewed)")
    s.add_argument("--images", required=True, help="crash-images-upload's output")
    s.add_argument("--samples", required=True)
    s.add_argument("--uniform", required=True)
    s.add_argument("--skewed", required=True)
    s.add_argument("--count", type=int, default=64)
    s.add_argument("--frames", type=int, default=200)
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_images_bodies)

    s = sub.add_parser("crash-state", help="the server's RSS and index-cache series at a moment")
    s.add_argument("--url", required=True)
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--cache-mb", type=int, required=True)
    s.add_argument("--label", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_state)
