"""Shared helpers of the load tests (python3 stdlib only).

Imported by kill9.py and hostile.py; wrk_load.sh uses its command line:

  python3 symdlib.py bodies DIR COUNT FRAMES   write body-000.json.. for bench/symbolicate.lua
  python3 symdlib.py spot PORT                 symbolicate the known addresses, exit 1 if wrong
  python3 symdlib.py wrk FILE                  wrk --latency output -> shell assignments
  python3 symdlib.py supports FLAG             exit 0 if `symd serve` knows FLAG

  python3 symdlib.py churn PORT SECONDS RATE  post synthetic crashes (RATE/s), print the tally

Expected answers come from fixtures/expected/ (llvm-nm / llvm-symbolizer
output, nothing written by symd).

Retention: every server the load tests start runs with RETENTION_ARGS
(LOAD_RETENTION_ARGS, default "--max-crashes 200 --prune-every 1"; empty
turns retention off), and the tests post enough crashes that it prunes
while they run.
"""
import csv
import http.client
import json
import os
import re
import shlex
import signal
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(ROOT, "fixtures")

BIGAPP = os.path.join(FIX, "bin", "bigapp-arm64")
BIGAPP_DSYM = os.path.join(FIX, "dsym", "bigapp-arm64.dSYM", "Contents", "Resources",
                           "DWARF", "bigapp-arm64")
LIBFIX = os.path.join(FIX, "bin", "libfix-arm64.dylib")
BIGAPP_UUID = "4C4C4490-5555-3144-A17C-64A339EDE13A"
LIBFIX_UUID = "4C4C4448-5555-3144-A188-0C3B883681D9"
LOAD_ADDRESS = 0x104a38000  # where the tests pretend bigapp's __TEXT was loaded
BIGAPP_TEXT = (0x100000000, 0x4000)


RETENTION_ARGS = shlex.split(os.environ.get("LOAD_RETENTION_ARGS",
                                            "--max-crashes 200 --prune-every 1"))


def retention_max():
    """--max-crashes of RETENTION_ARGS, 0 when none."""
    a = RETENTION_ARGS
    for i, f in enumerate(a[:-1]):
        if f == "--max-crashes":
            return int(a[i + 1])
    return 0


def symd_bin():
    b = os.environ.get("SYMD_BIN") or os.path.join(ROOT, "symd")
    return os.path.abspath(b)


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


def env_float(name, default):
    v = os.environ.get(name, "")
    return float(v) if v.strip() else default


# ---- pass / fail bookkeeping -------------------------------------------------


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"  ok    {name}" + (f"  ({detail})" if detail else ""))
        else:
            self.failed += 1
            print(f"  FAIL  {name}" + (f"  ({detail})" if detail else ""))
        sys.stdout.flush()
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.stdout.flush()
        return 1 if self.failed else 0


# ---- the server ----------------------------------------------------------------


def serve_usage():
    """The usage text of the symd binary (lists the serve flags it knows)."""
    try:
        p = subprocess.run([symd_bin(), "--help"], capture_output=True, timeout=10)
        return (p.stdout + p.stderr).decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""


def supports(flag):
    return re.search(re.escape(flag) + r"\b", serve_usage()) is not None


class Server:
    """`symd serve --listen 127.0.0.1:0 --db DB ARGS`, stdout and stderr in files."""

    def __init__(self, db, workdir, args=(), tag="server"):
        self.db = db
        self.workdir = workdir
        self.args = list(args)
        self.tag = tag
        self.proc = None
        self.port = None
        self.starts = 0

    def start(self, timeout=15):
        self.starts += 1
        out = os.path.join(self.workdir, f"{self.tag}.{self.starts}.stdout")
        self.stderr_path = os.path.join(self.workdir, f"{self.tag}.{self.starts}.stderr")
        env = dict(os.environ)
        env.setdefault("SYMD_ACCESS_LOG", "off")
        cmd = [symd_bin(), "serve", "--listen", "127.0.0.1:0", "--db", self.db] + self.args
        try:
            with open(out, "wb") as fo, open(self.stderr_path, "wb") as fe:
                self.proc = subprocess.Popen(cmd, stdout=fo, stderr=fe,
                                             stdin=subprocess.DEVNULL, env=env)
        except OSError as e:
            raise RuntimeError(f"cannot run {cmd[0]}: {e}") from e
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(out, "rb") as f:
                line = f.readline()
            m = re.match(rb"symd: listening on http://127\.0\.0\.1:(\d+)\n", line)
            if m:
                self.port = int(m.group(1))
                return self.port
            if self.proc.poll() is not None:
                raise RuntimeError(f"symd serve exited with {self.proc.returncode}: "
                                   f"{self.stderr_tail()}")
            time.sleep(0.01)
        self.kill9()
        raise RuntimeError(f"symd serve did not print its port within {timeout}s")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout=15):
        """SIGTERM; the exit code, or None if it had to be killed."""
        if not self.proc:
            return None
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
            return None

    def rss_kb(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def stderr_text(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except (OSError, AttributeError):
            return ""

    def stderr_tail(self, n=15):
        return "\n".join(self.stderr_text().splitlines()[-n:])


# ---- HTTP ----------------------------------------------------------------------


def request(port, method, path, body=None, headers=None, timeout=30, conn=None):
    """One request; (status, headers dict lower-case, body bytes). A fresh
    connection unless conn (an http.client.HTTPConnection) is given."""
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        if own:
            conn.close()


def upload(port, path, name=None, timeout=60):
    with open(path, "rb") as f:
        data = f.read()
    q = "/v1/images" + (f"?name={name}" if name else "")
    st, _, body = request(port, "POST", q, data,
                          {"Content-Type": "application/octet-stream"}, timeout)
    return st, body


def symbolicate_body(uuid, frames, load_address=LOAD_ADDRESS, adjust=None, arch="arm64"):
    doc = {"images": [{"uuid": uuid, "arch": arch, "load_address": "0x%x" % load_address}],
           "threads": [{"id": 0, "frames": frames}]}
    if adjust:
        doc["adjust"] = adjust
    return json.dumps(doc, separators=(",", ":")).encode()


# ---- crash reports -------------------------------------------------------------

CRASH_GROUPS = ("churn_alpha", "churn_beta", "churn_gamma", "churn_delta")
# their signatures: the app's top frame and the exception (server/signature.c)
CRASH_SIGNATURES = tuple(g + " | EXC_BAD_ACCESS (SIGSEGV)" for g in CRASH_GROUPS)


def synthetic_crash(n, group=None):
    """A text .crash of the app ChurnApp (never uploaded, so its frames keep
    the report's names): crash n of group n % 4 (or group), each group
    needing its own app image; version, OS and device vary with n."""
    g = n % len(CRASH_GROUPS) if group is None else group
    uuid = "%04x%04x55553144a17c64a339ede13a" % (0xc0de, g + 1)
    return ("Incident Identifier: %08X-1111-2222-3333-444455556666\n"
            "Hardware Model:      %s\n"
            "Process:             ChurnApp [42]\n"
            "Path:                /private/var/containers/Bundle/Application/0C5D/ChurnApp.app/ChurnApp\n"
            "Identifier:          org.symd.churn\n"
            "Version:             1.%d (%d)\n"
            "Code Type:           ARM-64 (Native)\n"
            "OS Version:          iPhone OS 17.%d (21A329)\n"
            "Report Version:      104\n\n"
            "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n"
            "Triggered by Thread:  0\n\n"
            "Thread 0 Crashed:\n"
            "0   ChurnApp                      \t0x0000000104a389f8 %s + 24\n"
            "1   ChurnApp                      \t0x0000000104a38b04 main + 40\n\n"
            "Binary Images:\n"
            "0x104a38000 - 0x104a3bfff ChurnApp arm64  <%s> "
            "/private/var/containers/Bundle/Application/0C5D/ChurnApp.app/ChurnApp\n"
            % (n & 0xffffffff, ("iPhone14,2", "iPad13,1")[n % 2], n % 3, n % 3, n % 2,
               CRASH_GROUPS[g], uuid)).encode()


# Each query returns 0 on a database whose crash counters match its crashes
# (schema 4: groups, their days, each kind's days, the version / OS / device
# counters). How a crash lists the images it needs has had two forms (a
# crash_refs table; a refs column of ids, ",3,17,", beside a crash_originals
# table): crash_consistency picks the queries of the form it finds.
CRASH_CONSISTENCY = [
    ("crash_groups differ from the crashes",
     "SELECT count(*) FROM (SELECT kind, signature, count(*) n, min(created_at) f, "
     "max(created_at) l, max(id) e FROM crashes GROUP BY 1, 2) x FULL JOIN crash_groups g "
     "USING (kind, signature) WHERE g.count IS NOT x.n OR g.first_seen IS NOT x.f OR "
     "g.last_seen IS NOT x.l OR g.example_id IS NOT x.e"),
    ("crash_group_days differ from the crashes",
     "SELECT count(*) FROM (SELECT kind, signature, created_at / 86400000 day, count(*) n "
     "FROM crashes GROUP BY 1, 2, 3) x FULL JOIN (SELECT * FROM crash_group_days WHERE "
     "count <> 0) d USING (kind, signature, day) WHERE d.count IS NOT x.n"),
    ("crash_days differ from the crashes",
     "SELECT count(*) FROM (SELECT kind, created_at / 86400000 day, count(*) n FROM crashes "
     "GROUP BY 1, 2) x FULL JOIN (SELECT * FROM crash_days WHERE count <> 0) d "
     "USING (kind, day) WHERE d.count IS NOT x.n"),
    ("crash_group_dims differ from the crashes",
     "SELECT count(*) FROM (SELECT kind, signature, 0 dim, app_version value, count(*) n "
     "FROM crashes WHERE app_version <> '' GROUP BY 1, 2, 4 UNION ALL SELECT kind, "
     "signature, 1, os_version, count(*) FROM crashes WHERE os_version <> '' GROUP BY 1, 2, 4 "
     "UNION ALL SELECT kind, signature, 2, hardware_model, count(*) FROM crashes WHERE "
     "hardware_model <> '' GROUP BY 1, 2, 4) x FULL JOIN (SELECT * FROM crash_group_dims "
     "WHERE count <> 0) d USING (kind, signature, dim, value) WHERE d.count IS NOT x.n"),
    ("negative counters",
     "SELECT (SELECT count(*) FROM crash_group_days WHERE count < 0) + (SELECT count(*) FROM "
     "crash_days WHERE count < 0) + (SELECT count(*) FROM crash_group_dims WHERE count < 0) + "
     "(SELECT count(*) FROM crash_image_refs WHERE crashes < 0)"),
]
CRASH_REFS_TABLE = [
    ("crash_image_refs counts differ from crash_refs",
     "SELECT count(*) FROM crash_image_refs r WHERE r.crashes <> (SELECT count(*) FROM "
     "crash_refs c WHERE c.ref_id = r.id)"),
    ("crash_refs without their crash",
     "SELECT count(*) FROM crash_refs c WHERE NOT EXISTS (SELECT 1 FROM crashes x "
     "WHERE x.id = c.crash_id)"),
]
CRASH_REFS_COLUMN = [
    ("crash_image_refs counts differ from the crashes' refs",
     "SELECT count(*) FROM crash_image_refs r WHERE r.crashes <> (SELECT count(*) FROM "
     "crashes c WHERE c.refs LIKE '%,' || r.id || ',%')"),
]
CRASH_ORIGINALS = [
    ("crashes without their original, or originals without their crash",
     "SELECT (SELECT count(*) FROM crashes WHERE id NOT IN (SELECT id FROM crash_originals)) "
     "+ (SELECT count(*) FROM crash_originals WHERE id NOT IN (SELECT id FROM crashes))"),
]

# Schema 8: each group's values per day, and every group's workflow row (its
# reports never fewer than the crashes filed under it now).
CRASH_WORKFLOW = [
    ("crash_dim_days differ from the crashes",
     "SELECT count(*) FROM (SELECT kind, signature, 0 dim, app_version value, created_at / "
     "86400000 day, count(*) n FROM crashes WHERE app_version <> '' GROUP BY 1, 2, 4, 5 UNION "
     "ALL SELECT kind, signature, 1, os_version, created_at / 86400000, count(*) FROM crashes "
     "WHERE os_version <> '' GROUP BY 1, 2, 4, 5 UNION ALL SELECT kind, signature, 2, "
     "hardware_model, created_at / 86400000, count(*) FROM crashes WHERE hardware_model <> '' "
     "GROUP BY 1, 2, 4, 5) x FULL JOIN (SELECT * FROM crash_dim_days WHERE count <> 0) d "
     "USING (kind, signature, dim, value, day) WHERE d.count IS NOT x.n"),
    ("groups without their workflow, or with fewer reports than crashes",
     "SELECT count(*) FROM crash_groups g LEFT JOIN crash_group_states s USING (kind, "
     "signature) WHERE s.reports IS NULL OR s.reports < g.count"),
]


def crash_consistency(db):
    """[(name, sql)] of the crash consistency queries that apply to db's
    schema (each returns 0 on a consistent database)."""
    import sqlite3
    h = sqlite3.connect(db, timeout=30)
    try:
        tables = {r[0] for r in h.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        cols = {r[1] for r in h.execute("PRAGMA table_info(crashes)")}
    finally:
        h.close()
    qs = list(CRASH_CONSISTENCY)
    if "crash_refs" in tables:
        qs += CRASH_REFS_TABLE
    elif "refs" in cols:
        qs += CRASH_REFS_COLUMN
    if "crash_originals" in tables:
        qs += CRASH_ORIGINALS
    if "crash_dim_days" in tables:
        qs += CRASH_WORKFLOW
    return qs


# ---- what the fixtures say -------------------------------------------------------


def _tsv(name):
    with open(os.path.join(FIX, "expected", name)) as f:
        rows = list(csv.reader(f, delimiter="\t"))
    return rows[1:]


def sym_table(stem):
    """vmaddr -> (mangled, demangled, start, offset) from fixtures/expected."""
    raw = {r[0]: r for r in _tsv(stem + ".sym.tsv")}
    dem = {r[0]: r for r in _tsv(stem + ".sym.demangled.tsv")}
    return {int(a, 16): (r[1], dem[a][1], int(r[2], 16), int(r[3])) for a, r in raw.items()}


def line_table(stem):
    """vmaddr -> [(frame, function, file, line, column)] innermost first."""
    out = {}
    for r in _tsv(stem + ".dsym.lines.tsv"):
        out.setdefault(int(r[0], 16), []).append((int(r[1]), r[2], r[3], int(r[4]), int(r[5])))
    for v in out.values():
        v.sort()
    return out


def expected_frames(vmaddr, slide, syms, lines=None, image=None, uuid=None):
    """The output frames /v1/symbolicate must give for one input frame at
    vmaddr + slide with adjust "none": a list of dicts of the fields that
    must match exactly."""
    mangled, demangled, start, off = syms[vmaddr]
    addr = "0x%x" % (vmaddr + slide)
    base = {"address": addr, "status": "symbolicated", "vmaddr": "0x%x" % vmaddr}
    if image:
        base["image"] = image
    if uuid:
        base["uuid"] = uuid
    outer = dict(base, symbol=demangled, mangled=mangled,
                 symbol_address="0x%x" % start, offset=off, inlined=False)
    levels = (lines or {}).get(vmaddr)
    if not levels:
        return [outer]
    out = []
    for i, (_, fn, file, line, col) in enumerate(levels):
        last = i == len(levels) - 1
        f = dict(outer) if last else dict(base, mangled=fn, inlined=True)
        f["file"], f["line"] = file, line
        if col:
            f["column"] = col
        out.append(f)
    return out


def frames_mismatch(got, want):
    """None if every expected field matches; else a description."""
    if len(got) != len(want):
        return f"{len(got)} frames, want {len(want)}: {json.dumps(got)[:400]}"
    for g, w in zip(got, want):
        for k, v in w.items():
            if g.get(k) != v:
                return f"frame {w['address']}: {k}={g.get(k)!r}, want {v!r}"
        if "column" not in w and g.get("column") not in (None, 0):
            return f"frame {w['address']}: column={g.get('column')!r}, want none"
    return None


SPOT_VMADDRS = [0x100000cac, 0x1000009f4, 0x100000b00]


def spot_check(port, with_lines=True, conn=None):
    """Symbolicates a few known bigapp addresses; None or what is wrong."""
    syms = sym_table("bigapp-arm64")
    lines = line_table("bigapp-arm64") if with_lines else None
    slide = LOAD_ADDRESS - BIGAPP_TEXT[0]
    vms = SPOT_VMADDRS  # all in the fixture tables (a KeyError otherwise)
    body = symbolicate_body(BIGAPP_UUID, ["0x%x" % (v + slide) for v in vms], adjust="none")
    st, _, data = request(port, "POST", "/v1/symbolicate", body,
                          {"Content-Type": "application/json"}, conn=conn)
    if st != 200:
        return f"status {st}: {data[:200]!r}"
    got = json.loads(data)["threads"][0]["frames"]
    want = []
    for v in vms:
        want += expected_frames(v, slide, syms, lines, uuid=BIGAPP_UUID)
    return frames_mismatch(got, want)


# ---- Mach-O ----------------------------------------------------------------------

MH_MAGIC_64 = 0xFEEDFACF
LC_UUID = 0x1B


def macho_uuid_offset(buf):
    """File offset of the 16 UUID bytes of a thin 64-bit little-endian Mach-O,
    found by walking its load commands."""
    if len(buf) < 32:
        raise ValueError("too short for a mach_header_64")
    magic, _cpu, _sub, _ftype, ncmds, sizeofcmds, _flags, _res = struct.unpack_from("<8I", buf, 0)
    if magic != MH_MAGIC_64:
        raise ValueError("not a thin 64-bit little-endian Mach-O (magic 0x%08x)" % magic)
    off, end = 32, 32 + sizeofcmds
    if end > len(buf):
        raise ValueError("load commands run past the file")
    found = None
    for i in range(ncmds):
        if off + 8 > end:
            raise ValueError(f"load command {i} runs past sizeofcmds")
        cmd, cmdsize = struct.unpack_from("<II", buf, off)
        if cmdsize < 8 or cmdsize % 8 or off + cmdsize > end:
            raise ValueError(f"load command {i} has a bad size {cmdsize}")
        if cmd == LC_UUID:
            if cmdsize != 24 or found is not None:
                raise ValueError("bad or repeated LC_UUID")
            found = off + 8
        off += cmdsize
    if found is None:
        raise ValueError("no LC_UUID")
    return found


def with_uuid(buf, uuid16):
    """A copy of the Mach-O buf whose LC_UUID says uuid16."""
    assert len(uuid16) == 16
    o = macho_uuid_offset(buf)
    return buf[:o] + bytes(uuid16) + buf[o + 16:]


def uuid_str(b):
    h = b.hex().upper()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# ---- wrk output --------------------------------------------------------------------


def _ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def parse_wrk(text):
    r = {"requests": 0, "rps": 0.0, "p50_ms": -1.0, "p99_ms": -1.0, "non2xx": 0,
         "err_connect": 0, "err_read": 0, "err_write": 0, "err_timeout": 0, "lua_non2xx": -1}
    m = re.search(r"(\d+) requests in", text)
    if m:
        r["requests"] = int(m.group(1))
    m = re.search(r"Requests/sec:\s*([\d.]+)", text)
    if m:
        r["rps"] = float(m.group(1))
    for pct, key in (("50", "p50_ms"), ("99", "p99_ms")):
        m = re.search(r"^\s*%s%%\s+([\d.]+)(us|ms|s|m)\s*$" % pct, text, re.M)
        if m:
            r[key] = _ms(m.group(1), m.group(2))
    m = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", text)
    if m:
        r["non2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        r["err_connect"], r["err_read"], r["err_write"], r["err_timeout"] = map(int, m.groups())
    m = re.search(r"lua: responses (\d+) non2xx (\d+) errors (\d+)", text)
    if m:
        r["lua_non2xx"] = int(m.group(2))
    r["errors"] = r["err_connect"] + r["err_read"] + r["err_write"] + r["err_timeout"]
    return r


# ---- command line (for wrk_load.sh) -------------------------------------------------


def _cmd_bodies(d, count, frames):
    import random
    rng = random.Random(20261123)
    syms = sym_table("bigapp-arm64")
    pool = sorted(v for v in syms if v % 4 == 0)
    slide = LOAD_ADDRESS - BIGAPP_TEXT[0]
    os.makedirs(d, exist_ok=True)
    for i in range(count):
        chosen = ["0x%x" % (rng.choice(pool) + slide) for _ in range(frames)]
        with open(os.path.join(d, "body-%03d.json" % i), "wb") as f:
            f.write(symbolicate_body(BIGAPP_UUID, chosen))


def _cmd_churn(port, seconds, rate):
    """Posts synthetic crashes at rate per second for seconds (or until
    SIGTERM) and prints "posted=N stored=N other=N errors=N"."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    t_end = time.monotonic() + seconds
    n = stored = other = errors = 0
    conn = None
    while not stop and time.monotonic() < t_end:
        t0 = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            st, hd, _ = request(port, "POST", "/v1/crashes", synthetic_crash(n), conn=conn)
            if hd.get("connection", "").lower() == "close":
                conn.close()
                conn = None
            if st == 201:
                stored += 1
            else:
                other += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            if conn:
                conn.close()
            conn = None
        n += 1
        time.sleep(max(0.0, 1.0 / rate - (time.monotonic() - t0)))
    print(f"posted={n} stored={stored} other={other} errors={errors}")
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "bodies":
        _cmd_bodies(argv[2], int(argv[3]), int(argv[4]))
        return 0
    if len(argv) >= 2 and argv[1] == "spot":
        try:
            bad = spot_check(int(argv[2]))
        except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
            bad = f"{type(e).__name__}: {e}"
        print(bad or "ok")
        return 1 if bad else 0
    if len(argv) >= 2 and argv[1] == "wrk":
        with open(argv[2]) as f:
            r = parse_wrk(f.read())
        for k, v in r.items():
            print(f"{k}={round(v, 3) if isinstance(v, float) else v}")
        return 0
    if len(argv) >= 2 and argv[1] == "supports":
        return 0 if supports(argv[2]) else 1
    if len(argv) >= 2 and argv[1] == "churn":
        return _cmd_churn(int(argv[2]), float(argv[3]), float(argv[4]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
