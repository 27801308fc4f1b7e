#!/usr/bin/env python3
"""Hostile traffic interleaved with valid traffic against one `symd serve`.

  python3 tests/load/hostile.py                    # the CI form: 1000 hostile requests
  HOSTILE_COUNT=20000 python3 tests/load/hostile.py

HOSTILE_COUNT (1000) hostile requests from HOSTILE_THREADS (4) threads —
garbage bodies to every POST route, wrong content types, giant headers,
10k-frame symbolicate requests with random addresses, unknown routes, wrong
methods, truncated and garbled HTTP, invalid JSON, lying Content-Lengths,
bad UUIDs and crash ids, bad zips, broken Mach-O files, broken crash
reports, hostile multipart — while HOSTILE_VALID_THREADS (2) threads keep
sending valid requests (symbolicate known addresses, list images, GET an
image, healthz, GET a stored crash as JSON and text, POST a crash with
?store=false) whose answers must be exactly right: checked against
fixtures/expected/ and fixtures/crashes/twins.expected.tsv once, and equal
to that first answer every time after. Meanwhile HOSTILE_SLOWLORIS (6)
slow clients drip headers, a JSON body or an upload one byte a second,
stall after the headers, stay idle or never read a large answer; the
server (started with HOSTILE_SERVER_ARGS, default "--request-timeout 3
--idle-timeout 2") must close each within its timeout + HOSTILE_CUT_SLACK
(2) seconds: --idle-timeout for the idle one, --header-timeout (README: 10 s
unless HOSTILE_SERVER_ARGS sets it) for the one still sending headers,
--request-timeout for the others.

Pass: every valid answer correct; no 5xx for anything (the one exception:
505 to a request line naming HTTP/2.0 or 9.9, libmicrohttpd's protocol
answer, counted apart); every hostile request answered 4xx or closed (2xx
only where the README allows it, e.g. a valid request under a wrong
Content-Type); no hang; slow clients cut in time; images and blobs
unchanged (crashes: see retention below) and `PRAGMA integrity_check` ok; the server alive at the end
(/healthz and /metrics 200) and exiting 0 on SIGTERM.

Retention runs all along (symdlib's RETENTION_ARGS, --max-crashes 200
--prune-every 1, appended to HOSTILE_SERVER_ARGS): before the stored crash
the valid requests read, 200 synthetic crashes are stored, and while the
hostile requests run a churn thread posts up to 199 more
(HOSTILE_CHURN_RATE, 20 a second, until the slow clients are done), so
retention prunes the oldest beside the traffic while the stored crash stays
among the newest 200. At the end
the crashes are exactly the newest 200, the stored crash among them, every
crash counter equal to the crashes, and images and blobs unchanged. Ends with "N passed,
N failed"; exit status 1 on any failure. HOSTILE_SEED (1) fixes the random
choices so CI runs are repeatable; HOSTILE_SEED=random draws one (printed).
Other knobs: HOSTILE_IO_TIMEOUT (20 s: a hostile request neither answered
nor closed by then is a hang), SYMD_BIN.
"""
import collections
import http.client
import json
import os
import queue
import random
import re
import select
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symdlib as L  # noqa: E402

COUNT = L.env_int("HOSTILE_COUNT", 1000)
THREADS = L.env_int("HOSTILE_THREADS", 4)
VALID_THREADS = L.env_int("HOSTILE_VALID_THREADS", 2)
SLOWLORIS = L.env_int("HOSTILE_SLOWLORIS", 6)
SERVER_ARGS = shlex.split(os.environ.get("HOSTILE_SERVER_ARGS",
                                         "--request-timeout 3 --idle-timeout 2"))
CUT_SLACK = L.env_float("HOSTILE_CUT_SLACK", 2.0)
CHURN_RATE = L.env_float("HOSTILE_CHURN_RATE", 20.0)
IO_TIMEOUT = L.env_float("HOSTILE_IO_TIMEOUT", 20.0)
SEED = os.environ.get("HOSTILE_SEED") or "1"
if SEED == "random":
    SEED = str(random.SystemRandom().randrange(1 << 32))

FIX = L.FIX
CRASH_TEXT = os.path.join(FIX, "crashes", "bigapp-twin.crash")
CRASH_IPS = os.path.join(FIX, "crashes", "bigapp-twin.ips")


def arg_value(flag, default):
    if flag in SERVER_ARGS:
        i = SERVER_ARGS.index(flag)
        if i + 1 < len(SERVER_ARGS):
            return float(SERVER_ARGS[i + 1])
    return default


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- a raw HTTP client ------------------------------------------------------------


class Outcome:
    __slots__ = ("status", "headers", "body", "elapsed", "note", "hang", "dup_head")

    def __init__(self):
        self.status = None      # first status code, None: closed without an answer
        self.headers = {}
        self.body = b""
        self.elapsed = 0.0
        self.note = ""
        self.hang = False       # neither answered nor closed within IO_TIMEOUT
        self.dup_head = False   # a second status line where the body should be


def parse_response(buf):
    """(status, headers, body, complete) of the first response in buf."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None, {}, b"", False
    head = buf[:end].decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/\d\.\d (\d{3})", head[0])
    if not m:
        return None, {}, b"", False
    headers = {}
    for line in head[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    body = buf[end + 4:]
    st = int(m.group(1))
    if 100 <= st < 200:  # 100 Continue: the real answer follows
        s2, h2, b2, c2 = parse_response(body)
        return (s2, h2, b2, c2) if s2 else (None, {}, b"", False)
    cl = headers.get("content-length")
    if cl is not None and cl.isdigit():
        return st, headers, body[:int(cl)], len(body) >= int(cl)
    return st, headers, body, False


def raw_exchange(port, data, shut_wr=True, timeout=None, pause=None, rest=b""):
    """Sends data (then, after pause seconds, rest), half-closes unless told
    not to, and reads the answer until it is complete or the server closes."""
    timeout = timeout or IO_TIMEOUT
    o = Outcome()
    t0 = time.monotonic()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    buf = b""
    try:
        s.connect(("127.0.0.1", port))
        try:
            s.sendall(data)
            if pause:
                time.sleep(pause)
                s.sendall(rest)
            if shut_wr:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError, OSError) as e:
            o.note = f"send: {type(e).__name__}"
        while True:
            try:
                d = s.recv(1 << 16)
            except socket.timeout:
                o.hang = True
                break
            except (ConnectionResetError, OSError) as e:
                o.note += f" recv: {type(e).__name__}"
                break
            if not d:
                break
            buf += d
            st, _, _, complete = parse_response(buf)
            if complete:
                break
    finally:
        s.close()
    o.elapsed = time.monotonic() - t0
    o.status, o.headers, o.body, _ = parse_response(buf)
    if o.status is None and buf:
        m = re.match(rb"HTTP/\d\.\d (\d{3})", buf)
        if m:
            o.status = int(m.group(1))
    o.dup_head = o.body.startswith(b"HTTP/1.")
    if o.status is not None:
        o.hang = False
    return o


def http_req(method, path, body=b"", headers=None, version="HTTP/1.1"):
    h = {"Host": "127.0.0.1", "Connection": "close"}
    if body or method in ("POST", "PUT", "PATCH"):
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    lines = [f"{method} {path} {version}"] + [f"{k}: {v}" for k, v in h.items() if v is not None]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


# ---- hostile cases --------------------------------------------------------------------

A4 = "4xx or closed"
A24 = "2xx, 4xx or closed"
A200 = "200"


def allowed(rule, st):
    if rule == A4:
        return st is None or 400 <= st < 500
    if rule == A24:
        return st is None or 200 <= st < 300 or 400 <= st < 500
    if rule == A200:
        return st == 200
    if rule == "505":
        return st is None or 400 <= st < 500 or st == 505
    raise ValueError(rule)


class Case:
    __slots__ = ("cat", "name", "data", "rule", "shut_wr", "check", "pause", "rest")

    def __init__(self, cat, name, data, rule=A4, shut_wr=True, check=None, pause=None, rest=b""):
        self.cat, self.name, self.data, self.rule = cat, name, data, rule
        self.shut_wr, self.check, self.pause, self.rest = shut_wr, check, pause, rest


class Gen:
    """Builds hostile cases from real fixtures and random bytes."""

    def __init__(self, rng, fx):
        self.r = rng
        self.fx = fx
        self.bigapp = read(L.BIGAPP)
        self.dsym = read(L.BIGAPP_DSYM)
        self.libfix = read(L.LIBFIX)
        self.crash = read(CRASH_TEXT)
        self.ips = read(CRASH_IPS)
        self.zips = {n: read(os.path.join(FIX, "zip", n)) for n in (
            "bad-crc.zip", "bomb.zip", "corrupt-macho.zip", "encrypted.zip", "liar-huge.zip",
            "liar-small.zip", "method97.zip", "no-macho.zip", "truncated.zip", "many.zip")}
        self.good_zip = read(os.path.join(FIX, "zip", "dsym-single.zip"))
        self.bzip_bomb = read(os.path.join(FIX, "zip", "bomb-bzip2.zip"))
        self.bombs_left = 2  # 256 MiB of bzip2 zeros each: only a couple
        self.valid_sym = fx["sym_body"]
        self.turn = {}

    def cycle(self, key, seq):
        """The fixed variants of a case in turn (from a random start), so
        every one of them is sent once a category has had len(seq) turns."""
        if key not in self.turn:
            self.turn[key] = self.r.randrange(len(seq))
        self.turn[key] += 1
        return seq[self.turn[key] % len(seq)]

    def rb(self, lo, hi):
        return self.r.randbytes(self.r.randint(lo, hi))

    # -- categories: each returns one Case
    def garbage_body(self):
        route = self.r.choice(["/v1/images", "/v1/images?name=x", "/v1/symbolicate",
                               "/v1/crashes", "/v1/crashes?store=false"])
        kind = self.r.randrange(8)
        if kind == 0:
            body = b""
        elif kind == 1:
            body = self.rb(1, 65536)
        elif kind == 2:
            body = bytes(self.r.choice(b"{}[],:\"0123456789abcdefx \n\\") for _ in
                         range(self.r.randint(1, 4000)))
        elif kind == 3:
            body = struct.pack("<I", 0xFEEDFACF) + self.rb(0, 5000)
        elif kind == 4:
            body = struct.pack(">II", 0xCAFEBABE, self.r.choice([0, 1, 2, 0xFFFFFFFF])) + \
                self.rb(0, 5000)
        elif kind == 5:
            body = b"PK\x03\x04" + self.rb(0, 5000)
        elif kind == 6:
            body = b"\x00" * self.r.randint(1, 100000)
        elif self.r.random() < 0.5:
            # crash-report-like text with invalid UTF-8: refused by every other
            # route; a crash report with unreadable lines is read with warnings
            # (never stored here: store=false)
            body = b"Incident Identifier: x\nThread 0 Crashed:\n" + b"".join(
                self.r.choice([b"0 a 0x1 0x0 + 1\n", b"\xff\xfe\n", b"\xc0\x80\n", b"Binary Images:\n"])
                for _ in range(50)) + b"\xff\n"
            if route.startswith("/v1/crashes"):
                route = "/v1/crashes?store=false"
                return Case("garbage_body", f"POST {route} {len(body)} bytes crash-like text, bad UTF-8",
                            http_req("POST", route, body), A24)
        else:
            # crash-report-like text the lenient text parser may take as a
            # report: never stored (store=false), any 2xx/4xx
            body = ("Incident Identifier: x\n" + "".join(
                self.r.choice(["Thread 0 Crashed:\n", "0 a 0x1 0x0 + 1\n", "\xff\n",
                               "Binary Images:\n", "x" * 300 + "\n"]) for _ in range(50))
                    ).encode()
            if route.startswith("/v1/crashes"):
                route = "/v1/crashes?store=false"
                return Case("garbage_body", f"POST {route} {len(body)} bytes crash-like text",
                            http_req("POST", route, body), A24)
        return Case("garbage_body", f"POST {route} {len(body)} bytes kind {kind}",
                    http_req("POST", route, body))

    def wrong_content_type(self):
        k = self.r.randrange(6)
        if k == 0:
            return Case("wrong_content_type", "Mach-O as multipart with a boundary",
                        http_req("POST", "/v1/images", self.bigapp,
                                 {"Content-Type": "multipart/form-data; boundary=zzz"}))
        if k == 1:
            return Case("wrong_content_type", "multipart without a boundary",
                        http_req("POST", "/v1/images", b"--x\r\n\r\n",
                                 {"Content-Type": "multipart/form-data"}))
        if k == 2:
            return Case("wrong_content_type", "Mach-O as JSON to /v1/symbolicate",
                        http_req("POST", "/v1/symbolicate", self.libfix,
                                 {"Content-Type": "application/json"}))
        if k == 3:
            ct = self.r.choice(["image/png", "text/html", "application/x-www-form-urlencoded",
                                "\x01\x02", "a" * 2000, "multipart/mixed; boundary=q"])
            return Case("wrong_content_type", f"valid symbolicate as {ct[:20]!r}",
                        http_req("POST", "/v1/symbolicate", self.valid_sym,
                                 {"Content-Type": ct}), A24, check="symbolicate")
        if k == 4:
            return Case("wrong_content_type", "crash report as multipart",
                        http_req("POST", "/v1/crashes?store=false", self.crash,
                                 {"Content-Type": "multipart/form-data; boundary=b"}), A24)
        return Case("wrong_content_type", "urlencoded garbage upload",
                    http_req("POST", "/v1/images", b"a=b&c=%zz&" + self.rb(0, 300),
                             {"Content-Type": "application/x-www-form-urlencoded"}))

    def giant_headers(self):
        k = self.r.randrange(5)
        if k == 0:
            d = http_req("GET", "/healthz", b"", {"X-Big": "a" * 100_000})
            n = "100 KB header"
        elif k == 1:
            d = http_req("GET", "/v1/images", b"", {f"X-H{i}": "v" for i in range(3000)})
            n = "3000 headers"
        elif k == 2:
            d = http_req("POST", "/v1/symbolicate", self.valid_sym, {"Cookie": "c=" + "x" * 200_000})
            n = "200 KB cookie on a symbolicate"
        elif k == 3:
            d = http_req("GET", "/" + "a" * 100_000, b"")
            n = "100 KB URL"
        else:
            d = http_req("GET", "/v1/images?query=" + "%41" * 30_000, b"")
            n = "90 KB query string"
        return Case("giant_headers", n, d)

    def big_symbolicate(self):
        n = 10_000
        frames = []
        for _ in range(n):
            k = self.r.randrange(4)
            if k == 0:
                frames.append("0x%x" % self.r.getrandbits(64))
            elif k == 1:
                frames.append("0x%x" % (L.LOAD_ADDRESS + self.r.randrange(0x4000)))
            elif k == 2:
                frames.append({"address": "0x%x" % (L.LOAD_ADDRESS + self.r.randrange(-0x1000, 0x5000)),
                               "adjust": self.r.choice(["none", "caller", "auto"])})
            else:
                frames.append({"address": self.r.getrandbits(48), "image": self.r.randrange(2)})
        doc = {"images": [{"uuid": L.BIGAPP_UUID, "arch": "arm64",
                           "load_address": "0x%x" % L.LOAD_ADDRESS},
                          {"uuid": "%08X-0000-0000-0000-000000000000" % self.r.getrandbits(32),
                           "slide": "0x%x" % self.r.getrandbits(40)}],
               "threads": [{"id": 0, "frames": frames}]}
        body = json.dumps(doc).encode()
        return Case("big_symbolicate", f"{n} random frames", http_req("POST", "/v1/symbolicate", body),
                    A200, check=("frames", n))

    def unknown_route(self):
        p = self.cycle("route", [
            "/v2/images", "/v1/imagesX", "/v1/images/a/b", "/v1/symbolicate/x", "//v1/images",
            "/../../etc/passwd", "/v1/%2e%2e/%2e%2e/etc/passwd", "/%00", "/v1/crashes/1/2",
            "/v1/crashes/groups/x", "/healthz/", "/HEALTHZ", "/v1/missing/x", "/assets/../symd.db",
            "/assets/%2e%2e%2fsymd.db", "/metrics/x", "/" + "x/" * 500, "/v1/images%00",
            "/\xff\xfe", "/v1/images?%zz=%", "*", "http://evil.example/v1/images",
            "/" + self.r.randbytes(20).hex()])
        m = self.cycle("route_method", ["GET", "POST", "DELETE", "GET"])
        rule = A24 if p in ("/v1/images?%zz=%", "http://evil.example/v1/images") and m == "GET" else A4
        return Case("unknown_route", f"{m} {p[:40]}", http_req(m, p, b"x" if m == "POST" else b""),
                    rule)

    def wrong_method(self):
        m, p = self.cycle("method", [
            ("GET", "/v1/symbolicate"), ("PUT", "/v1/images"), ("DELETE", "/v1/symbolicate"),
            ("PATCH", "/healthz"), ("PUT", "/v1/crashes/1"), ("POST", "/v1/images/" + L.BIGAPP_UUID),
            ("DELETE", "/v1/crashes"), ("POST", "/healthz"), ("POST", "/metrics"),
            ("FOO", "/healthz"), ("get", "/healthz"), ("TRACE", "/"), ("OPTIONS", "*"),
            ("CONNECT", "127.0.0.1:443"), ("BREW", "/v1/images"), ("G\x00ET", "/healthz"),
            ("POST", "/v1/missing"), ("DELETE", "/v1/crashes/groups"), ("HEAD", "/v1/symbolicate")])
        return Case("wrong_method", f"{m!r} {p}", http_req(m, p, b"{}" if m in ("PUT", "PATCH", "POST") else b""))

    def garbled_http(self):
        k = self.r.randrange(14)
        rule, shut, name = A4, True, ""
        if k == 0:
            d, name = self.rb(1, 3000), "random bytes"
        elif k == 1:
            d, name = b"GET /healthz HTTP/1.1\r\nHost: x", "headers cut, then EOF"
        elif k == 2:
            d, name = b"GET", "bare method, then EOF"
        elif k == 3:
            d, name = b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n", "header without a colon"
        elif k == 4:
            d, name = b"GET /healthz HTTP/1.1\r\nHost: x\r\n continued\r\n\r\n", "obs-fold"
            # 400 (server/http_framing.c; attack_framing.py checks the close)
        elif k == 5:
            d, name = b"GET /healthz HTTP/1.1\r\nX-A: a\x00b\r\n\r\n", "NUL in a header value"
        elif k == 6:
            d, name = b"GET /healthz HTTP/1.1\rHost: x\r\r", "bare CRs"
        elif k == 7:
            body = self.valid_sym
            d = http_req("POST", "/v1/symbolicate", body)[:-len(body) // 2]
            name = "body cut in half, then EOF"
        elif k == 8:
            d = http_req("GET", "/healthz", b"", version=self.r.choice(["HTTP/2.0", "HTTP/9.9"]))
            rule, name = "505", "unsupported HTTP version"
        elif k == 9:
            d, name = b"GET /healthz\r\n\r\n", "HTTP/0.9 request line"
        elif k == 10:
            d = (b"POST /v1/symbolicate HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n")
            name = "Content-Length and chunked (smuggling)"  # 400, closed
        elif k == 11:
            d = (b"POST /v1/symbolicate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 + self.r.choice([b"zz\r\nabc\r\n", b"ffffffffffffffffff\r\n", b"5\r\nab", b"-1\r\n"]))
            name = "broken chunked body"
        elif k == 12:
            d = http_req("GET", "/healthz", b"", {"Connection": None}) * 2 + self.rb(5, 50)
            name, rule = "two pipelined requests then garbage", A24
        else:
            d, name = b"\r\n" * 1000 + b"GET /healthz HTTP/1.1\r\n\r\n", "1000 empty lines first"
            rule = A24
        return Case("garbled_http", name, d, rule, shut)

    def invalid_json(self):
        v = self.valid_sym
        k = self.r.randrange(16)
        rule = A4
        if k == 0:
            b, n = v[:self.r.randrange(1, len(v) - 1)], "valid request truncated"
        elif k == 1:
            b, n = b'{"images": 5, "threads": []}', "images is a number"
        elif k == 2:
            b, n = b'{"images": [], "images": [], "threads": []}', "duplicate key"
        elif k == 3:
            depth = self.r.choice([1000, 100_000, 1_000_000])
            b, n = b"[" * depth + b"]" * depth, f"nesting {depth} deep"
        elif k == 4:
            b, n = b'{"images": [], "threads": [{"id": 1e999999, "frames": ["0x1"]}]}', "huge number"
        elif k == 5:
            b, n = b'{"images": [], "threads": [{"frames": ["0x1ffffffffffffffffffff"]}]}', "address > 64 bits"
        elif k == 6:
            b, n = b'{"images": [], "threads": [{"frames": [-5]}]}', "negative address"
        elif k == 7:
            b, n = b'{"images": [{"uuid": "\xff\xfe\xc0\x80", "slide": "0x0"}], "threads": []}', "invalid UTF-8"
        elif k == 8:
            b, n = b'{"images": [{"uuid": "4C4C4490\\u0000", "slide": "0"}], "threads": []}', "NUL in uuid"
        elif k == 9:
            b, n = v + b"garbage", "trailing garbage"
        elif k == 10:
            b, n = b"\xef\xbb\xbf" + v, "UTF-8 BOM"
            rule = A24
        elif k == 11:
            b = json.dumps({"images": [{"uuid": L.BIGAPP_UUID, "load_address": "0x1"}],
                            "threads": [{"frames": [{"address": "0x1", "image": self.r.choice(
                                [99999, -1, 2 ** 40, "nope", 1.5])}]}]}).encode()
            n = "frame image index out of range"
        elif k == 12:
            b = json.dumps({"images": [], "threads": [{"frames": ["0x1"]}],
                            "adjust": self.r.choice(["sideways", 5, None, ""])}).encode()
            n = "bad adjust"
        elif k == 13:
            b = b'{"images": [], "threads": [{"frames": [' + b",".join([b'"0x1"'] * 200_001) + b"]}]}"
            n = "200,001 frames"
        elif k == 14:
            imgs = ",".join('{"uuid":"%s","slide":"0x0"}' % L.BIGAPP_UUID for _ in range(10_001))
            b, n = ('{"images":[%s],"threads":[]}' % imgs).encode(), "10,001 images"
        else:
            b = bytearray(v)
            for _ in range(self.r.randint(1, 8)):
                b[self.r.randrange(len(b))] = self.r.randrange(256)
            b, n, rule = bytes(b), "valid request with flipped bytes", A24
        return Case("invalid_json", n, http_req("POST", "/v1/symbolicate", b), rule)

    def huge_content_length(self):
        k = self.r.randrange(7)
        cl = ["1000000", "99999999999", "18446744073709551616", "-5", "abc", "1e3", "0x10"][k]
        d = (f"POST {self.r.choice(['/v1/symbolicate', '/v1/images', '/v1/crashes'])} HTTP/1.1\r\n"
             f"Host: x\r\nContent-Length: {cl}\r\n\r\n").encode()
        if self.r.random() < 0.3:
            d = d[:-2] + b"Content-Length: 3\r\n\r\n"
            cl += " twice"
        return Case("huge_content_length", f"Content-Length: {cl}, no body, EOF", d)

    def bad_uuid(self):
        k = self.r.randrange(4)
        u = self.cycle("uuid", [
            "", "zzzz", "4C4C4490555531", "4C4C4490-5555-3144-A17C-64A339EDE13", L.BIGAPP_UUID + "0",
            "4C4C-4490-5555-3144-A17C-64A339EDE13A", "%C3%A9" * 16, "%00" * 16, "g" * 32,
            "4C4C4490 5555 3144 A17C 64A339EDE13A", "x" * 5000, "-" * 36, "{%s}" % L.BIGAPP_UUID,
            "4c4c4490-5555-3144-a17c-64a339ede13a-", "%2F..%2F", "0x4C4C4490"])
        if k == 0:
            # "/v1/images/" is the listing (README), anything else not a UUID is 400
            return Case("bad_uuid", f"GET image {u[:20]!r}", http_req("GET", "/v1/images/" + u),
                        A24 if u == "" else A4)
        if k == 1:
            return Case("bad_uuid", f"DELETE image {u[:20]!r}", http_req("DELETE", "/v1/images/" + u))
        if k == 2:
            ok = "%08X-1111-2222-3333-444444444444" % self.r.getrandbits(32)  # never uploaded
            m = self.r.choice(["GET", "DELETE"])
            return Case("bad_uuid", f"{m} unknown UUID", http_req(m, "/v1/images/" + ok))
        cid = self.cycle("crash_id", ["abc", "0", "-1", "99999999999999999999", "1.5", "%00", "1e3",
                             "999999", "0x1", "%201", "+1", "1%00x"])
        # ids are read like addresses: 0x1 is crash 1
        return Case("bad_uuid", f"GET crash {cid!r}", http_req("GET", "/v1/crashes/" + cid),
                    A24 if cid == "0x1" else A4)

    def bad_zip(self):
        k = self.r.randrange(4)
        if k == 0:
            n = self.r.choice(sorted(self.zips))
            d = self.zips[n]
        elif k == 1:
            n = "dsym-single.zip truncated"
            d = self.good_zip[:self.r.randrange(4, len(self.good_zip) - 1)]
        elif k == 2 and self.bombs_left > 0:
            self.bombs_left -= 1
            n, d = "bomb-bzip2.zip (256 MiB of zeros)", self.bzip_bomb
        else:
            n, d = "zip magic and garbage", b"PK\x03\x04" + self.rb(26, 3000)
        return Case("bad_zip", n, http_req("POST", "/v1/images", d))

    def bad_macho(self):
        src = self.r.choice([self.bigapp, self.libfix, self.dsym])
        k = self.r.randrange(5)
        if k == 0:
            d, n = src[:self.r.randrange(1, len(src) - 1)], "truncated"
        elif k == 1:
            d = bytearray(src)
            struct.pack_into("<I", d, 16, 0xFFFFFFFF)  # ncmds
            d, n = bytes(d), "ncmds 0xffffffff"
        elif k == 2:
            d = bytearray(src)
            struct.pack_into("<I", d, 20, len(src) * 2)  # sizeofcmds past the file
            d, n = bytes(d), "sizeofcmds past the end"
        elif k == 3:
            d = bytearray(src)
            o = L.macho_uuid_offset(src) - 8
            struct.pack_into("<I", d, o, 0x7FFFFFF0)  # LC_UUID becomes an unknown command
            d, n = bytes(d), "LC_UUID removed"
        else:
            d = struct.pack(">II", 0xCAFEBABE, 2) + struct.pack(">5I", 0x0100000C, 0, 4096,
                                                                 0xFFFFFFF0, 14) * 2
            n = "fat header with slices past the end"
        return Case("bad_macho", n, http_req("POST", "/v1/images?name=hostile", d))

    def bad_crash(self):
        k = self.r.randrange(6)
        rule = A4
        if k == 0:
            d, n, rule = self.crash[:self.r.randrange(1, len(self.crash))], "truncated .crash", A24
        elif k == 1:
            d, n, rule = self.ips[:self.r.randrange(1, len(self.ips))], "truncated .ips", A24
        elif k == 2:
            first, _, rest = self.ips.partition(b"\n")
            # a JSON body that does not parse: its header is read, with a warning
            d, n, rule = first + b"\n{" + rest[: len(rest) // 3], ".ips body broken", A24
        elif k == 3:
            d, n = b"Incident Identifier: x\n" + b"A" * 2_000_000 + b"\n", "2 MB line"
        elif k == 4:
            d = self.crash.replace(b"0x0000000104a389f8 0x104a38000 + 2552",
                                   b"0x" + b"f" * 40 + b" 0x" + b"f" * 40 + b" + 99999999999999999999")
            n, rule = "absurd frame numbers", A24
        else:
            d = b'{"bug_type":"309"}\n' + json.dumps({"threads": [{"frames": [{"imageIndex": 99999,
                                                                             "imageOffset": -1}]}],
                                                    "usedImages": "x"}).encode()
            n, rule = ".ips with wrong types", A24
        return Case("bad_crash", n, http_req("POST", "/v1/crashes?store=false", d), rule)

    def multipart(self):
        b = "b0undary"
        k = self.r.randrange(5)
        ct = {"Content-Type": f"multipart/form-data; boundary={b}"}
        if k == 0:
            parts = b"".join(f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f{i}\"\r\n\r\n".encode()
                             + b"x\r\n" for i in range(100))
            d, n = parts + f"--{b}--\r\n".encode(), "100 file parts"
        elif k == 1:
            d, n = f"--{b}\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nv\r\n--{b}--\r\n".encode(), "no file part"
        elif k == 2:
            d = (f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n".encode()
                 + self.libfix[:5000])
            n = "unterminated part (truncated Mach-O)"
        elif k == 3:
            d = (f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + "a" * 50_000 + "\"\r\n\r\n"
                 ).encode() + self.rb(10, 100) + f"\r\n--{b}--\r\n".encode()
            n = "50 KB part header"
        else:
            d = f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"g\"\r\n\r\n".encode() + \
                self.rb(100, 5000) + f"\r\n--{b}--\r\n".encode()
            n = "garbage file part"
        return Case("multipart", n, http_req("POST", "/v1/images", d, ct))

    def bad_query(self):
        p = self.cycle("query", ["/v1/images?limit=0", "/v1/images?limit=-1", "/v1/images?limit=1001",
                           "/v1/images?limit=99999999999999999999", "/v1/images?cursor=abc",
                           "/v1/images?cursor=-1", "/v1/crashes?limit=x",
                           "/v1/crashes/groups?limit=1e3", "/v1/missing?limit=%00",
                           "/v1/crashes?limit=1001", "/v1/missing?limit=0"])
        rule = A4
        if self.r.random() < 0.2:  # lenient forms: any 2xx/4xx
            p = self.r.choice(["/v1/crashes?cursor=0x10", "/v1/images?limit=1&limit=" + "9" * 100,
                               "/v1/images?query=%ff%fe", "/v1/images?arch=" + "x" * 5000])
            rule = A24
        return Case("bad_query", p[:50], http_req("GET", p), rule)


CATEGORIES = [  # (name, weight)
    ("garbage_body", 12), ("wrong_content_type", 6), ("giant_headers", 4),
    ("big_symbolicate", 4), ("unknown_route", 8), ("wrong_method", 8), ("garbled_http", 10),
    ("invalid_json", 14), ("huge_content_length", 5), ("bad_uuid", 8), ("bad_zip", 6),
    ("bad_macho", 6), ("bad_crash", 6), ("multipart", 4), ("bad_query", 4)]


# ---- valid requests and their exact answers -----------------------------------------------


def twins_check(doc):
    """The crashed thread of a symbolicated bigapp-twin report against
    fixtures/crashes/twins.expected.tsv. None or what is wrong."""
    with open(os.path.join(FIX, "crashes", "twins.expected.tsv")) as f:
        rows = [r.rstrip("\n").split("\t") for r in f][1:]
    th = [t for t in doc.get("threads", []) if t.get("crashed")]
    if len(th) != 1:
        return "no single crashed thread"
    groups = []
    for fr in th[0]["frames"]:
        if groups and groups[-1][0]["address"] == fr["address"]:
            groups[-1].append(fr)
        else:
            groups.append([fr])
    if len(groups) != len(rows):
        return f"{len(groups)} frames, want {len(rows)}"
    for g, r in zip(groups, rows):
        _, addr, _img, uuid, vmaddr, _lookup, status, symbol, offset, levels = (r + [""] * 10)[:10]
        outer = g[-1]
        if int(outer["address"], 16) != int(addr, 16) or outer["status"] != status:
            return f"frame {addr}: {outer}"
        if outer.get("uuid", uuid if status == "missing_image" else "") != uuid:
            # a crash's missing_image frame carries no uuid (the report's
            # images[] has it); /v1/symbolicate's does
            return f"frame {addr}: uuid {outer.get('uuid')}"
        if status != "symbolicated":
            continue
        if (outer.get("vmaddr") != vmaddr or outer.get("symbol") != symbol
                or outer.get("offset") != int(offset)):
            return f"frame {addr}: {outer}"
        want = [x.strip() for x in levels.split("|")] if levels else []
        got = [f"{x['symbol']} ({x['file']}:{x['line']})" for x in g] if "file" in outer else []
        if got != want:
            return f"frame {addr}: levels {got}, want {want}"
    # grouped by the app's top frame (libfix is the app's) and the exception
    if doc.get("signature") != "fix_mul | EXC_BAD_ACCESS (SIGSEGV)":
        return f"signature {doc.get('signature')!r}"
    return None


def build_valid(port, fx):
    """[(name, method, path, body, headers, checker-of-first-answer)]"""
    syms = L.sym_table("bigapp-arm64")
    lines = L.line_table("bigapp-arm64")
    lsyms = L.sym_table("libfix-arm64.dylib")
    slide = L.LOAD_ADDRESS - L.BIGAPP_TEXT[0]
    lib_load = 0x1050f0000
    vms = sorted(v for v in syms if v in lines)
    want = []
    for v in vms:
        want += L.expected_frames(v, slide, syms, lines, image="bigapp", uuid=L.BIGAPP_UUID)
    for v in sorted(lsyms):
        want += L.expected_frames(v, lib_load, lsyms, None, image="libfix.dylib", uuid=L.LIBFIX_UUID)
    body = json.dumps({
        "images": [{"uuid": L.BIGAPP_UUID, "arch": "arm64", "load_address": "0x%x" % L.LOAD_ADDRESS},
                   {"uuid": L.LIBFIX_UUID, "load_address": "0x%x" % lib_load}],
        "threads": [{"id": 7, "name": "t", "crashed": True,
                     "frames": ["0x%x" % (v + slide) for v in vms] +
                               ["0x%x" % (v + lib_load) for v in sorted(lsyms)]}],
        "adjust": "none"}).encode()
    fx["sym_body"] = body

    def check_sym(st, data):
        if st != 200:
            return f"status {st}"
        return L.frames_mismatch(json.loads(data)["threads"][0]["frames"], want)

    def check_list(st, data):
        if st != 200:
            return f"status {st}"
        doc = json.loads(data)
        got = sorted((i["uuid"], i["arch"], i["name"], i["kind"], i["debug_info"], i["symbols"])
                     for i in doc["images"])
        exp = sorted([(L.BIGAPP_UUID, "arm64", "bigapp", "executable", True, 24),
                      (L.LIBFIX_UUID, "arm64", "libfix.dylib", "dylib", False, 4)])
        if got != exp or doc.get("next_cursor") is not None:
            return f"listed {got}"
        return None

    def check_image(st, data):
        if st != 200:
            return f"status {st}"
        doc = json.loads(data)
        i = doc["images"]
        if doc["uuid"] != L.BIGAPP_UUID or len(i) != 1 or i[0]["text_vmaddr"] != "0x100000000" \
                or i[0]["text_size"] != 0x4000 or i[0]["name"] != "bigapp":
            return f"image {data[:200]!r}"
        return None

    def check_health(st, data):
        doc = json.loads(data) if st == 200 else {}
        good = doc.get("status") == "ok" and doc.get("database_status") == "up"
        return None if good else f"{st} {data[:100]!r}"

    def check_crash(st, data):
        if st != 200:
            return f"status {st}"
        doc = json.loads(data)
        if doc.get("id") != fx["crash_id"]:
            return f"id {doc.get('id')}"
        return twins_check(doc)

    def check_crash_post(st, data):
        if st != 200:
            return f"status {st}"
        doc = json.loads(data)
        if doc.get("id") is not None:
            return "stored although store=false"
        return twins_check(doc)

    def check_text(st, data):
        if st != 200:
            return f"status {st}"
        t = data.decode("utf-8", "replace")
        for needle in ("static_square", "fix_mul", "main", "Binary Images:"):
            if needle not in t:
                return f"text answer lacks {needle!r}"
        return None

    cid = fx["crash_id"]
    return [
        ("symbolicate", "POST", "/v1/symbolicate", body, {"Content-Type": "application/json"}, check_sym),
        ("list_images", "GET", "/v1/images", None, {}, check_list),
        ("get_image", "GET", f"/v1/images/{L.BIGAPP_UUID.lower().replace('-', '')}", None, {}, check_image),
        ("healthz", "GET", "/healthz", None, {}, check_health),
        ("get_crash", "GET", f"/v1/crashes/{cid}", None, {}, check_crash),
        ("get_crash_text", "GET", f"/v1/crashes/{cid}?format=text", None, {}, check_text),
        ("post_crash_nostore", "POST", "/v1/crashes?store=false", read(CRASH_IPS),
         {"Content-Type": "text/plain"}, check_crash_post),
    ]


# ---- slowloris -----------------------------------------------------------------------------


def slowloris(port, kind, bound, result):
    """One slow client; result[kind] = (seconds until the server closed, detail)."""
    t0 = time.monotonic()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if kind == "slow_reader":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(bound + 30)
    detail = ""
    try:
        s.connect(("127.0.0.1", port))
        t0 = time.monotonic()
        if kind == "header_drip":
            drip = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
        elif kind == "body_drip":
            s.sendall(b"POST /v1/symbolicate HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            drip = b'{"images": [], "threads": [' + b" " * 100000
        elif kind == "upload_drip":
            s.sendall(b"POST /v1/images HTTP/1.1\r\nHost: x\r\nContent-Length: 54384\r\n\r\n")
            drip = read(L.BIGAPP)
        elif kind == "stall":
            s.sendall(b"POST /v1/crashes HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
            drip = b""
        elif kind == "slow_reader":
            frames = ["0x%x" % (L.LOAD_ADDRESS + 0x880 + 4 * (i % 900)) for i in range(50_000)]
            body = L.symbolicate_body(L.BIGAPP_UUID, frames)
            s.sendall(http_req("POST", "/v1/symbolicate", body, {"Connection": None}))
            drip = b""
        else:  # idle
            drip = b""
        i = 0
        while True:
            if kind == "slow_reader":
                # read nothing until the bound has passed, then drain: a server
                # that cut the request sent only part of its answer
                time.sleep(max(0.0, bound - (time.monotonic() - t0)))
                s.settimeout(5)
                buf = b""
                end = "EOF"
                try:
                    while True:
                        d = s.recv(1 << 20)
                        if not d:
                            break
                        buf += d
                        if parse_response(buf)[3]:
                            end = "complete"
                            break
                except socket.timeout:
                    end = "stalled"
                except OSError as e:
                    end = type(e).__name__
                st, _, body, complete = parse_response(buf)
                whole = complete and st == 200
                result[kind] = (None if whole else bound,
                                f"{len(buf)} bytes read after the bound, {end}" +
                                (": the whole answer, never cut" if whole else ""))
                return
            if drip and i < len(drip):
                try:
                    s.send(drip[i:i + 1])
                except OSError as e:
                    result[kind] = (time.monotonic() - t0, f"send failed: {type(e).__name__}")
                    return
                i += 1
            r, _, _ = select.select([s], [], [], 1.0)
            if r:
                try:
                    d = s.recv(65536)
                except OSError as e:
                    result[kind] = (time.monotonic() - t0, f"reset ({type(e).__name__})")
                    return
                if not d:
                    result[kind] = (time.monotonic() - t0, f"closed after {i} bytes sent")
                    return
                detail = f"answered {d[:30]!r}"
            if time.monotonic() - t0 > bound + 20:
                result[kind] = (None, f"still open after {time.monotonic() - t0:.0f} s, {i} bytes sent")
                return
    except OSError as e:
        result[kind] = (time.monotonic() - t0, f"{type(e).__name__}: {e}")
    finally:
        s.close()


# ---- main ----------------------------------------------------------------------------------


def main():
    checks = L.Checks()
    rng = random.Random(SEED)
    print(f"=== hostile: {COUNT} hostile requests from {THREADS} threads, {VALID_THREADS} valid "
          f"threads, {SLOWLORIS} slow clients (HOSTILE_SEED={SEED}, {L.symd_bin()})")
    server_args = list(SERVER_ARGS) + L.RETENTION_ARGS
    missing_flags = [f for f in server_args if f.startswith("--") and not L.supports(f)]
    if missing_flags:
        print(f"  note: this symd lacks {' '.join(missing_flags)}; started without them")
        for f in missing_flags:
            i = server_args.index(f)
            del server_args[i:i + 2]
    req_t = arg_value("--request-timeout", None) if "--request-timeout" not in missing_flags else None
    idle_t = arg_value("--idle-timeout", None) if "--idle-timeout" not in missing_flags else None
    # Until its headers are in, a request is bounded by --header-timeout
    # (README: 10 s by default), not --request-timeout.
    hdr_t = arg_value("--header-timeout", L.env_float("SYMD_HEADER_TIMEOUT", 10.0)) \
        if L.supports("--header-timeout") else req_t
    max_crashes = L.retention_max() if "--max-crashes" in server_args else 0
    workdir = tempfile.mkdtemp(prefix="symd-hostile.")
    db = os.path.join(workdir, "hostile.db")
    srv = L.Server(db, workdir, server_args, tag="hostile")
    fx = {}
    try:
        try:
            port = srv.start()
        except RuntimeError as e:
            checks.check("server starts", False, str(e))
            return checks.finish()
        ups = [L.upload(port, L.BIGAPP, "bigapp")[0], L.upload(port, L.BIGAPP_DSYM)[0],
               L.upload(port, L.LIBFIX)[0]]
        # retention's limit filled before the stored crash: churn during the
        # run prunes these, never the stored crash
        prefill = [L.request(port, "POST", "/v1/crashes", L.synthetic_crash(n))[0]
                   for n in range(max_crashes)]
        if max_crashes and not checks.check(f"setup: {max_crashes} crashes stored before the "
                                            "one the valid requests read",
                                            prefill == [201] * max_crashes,
                                            f"{collections.Counter(prefill)}"):
            return checks.finish()
        st, _, data = L.request(port, "POST", "/v1/crashes", read(CRASH_TEXT))
        fx["crash_id"] = json.loads(data).get("id") if st == 201 else None
        if not checks.check("setup: 3 uploads and a stored crash", ups == [201, 201, 201] and st == 201,
                            f"uploads {ups}, crash {st}"):
            return checks.finish()
        valid = build_valid(port, fx)
        baseline = {}
        for name, m, p, b, h, chk in valid:
            st, hd, data = L.request(port, m, p, b, h)
            bad = chk(st, data)
            checks.check(f"first answer of {name} is right (fixtures/expected)", bad is None, bad or "")
            baseline[name] = (st, data)
        counts_before = subprocess.run(
            ["sqlite3", db, "SELECT (SELECT count(*) FROM images), (SELECT count(*) FROM "
             "image_data), (SELECT count(*) FROM crashes)"], capture_output=True, text=True).stdout.strip()
        if max_crashes:  # crashes change with the churn: checked apart
            counts_before = counts_before.rsplit("|", 1)[0]

        gen = Gen(rng, fx)
        names = [c for c, _ in CATEGORIES]
        weights = [w for _, w in CATEGORIES]
        picks = names[:]  # every category at least once
        picks += rng.choices(names, weights, k=max(0, COUNT - len(picks)))
        picks = picks[:COUNT]
        rng.shuffle(picks)
        cases = [getattr(gen, c)() for c in picks]

        # slow clients (only when the server has the timeouts to cut them)
        slow_kinds = ["header_drip", "body_drip", "stall", "idle", "slow_reader", "upload_drip"]
        slow_kinds = (slow_kinds * 4)[:SLOWLORIS] if req_t is not None and idle_t is not None else []
        slow_res = {}
        slow_threads = []
        bounds = {}
        for i, k in enumerate(slow_kinds):
            key = f"{k}#{i}"
            lim = {"idle": idle_t, "header_drip": hdr_t}.get(k, req_t)
            bounds[key] = lim + CUT_SLACK
            t = threading.Thread(target=lambda k=k, key=key: slowloris(port, k, bounds[key], _Into(slow_res, key)),
                                 daemon=True)
            slow_threads.append(t)
            t.start()
        rss_before = srv.rss_kb()

        # hostile workers
        q = queue.Queue()
        for c in cases:
            q.put(c)
        lock = threading.Lock()
        per_cat = collections.defaultdict(collections.Counter)
        problems = []       # (cat, name, why)
        fivexx = []
        allowed_505 = 0
        dup_heads = collections.Counter()
        bad_error_bodies = []
        t_start = time.monotonic()

        def hostile_worker():
            nonlocal allowed_505
            while True:
                try:
                    c = q.get_nowait()
                except queue.Empty:
                    return
                o = raw_exchange(port, c.data, c.shut_wr, pause=c.pause, rest=c.rest)
                st = o.status
                cls = "closed" if st is None else f"{st // 100}xx"
                why = None
                if o.hang:
                    why = f"no answer and not closed within {IO_TIMEOUT:.0f} s"
                elif not allowed(c.rule, st):
                    why = f"answered {st}, want {c.rule}: {o.body[:160]!r}"
                elif st == 200 and c.check == "symbolicate":
                    if o.body != baseline["symbolicate"][1]:
                        why = "a valid symbolicate under another content type got another answer"
                elif isinstance(c.check, tuple) and st == 200:
                    try:
                        fr = json.loads(o.body)["threads"][0]["frames"]
                        ins = {f["address"] for f in fr}
                        bad_st = [f for f in fr if f.get("status") not in
                                  ("symbolicated", "no_symbol", "missing_image", "unknown_image")]
                        if len(fr) < c.check[1] or bad_st:
                            why = f"{len(fr)} frames for {c.check[1]}, {len(bad_st)} bad statuses"
                    except (ValueError, KeyError, IndexError) as e:
                        why = f"unreadable answer: {e}"
                with lock:
                    per_cat[c.cat][cls] += 1
                    if st is not None and st >= 500:
                        if c.rule == "505" and st == 505:
                            allowed_505 += 1
                        else:
                            fivexx.append((c.cat, c.name, st, o.body[:200]))
                    if o.dup_head:
                        dup_heads[f"{st} ({c.name})"] += 1
                    if why:
                        problems.append((c.cat, c.name, why))
                    if (st is not None and 400 <= st < 500 and not c.data.startswith(b"HEAD ") and
                            o.headers.get("content-type", "").startswith("application/json")):
                        try:
                            e = json.loads(o.body)["error"]
                            if not (isinstance(e["code"], str) and isinstance(e["message"], str)):
                                raise ValueError
                        except (ValueError, KeyError, TypeError):
                            bad_error_bodies.append((c.cat, c.name, o.body[:120]))

        valid_stats = collections.Counter()
        wrong = []
        stop = threading.Event()

        def valid_worker(seed):
            vr = random.Random(seed)
            conn = None
            while not stop.is_set():
                name, m, p, b, h, _chk = vr.choice(valid)
                for attempt in (0, 1):
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT)
                        fresh = True
                    else:
                        fresh = False
                    try:
                        st, hd, data = L.request(port, m, p, b, h, conn=conn)
                        if hd.get("connection", "").lower() == "close":
                            conn.close()
                            conn = None
                        break
                    except (http.client.RemoteDisconnected, ConnectionResetError,
                            BrokenPipeError) as e:
                        conn.close()
                        conn = None
                        if fresh or attempt:
                            st, data = None, repr(e).encode()
                            break
                        with lock:
                            valid_stats["keepalive_retries"] += 1
                    except (OSError, http.client.HTTPException) as e:
                        conn.close()
                        conn = None
                        st, data = None, repr(e).encode()
                        break
                with lock:
                    valid_stats[name] += 1
                    valid_stats["total"] += 1
                    if st is not None and st >= 500:
                        fivexx.append(("valid", name, st, data[:200]))
                    if (st, data) != baseline[name]:
                        wrong.append((name, st, data[:300]))

        churn = collections.Counter()
        churn_stop = threading.Event()

        def churn_worker():
            """Up to max_crashes - 1 stored crashes while the hostile requests
            run: retention prunes the prefilled ones beside the traffic."""
            conn = None
            for k in range(max(0, max_crashes - 1)):
                if churn_stop.is_set():
                    return
                t0 = time.monotonic()
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_TIMEOUT)
                    st, _, data = L.request(port, "POST", "/v1/crashes",
                                            L.synthetic_crash(1000000 + k), conn=conn)
                except (OSError, http.client.HTTPException) as e:
                    if conn:
                        conn.close()
                    conn = None
                    st, data = None, repr(e).encode()
                with lock:
                    churn["posted"] += 1
                    if st == 201:
                        churn["stored"] += 1
                    else:
                        churn["other"] += 1
                        if st is not None and st >= 500:
                            fivexx.append(("churn", "POST /v1/crashes", st, data[:200]))
                        else:
                            wrong.append(("churn POST /v1/crashes", st, data[:300]))
                time.sleep(max(0.0, 1.0 / CHURN_RATE - (time.monotonic() - t0)))

        vthreads = [threading.Thread(target=valid_worker, args=(rng.random(),), daemon=True)
                    for _ in range(VALID_THREADS)]
        hthreads = [threading.Thread(target=hostile_worker, daemon=True) for _ in range(THREADS)]
        cthread = threading.Thread(target=churn_worker, daemon=True)
        for t in vthreads + hthreads + [cthread]:
            t.start()
        for t in hthreads:
            t.join()
        hostile_secs = time.monotonic() - t_start
        for t in slow_threads:
            t.join(max(bounds.values()) + 40)
        rss_after = srv.rss_kb()
        stop.set()
        churn_stop.set()
        for t in vthreads + [cthread]:
            t.join(IO_TIMEOUT + 5)
        total_secs = time.monotonic() - t_start

        alive = srv.alive()
        try:
            hz = L.request(port, "GET", "/healthz", timeout=10)[0]
        except (OSError, http.client.HTTPException) as e:
            hz = repr(e)
        metrics_timeouts = None
        metrics_status = None
        try:
            metrics_status, _, data = L.request(port, "GET", "/metrics", timeout=10)
            m = re.findall(rb"^symd_connection_timeouts_total\{phase=\"\w+\"\} (\d+)", data, re.M)
            if metrics_status == 200 and m:
                metrics_timeouts = sum(int(v) for v in m)
        except (OSError, http.client.HTTPException) as e:
            metrics_status = repr(e)
        counts_after = subprocess.run(
            ["sqlite3", db, "SELECT (SELECT count(*) FROM images), (SELECT count(*) FROM "
             "image_data), (SELECT count(*) FROM crashes)"], capture_output=True, text=True).stdout.strip()
        crash_rows = crash_min = None
        crash_bad = []
        if max_crashes:  # retention catches up with the churn: the newest max_crashes stay
            counts_after = counts_after.rsplit("|", 1)[0]
            want_min = max_crashes + 1 + churn["stored"] - max_crashes + 1
            for _ in range(100):
                out = subprocess.run(["sqlite3", db, "SELECT count(*), min(id), max(id) FROM crashes"],
                                     capture_output=True, text=True).stdout.strip()
                crash_rows, crash_min, _ = (int(x or 0) for x in out.split("|"))
                if crash_rows == max_crashes and crash_min == want_min:
                    break
                time.sleep(0.1)
            for name, q in L.crash_consistency(db):
                out = subprocess.run(["sqlite3", db, q], capture_output=True, text=True)
                if out.returncode != 0 or out.stdout.strip() != "0":
                    crash_bad.append(f"{name}: {out.stdout.strip()} {out.stderr.strip()[:200]}")
        integ = subprocess.run(["sqlite3", db, "PRAGMA integrity_check"], capture_output=True,
                               text=True).stdout.strip()
        log5 = [ln for ln in srv.stderr_text().splitlines() if re.match(r"symd: 5\d\d ", ln)]
        stop_code = srv.stop(timeout=40)

        # ---- report
        print("--- hostile requests per category (answer classes)")
        tot = collections.Counter()
        for cat in names:
            c = per_cat[cat]
            tot.update(c)
            print(f"  {cat:20s} {sum(c.values()):5d}  " +
                  ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        print(f"  {'all':20s} {sum(tot.values()):5d}  " + ", ".join(f"{k} {v}" for k, v in sorted(tot.items())))
        print("--- slow clients (seconds until the server closed them; bound)")
        slow_bad = []
        for key in sorted(slow_res):
            secs, detail = slow_res[key]
            ok = secs is not None and secs <= bounds[key]
            if not ok:
                slow_bad.append(key)
            print(f"  {key:16s} {'never' if secs is None else '%.1f s' % secs:>8s}  "
                  f"(bound {bounds[key]:.0f} s) {detail}")
        for key in bounds:
            if key not in slow_res:
                slow_bad.append(key)
                print(f"  {key:16s} no result")
        print("--- figures")
        print(f"  hostile requests   {len(cases)} in {hostile_secs:.1f} s; whole run {total_secs:.1f} s")
        print(f"  valid requests     {valid_stats['total']} (" + ", ".join(
            f"{n} {valid_stats[n]}" for n, *_ in valid) + f"; keep-alive retries "
            f"{valid_stats['keepalive_retries']})")
        print(f"  5xx answers        {len(fivexx)} (+ {allowed_505} x 505 to HTTP/2.0 or 9.9 request "
              f"lines, allowed); 5xx lines in the server log {len(log5)}")
        print(f"  wrong answers      {len(wrong)} to valid requests")
        print(f"  unexpected answers {len(problems)} to hostile requests")
        print(f"  JSON 4xx without an error object {len(bad_error_bodies)}")
        if dup_heads:
            print(f"  answers with a duplicated status line+headers (libmicrohttpd): "
                  f"{sum(dup_heads.values())}: " + ", ".join(f"{k} x{v}" for k, v in dup_heads.most_common(4)))
        print(f"  rows (images, blobs{'' if max_crashes else ', crashes'}) before "
              f"{counts_before.replace('|', ', ')}, after {counts_after.replace('|', ', ')}")
        if max_crashes:
            print(f"  retention          {' '.join(L.RETENTION_ARGS)}: {max_crashes} crashes "
                  f"prefilled, {churn['stored']} churned in during the run "
                  f"({churn['other']} not stored); {crash_rows} stored at the end, ids from "
                  f"{crash_min} (the oldest {(crash_min or 1) - 1} pruned)")
            for b in crash_bad:
                print(f"    counters: {b}")
        print(f"  server RSS         {rss_before} kB before the hostile run, {rss_after} kB after")
        if metrics_timeouts is not None:
            print(f"  symd_connection_timeouts_total (all phases) {metrics_timeouts}")
        for cat, name, st, body in fivexx[:10]:
            print(f"    5xx: [{cat}] {name}: {st} {body!r}")
        for ln in log5[:10]:
            print(f"    log: {ln}")
        for name, st, body in wrong[:10]:
            print(f"    wrong: {name}: {st} {body!r}")
        seen = collections.Counter((cat, name) for cat, name, _ in problems)
        shown = set()
        for cat, name, why in problems:
            if (cat, name) in shown or len(shown) >= 20:
                continue
            shown.add((cat, name))
            print(f"    unexpected x{seen[(cat, name)]}: [{cat}] {name}: {why}")
        for cat, name, body in bad_error_bodies[:5]:
            print(f"    error body: [{cat}] {name}: {body!r}")

        print("--- checks")
        checks.check("valid requests were answered during the hostile run", valid_stats["total"] > 0,
                     f"{valid_stats['total']}")
        checks.check("every valid answer exactly right", not wrong, f"{len(wrong)} wrong")
        checks.check("no 5xx for anything", not fivexx and not log5,
                     f"{len(fivexx)} answers, {len(log5)} log lines")
        checks.check("every hostile request answered 4xx / closed as allowed, none hung",
                     not problems, f"{len(problems)} unexpected")
        checks.check("every JSON 4xx is an error object", not bad_error_bodies,
                     f"{len(bad_error_bodies)}")
        if req_t is None:
            checks.check("slow clients cut by --request-timeout", False,
                         "this symd has no --request-timeout")
        else:
            checks.check(f"slow clients closed within their timeout + {CUT_SLACK:.0f} s", not slow_bad,
                         ", ".join(slow_bad) or f"{len(slow_res)} cut")
        checks.check("server alive, /healthz 200", alive and hz == 200, f"healthz {hz}")
        if L.supports("--max-per-ip"):  # the build with /metrics
            checks.check("GET /metrics 200 after the hostile run", metrics_status == 200,
                         f"{metrics_status}")
        if max_crashes:
            checks.check("images and blobs unchanged", counts_before == counts_after and counts_before,
                         f"{counts_before} -> {counts_after}")
            checks.check(f"retention pruned beside the traffic: the newest {max_crashes} crashes "
                         "stay, the stored crash among them",
                         churn["stored"] > 0 and crash_rows == max_crashes
                         and crash_min == churn["stored"] + 2
                         and fx["crash_id"] == max_crashes + 1 and not churn["other"],
                         f"{churn['stored']} churned, {crash_rows} stored from id {crash_min}")
            checks.check("crash counters equal the crashes", not crash_bad, "; ".join(crash_bad)[:300])
            retention_errors = [ln for ln in srv.stderr_text().splitlines() if "retention" in ln]
            checks.check("no retention error in the server log", not retention_errors,
                         "; ".join(retention_errors[:3]))
        else:
            checks.check("images, blobs and crashes unchanged",
                         counts_before == counts_after and counts_before,
                         f"{counts_before} -> {counts_after}")
        checks.check("PRAGMA integrity_check ok", integ == "ok", integ[:200])
        checks.check("SIGTERM exits 0", stop_code == 0, f"status {stop_code}")
    finally:
        srv.kill9()
        if os.environ.get("HOSTILE_KEEP"):
            print(f"  kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return checks.finish()


class _Into:
    """dict-like sink: slowloris(…, result) writes result[kind] under key."""

    def __init__(self, d, key):
        self.d, self.key = d, key

    def __setitem__(self, _kind, value):
        self.d[self.key] = value


if __name__ == "__main__":
    sys.exit(main())
