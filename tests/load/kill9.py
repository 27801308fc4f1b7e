#!/usr/bin/env python3
"""kill -9 during concurrent uploads, then recovery checks, KILL_ROUNDS times.

  python3 tests/load/kill9.py               # 20 rounds (the CI form)
  KILL_ROUNDS=100 python3 tests/load/kill9.py

Every round starts `symd serve` on the SAME database file; KILL_UPLOADS (50)
threads upload distinct real Mach-O images at once (copies of
fixtures/bin/bigapp-arm64 and fixtures/bin/libfix-arm64.dylib whose LC_UUID,
found by walking the load commands, is rewritten to a fresh random UUID),
each sending fresh images back to back until the kill (KILL_STREAM=1; 0: one
upload per thread, which mostly finish before the kill), and after a random
0..KILL_MAX_DELAY_MS (300) ms the server gets SIGKILL. Meanwhile KILL_CRASH_POSTERS (4) threads post
synthetic crash reports back to back (from the restart on, while the
restarted server is being checked, until the kill), and the server runs
with retention (symdlib's RETENTION_ARGS: --max-crashes 200 --prune-every
1), so it prunes crashes all along and a kill can land in a prune. Then,
with the server down, a copy of the database (main file + WAL, so that
recovery is left to the server itself) must pass `PRAGMA integrity_check`,
`PRAGMA foreign_key_check` and the consistency queries below (no
half-stored image; crash counters equal to the crashes; crash ids one
unbroken run, since retention only takes the oldest), and the restarted
server must list, GET and symbolicate (one known address per image, to the
fixture's symbol) every image ever answered 201. Crashes: once the
restarted server has pruned to the limit, it holds exactly the newest
min(200, all ever stored) crash ids; every crash answered 201 among them
reads back (GET, its group's signature) and every older one is 404, pruned
by retention (counted, not lost); a 201 crash newer than the newest stored
is lost. After the last round a final restart checks everything, including
uploads that were committed but killed before their answer. A kill counts
as consistent when its database and the restart after it pass.

Environment: SYMD_BIN, LOAD_RETENTION_ARGS, KILL_ROUNDS (20), KILL_UPLOADS (50),
KILL_CRASH_POSTERS (4),
KILL_MAX_DELAY_MS (300), KILL_STREAM (1), KILL_SEED (random; printed, fixes
the delays and UUIDs), KILL_VERIFY_SAMPLE (0 = every restart checks every
acknowledged image over HTTP; N = the last round's plus N older ones, for
long runs; the listing and the final restart always cover all), KILL_KEEP
(keep the temporary directory). Ends with "N passed, N failed"; exit status
1 on any failure.
"""
import concurrent.futures
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symdlib as L  # noqa: E402

ROUNDS = L.env_int("KILL_ROUNDS", 20)
UPLOADS = L.env_int("KILL_UPLOADS", 50)
MAX_DELAY_MS = L.env_int("KILL_MAX_DELAY_MS", 300)
STREAM = L.env_int("KILL_STREAM", 1)
CRASH_POSTERS = L.env_int("KILL_CRASH_POSTERS", 4)
MAX_CRASHES = L.retention_max()
VERIFY_SAMPLE = L.env_int("KILL_VERIFY_SAMPLE", 0)
SEED = os.environ.get("KILL_SEED") or str(random.SystemRandom().randrange(1 << 32))


def schema_version():
    """STORE_SCHEMA_VERSION of store/store.h: the user_version symd writes."""
    with open(os.path.join(L.ROOT, "store", "store.h")) as f:
        for line in f:
            if line.startswith("#define STORE_SCHEMA_VERSION"):
                return int(line.split()[2])
    raise SystemExit("no STORE_SCHEMA_VERSION in store/store.h")


SCHEMA_VERSION = schema_version()

# Each query must return no rows (or 0) on a consistent database. From the
# schema in store/store.c: every image has its 'symbols' blob; 'lines' exists
# exactly when debug_info = 1; no image_data row outlives its image; blobs are
# non-empty and of a known kind (a binary's 'unwind' rows, a .sym's
# 'breakpad_cfi'); crash_images belong to crashes.
CONSISTENCY = [
    ("images without a symbols blob",
     "SELECT count(*) FROM images i WHERE NOT EXISTS (SELECT 1 FROM image_data d "
     "WHERE d.image_id = i.id AND d.kind = 'symbols')"),
    ("image_data rows without their image",
     "SELECT count(*) FROM image_data d WHERE NOT EXISTS (SELECT 1 FROM images i "
     "WHERE i.id = d.image_id)"),
    ("debug_info images without a lines blob",
     "SELECT count(*) FROM images i WHERE i.debug_info <> 0 AND NOT EXISTS (SELECT 1 "
     "FROM image_data d WHERE d.image_id = i.id AND d.kind = 'lines')"),
    ("lines blobs of images without debug_info",
     "SELECT count(*) FROM image_data d JOIN images i ON i.id = d.image_id "
     "WHERE d.kind = 'lines' AND i.debug_info = 0"),
    ("image_data of an unknown kind",
     "SELECT count(*) FROM image_data WHERE kind NOT IN ('symbols', 'lines', 'unwind', "
     "'breakpad_cfi')"),
    ("empty or NULL blobs",
     "SELECT count(*) FROM image_data WHERE data IS NULL OR length(data) = 0"),
    ("images with a bad uuid, arch or counts",
     "SELECT count(*) FROM images WHERE length(uuid) <> 16 OR arch = '' OR "
     "symbols < 0 OR functions < 0 OR text_size <= 0 OR created_at > updated_at"),
    ("duplicate (uuid, arch)",
     "SELECT count(*) FROM (SELECT 1 FROM images GROUP BY uuid, arch HAVING count(*) > 1)"),
    ("schema version is not store.h's STORE_SCHEMA_VERSION",
     "SELECT count(*) WHERE (SELECT user_version FROM pragma_user_version) <> "
     + str(SCHEMA_VERSION)),
    # ids come one by one and retention takes the oldest: one unbroken run
    ("crash ids are not one unbroken run",
     "SELECT count(*) WHERE (SELECT count(*) FROM crashes) <> "
     "(SELECT coalesce(max(id) - min(id) + 1, 0) FROM crashes)"),
    # retention never goes below its limit
    ("fewer crashes than the retention limit keeps",
     "SELECT count(*) WHERE (SELECT count(*) FROM crashes) < min(%d, (SELECT coalesce(max(id), "
     "0) FROM crashes))" % (MAX_CRASHES or (1 << 62))),
]  # + L.crash_consistency(db): the crash counters


def sqlite(db, sql):
    p = subprocess.run(["sqlite3", "-batch", db, sql], capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace").strip(), \
        p.stderr.decode("utf-8", "replace").strip()


class Image:
    def __init__(self, kind, data, uuid, name):
        self.kind, self.data, self.uuid, self.name = kind, data, uuid, name


def upload_stream(port, rnd, slot, rng_seed, templates, barrier, stop, results, lock):
    """One of the concurrent uploaders: fresh images back to back until the
    kill (KILL_STREAM=1), or just one (KILL_STREAM=0)."""
    rng = random.Random(rng_seed)
    try:
        barrier.wait(10)
    except threading.BrokenBarrierError:
        pass
    seq = 0
    while True:
        kind = "bigapp" if (slot + seq) % 2 == 0 else "libfix"
        u = bytes(rng.getrandbits(8) for _ in range(16))
        im = Image(kind, L.with_uuid(templates[kind], u), L.uuid_str(u), f"k{rnd}-{slot}-{seq}")
        seq += 1
        with lock:
            results.append([im, None, b""])
            rec = results[-1]
        try:
            st, _, body = L.request(port, "POST", f"/v1/images?name={im.name}", im.data,
                                    {"Content-Type": "application/octet-stream"}, timeout=20)
            rec[1], rec[2] = st, body
        except (OSError, http.client.HTTPException) as e:
            rec[2] = repr(e).encode()
            return
        if not STREAM or stop.is_set():
            return


def crash_stream(port, slot, stop, results, lock):
    """One of the crash posters: synthetic reports back to back until stop
    (or the kill). results gets [n, group, status, id]."""
    conn = None
    seq = 0
    while not stop.is_set():
        n = slot * 1000000 + seq
        seq += 1
        rec = [n, n % len(L.CRASH_GROUPS), None, None]
        with lock:
            results.append(rec)
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            st, _, body = L.request(port, "POST", "/v1/crashes", L.synthetic_crash(n), conn=conn)
            rec[2] = st
            if st == 201:
                rec[3] = json.loads(body).get("id")
        except (OSError, http.client.HTTPException, ValueError):
            return


def crash_ids(port):
    """Every stored crash id (the listing, page by page); None on an error."""
    ids, cursor = [], ""
    while True:
        try:
            st, _, body = L.request(port, "GET", f"/v1/crashes?limit=1000&cursor={cursor}")
        except (OSError, http.client.HTTPException):
            return None
        if st != 200:
            return None
        doc = json.loads(body)
        ids += [c["id"] for c in doc["crashes"]]
        cursor = doc.get("next_cursor")
        if not cursor:
            return ids


def crash_check(port, acked, label):
    """A restarted server, once retention has pruned to the limit, holds
    exactly the newest min(MAX_CRASHES, all) crash ids; every acknowledged
    crash among them reads back, every older one is 404. Returns (ok,
    lost, pruned): acknowledged crashes the server lost, and those retention
    pruned."""
    deadline = time.time() + 20
    while True:
        ids = crash_ids(port)
        if ids is None:
            print(f"    {label}: listing the crashes failed")
            return False, [], []
        if not MAX_CRASHES or len(ids) <= MAX_CRASHES or time.time() > deadline:
            break
        time.sleep(0.1)
    hi = max(ids, default=0)
    lo = max(1, hi - MAX_CRASHES + 1) if MAX_CRASHES else 1
    present = set(ids)
    problems = []
    if present != set(range(lo, hi + 1)):
        problems.append(f"{len(ids)} crashes stored, ids {min(ids, default=0)}..{hi}; "
                        f"expected exactly {lo}..{hi}")
    lost = [c for c in acked if c[3] > hi or (c[3] >= lo and c[3] not in present)]
    pruned = [c for c in acked if c[3] < lo]
    local = threading.local()

    def get(c, want):
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            st, _, body = L.request(port, "GET", f"/v1/crashes/{c[3]}", conn=conn)
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            local.conn = None
            return f"crash {c[3]}: {e!r}"
        if st != want:
            return f"crash {c[3]}: GET {st}, expected {want}"
        if st == 200:
            doc = json.loads(body)
            if doc.get("id") != c[3] or doc.get("signature") != L.CRASH_SIGNATURES[c[1]]:
                return f"crash {c[3]}: read back as {body[:200]!r}"
        return None

    kept = [c for c in acked if lo <= c[3] <= hi]
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        bad = [b for b in ex.map(lambda c: get(c, 200), kept) if b]
        bad += [b for b in ex.map(lambda c: get(c, 404), pruned[-20:]) if b]
    problems += bad
    if lost:
        problems.append(f"{len(lost)} acknowledged crashes lost, e.g. {[c[3] for c in lost[:5]]}")
    for p in problems[:5]:
        print(f"    {label}: {p}")
    return not problems, lost, pruned


def expected_for(kind):
    """(vmaddr, text vmaddr, expected symbol) of one probe per image kind."""
    if kind == "bigapp":
        syms = L.sym_table("bigapp-arm64")
        return 0x100000cac, 0x100000000, syms[0x100000cac]
    syms = L.sym_table("libfix-arm64.dylib")
    v = sorted(syms)[1]  # fix_add + 4
    return v, 0x0, syms[v]


def verify_http(port, acked, checks_out):
    """Every acknowledged image: GET /v1/images/{uuid} and one symbolicate
    request with one frame per image. Returns (missing, wrong) lists."""
    missing, wrong = [], []
    local = threading.local()

    def get_one(im):
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            st, _, body = L.request(port, "GET", f"/v1/images/{im.uuid}", conn=conn)
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            local.conn = None
            return "missing", repr(e)
        if st != 200:
            return "missing", f"GET status {st}"
        doc = json.loads(body)
        sl = doc.get("images") or []
        want_name = im.name if im.kind == "bigapp" else "libfix.dylib"
        if (doc.get("uuid") != im.uuid or len(sl) != 1 or sl[0].get("arch") != "arm64"
                or sl[0].get("name") != want_name):
            return "wrong", f"GET answered {body[:300]!r}"
        return None, None

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        for im, (what, why) in zip(acked, ex.map(get_one, acked)):
            if what == "missing":
                missing.append((im, why))
            elif what == "wrong":
                wrong.append((im, why))
    probe = {k: expected_for(k) for k in ("bigapp", "libfix")}
    # One symbolicate request: image i loaded at 0x200000000 + i * 0x100000.
    # Symbolicate requests of up to 2000 images (the limit is 10,000), one
    # frame per image: image i loaded at 0x200000000 + i * 0x100000.
    for lo in range(0, len(acked), 2000):
        batch = acked[lo:lo + 2000]
        images, frames, want = [], [], []
        for i, im in enumerate(batch):
            vm, text, (mangled, demangled, start, off) = probe[im.kind]
            load = 0x200000000 + i * 0x100000
            images.append({"uuid": im.uuid, "arch": "arm64", "load_address": "0x%x" % load})
            frames.append({"address": "0x%x" % (load + vm - text), "image": i, "adjust": "none"})
            want.append((im, mangled, demangled, "0x%x" % start, off))
        body = json.dumps({"images": images, "threads": [{"id": 0, "frames": frames}]}).encode()
        try:
            st, _, data = L.request(port, "POST", "/v1/symbolicate", body,
                                    {"Content-Type": "application/json"}, timeout=60)
        except (OSError, http.client.HTTPException) as e:
            wrong.append((None, f"symbolicate failed: {e!r}"))
            continue
        if st != 200:
            wrong.append((None, f"symbolicate status {st}: {data[:300]!r}"))
            continue
        got = json.loads(data)["threads"][0]["frames"]
        if len(got) != len(want):
            wrong.append((None, f"symbolicate gave {len(got)} frames for {len(want)}"))
            continue
        for g, (im, mangled, demangled, start, off) in zip(got, want):
            if (g.get("status") != "symbolicated" or g.get("uuid") != im.uuid
                    or g.get("mangled") != mangled or g.get("symbol") != demangled
                    or g.get("symbol_address") != start or g.get("offset") != off):
                wrong.append((im, f"symbolicated as {json.dumps(g)[:300]}"))
    return missing, wrong


def listed_count(port):
    n, cursor = 0, ""
    while True:
        st, _, body = L.request(port, "GET", f"/v1/images?limit=1000&cursor={cursor}")
        if st != 200:
            return -1
        doc = json.loads(body)
        n += len(doc["images"])
        cursor = doc.get("next_cursor")
        if not cursor:
            return n


def db_check(db, workdir, sent_uuids):
    """Consistency of a copy of the stopped server's database: list of problems
    (empty when consistent) and the number of image rows."""
    snap = os.path.join(workdir, "snap")
    shutil.rmtree(snap, ignore_errors=True)
    os.makedirs(snap)
    copy = os.path.join(snap, "copy.db")
    for suf in ("", "-wal"):
        if os.path.exists(db + suf):
            shutil.copyfile(db + suf, copy + suf)
    problems = []
    rc, out, err = sqlite(copy, "PRAGMA integrity_check")
    if rc != 0 or out != "ok":
        problems.append(f"integrity_check: {out[:300]} {err[:300]}")
    rc, out, err = sqlite(copy, "PRAGMA foreign_key_check")
    if rc != 0 or out:
        problems.append(f"foreign_key_check: {out[:300]} {err[:300]}")
    for name, sql in CONSISTENCY + L.crash_consistency(copy):
        rc, out, err = sqlite(copy, sql)
        if rc != 0 or out != "0":
            problems.append(f"{name}: {out[:100]} {err[:200]}")
    rc, out, err = sqlite(copy, "SELECT hex(uuid) FROM images")
    rows = out.split() if rc == 0 else []
    strangers = [u for u in rows if u not in sent_uuids]
    if strangers:
        problems.append(f"{len(strangers)} image rows with a UUID never sent: {strangers[:3]}")
    return problems, rows


def main():
    checks = L.Checks()
    print(f"=== kill9: {ROUNDS} rounds of {UPLOADS} concurrent uploads, SIGKILL after "
          f"0..{MAX_DELAY_MS} ms (KILL_SEED={SEED}, {L.symd_bin()})")
    if shutil.which("sqlite3") is None:
        checks.check("sqlite3 CLI installed", False, "apt-get install sqlite3")
        return checks.finish()
    if not os.access(L.symd_bin(), os.X_OK):
        checks.check(f"symd binary at {L.symd_bin()}", False, "build it with make")
        return checks.finish()
    rng = random.Random(SEED)
    templates = {}
    for kind, path in (("bigapp", L.BIGAPP), ("libfix", L.LIBFIX)):
        with open(path, "rb") as f:
            templates[kind] = f.read()
        L.macho_uuid_offset(templates[kind])
    workdir = tempfile.mkdtemp(prefix="symd-kill9.")
    db = os.path.join(workdir, "kill9.db")
    srv = L.Server(db, workdir, L.RETENTION_ARGS, tag="kill9")
    acked = []          # every image answered 201, all rounds
    sent_uuids = {}     # hex without dashes, as sqlite prints it -> Image
    kill_ok = []        # per kill: its database and the restart after it were consistent
    lost = set()        # acknowledged UUIDs a restarted server did not have
    stats = {"201": 0, "other_status": 0, "no_answer": 0}
    crashes_acked = []  # [n, group, status, id] of every crash answered 201
    crash_stats = {"201": 0, "other_status": 0, "no_answer": 0}
    crashes_lost = {}   # id -> record
    crashes_pruned = set()
    final_crash_ok = None
    delays = []
    t_start = time.time()
    final_missing = final_wrong = None
    problems, unacked, code, rows = ["not run"], [], None, 0
    last_round = 0
    lock_c = threading.Lock()

    def after_restart(port, images, label, want_listed=None):
        """The restart after a kill serves every image; False if not."""
        missing, wrong = verify_http(port, images, None)
        acked_set = {im.uuid for im in acked}
        lost.update(im.uuid for im, _ in missing if im and im.uuid in acked_set)
        listed = listed_count(port)
        for im, why in (missing + wrong)[:5]:
            print(f"    {label}: {im.uuid if im else '-'} {why}")
        if missing or wrong or listed < (want_listed or len(images)):
            print(f"    {label}: {len(missing)} missing, {len(wrong)} wrong, "
                  f"{listed} listed of {len(images)} expected")
            return False, missing, wrong
        return True, missing, wrong

    try:
        for rnd in range(1, ROUNDS + 1):
            # 1. start on the same file; everything acknowledged so far is served
            try:
                port = srv.start()
            except RuntimeError as e:
                print(f"    round {rnd}: the server does not restart: {e}")
                if kill_ok:
                    kill_ok[-1] = False
                break
            if kill_ok:
                ok, lost_c, pruned_c = crash_check(port, crashes_acked, f"restart {rnd}")
                crashes_lost.update((c[3], c) for c in lost_c)
                crashes_pruned.update(c[3] for c in pruned_c)
                kill_ok[-1] = kill_ok[-1] and ok
            # crash posters from now until the kill: retention prunes beside
            # the checks below and the uploads
            crash_results, stop_c = [], threading.Event()
            posters = [threading.Thread(target=crash_stream,
                                        args=(port, rnd * 100 + i, stop_c, crash_results, lock_c))
                       for i in range(CRASH_POSTERS)]
            for t in posters:
                t.start()
            if kill_ok:
                check = acked
                if VERIFY_SAMPLE and len(acked) > VERIFY_SAMPLE + last_round:
                    # long runs: the last round's uploads and a sample of the
                    # older ones over HTTP (all of them are counted in the
                    # listing); the final restart checks every one
                    old = acked[:len(acked) - last_round]
                    check = rng.sample(old, VERIFY_SAMPLE) + acked[len(acked) - last_round:]
                ok, _, _ = after_restart(port, check, f"restart {rnd}", len(acked))
                kill_ok[-1] = kill_ok[-1] and ok
            # 2. 50 concurrent uploaders of fresh images, SIGKILL after a random delay
            results, lock, stop = [], threading.Lock(), threading.Event()
            barrier = threading.Barrier(UPLOADS + 1)
            threads = [threading.Thread(target=upload_stream,
                                        args=(port, rnd, i, rng.getrandbits(64), templates,
                                              barrier, stop, results, lock))
                       for i in range(UPLOADS)]
            for t in threads:
                t.start()
            barrier.wait(10)
            delay = rng.uniform(0, MAX_DELAY_MS / 1000.0)
            delays.append(delay)
            time.sleep(delay)
            srv.kill9()
            stop.set()
            stop_c.set()
            for t in threads + posters:
                t.join(30)
            for rec in list(crash_results):
                if rec[2] is None:
                    crash_stats["no_answer"] += 1
                elif rec[2] == 201 and isinstance(rec[3], int):
                    crash_stats["201"] += 1
                    crashes_acked.append(rec)
                else:
                    crash_stats["other_status"] += 1
                    print(f"    round {rnd}: crash {rec[0]} answered {rec[2]}")
            ok = True
            n201 = 0
            last_round = 0
            with lock:
                results = list(results)
            for im, st, body in results:
                sent_uuids[im.uuid.replace("-", "")] = im
                if st is None:
                    stats["no_answer"] += 1
                elif st == 201:
                    n201 += 1
                    last_round += 1
                    stats["201"] += 1
                    acked.append(im)
                else:
                    stats["other_status"] += 1
                    ok = False
                    print(f"    round {rnd}: upload {im.name} answered {st}: {body[:200]!r}")
            # 3. the stopped server's database is consistent
            problems, stored = db_check(db, workdir, sent_uuids)
            for p in problems:
                print(f"    round {rnd}: {p}")
            ok = ok and not problems and len(stored) >= len(acked)
            kill_ok.append(ok)
            print(f"  round {rnd:2d}: killed after {delay * 1000:5.1f} ms, {n201:4d}/{len(results)} "
                  f"acknowledged, {len(stored)} image rows (>= {len(acked)} acknowledged)"
                  f"{'' if ok else ', INCONSISTENT'}")
        # final restart: everything acknowledged in any round is there, and so
        # is whatever was committed but killed before its answer, whole
        _, stored = db_check(db, workdir, sent_uuids)
        acked_set = {im.uuid for im in acked}
        unacked = [sent_uuids[u] for u in stored
                   if u in sent_uuids and sent_uuids[u].uuid not in acked_set]
        try:
            port = srv.start()
            final_crash_ok, lost_c, pruned_c = crash_check(port, crashes_acked, "final")
            crashes_lost.update((c[3], c) for c in lost_c)
            crashes_pruned.update(c[3] for c in pruned_c)
            ok, final_missing, final_wrong = after_restart(port, acked + unacked, "final")
            if kill_ok:
                kill_ok[-1] = kill_ok[-1] and ok and final_crash_ok
            code = srv.stop()
        except RuntimeError as e:
            if kill_ok:
                kill_ok[-1] = False
            print(f"    final restart failed: {e}")
        problems, stored = db_check(db, workdir, sent_uuids)
        rows = len(stored)
        for p in problems:
            print(f"    final: {p}")
        consistent = sum(kill_ok)
        print("--- figures")
        print(f"  {consistent}/{ROUNDS} restarts consistent, {len(lost)} lost acknowledged "
              f"uploads")
        print(f"  uploads: {stats['201']} answered 201, {stats['no_answer']} cut by the kill, "
              f"{stats['other_status']} other answers; {rows} images stored at the end")
        print(f"  {len(unacked)} uploads committed but killed before their answer "
              f"(stored whole, checked like the acknowledged ones)")
        print(f"  crashes: {crash_stats['201']} answered 201, {crash_stats['no_answer']} cut by the "
              f"kill, {crash_stats['other_status']} other answers; {len(crashes_pruned)} of the 201s "
              f"pruned by retention ({' '.join(L.RETENTION_ARGS) or 'off'}), "
              f"{len(crashes_lost)} lost")
        print(f"  kill delays {min(delays or [0]) * 1000:.0f}..{max(delays or [0]) * 1000:.0f} ms; "
              f"{time.time() - t_start:.1f} s")
        print("--- checks")
        checks.check(f"{ROUNDS} kills, each followed by a consistent database and restart",
                     consistent == ROUNDS and len(kill_ok) == ROUNDS, f"{consistent}/{ROUNDS}")
        checks.check("no acknowledged upload lost", not lost and final_missing is not None
                     and not final_missing,
                     f"{len(acked)} acknowledged, {len(lost)} lost")
        checks.check("every stored upload symbolicates to its fixture symbol",
                     final_wrong is not None and not final_wrong,
                     f"{len(acked) + len(unacked)} checked, "
                     f"{len(final_wrong) if final_wrong is not None else '?'} wrong")
        checks.check("final database passes integrity and consistency checks", not problems,
                     "; ".join(problems)[:300])
        checks.check("no acknowledged crash lost: every 201 crash is stored or was pruned "
                     "as the oldest past the retention limit",
                     not crashes_lost and final_crash_ok is True,
                     f"{len(crashes_acked)} acknowledged, {len(crashes_pruned)} pruned, "
                     f"{len(crashes_lost)} lost")
        if MAX_CRASHES:
            checks.check("retention pruned acknowledged crashes during the run",
                         len(crashes_pruned) > 0, f"{len(crashes_pruned)}")
        checks.check("no crash answered other than 201", crash_stats["other_status"] == 0,
                     f"{crash_stats['other_status']}")
        checks.check("some uploads were acknowledged before the kills", stats["201"] > 0,
                     f"{stats['201']}")
        checks.check("no upload answered other than 201", stats["other_status"] == 0,
                     f"{stats['other_status']}")
        checks.check("SIGTERM after the last restart exits 0", code == 0, f"status {code}")
    finally:
        srv.kill9()
        if os.environ.get("KILL_KEEP"):
            print(f"  kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
