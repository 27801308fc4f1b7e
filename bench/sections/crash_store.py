"""The crash section's store at scale: seeding through the API, listings timed, bytes per crash."""
import json
import os
import random
import re
import subprocess
import time

from benchlib.common import die, pct, read_json, read_result, run, write_json
from benchlib.httpapi import connect, get, read_metrics
from benchlib.measure import Figure, Meter, mark, ratio_line, ratio_row

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
    with Meter(a.server_pid) as meter:
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
    res.update({"added": after - before, "after": after, "seconds": secs,
                "rate": (after - before) / secs if secs > 0 else None,
                "posted": int(lua.group(1)), "bytes": int(lua.group(2)),
                "created": int(lua.group(3)), "non2xx": int(lua.group(4)),
                "socket_errors": int(lua.group(5)), "reached": t1 is not None,
                "avg_report_bytes": int(lua.group(2)) / max(1, int(lua.group(1))),
                "server_cores": meter.server_cpu_s / secs, "busy_cores": meter.busy_cores})
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



def cmd_crash_db_size(a):
    write_json(a.out, db_size(a.db))


def store_summary(rep, d):
    """Part 3 of the crash summary: listing routes at each level, seeding
    rates and the database's bytes per crash."""
    sd = read_result(d, "crash-seed-data.json")
    base = read_result(d, "crash-db-base.json")
    levels = sorted({int(m.group(1)) for f in os.listdir(d)
                     for m in [re.match(r"crash-gets-(\d+)\.json$", f)] if m})
    if not (sd and levels):
        return
    gets = {lv: read_json(os.path.join(d, f"crash-gets-{lv}.json")) for lv in levels}
    seeds = {lv: read_result(d, f"crash-seed-{lv}.json") for lv in levels}
    lo, hi = levels[0], levels[-1]
    rep.lines.append(
        f"crash store seeded through the API: {os.path.basename(sd['template'])} varied over "
        f"{sd['groups']} groups ({sd['named']} named, {sd['unsymbolicated']} unsymbolicated; "
        f"skewed), {sd['versions']} versions, {sd['os_versions']} OS versions, "
        f"{sd['models']} devices")
    rep.lines.append(f"  p50/p99 ms of {gets[lo]['n']} sequential GETs at each level:")
    rep.lines.append(f"  {'crashes':>8} {'seeded/s':>9} {'#groups':>7} {'groups':>12} "
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
        rep.lines.append(f"  {g['crashes']:>8} {rate:>9} {g['groups']:>7} {cells} {per:>10,.0f}")
    g_lo, g_hi = gets[lo]["routes"]["groups"], gets[hi]["routes"]["groups"]
    rec = rep.compare(f"GET /v1/crashes/groups p50 at {hi}/{lo} crashes",
                      Figure(f"at {hi}", g_hi["p50_ms"], "ms"),
                      Figure(f"at {lo}", g_lo["p50_ms"], "ms"),
                      goal=1.5, at_most=True)
    p99_ok = rep.check(g_hi["p99_ms"] < 20, "groups p99 at scale")
    rep.lines.append(ratio_line(rec) + f"; p99 at {hi} {g_hi['p99_ms']:.2f} ms (goal < 20 ms) "
                     f"{mark(p99_ok)}")
    s_hi = [seeds[lv] for lv in levels if seeds[lv] and seeds[lv].get("posted")]
    posted = sum(s["posted"] for s in s_hi)
    avg = sum(s["bytes"] for s in s_hi) / max(1, posted)
    per = (gets[hi]["db"]["logical"] - base_logical) / max(1, gets[hi]["crashes"])
    rec = rep.compare(f"database per crash/average report at {gets[hi]['crashes']} crashes",
                      Figure("database per crash", per, "bytes"),
                      Figure("average report", avg, "bytes"), goal=1.0, at_most=True)
    rep.lines.append(ratio_line(rec))
    first = seeds[lo]
    seeded = [lv for lv in levels if seeds[lv] and seeds[lv].get("rate")]
    rep.details.append("  seeding: " + "; ".join(
        f"to {lv}: {seeds[lv]['added']} in {seeds[lv]['seconds']:.1f} s = "
        f"{seeds[lv]['rate']:,.0f}/s (symd {seeds[lv]['server_cores']:.2f} cores)" for lv in seeded))
    if first and first.get("rate"):
        rep.details.append(ratio_row(f"seeding rate against that to {lo}", [
            rep.compare(f"to {lv}", Figure(f"seeding to {lv}", seeds[lv]["rate"], "crashes/s"),
                        Figure(f"seeding to {lo}", first["rate"], "crashes/s"))
            for lv in seeded[1:]]))
    gh = gets[hi]
    rep.details.append(f"  groups at {hi}: {gh['groups']}{'+' if gh['groups_capped'] else ''} "
                       f"({gh['named_groups']} named), the largest holds {gh['top_group_share']:.0%} "
                       f"of the crashes, the 10 largest {gh['top10_share']:.0%}; "
                       f"{gh['missing_images']} missing images")
    rep.details.append(f"  database at {hi}: {gh['db']['logical']:,} bytes (files with WAL "
                       f"{gh['db']['files']:,}; {base_logical:,} before seeding, the images); "
                       "largest: " + ", ".join(f"{k} {v / max(1, gh['crashes']):,.0f} B/crash"
                                               for k, v in list(gh["db"]["tables"].items())[:4]))
    for lv in levels:
        s = seeds[lv]
        if s and (s.get("non2xx") or s.get("socket_errors") or not s.get("reached")
                  or s.get("after") != lv):
            rep.check(False, f"seeding {lv}", goal=False)
            rep.lines.append(f"  FAIL: seeding to {lv}: {s.get('non2xx')} non-2xx, "
                             f"{s.get('socket_errors')} socket errors, the server counts "
                             f"{s.get('after')}")
    for lv in levels[1:]:
        r = gets[lv]["routes"]
        recs = [rep.compare(k, Figure(f"GET {r[k]['path']} p50 at {lv}", r[k]["p50_ms"], "ms"),
                            Figure(f"at {lo}", gets[lo]["routes"][k]["p50_ms"], "ms")) for k in r]
        rep.details.append(ratio_row(f"GETs at {lv}, ratio of p50 to that at {lo}", recs)
                           + "; answer bytes: " + ", ".join(f"{k} {r[k]['bytes']:,}" for k in r))


def register(sub):
    s = sub.add_parser("crash-seed-data", help="the report template and groups seed_crashes.lua "
                                               "draws from")
    s.add_argument("--crash", required=True, help="fixtures/crashes/bigapp-twin.crash")
    s.add_argument("--syms", required=True, help="fixtures/expected/bigapp-arm64.sym.tsv")
    s.add_argument("--app-name", default="bigapp-arm64")
    s.add_argument("--unsymbolicated", type=int, default=476)
    s.add_argument("--builds", type=int, default=8)
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True, help="the Lua data file")
    s.add_argument("--meta", required=True)
    s.set_defaults(fn=cmd_crash_seed_data)

    s = sub.add_parser("crash-seed", help="seed the store up to N crashes through the API; the "
                                          "rate")
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

    s = sub.add_parser("crash-gets", help="p50/p99 of sequential GETs of the listing routes; "
                                          "groups; the database's size")
    s.add_argument("--url", required=True)
    s.add_argument("--db", required=True)
    s.add_argument("--level", type=int, required=True)
    s.add_argument("--n", type=int, default=200)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_gets)

    s = sub.add_parser("crash-db-size", help="the database's logical size and largest tables")
    s.add_argument("--db", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_crash_db_size)
