#!/usr/bin/env python3
"""Connection slots under a slow-header flood (issue 17, item 5).

  python3 tests/load/attack_slots.py

Starts `symd serve --listen 127.0.0.1:0` with the default limits
(--max-connections 1000, --max-per-ip 200, --header-timeout 10) and opens
SLOTS_PER_ADDR (200) slow-header connections from each of SLOTS_ADDRS (6)
loopback addresses, 127.0.0.2 on: 1,200 clients for 1,000 slots. Each sends
a partial request line, then a header line now and then, and never ends its
headers; one the server closes (evicted, or cut by --header-timeout)
connects again at once (SLOTS_RECONNECT_RATE, 1,000 a second in all), as
an attacker would, so the slots stay under pressure for the whole run (SLOTS_ATTACK_SECONDS, 14: past the 10 s header
timeout).

Checks, one line each:
- the 201st connection from one address is closed at once (end of file or
  reset within 100 ms), and so is one while every slot is taken;
- a client from a new address (127.0.0.8) gets GET /healthz answered within
  SLOTS_NEWCOMER_MS (100) ms, SLOTS_NEWCOMER_TRIES (20) times over the run;
- the slow clients hold their share: most of the 1,000 slots, no address
  over --max-per-ip, none squeezed out (each at least half of an even
  share), and a kept-alive client of another address (127.0.0.9) keeps its
  connection through the flood and is answered on it;
- server RSS stays under SLOTS_RSS_MAX_MB (256);
- once the flood stops, /healthz answers, /metrics counts the refused and
  evicted connections, and SIGTERM exits 0.

Loopback only; every loop is bounded (about 25 s in all). Ends with
"N passed, N failed"; exit status 1 on any failure. SYMD_BIN as for the
other load tests.
"""
import collections
import os
import re
import resource
import select
import shutil
import socket
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symdlib as L  # noqa: E402

PER_ADDR = L.env_int("SLOTS_PER_ADDR", 200)
ADDRS = L.env_int("SLOTS_ADDRS", 6)
ATTACK_SECONDS = L.env_float("SLOTS_ATTACK_SECONDS", 14.0)
NEWCOMER_MS = L.env_float("SLOTS_NEWCOMER_MS", 100.0)
NEWCOMER_TRIES = L.env_int("SLOTS_NEWCOMER_TRIES", 20)
NEWCOMER_WAIT = L.env_float("SLOTS_NEWCOMER_WAIT", 1.0)  # seconds before a try is a miss
RSS_MAX_MB = L.env_int("SLOTS_RSS_MAX_MB", 256)
RECONNECT_RATE = L.env_float("SLOTS_RECONNECT_RATE", 1000.0)  # a second, all clients
MAX_CONNS = 1000  # the defaults the server runs with
MAX_PER_IP = 200

ATTACKERS = [f"127.0.0.{2 + i}" for i in range(ADDRS)]
NEWCOMER = "127.0.0.8"
RESIDENT = "127.0.0.9"


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = ADDRS * PER_ADDR + 512
    if soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(hard, max(want, soft))
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def connect_from(src, port, timeout=2.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def closed_within(s, seconds):
    """True when the server ends the connection (EOF or reset) within seconds."""
    s.settimeout(seconds)
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (socket.timeout, OSError):
        return False


def http_get(sock, path, keep_alive=False, timeout=1.0):
    """GET path on sock; (status, body) or raises (socket.timeout on no answer)."""
    sock.settimeout(timeout)
    conn = "keep-alive" if keep_alive else "close"
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: {conn}\r\n\r\n".encode())
    buf = b""
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in buf:
        if time.monotonic() > deadline:
            raise socket.timeout("headers")
        d = sock.recv(65536)
        if not d:
            raise ConnectionError("closed before the answer")
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    want = int(m.group(1)) if m else None
    while want is None or len(body) < want:
        if time.monotonic() > deadline:
            raise socket.timeout("body")
        d = sock.recv(65536)
        if not d:
            if want is None:
                break
            raise ConnectionError("closed in the body")
        body += d
    return status, body


class Flood:
    """The slow-header clients: per address, a list of open sockets."""

    def __init__(self, port):
        self.port = port
        self.socks = {a: [] for a in ATTACKERS}
        self.reconnects = 0
        self.closed_seen = 0
        self.connect_fail = 0
        self.next_drip = 0.0
        self.owed = collections.deque()  # the addresses of closed clients, in order
        self.budget, self.budget_t = 0.0, time.monotonic()

    def open_one(self, addr):
        try:
            s = connect_from(addr, self.port)
            s.setblocking(False)
            s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            self.connect_fail += 1
            return False
        self.socks[addr].append(s)
        return True

    def open_all(self, per_addr, addrs):
        for a in addrs:
            while len(self.socks[a]) < per_addr:
                if not self.open_one(a):
                    break

    def reap(self, timeout=0.0):
        """Drops the sockets the server ended; returns how many per address."""
        p = select.poll()
        where = {}
        for a, lst in self.socks.items():
            for s in lst:
                p.register(s, select.POLLIN | select.POLLERR | select.POLLHUP)
                where[s.fileno()] = (a, s)
        ended = {a: 0 for a in self.socks}
        for fd, _ in p.poll(timeout * 1000):
            a, s = where[fd]
            try:
                d = s.recv(4096)
                if d:  # an answer to an unfinished request: the server gave up on it
                    pass
            except BlockingIOError:
                continue
            except OSError:
                pass
            self.socks[a].remove(s)
            s.close()
            ended[a] += 1
            self.closed_seen += 1
        return ended

    def tick(self):
        """Reconnects the clients the server closed (RECONNECT_RATE a second
        in all), drips a header line into every open one once a second."""
        ended = self.reap()
        now = time.monotonic()
        self.budget = min(self.budget + (now - self.budget_t) * RECONNECT_RATE, 100.0)
        self.budget_t = now
        for a in ATTACKERS:  # interleaved: no address waits behind another
            self.owed.extend([a] * ended[a])
        while self.owed and self.budget >= 1:
            a = self.owed.popleft()
            self.budget -= 1
            if len(self.socks[a]) < PER_ADDR and self.open_one(a):
                self.reconnects += 1
        if now >= self.next_drip:
            self.next_drip = now + 1.0
            for lst in self.socks.values():
                for s in lst:
                    try:
                        s.send(b"X-Slow: 1\r\n")
                    except OSError:
                        pass

    def open_counts(self):
        """Open clients per address once the server has closed what it
        closes at once (no reconnects meanwhile; at most 1 s)."""
        deadline = time.monotonic() + 1.0
        while any(self.reap(0.1).values()) and time.monotonic() < deadline:
            pass
        return {a: len(lst) for a, lst in self.socks.items()}

    def close_all(self):
        for lst in self.socks.values():
            for s in lst:
                s.close()
            lst.clear()


def newcomer(port):
    """Seconds for GET /healthz from a new address, or None (no answer
    within NEWCOMER_WAIT)."""
    t0 = time.monotonic()
    try:
        s = connect_from(NEWCOMER, port, NEWCOMER_WAIT)
        try:
            st, body = http_get(s, "/healthz", timeout=NEWCOMER_WAIT)
        finally:
            s.close()
        if st != 200:
            return None
    except OSError:
        return None
    return time.monotonic() - t0


def main():
    nofile = raise_nofile()
    checks = L.Checks()
    tmp = tempfile.mkdtemp(prefix="symd-slots-")
    srv = L.Server(os.path.join(tmp, "symd.db"), tmp, [], tag="slots")
    flood = None
    try:
        port = srv.start()
        print(f"--- symd on port {port}; {ADDRS} x {PER_ADDR} slow-header clients "
              f"(open-file limit {nofile})")
        base = newcomer(port)
        checks.check("GET /healthz answered before the flood", base is not None,
                     f"{base * 1000:.1f} ms" if base else "no answer")
        rss0 = srv.rss_kb()

        # --max-per-ip: the 201st connection of one address, the server not full
        flood = Flood(port)
        flood.open_all(PER_ADDR, ATTACKERS[:1])
        time.sleep(0.3)
        try:
            s = connect_from(ATTACKERS[0], port)
            t0 = time.monotonic()
            cut = closed_within(s, 0.5)
            dt = time.monotonic() - t0
            s.close()
        except OSError as e:
            cut, dt = True, 0.0  # refused at connect
            print(f"  (connect refused: {e})")
        checks.check(f"connection {PER_ADDR + 1} from {ATTACKERS[0]} closed at once",
                     cut and dt < 0.1, f"{dt * 1000:.1f} ms" if cut else "still open after 500 ms")

        # a kept-alive client of another address, answered once before the flood
        resident = connect_from(RESIDENT, port)
        st, _ = http_get(resident, "/healthz", keep_alive=True)

        # the flood: everyone else
        t_flood = time.monotonic()
        flood.open_all(PER_ADDR, ATTACKERS)
        opened = sum(len(v) for v in flood.socks.values())
        print(f"  opened {opened} slow-header connections in {time.monotonic() - t_flood:.1f} s "
              f"({flood.connect_fail} connects failed)")
        end = t_flood + ATTACK_SECONDS
        times, misses, when = [], 0, []
        every = ATTACK_SECONDS / (NEWCOMER_TRIES + 1)
        next_try = time.monotonic() + 1.0
        full_cut = None
        share = None
        rss_peak = 0
        while time.monotonic() < end:
            flood.tick()
            now = time.monotonic()
            if now >= next_try and len(times) + misses < NEWCOMER_TRIES:
                next_try = now + every
                dt = newcomer(port)
                if dt is None:
                    misses += 1
                else:
                    times.append(dt)
                    when.append((dt, now - t_flood))
                r = srv.rss_kb() or 0
                rss_peak = max(rss_peak, r)
            if share is None and now - t_flood > ATTACK_SECONDS / 2:
                share = flood.open_counts()
                # every slot taken: one more from an address holding its share is
                # closed at once. A slot may be free for a moment (a newcomer's
                # just closed, a slow client not back yet): one that stays open
                # has taken it and joins the flood, and the next try is made.
                full = max(share, key=share.get)
                for _ in range(5):
                    try:
                        s = connect_from(full, port)
                        t0 = time.monotonic()
                        cut = closed_within(s, 0.5)
                        full_cut = (cut, time.monotonic() - t0, full, share[full])
                    except OSError:
                        cut, full_cut = True, (True, 0.0, full, share[full])
                        break
                    if cut:
                        s.close()
                        break
                    s.setblocking(False)
                    flood.socks[full].append(s)
            time.sleep(0.005)
        while len(times) + misses < NEWCOMER_TRIES:  # bounded: NEWCOMER_WAIT each
            dt = newcomer(port)
            if dt is None:
                misses += 1
            else:
                times.append(dt)
        if share is None:
            share = flood.open_counts()

        worst = max(times) if times else None
        checks.check(f"GET /healthz from a new address within {NEWCOMER_MS:.0f} ms, "
                     f"{NEWCOMER_TRIES} times during the flood",
                     misses == 0 and worst is not None and worst * 1000 < NEWCOMER_MS,
                     f"{len(times)} answered, {misses} not within {NEWCOMER_WAIT:g} s; " +
                     (f"median {sorted(times)[len(times) // 2] * 1000:.1f} ms, "
                      f"worst {worst * 1000:.1f} ms" if times else "none answered"))
        print("  newcomer, slowest: " + ", ".join(f"{d * 1000:.1f} ms at {t:.1f} s"
                                                 for d, t in sorted(when, reverse=True)[:3]))
        held = sum(share.values())
        fair = MAX_CONNS / ADDRS
        print(f"  open slow clients mid-flood: {held} " +
              ", ".join(f"{a}:{n}" for a, n in share.items()) +
              f"; {flood.closed_seen} closed by the server, {flood.reconnects} reconnects")
        checks.check("the slow clients hold most of the slots",
                     held >= 0.8 * MAX_CONNS and held <= MAX_CONNS, f"{held} of {MAX_CONNS}")
        checks.check(f"no address over --max-per-ip, none under half an even share ({fair / 2:.0f})",
                     all(fair / 2 <= n <= MAX_PER_IP for n in share.values()),
                     f"{min(share.values())}..{max(share.values())}")
        if full_cut:
            cut, dt, a, n = full_cut
            checks.check(f"every slot taken: one more from {a} ({n} open) closed at once",
                         cut and dt < 0.1,
                         f"{dt * 1000:.1f} ms" if cut else "still open after 500 ms")
        try:
            st2, _ = http_get(resident, "/healthz", keep_alive=True)
            ok, why = st == 200 and st2 == 200, f"statuses {st}, {st2}"
        except OSError as e:
            ok, why = False, f"{type(e).__name__}: {e}"
        resident.close()
        checks.check(f"a kept-alive client of {RESIDENT} keeps its slot through the flood", ok, why)
        checks.check(f"server RSS under {RSS_MAX_MB} MB", 0 < rss_peak < RSS_MAX_MB * 1024,
                     f"{rss0} kB before, {rss_peak} kB at the peak")

        flood.close_all()
        time.sleep(0.3)
        after = newcomer(port)
        checks.check("GET /healthz after the flood", after is not None,
                     f"{after * 1000:.1f} ms" if after else "no answer")
        try:
            st, _, body = L.request(port, "GET", "/metrics", timeout=5)
            text = body.decode("utf-8", "replace")
            m = dict(re.findall(r'^(symd_connections_(?:refused|evicted)_total(?:\{[^}]*\})?) (\d+)',
                                text, re.M))
            refused = sum(int(v) for k, v in m.items() if "refused" in k)
            evicted = sum(int(v) for k, v in m.items() if "evicted" in k)
            checks.check("/metrics counts the refused and evicted connections",
                         st == 200 and refused >= 1 and evicted >= 1,
                         f"status {st}, refused {refused}, evicted {evicted}")
        except OSError as e:
            checks.check("/metrics counts the refused and evicted connections", False, str(e))
        code = srv.stop(timeout=20)
        checks.check("SIGTERM exits 0", code == 0, f"status {code}")
    except Exception as e:  # noqa: BLE001 -- reported as a failure
        checks.check("the run completed", False, f"{type(e).__name__}: {e}")
    finally:
        if flood:
            flood.close_all()
        srv.kill9()
        if checks.failed:
            tail = srv.stderr_tail()
            if tail:
                print("--- server stderr (tail)\n" + tail)
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
