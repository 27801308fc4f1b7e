#!/usr/bin/env python3
"""Memory attacks of issue 17 (items 1, 3 and 4) against `symd serve`.

  python3 tests/load/attack_memory.py              # the CI form (80-120 s on 2 cores)
  MEM_FULL=1 python3 tests/load/attack_memory.py   # the full form (64 x 200 MiB uploads, 2 GiB)

What the server must do (the contract tested): a request's parse memory is
bounded by --request-mem-factor (4) x its body + --request-mem-mb (64 MiB),
past it 413 too_large; all requests together (bodies, parse memory,
answers) by --max-inflight-mb (2048); a large body that does not fit waits
in a FIFO queue (--admission-wait, 30 s), then 503 busy with Retry-After;
small bodies (up to 1 MiB) and GETs are never queued nor refused for the
budget.

Phases, each on a fresh `symd serve` process (a and b share one database,
so the stored report of a3 is read back by a4/a5 after a restart):

 a  An .ips (the header line of fixtures/crashes/bigapp-pac.ips, a newline,
    then {"x":[[],[],...]}) of MEM_BODY_MB (32) MiB, within the default
    --max-json: a1 POST /v1/crashes?store=false once; a2 MEM_PARALLEL (8) at
    once; a3 stored once (POST /v1/crashes); a4 read back MEM_READS (4) at
    once (GET /v1/crashes/{id}); a5 the same with ?format=text.
 b  Known keys under --max-json MEM_MAX_JSON (134217728): b1 {"threads":
    [[],[],...]} of MEM_THREADS_MB (32) MiB; b2 a usedImages array of
    MEM_IMAGES (1e6) small objects (shrunk to fit --max-json if needed);
    each MEM_KNOWN_PARALLEL (1) at once, ?store=false.
 c  During every a and b step a probe client sends GET /healthz and a
    small POST /v1/symbolicate of three known bigapp-arm64 addresses in
    turn, one every MEM_PROBE_GAP_MS (20 ms), open loop: each on its own
    connection and thread whether or not the earlier ones were answered (at
    most MEM_PROBE_MAX, 100, outstanding; the ones not sent for that are
    counted), so that a stall counts in every request it holds up. A
    latency runs from the request's connect to its answer; how late the
    probe itself started one (a starved client) is printed, not counted.
 d  MEM_UPLOADS (64) parallel uploads of distinct valid Mach-O files
    (fixtures/bin/bigapp-arm64 with its LC_UUID rewritten, padded with zeros
    at its end to MEM_UPLOAD_MB, 20 MiB; 200 in the full form), streamed,
    under --max-inflight-mb MEM_UPLOAD_INFLIGHT_MB (200; 2048 in the full
    form); each client honours Retry-After on 503 (MEM_TRIES tries, 4; the
    sleep is Retry-After, capped at MEM_RETRY_CAP_S, 30). First one padded
    upload alone must be stored (201, GET 200). Beside the storm an ordinary
    client uploads fixtures/bin/libfix-arm64.dylib with 4 new UUIDs, one try
    each, each sent when at least a quarter of the large ones are under way.
    Printed: /metrics gauges about what is in flight or queued (their max),
    and a lower bound of the uploads admitted at once (the largest overlap
    of the stored uploads' [body sent, 201] windows). The padded upload alone
    runs on its own server process; the storm on a fresh one.
 e  bigapp-arm64 and its dSYM uploaded; MEM_ANSWERS (16) parallel POST
    /v1/symbolicate requests, each answer about MEM_ANSWER_MB (50) MiB (as
    many known addresses as that takes, at most 200,000), one try each,
    under --max-inflight-mb MEM_ANSWER_INFLIGHT_MB (200).

Checks (each on its own line with its figures):
 - answers: a, b: every answer 2xx or 413 too_large; d: all MEM_UPLOADS
   stored (201, then GET /v1/images/{uuid} 200) within MEM_UPLOAD_DEADLINE
   (600 s), the 4 small uploads 201 (never 503); e: every answer 200 (the
   whole answer, all alike) or 503 busy with Retry-After, at least one 200.
 - memory: peak RSS growth of the server (VmHWM after "5" into
   /proc/PID/clear_refs, else VmRSS sampled every 10 ms; the larger of the
   two) over its RSS at the start of the step <= min(n x (MEM_FACTOR (4) x
   body + MEM_ALLOW_MB (64)), --max-inflight-mb) + MEM_SLACK_MB (64, the
   allocator's slack); d and e: <= --max-inflight-mb + MEM_SLACK_MB; e: RSS
   MEM_SETTLE_S (2) s after the answers within MEM_RESIDUAL_MB (64) of the
   RSS before them.
 - probe (c): every probe answer 200 and p99 < MEM_P99_MS (100; the issue's
   bound for the full form; raise it on a loaded CI machine, the figures are
   printed either way).
 - the server knows --request-mem-factor, --request-mem-mb and
   --admission-wait (if it does, they are passed: MEM_FACTOR, MEM_ALLOW_MB,
   MEM_ADMISSION_WAIT_S (30)).

Safety: a guard kills the server (SIGKILL) when its RSS passes MEM_RSS_CAP_MB
(default: half of MemAvailable, at most 8192), so an unbounded server fails
the step instead of exhausting the machine; the step says so.

Other knobs: MEM_PHASES (a,b,d,e), MEM_IO_TIMEOUT (180 s per request),
MEM_IPS_HEADER_FROM (the .ips whose first line heads the bodies, e.g. one
of ../shared/real-reports; default fixtures/crashes/bigapp-pac.ips),
MEM_INFLIGHT_MB (2048: the --max-inflight-mb of a and b, passed only when
not 2048), MEM_KEEP (keep the temporary directory), SYMD_BIN,
LOAD_RETENTION_ARGS (added to every server, as in the other load tests).
MEM_FULL=1 changes the defaults of MEM_UPLOAD_MB to 200 and of
MEM_UPLOAD_INFLIGHT_MB to 2048. Ends with "N passed, N failed"; exit
status 1 on any failure.
"""
import hashlib
import http.client
import json
import os
import random
import re
import select
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symdlib as L  # noqa: E402

MiB = 1 << 20
FULL = os.environ.get("MEM_FULL", "") not in ("", "0")

PHASES = [p.strip() for p in os.environ.get("MEM_PHASES", "a,b,d,e").split(",") if p.strip()]
BODY_MB = L.env_float("MEM_BODY_MB", 32)
PARALLEL = L.env_int("MEM_PARALLEL", 8)
READS = L.env_int("MEM_READS", 4)
FACTOR = L.env_float("MEM_FACTOR", 4)
ALLOW_MB = L.env_float("MEM_ALLOW_MB", 64)
SLACK_MB = L.env_float("MEM_SLACK_MB", 64)
INFLIGHT_MB = L.env_int("MEM_INFLIGHT_MB", 2048)
ADMISSION_WAIT_S = L.env_float("MEM_ADMISSION_WAIT_S", 30)
MAX_JSON_B = L.env_int("MEM_MAX_JSON", 134217728)
THREADS_MB = L.env_float("MEM_THREADS_MB", 32)
IMAGES = L.env_int("MEM_IMAGES", 1000000)
KNOWN_PARALLEL = L.env_int("MEM_KNOWN_PARALLEL", 1)
P99_MS = L.env_float("MEM_P99_MS", 100)
PROBE_GAP_MS = L.env_float("MEM_PROBE_GAP_MS", 20)
PROBE_MAX = L.env_int("MEM_PROBE_MAX", 100)
UPLOADS = L.env_int("MEM_UPLOADS", 64)
UPLOAD_MB = L.env_float("MEM_UPLOAD_MB", 200 if FULL else 20)
UPLOAD_INFLIGHT_MB = L.env_int("MEM_UPLOAD_INFLIGHT_MB", 2048 if FULL else 200)
TRIES = L.env_int("MEM_TRIES", 4)
RETRY_CAP_S = L.env_float("MEM_RETRY_CAP_S", 30)
UPLOAD_DEADLINE = L.env_float("MEM_UPLOAD_DEADLINE", 600)
SMALL_UPLOADS = 4
ANSWERS = L.env_int("MEM_ANSWERS", 16)
ANSWER_MB = L.env_float("MEM_ANSWER_MB", 50)
ANSWER_INFLIGHT_MB = L.env_int("MEM_ANSWER_INFLIGHT_MB", 200)
SETTLE_S = L.env_float("MEM_SETTLE_S", 2)
RESIDUAL_MB = L.env_float("MEM_RESIDUAL_MB", 64)
IO_TIMEOUT = L.env_float("MEM_IO_TIMEOUT", 180)
KEEP = os.environ.get("MEM_KEEP", "") not in ("", "0")
MAX_FRAMES = 200000  # the server's frames per /v1/symbolicate request


def _mem_available_mb():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 8192


RSS_CAP_MB = L.env_int("MEM_RSS_CAP_MB", min(8192, _mem_available_mb() // 2))

NEW_FLAGS = ("--request-mem-factor", "--request-mem-mb", "--admission-wait")

C = L.Checks()


def mb(kb_or_bytes, unit="kb"):
    return kb_or_bytes / 1024.0 if unit == "kb" else kb_or_bytes / MiB


def info(text):
    print(f"  info  {text}")
    sys.stdout.flush()


# ---- HTTP: a client that sees an early answer while it still sends ---------------


class Answer:
    __slots__ = ("status", "headers", "data", "nbytes", "sha", "sent", "sent_all",
                 "error", "seconds", "t_sent", "t_end")

    def __init__(self):
        self.status = None
        self.headers = {}
        self.data = b""
        self.nbytes = 0
        self.sha = None
        self.sent = 0
        self.sent_all = False
        self.error = None
        self.seconds = 0.0
        self.t_sent = None  # time.monotonic() when the whole body was sent
        self.t_end = None

    def code(self):
        """The error code of a JSON error answer, or ''."""
        try:
            return json.loads(self.data)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            return ""

    def whole(self):
        """An answer read to its end."""
        return self.status is not None and self.error is None

    def what(self):
        if self.status is None:
            return f"no answer ({self.error})"
        c = self.code()
        return f"{self.status}" + (f" {c}" if c else "") + \
            (f" cut short ({self.error})" if self.error else "")


def call(port, method, path, body=b"", headers=None, timeout=IO_TIMEOUT, keep=1 << 16,
         digest=False):
    """One request on a fresh connection (Connection: close). body is bytes
    or (length, iterable of bytes). While the body goes out, an answer the
    server sends early (413, 503) stops the sending and is read. The answer
    body: its first `keep` bytes in .data, its size in .nbytes, its SHA-256
    in .sha when digest."""
    a = Answer()
    t0 = time.monotonic()
    if isinstance(body, (bytes, bytearray, memoryview)):
        length, chunks = len(body), [body]
    else:
        length, chunks = body
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    if method in ("POST", "PUT") or length:
        head.append(f"Content-Length: {length}")
    for k, v in (headers or {}).items():
        head.append(f"{k}: {v}")
    sock = None
    got = bytearray()
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        early = False
        poll = select.poll()
        poll.register(sock, select.POLLIN | select.POLLOUT)
        try:
            for chunk in chunks:
                mv = memoryview(chunk)
                off = 0
                while off < len(mv):
                    ev = 0
                    for _, e in poll.poll(timeout * 1000):
                        ev |= e
                    if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                        early = True  # an answer (or a close) before the whole body
                        break
                    if not ev & select.POLLOUT:
                        raise socket.timeout("send stalled")
                    n = sock.send(mv[off:off + (1 << 20)])
                    off += n
                    a.sent += n
                if early:
                    break
            a.sent_all = not early and a.sent == length
            if a.sent_all:
                a.t_sent = time.monotonic()
        except (BrokenPipeError, ConnectionResetError) as e:
            a.error = f"send: {type(e).__name__}"
        resp = http.client.HTTPResponse(sock, method=method)
        resp.begin()
        a.status = resp.status
        a.headers = {k.lower(): v for k, v in resp.getheaders()}
        h = hashlib.sha256() if digest else None
        while True:
            buf = resp.read(1 << 20)
            if not buf:
                break
            a.nbytes += len(buf)
            if h:
                h.update(buf)
            if len(got) < keep:
                got += buf[:keep - len(got)]
        a.data = bytes(got)
        a.sha = h.hexdigest() if h else None
        a.error = None  # a send error before a whole answer does not matter
    except (OSError, http.client.HTTPException, ValueError) as e:
        a.error = (a.error + "; " if a.error else "") + f"{type(e).__name__}: {e}"
        a.data = a.data or bytes(got)
    finally:
        if sock:
            sock.close()
        a.t_end = time.monotonic()
        a.seconds = a.t_end - t0
    return a


def parallel(fn, n):
    """fn(i) for i in range(n) on n threads at once; the list of results."""
    out = [None] * n
    go = threading.Barrier(n)

    def run(i):
        try:
            go.wait(30)
        except threading.BrokenBarrierError:
            pass
        try:
            out[i] = fn(i)
        except Exception as e:  # a bug of the script: report it as an answer
            a = Answer()
            a.error = f"{type(e).__name__}: {e}"
            out[i] = a
    ts = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def tally(answers):
    counts = {}
    for a in answers:
        counts[a.what()] = counts.get(a.what(), 0) + 1
    return ", ".join(f"{v}x {k}" for k, v in sorted(counts.items()))


# ---- memory of the server -----------------------------------------------------------


def proc_status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


class Mem:
    """Peak RSS of the server over a step: VmHWM reset through clear_refs
    (when the kernel allows it) and VmRSS sampled every 10 ms, and a guard
    that kills the server past RSS_CAP_MB."""

    def __init__(self, srv):
        self.srv = srv
        self.pid = srv.proc.pid
        self.stop_ev = threading.Event()
        self.sampled = 0
        self.killed_kb = None
        self.hwm_ok = False

    def start(self):
        s = proc_status(self.pid)
        self.base = s.get("VmRSS", 0)
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as f:
                f.write("5")
            s2 = proc_status(self.pid)
            self.hwm_ok = s2.get("VmHWM", 1 << 60) <= s2.get("VmRSS", 0) + 4096
        except OSError:
            self.hwm_ok = False
        self.sampled = self.base
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()
        return self

    def _run(self):
        cap = RSS_CAP_MB * 1024
        while not self.stop_ev.is_set():
            r = proc_status(self.pid).get("VmRSS")
            if r is None:
                return
            if r > self.sampled:
                self.sampled = r
            if r > cap and self.srv.alive():
                self.killed_kb = r
                self.srv.kill9()
                return
            self.stop_ev.wait(0.01)

    def stop(self):
        s = proc_status(self.pid)
        self.stop_ev.set()
        self.t.join()
        hwm = s.get("VmHWM", 0) if self.hwm_ok else 0
        self.peak = max(self.sampled, hwm, s.get("VmRSS", 0))
        self.growth = self.peak - self.base
        return self

    def figures(self):
        how = "VmHWM" if self.hwm_ok else "sampled VmRSS"
        t = (f"growth {mb(self.growth):.0f} MiB: baseline {mb(self.base):.0f}, "
             f"peak {mb(self.peak):.0f} ({how}; sampled {mb(self.sampled):.0f})")
        if self.killed_kb:
            t += f"; KILLED by the guard at {mb(self.killed_kb):.0f} MiB (MEM_RSS_CAP_MB)"
        return t


def check_memory(name, mem, bound_mb):
    ok = mem.killed_kb is None and mem.growth <= bound_mb * 1024
    C.check(f"{name}: memory", ok, f"{mem.figures()}; bound {bound_mb:.0f} MiB")


def budget_mb(n, body_bytes, inflight_mb):
    """The bound of the issue: n requests of body_bytes each."""
    per = FACTOR * body_bytes / MiB + ALLOW_MB
    return min(n * per, inflight_mb) + SLACK_MB


# ---- the probe: an ordinary client beside the attack --------------------------------


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    i = min(len(sorted_vals) - 1, max(0, int(round(p / 100.0 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[i]


class Probe:
    """An ordinary client beside the attack, open loop: every
    MEM_PROBE_GAP_MS a request goes on its own connection and thread,
    whether or not the earlier ones were answered (at most PROBE_MAX
    outstanding), so a stall shows in every request it holds up instead of
    in the one a waiting client would have sent (no coordinated omission).
    GET /healthz and a small POST /v1/symbolicate of known bigapp-arm64
    addresses, in turn."""

    def __init__(self, port):
        self.port = port
        self.body = L.symbolicate_body(L.BIGAPP_UUID, ["0x%x" % (v + L.LOAD_ADDRESS -
                                                                L.BIGAPP_TEXT[0])
                                                       for v in L.SPOT_VMADDRS],
                                       adjust="none")
        self.lat = []
        self.bad = []
        self.skipped = 0
        self.late = 0.0
        self.lock = threading.Lock()
        self.workers = []
        self.stop_ev = threading.Event()

    def start(self):
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()
        return self

    def _one(self, i, due):
        late = time.monotonic() - due  # the client's own delay, not counted
        if i % 2 == 0:
            kind = "healthz"
            a = call(self.port, "GET", "/healthz", timeout=60)
        else:
            kind = "symbolicate"
            a = call(self.port, "POST", "/v1/symbolicate", self.body,
                     {"Content-Type": "application/json"}, timeout=60)
            if a.status == 200 and b'"status":"symbolicated"' not in a.data.replace(b" ", b""):
                a.status = -200  # a wrong answer
        with self.lock:
            self.lat.append(a.seconds * 1000.0)
            self.late = max(self.late, late * 1000.0)
            if a.status != 200 or not a.whole():
                self.bad.append(f"{kind} {a.what()}")

    def _run(self):
        gap = max(PROBE_GAP_MS, 1.0) / 1000.0
        nxt = time.monotonic()
        i = 0
        while not self.stop_ev.is_set():
            self.workers = [w for w in self.workers if w.is_alive()]
            if len(self.workers) < PROBE_MAX:
                w = threading.Thread(target=self._one, args=(i, nxt), daemon=True)
                w.start()
                self.workers.append(w)
                i += 1
            else:
                self.skipped += 1
            nxt += gap
            self.stop_ev.wait(max(0.0, nxt - time.monotonic()))

    def stop(self):
        self.stop_ev.set()
        self.t.join()
        for w in self.workers:  # a stalled one counts with its whole wait
            w.join(70)
        return self

    def check(self, name, server_died=False):
        with self.lock:
            v = sorted(self.lat)
            bad = list(self.bad)
        p50, p99 = pct(v, 50), pct(v, 99)
        ok = len(v) > 0 and not bad and p99 < P99_MS
        detail = (f"{len(v)} requests, p50 {p50:.1f} ms, p99 {p99:.1f} ms, max "
                  f"{(v[-1] if v else float('nan')):.1f} ms, threshold {P99_MS:.0f} ms, "
                  f"{len(bad)} not 200")
        if bad:
            detail += f" (first: {bad[0]})"
        detail += f"; the probe itself started one up to {self.late:.0f} ms late"
        if self.skipped:
            detail += f", {self.skipped} not sent ({PROBE_MAX} outstanding)"
        if server_died:
            detail += "; the server died"
        C.check(f"{name}: probe", ok, detail)


# ---- bodies ----------------------------------------------------------------------------


def ips_header():
    path = os.environ.get("MEM_IPS_HEADER_FROM") or os.path.join(L.FIX, "crashes",
                                                                  "bigapp-pac.ips")
    with open(path, "rb") as f:
        line = f.readline().rstrip(b"\r\n")
    json.loads(line)  # a real .ips header line is one JSON object
    return line + b"\n"


def shaped(head, key, item, total):
    """head + {"key":[item,item,...]} of exactly total bytes (the last item
    padded with spaces where the step does not divide)."""
    pre = head + b'{"' + key + b'":['
    room = total - len(pre) - 2  # "]}"
    n = (room + 1) // (len(item) + 1)
    body = b",".join([item] * n)
    pad = room - len(body)
    return pre + body + b" " * pad + b"]}"


def used_images_body(head, count, limit):
    """An .ips whose body has a usedImages array of count small objects
    (fewer if that would pass limit bytes) and one crashed thread."""
    rng = random.Random(17)
    tail = (b'],"threads":[{"triggered":true,"id":1,"frames":[{"imageOffset":2552,'
            b'"imageIndex":0}]}]}')
    pre = head + b'{"procName":"bigapp-arm64","usedImages":['
    parts = []
    size = len(pre) + len(tail)
    for i in range(count):
        u = "%032x" % rng.getrandbits(128)
        o = ('{"source":"P","arch":"arm64","base":%d,"size":16384,"uuid":"%s-%s-%s-%s-%s",'
             '"name":"l%d"}' % (0x180000000 + i * 16384, u[:8], u[8:12], u[12:16], u[16:20],
                                u[20:], i)).encode()
        if size + len(o) + 1 > limit:
            break
        parts.append(o)
        size += len(o) + 1
    return pre + b",".join(parts) + tail, len(parts)


def padded_macho(base, uuid16, total):
    """(length, chunks) of base with its LC_UUID set to uuid16, then zeros
    up to total bytes."""
    head = L.with_uuid(base, uuid16)
    total = max(total, len(head))

    def gen():
        yield head
        zero = bytes(MiB)
        left = total - len(head)
        while left > 0:
            n = min(left, len(zero))
            yield zero[:n] if n < len(zero) else zero
            left -= n
    return total, gen()


# ---- servers -----------------------------------------------------------------------------


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="symd-memattack.")
        self.n = 0
        self.servers = []
        self.new_flags = {f: L.supports(f) for f in NEW_FLAGS}

    def server_args(self, extra=()):
        a = list(extra)
        if self.new_flags["--request-mem-factor"]:
            a += ["--request-mem-factor", "%g" % FACTOR]
        if self.new_flags["--request-mem-mb"]:
            a += ["--request-mem-mb", "%g" % ALLOW_MB]
        if self.new_flags["--admission-wait"]:
            a += ["--admission-wait", "%g" % ADMISSION_WAIT_S]
        return a + L.RETENTION_ARGS

    def start(self, db, extra=(), tag="srv"):
        self.n += 1
        s = L.Server(os.path.join(self.tmp, db), self.tmp, self.server_args(extra),
                     tag=f"{tag}{self.n}")
        self.servers.append(s)
        s.start()
        return s


def stop(srv):
    rc = srv.stop() if srv.alive() else None
    return rc


def upload_bigapp(port):
    s1, b1 = L.upload(port, L.BIGAPP)
    s2, b2 = L.upload(port, L.BIGAPP_DSYM)
    bad = L.spot_check(port, with_lines=True)
    return s1 in (200, 201) and s2 in (200, 201) and bad is None, \
        f"binary {s1}, dSYM {s2}, spot check {bad or 'ok'}"


# ---- a and b: shaped .ips bodies ------------------------------------------------------------


def step(env, db, name, n, body_len, fn, extra=(), bound_inflight=None, want=None):
    """One step on a fresh server: probe, memory, n parallel fn(port, i).
    want(answer) says if an answer is acceptable. Returns the answers."""
    t0 = time.monotonic()
    extra = list(extra)
    if INFLIGHT_MB != 2048 and "--max-inflight-mb" not in extra:
        extra += ["--max-inflight-mb", str(INFLIGHT_MB)]
    srv = env.start(db, extra)
    port = srv.port
    L.spot_check(port, with_lines=True)  # warm: index loaded before the baseline
    time.sleep(0.2)
    probe = Probe(port).start()
    time.sleep(0.3)
    mem = Mem(srv).start()
    answers = parallel(lambda i: fn(port, i), n)
    mem.stop()
    time.sleep(0.2)
    probe.stop()
    died = not srv.alive() and mem.killed_kb is None
    want = want or (lambda a: a.whole() and (200 <= a.status < 300 or
                                             (a.status == 413 and a.code() == "too_large")))
    ok = all(want(a) for a in answers) and not died and mem.killed_kb is None
    secs = max((a.seconds for a in answers), default=0)
    C.check(f"{name}: answers", ok, f"{tally(answers)}; slowest {secs:.1f} s"
            + ("; the server DIED: " + srv.stderr_tail(3) if died else "")
            + ("; killed by the guard" if mem.killed_kb else ""))
    inflight = bound_inflight if bound_inflight is not None else INFLIGHT_MB
    check_memory(name, mem, budget_mb(n, body_len, inflight))
    probe.check(name, died)
    rc = stop(srv)
    if rc not in (0, None) or (rc is None and mem.killed_kb is None and not died):
        info(f"{name}: SIGTERM exit {rc}")
    info(f"{name}: {time.monotonic() - t0:.1f} s")
    return answers


def phase_a(env, db):
    head = ips_header()
    total = int(BODY_MB * MiB)
    body = shaped(head, b"x", b"[]", total)
    print(f"phase a: {len(body)} bytes of .ips, {{\"x\":[[],...]}} after the header line "
          f"(budget per request {FACTOR:g} x body + {ALLOW_MB:g} MiB + slack {SLACK_MB:g} MiB)")
    hdr = {"Content-Type": "application/json"}

    def post(q):
        return lambda port, i: call(port, "POST", "/v1/crashes" + q, body, hdr)

    step(env, db, "a1 unknown keys, POST ?store=false x1", 1, len(body), post("?store=false"))
    step(env, db, f"a2 unknown keys, POST ?store=false x{PARALLEL}", PARALLEL, len(body),
         post("?store=false"))
    got = step(env, db, "a3 unknown keys, POST (stored) x1", 1, len(body),
               post(""))
    a = got[0]
    cid = None
    if a.status == 201:
        try:
            cid = json.loads(a.data)["id"]
        except (ValueError, KeyError, TypeError):
            loc = a.headers.get("location", "")
            m = re.search(r"/v1/crashes/(\d+)", loc)
            cid = int(m.group(1)) if m else None
    if cid is None:
        info(f"a4/a5 skipped: the stored post answered {a.what()} (no crash id)")
        return
    for q, tag in (("", "json"), ("?format=text", "text")):
        step(env, db, f"a{4 if tag == 'json' else 5} GET /v1/crashes/{cid}{q} x{READS}",
             READS, len(body), lambda port, i, q=q: call(port, "GET", f"/v1/crashes/{cid}{q}",
                                                         keep=4096))


def phase_b(env, db):
    head = ips_header()
    extra = ["--max-json", str(MAX_JSON_B)]
    hdr = {"Content-Type": "application/json"}
    tb = shaped(head, b"threads", b"[]", min(int(THREADS_MB * MiB), MAX_JSON_B))
    print(f"phase b: --max-json {MAX_JSON_B}; b1 {len(tb)} bytes of {{\"threads\":[[],...]}}")
    step(env, db, f"b1 threads [[],...], POST ?store=false x{KNOWN_PARALLEL}", KNOWN_PARALLEL,
         len(tb), lambda port, i: call(port, "POST", "/v1/crashes?store=false", tb, hdr),
         extra)
    del tb
    ub, n = used_images_body(head, IMAGES, MAX_JSON_B)
    print(f"phase b: b2 {len(ub)} bytes, usedImages of {n} objects")
    step(env, db, f"b2 {n} usedImages, POST ?store=false x{KNOWN_PARALLEL}", KNOWN_PARALLEL,
         len(ub), lambda port, i: call(port, "POST", "/v1/crashes?store=false", ub, hdr),
         extra)


# ---- d: 64 large uploads with retrying clients -----------------------------------------------


def metrics_sampler(port, stop_ev, out):
    """Max of every gauge that tells what is in flight or queued."""
    pat = re.compile(r"^(symd_[a-z_]*(?:in_flight|inflight|admit|queue|held|waiting)[a-z_]*)"
                     r"(\{[^}]*\})?\s+([0-9.eE+-]+)$")
    while not stop_ev.is_set():
        a = call(port, "GET", "/metrics", timeout=10, keep=1 << 20)
        if a.status == 200:
            for line in a.data.decode("utf-8", "replace").splitlines():
                m = pat.match(line)
                if m:
                    k = m.group(1) + (m.group(2) or "")
                    try:
                        v = float(m.group(3))
                    except ValueError:
                        continue
                    out[k] = max(out.get(k, v), v)
        stop_ev.wait(0.1)


def phase_d(env):
    print(f"phase d: {UPLOADS} uploads of {UPLOAD_MB:g} MiB under --max-inflight-mb "
          f"{UPLOAD_INFLIGHT_MB}, {TRIES} tries each honouring Retry-After (capped at "
          f"{RETRY_CAP_S:g} s)")
    t0 = time.monotonic()
    with open(L.BIGAPP, "rb") as f:
        big = f.read()
    with open(L.LIBFIX, "rb") as f:
        small = f.read()
    rng = random.Random()
    size = int(UPLOAD_MB * MiB)
    extra = ["--max-inflight-mb", str(UPLOAD_INFLIGHT_MB)]
    if size > 1 << 30:
        extra += ["--max-upload", str(size)]
    srv = env.start("uploads.db", extra)
    port = srv.port
    hdr = {"Content-Type": "application/octet-stream"}

    # one padded file alone
    u = bytes(rng.getrandbits(8) for _ in range(16))
    a = call(port, "POST", "/v1/images", padded_macho(big, u, size), hdr)
    g = call(port, "GET", f"/v1/images/{L.uuid_str(u)}")
    C.check("d0 a padded Mach-O is stored", a.status == 201 and g.status == 200,
            f"POST {a.what()} in {a.seconds * 1000:.0f} ms, GET {g.what()}")
    stop(srv)  # a fresh process for the storm: its baseline holds no upload
    srv = env.start("uploads.db", extra)
    port = srv.port

    uuids = [bytes(rng.getrandbits(8) for _ in range(16)) for _ in range(UPLOADS)]
    results = [None] * UPLOADS
    stop_ev = threading.Event()
    gauges = {}
    ms = threading.Thread(target=metrics_sampler, args=(port, stop_ev, gauges), daemon=True)
    deadline = time.monotonic() + UPLOAD_DEADLINE

    lock = threading.Lock()
    sending = [0]  # large uploads under way (connected, not yet answered)

    def client(i):
        hist = []
        for t in range(TRIES):
            with lock:
                sending[0] += 1
            try:
                a = call(port, "POST", "/v1/images", padded_macho(big, uuids[i], size), hdr)
            finally:
                with lock:
                    sending[0] -= 1
            hist.append(a)
            if a.status == 201 or a.status == 200:
                break
            if time.monotonic() > deadline:
                break
            if a.status == 503:
                try:
                    wait = float(a.headers.get("retry-after", "5"))
                except ValueError:
                    wait = 5.0
                time.sleep(min(max(wait, 0.0), RETRY_CAP_S))
            elif a.status is None:
                time.sleep(1.0)  # no answer at all: counted, retried
            else:
                break  # any other answer is final
        return hist

    small_res = []

    def ordinary():
        # Each small upload goes when many large ones are under way (at
        # least a quarter of MEM_UPLOADS, waiting up to 10 s for that), so
        # that it meets the budget at its fullest; one try each.
        time.sleep(0.05)
        for k in range(SMALL_UPLOADS):
            t_wait = time.monotonic() + 10.0
            while sending[0] < max(1, UPLOADS // 4) and time.monotonic() < t_wait:
                time.sleep(0.005)
            beside = sending[0]
            su = bytes(rng.getrandbits(8) for _ in range(16))
            body = L.with_uuid(small, su)
            a = call(port, "POST", "/v1/images", body, hdr, timeout=60)
            g = call(port, "GET", f"/v1/images/{L.uuid_str(su)}") if a.status == 201 else None
            small_res.append((a, g, beside))
            time.sleep(0.2)

    mem = Mem(srv).start()
    ms.start()
    ts = time.monotonic()
    small_t = threading.Thread(target=ordinary, daemon=True)
    small_t.start()
    hists = parallel(client, UPLOADS)
    storm_s = time.monotonic() - ts
    small_t.join()
    mem.stop()
    stop_ev.set()
    ms.join()
    for i, h in enumerate(hists):
        results[i] = h if isinstance(h, list) else [h]

    stored = [i for i, h in enumerate(results) if h and h[-1].status in (200, 201)]
    first_try = sum(1 for h in results if h and h[0].status in (200, 201))
    tries = [len(h) for h in results]
    busy = sum(1 for h in results for a in h if a.status == 503)
    busy_no_ra = sum(1 for h in results for a in h if a.status == 503 and
                     "retry-after" not in a.headers)
    noans = sum(1 for h in results for a in h if a.status is None)
    early = sum(1 for h in results for a in h if a.status is not None and not a.sent_all)
    last = [h[-1].what() for h in results if h and h[-1].status not in (200, 201)]
    gets = [call(port, "GET", f"/v1/images/{L.uuid_str(uuids[i])}", keep=256) for i in stored]
    get_ok = sum(1 for g in gets if g.status == 200)
    died = not srv.alive() and mem.killed_kb is None
    hist = {}
    for t in tries:
        hist[t] = hist.get(t, 0) + 1
    C.check(f"d1 {UPLOADS} x {UPLOAD_MB:g} MiB uploads, retrying clients: all stored",
            len(stored) == UPLOADS and get_ok == UPLOADS and not died,
            f"{len(stored)} stored ({first_try} at the first try), GET 200 for {get_ok}; "
            f"tries per client {dict(sorted(hist.items()))}; {busy} answers 503 "
            f"({busy_no_ra} without Retry-After), {noans} without an answer, {early} "
            f"answered before the body was sent; not stored: "
            f"{', '.join(sorted(set(last))) or 'none'}"
            + ("; the server DIED" if died else ""))
    C.check(f"d2 uploads done within {UPLOAD_DEADLINE:g} s", storm_s <= UPLOAD_DEADLINE,
            f"{storm_s:.1f} s for the storm")
    sm = [a.what() + ("" if g is None else f"/GET {g.status}") + f" ({n} large under way, "
          f"{a.seconds * 1000:.0f} ms)" for a, g, n in small_res]
    C.check(f"d3 {SMALL_UPLOADS} small uploads beside them, none refused",
            len(small_res) == SMALL_UPLOADS and all(a.status == 201 and g and g.status == 200
                                                     for a, g, _ in small_res),
            f"{', '.join(sm) or 'none sent'}")
    check_memory(f"d4 {UPLOADS} uploads", mem, UPLOAD_INFLIGHT_MB + SLACK_MB)
    if gauges:
        info("d: in flight at once (max of /metrics gauges): "
             + ", ".join(f"{k}={v:g}" for k, v in sorted(gauges.items())))
    # Admitted at once, seen from the clients: a body wholly sent was read
    # by the server, so the windows [body sent, 201] of the stored uploads
    # were admitted; their largest overlap is a lower bound.
    ev = []
    for h in results:
        for a in h:
            if a.status in (200, 201) and a.t_sent is not None:
                ev += [(a.t_sent, 1), (a.t_end, -1)]
    cur = most = 0
    for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
        cur += d
        most = max(most, cur)
    info(f"d: at least {most} stored uploads were admitted at once (largest overlap of "
         f"their [body sent, 201] windows); budget {UPLOAD_INFLIGHT_MB} MiB / {UPLOAD_MB:g} "
         f"MiB = {int(UPLOAD_INFLIGHT_MB // UPLOAD_MB)} bodies")
    ok_lat = sorted(a.seconds for h in results for a in h if a.status in (200, 201))
    if ok_lat:
        info(f"d: a stored upload took {ok_lat[0]:.1f}..{ok_lat[-1]:.1f} s (p50 "
             f"{pct(ok_lat, 50):.1f} s) from its last try's connect to its answer")
    stop(srv)
    info(f"d: {time.monotonic() - t0:.1f} s")


# ---- e: large answers -------------------------------------------------------------------------


def phase_e(env, db):
    t0 = time.monotonic()
    extra = ["--max-inflight-mb", str(ANSWER_INFLIGHT_MB)]
    srv = env.start(db, extra)
    port = srv.port
    syms = L.sym_table("bigapp-arm64")
    slide = L.LOAD_ADDRESS - L.BIGAPP_TEXT[0]
    pool = sorted(v for v in syms if v % 4 == 0)
    rng = random.Random(4)
    hdr = {"Content-Type": "application/json"}
    # calibrate: bytes of answer per frame on 2,000 frames
    probe_frames = ["0x%x" % (rng.choice(pool) + slide) for _ in range(2000)]
    a = call(port, "POST", "/v1/symbolicate",
             L.symbolicate_body(L.BIGAPP_UUID, probe_frames, adjust="none"), hdr)
    stop(srv)
    if a.status != 200:
        C.check("e calibration", False, f"2000 frames: {a.what()}")
        return
    per = a.nbytes / 2000.0
    nframes = min(MAX_FRAMES, int(ANSWER_MB * MiB / per) + 1)
    frames = ["0x%x" % (rng.choice(pool) + slide) for _ in range(nframes)]
    body = L.symbolicate_body(L.BIGAPP_UUID, frames, adjust="none")
    print(f"phase e: {ANSWERS} x POST /v1/symbolicate of {nframes} frames ({len(body)} bytes; "
          f"{per:.0f} answer bytes a frame, about {nframes * per / MiB:.0f} MiB an answer) "
          f"under --max-inflight-mb {ANSWER_INFLIGHT_MB}")
    srv = env.start(db, extra)
    port = srv.port
    L.spot_check(port, with_lines=True)
    time.sleep(0.5)
    mem = Mem(srv).start()
    answers = parallel(lambda i: call(port, "POST", "/v1/symbolicate", body, hdr, digest=True),
                       ANSWERS)
    mem.stop()
    time.sleep(SETTLE_S)
    after = proc_status(srv.proc.pid).get("VmRSS")
    died = not srv.alive() and mem.killed_kb is None
    oks = [x for x in answers if x.status == 200]
    shas = {x.sha for x in oks}
    sizes = sorted({x.nbytes for x in oks})

    def fine(x):
        if not x.whole():
            return False
        if x.status == 200:
            return x.nbytes >= 0.5 * ANSWER_MB * MiB and len(shas) == 1
        return x.status == 503 and x.code() == "busy" and "retry-after" in x.headers
    ok = oks and all(fine(x) for x in answers) and not died and mem.killed_kb is None
    secs = max((x.seconds for x in answers), default=0)
    C.check(f"e1 {ANSWERS} large answers: 200 or 503 busy with Retry-After", ok,
            f"{tally(answers)}; 200 answers of {', '.join('%d' % s for s in sizes) or '-'} "
            f"bytes, {len(shas)} distinct; slowest {secs:.1f} s"
            + ("; the server DIED" if died else ""))
    check_memory(f"e2 {ANSWERS} large answers", mem, ANSWER_INFLIGHT_MB + SLACK_MB)
    if after is None:
        C.check("e3 RSS after the answers", False, "the server is gone")
    else:
        C.check(f"e3 RSS {SETTLE_S:g} s after the answers within {RESIDUAL_MB:g} MiB of before",
                after - mem.base <= RESIDUAL_MB * 1024,
                f"{mb(after):.0f} MiB after, {mb(mem.base):.0f} MiB before: "
                f"{mb(after - mem.base):+.0f} MiB")
    stop(srv)
    info(f"e: {time.monotonic() - t0:.1f} s")


# ---- main ----------------------------------------------------------------------------------------


def main():
    t0 = time.monotonic()
    env = Env()
    print(f"symd: {L.symd_bin()}; scratch {env.tmp}; RSS guard {RSS_CAP_MB} MiB; "
          f"form: {'full' if FULL else 'CI'}")
    missing = [f for f, ok in env.new_flags.items() if not ok]
    C.check("the server knows " + ", ".join(NEW_FLAGS), not missing,
            "missing: " + ", ".join(missing) if missing else
            f"passed: factor {FACTOR:g}, {ALLOW_MB:g} MiB, wait {ADMISSION_WAIT_S:g} s")
    db = "main.db"
    try:
        srv = env.start(db)
        try:
            ok, detail = upload_bigapp(srv.port)
        finally:
            stop(srv)
        C.check("upload bigapp-arm64 and its dSYM", ok, detail)
        for p in PHASES:
            tp = time.monotonic()
            fn = {"a": lambda: phase_a(env, db), "b": lambda: phase_b(env, db),
                  "d": lambda: phase_d(env), "e": lambda: phase_e(env, db)}.get(p)
            if fn is None:
                C.check(f"phase {p}", False, "unknown phase (MEM_PHASES: a,b,d,e)")
                continue
            try:
                fn()
            except Exception as e:  # a server that does not start, a bug: say so, go on
                C.check(f"phase {p} ran to its end", False, f"{type(e).__name__}: {e}")
            print(f"phase {p}: {time.monotonic() - tp:.1f} s")
    finally:
        for s in env.servers:  # one a failed step left running
            s.kill9()
        if KEEP:
            print(f"kept {env.tmp}")
        else:
            shutil.rmtree(env.tmp, ignore_errors=True)
    print(f"total {time.monotonic() - t0:.1f} s")
    return C.finish()


if __name__ == "__main__":
    sys.exit(main())
