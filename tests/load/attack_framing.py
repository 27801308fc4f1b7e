#!/usr/bin/env python3
"""Request framing attacks against one `symd serve` (issue 17, items 2, 6, 7, 8).

  python3 tests/load/attack_framing.py

Starts its own `symd serve --listen 127.0.0.1:0` on a temporary database
(SYMD_BIN, default ./symd of the checkout; with --read-token rd) and talks
to it over raw loopback sockets only:

- request smuggling: Content-Length with Transfer-Encoding (either order),
  Content-Length twice (0 then a length), an obs-folded Content-Length,
  "Content-Length :" — each answered 400 with Connection: close, the
  connection closed, and the request hidden behind it (GET /v1/missing)
  never answered;
- transfer codings: "chunked, identity", "identity, chunked", "xchunked",
  "gzip" 501 and "chunked" twice 400, at once (not after the idle timeout),
  the connection closed; a plain chunked body still read;
- absolute-form targets answered as their path; HTTP/1.1 without Host (or
  with two) 400, HTTP/1.0 without Host 200;
- 3,000 query parameters (18 KB) and a tab or space in the request line
  answered before the close, a request line with no space at all too
  (libmicrohttpd 0.9.75 drops it; symd answers it as the connection
  closes);
- NUL and other control bytes in header values, whitespace before a colon:
  400;
- start-up: a token file holding a NUL, --listen 127.0.0.1:99999 and
  out-of-range numeric flags refuse the start (non-zero exit) with a message
  naming the file or the flag;
- the server answers /healthz afterwards and exits 0 on SIGTERM.

FRAMING_IO_TIMEOUT (3 s): how long a socket waits for an answer or the close.
Ends with "N passed, N failed"; exit status 1 on any failure.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symdlib as L  # noqa: E402

IO_TIMEOUT = L.env_float("FRAMING_IO_TIMEOUT", 3.0)
TOKEN = "rd"
HIDDEN = b"GET /v1/missing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer rd\r\n\r\n"


def exchange(port, data, timeout=IO_TIMEOUT, want=None):
    """Sends data on a fresh connection and reads until the server closes it
    (or timeout passes, or want answers are in). Returns (answers, closed,
    seconds): answers as (status, headers lower-case, body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    t0 = time.time()
    buf = b""
    closed = False
    try:
        s.sendall(data)
        s.settimeout(0.2)
        while time.time() - t0 < timeout:
            try:
                b = s.recv(65536)
            except socket.timeout:
                if want is not None and len(parse(buf)) >= want:
                    break
                continue
            if not b:
                closed = True
                break
            buf += b
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    finally:
        s.close()
    return parse(buf), closed, time.time() - t0


def parse(buf):
    out = []
    while True:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return out
        head = buf[:end].decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", head[0])
        if not m:
            return out
        hdrs = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0") or 0)
        out.append((int(m.group(1)), hdrs, buf[end + 4:end + 4 + n]))
        buf = buf[end + 4 + n:]


def describe(answers, closed, secs):
    st = ",".join(str(a[0]) for a in answers) or "none"
    return f"answers {st}, {'closed' if closed else 'open'} after {secs:.2f}s"


def main():
    c = L.Checks()
    work = tempfile.mkdtemp(prefix="symd-framing-")
    srv = L.Server(os.path.join(work, "framing.db"), work,
                   ["--read-token", TOKEN, "--idle-timeout", "30"])
    try:
        port = srv.start()
        run(c, port, work)
        st, _, _ = L.request(port, "GET", "/healthz", timeout=10)
        c.check("server still answers /healthz", st == 200, str(st))
        rc = srv.stop()
        c.check("server exits 0 on SIGTERM", rc == 0, f"exit {rc}")
    except Exception as e:  # noqa: BLE001 - any crash of the script is a failure
        c.check("attack_framing ran", False, f"{type(e).__name__}: {e}")
        if srv.alive():
            print(srv.stderr_tail())
    finally:
        srv.kill9()
        shutil.rmtree(work, ignore_errors=True)
    return c.finish()


def refused(c, port, name, data, status, code=None):
    """data is answered status (code), once, with Connection: close, and the
    connection closed: nothing after it on the connection is answered."""
    ans, closed, secs = exchange(port, data)
    d = describe(ans, closed, secs)
    ok = (len(ans) == 1 and ans[0][0] == status and closed and
          ans[0][1].get("connection", "").lower() == "close" and
          (code is None or f'"code":"{code}"' in ans[0][2].decode("latin-1")))
    c.check(name, ok, d)


def run(c, port, work):
    post = b"POST /v1/crashes?store=false HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer rd\r\n"
    crash = L.synthetic_crash(1)
    crash = crash.encode() if isinstance(crash, str) else crash

    print("request smuggling: 400, closed, the hidden GET /v1/missing never answered")
    hid = len(HIDDEN)
    chunk0 = b"0\r\n\r\n"
    smuggle = {
        "Content-Length then Transfer-Encoding":
            post + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % (len(chunk0) + hid)
            + chunk0 + HIDDEN,
        "Transfer-Encoding then Content-Length":
            post + b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n\r\n" % (len(chunk0) + hid)
            + chunk0 + HIDDEN,
        "Content-Length: 0 then a second Content-Length":
            post + b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % hid + HIDDEN,
        "Content-Length twice, the same value":
            post + b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (hid, hid) + HIDDEN,
        "obs-folded Content-Length":
            post + b"Content-Length:\r\n %d\r\n\r\n" % hid + HIDDEN,
        "obs-folded other header before Content-Length: 0":
            post + b"X-A: a\r\n b\r\nContent-Length: 0\r\n\r\n" + HIDDEN,
        "Content-Length : (space before the colon)":
            post + b"Content-Length : %d\r\n\r\n" % hid + HIDDEN,
        "Content-Length\\t: (tab before the colon)":
            post + b"Content-Length\t: %d\r\n\r\n" % hid + HIDDEN,
        "Transfer-Encoding : chunked (space before the colon)":
            post + b"Transfer-Encoding : chunked\r\n\r\n" + chunk0 + HIDDEN,
    }
    for name, data in smuggle.items():
        refused(c, port, name, data, 400)

    print("transfer codings: 501 or 400 at once, closed")
    for te in (b"chunked, identity", b"identity, chunked", b"xchunked", b"gzip", b"gzip, chunked"):
        data = post + b"Transfer-Encoding: " + te + b"\r\n\r\n" + chunk0 + HIDDEN
        refused(c, port, "Transfer-Encoding: " + te.decode(), data, 501,
                "unsupported_transfer_coding")
    refused(c, port, "Transfer-Encoding: chunked, chunked",
            post + b"Transfer-Encoding: chunked, chunked\r\n\r\n" + chunk0 + HIDDEN, 400,
            "bad_framing")
    refused(c, port, "Transfer-Encoding: chunked twice (two fields)",
            post + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk0
            + HIDDEN, 400, "bad_framing")
    refused(c, port, "Transfer-Encoding: chunked with a trailing space",
            post + b"Transfer-Encoding: chunked \r\n\r\n" + chunk0 + HIDDEN, 400, "bad_framing")
    refused(c, port, "Transfer-Encoding: , chunked",
            post + b"Transfer-Encoding: , chunked\r\n\r\n" + chunk0 + HIDDEN, 400, "bad_framing")
    refused(c, port, "Transfer-Encoding in an HTTP/1.0 request",
            b"POST /v1/crashes?store=false HTTP/1.0\r\nAuthorization: Bearer rd\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunk0, 400, "bad_framing")
    # controls: what must still work
    body = b"%x\r\n" % len(crash) + crash + b"\r\n0\r\n\r\n"
    ans, closed, secs = exchange(port, post + b"Transfer-Encoding: chunked\r\n\r\n" + body + HIDDEN,
                                 want=2)
    c.check("a chunked POST is read, the next request on the connection answered",
            len(ans) == 2 and ans[0][0] in (200, 201) and ans[1][0] == 200,
            describe(ans, closed, secs))
    ans, closed, secs = exchange(port, post + b"Content-Length: %d\r\n\r\n" % len(crash) + crash
                                 + HIDDEN, want=2)
    c.check("a Content-Length POST is read, the next request answered",
            len(ans) == 2 and ans[0][0] in (200, 201) and ans[1][0] == 200,
            describe(ans, closed, secs))

    print("request targets and Host")
    ans, closed, secs = exchange(
        port, b"GET http://127.0.0.1:%d/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % port, want=1)
    c.check("absolute-form GET http://127.0.0.1:PORT/healthz: 200",
            len(ans) == 1 and ans[0][0] == 200, describe(ans, closed, secs))
    ans, closed, secs = exchange(
        port, b"GET HTTP://x/v1/missing?limit=5 HTTP/1.1\r\nHost: x\r\n"
        b"Authorization: Bearer rd\r\n\r\n", want=1)
    c.check("absolute-form GET HTTP://x/v1/missing?limit=5: 200",
            len(ans) == 1 and ans[0][0] == 200 and b"missing" in ans[0][2],
            describe(ans, closed, secs))
    ans, closed, secs = exchange(port, b"GET http://x HTTP/1.1\r\nHost: x\r\n\r\n", want=1)
    c.check("absolute-form without a path is /: 200", len(ans) == 1 and ans[0][0] == 200,
            describe(ans, closed, secs))
    refused(c, port, "HTTP/1.1 without Host: 400", b"GET /healthz HTTP/1.1\r\n\r\n", 400, "bad_host")
    refused(c, port, "HTTP/1.1 with Host twice: 400",
            b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "bad_host")
    ans, closed, secs = exchange(port, b"GET /healthz HTTP/1.0\r\n\r\n")
    c.check("HTTP/1.0 without Host: 200", len(ans) == 1 and ans[0][0] == 200,
            describe(ans, closed, secs))

    print("malformed request lines: an answer before the close")
    q = b"&".join(b"a%d=1" % i for i in range(3000))
    ans, closed, secs = exchange(port, b"GET /healthz?" + q + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    c.check(f"3,000 query parameters ({len(q) // 1000} KB): answered (414), closed",
            len(ans) == 1 and ans[0][0] == 414 and closed, describe(ans, closed, secs))
    ans, closed, secs = exchange(port, b"GET /healthz?" + b"&".join(b"a%d=1" % i for i in range(60))
                                 + b" HTTP/1.1\r\nHost: x\r\n\r\n", want=1)
    c.check("60 query parameters: 200", len(ans) == 1 and ans[0][0] == 200,
            describe(ans, closed, secs))
    for name, line in (("a tab in the path", b"GET /heal\tthz HTTP/1.1"),
                       ("a tab in the query", b"GET /healthz?a=\tb HTTP/1.1"),
                       ("a space in the path", b"GET /heal thz HTTP/1.1"),
                       ("a control byte in the path", b"GET /heal\x01thz HTTP/1.1"),
                       ("a tab after the method", b"GET\t/healthz HTTP/1.1"),
                       ("a tab before the version", b"GET /healthz\tHTTP/1.1"),
                       ("a tab after the version", b"GET /healthz HTTP/1.1\t")):
        ans, closed, secs = exchange(port, line + b"\r\nHost: x\r\n\r\n" + HIDDEN)
        c.check(f"{name}: 400, closed", len(ans) == 1 and ans[0][0] == 400 and closed,
                describe(ans, closed, secs))
    # libmicrohttpd drops these before any callback of symd; the close
    # notification answers them (answer_dropped_request in server/http.c)
    for name, line in (("tabs only, no space in the request line", b"GET\t/healthz\tHTTP/1.1"),
                       ("a request line of one word", b"GARBAGE")):
        ans, closed, secs = exchange(port, line + b"\r\nHost: x\r\n\r\n" + HIDDEN)
        c.check(f"{name}: 400 bad_request_line, closed",
                len(ans) == 1 and ans[0][0] == 400 and b"bad_request_line" in ans[0][2] and closed,
                describe(ans, closed, secs))
    # on a kept-alive connection too, once the first request is answered
    s = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    first = b""
    while b"\r\n\r\n" not in first or not first.rstrip().endswith(b"}"):
        b = s.recv(65536)
        if not b:
            break
        first += b
    s.sendall(b"GET\t/healthz\tHTTP/1.1\r\nHost: x\r\n\r\n")
    rest = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            rest += b
    except OSError:
        pass
    s.close()
    c.check("kept alive after an answer, then tabs only: 200, then 400 and closed",
            first.startswith(b"HTTP/1.1 200") and rest.startswith(b"HTTP/1.1 400")
            and b"bad_request_line" in rest, f"first {first[:12]!r}, then {rest[:40]!r}")

    # an answer sent before the body was read ends the connection: the body
    # bytes behind it (queued unread when the answer went) are no request
    ans, closed, secs = exchange(port, b"POST /v1/crashes?store=false HTTP/1.1\r\nHost: x\r\n"
                                 b"Content-Length: 1099511627776\r\n\r\n" + b"x" * 100000)
    c.check("answered before its body (413), the body's bytes behind it: that answer alone",
            len(ans) == 1 and ans[0][0] == 413 and closed, describe(ans, closed, secs))

    print("header values")
    hdr = b"GET /v1/missing HTTP/1.1\r\nHost: x\r\n"
    refused(c, port, "Authorization: Bearer rd\\0junk: 400",
            hdr + b"Authorization: Bearer rd\x00junk\r\n\r\n", 400, "bad_header")
    refused(c, port, "a NUL at the end of a value (CRLF): 400",
            hdr + b"Authorization: Bearer rd\x00\r\n\r\n", 400, "bad_header")
    refused(c, port, "a NUL in a header before Host: 400",
            b"GET /healthz HTTP/1.1\r\nX-A: a\x00b\r\nHost: x\r\n\r\n", 400, "bad_header")
    refused(c, port, "a bare CR in a value: 400", hdr + b"X-A: a\rb\r\n\r\n", 400, "bad_header")
    refused(c, port, "a control byte in a value: 400", hdr + b"X-A: a\x01b\r\n\r\n", 400,
            "bad_header")
    ans, closed, secs = exchange(port, hdr + b"Authorization: Bearer rd\r\nX-A: \t a b\t\r\n\r\n",
                                 want=1)
    c.check("tabs and spaces in a value: 200", len(ans) == 1 and ans[0][0] == 200,
            describe(ans, closed, secs))
    ans, closed, secs = exchange(port, b"GET /v1/missing HTTP/1.1\nHost: x\nAuthorization: "
                                 b"Bearer rd\nX-Empty:\n\n", want=1)
    c.check("LF-only lines and an empty value: 200", len(ans) == 1 and ans[0][0] == 200,
            describe(ans, closed, secs))

    print("start-up refusals")
    tok = os.path.join(work, "token-with-nul")
    with open(tok, "wb") as f:
        f.write(b"x\x00secret\n")
    refuse_start(c, work, ["--read-token-file", tok], tok, "a token file holding a NUL")
    refuse_start(c, work, ["--listen", "127.0.0.1:99999"], "--listen", "--listen 127.0.0.1:99999",
                 replace_listen=True)
    refuse_start(c, work, ["--listen", ":99999"], "--listen", "--listen :99999", replace_listen=True)
    refuse_start(c, work, ["--listen", "127.0.0.1:8x"], "--listen", "--listen 127.0.0.1:8x",
                 replace_listen=True)
    for flag, val in (("--threads", "5000"), ("--max-connections", "0"),
                      ("--max-connections", "4294967297"), ("--max-inflight-mb", "0"),
                      ("--max-inflight-mb", "18446744073709551615"), ("--idle-timeout", "99999999"),
                      ("--header-timeout", "86401"), ("--request-timeout", "4294967296"),
                      ("--shutdown-grace", "99999999999"), ("--max-per-ip", "100001"),
                      ("--db-pool", "2000"), ("--cache-mb", "99999999999999999999999"),
                      ("--keep-days", "100001"), ("--prune-every", "0"),
                      ("--max-crashes", "18446744073709551615")):
        refuse_start(c, work, [flag, val], flag, f"{flag} {val}")


def refuse_start(c, work, args, must_name, what, replace_listen=False):
    cmd = [L.symd_bin(), "serve", "--db", os.path.join(work, "start.db")]
    if not replace_listen:
        cmd += ["--listen", "127.0.0.1:0"]
    try:
        p = subprocess.run(cmd + args, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace").strip()
    except subprocess.TimeoutExpired:
        rc, err = None, "still running after 10 s"
    c.check(f"{what}: start refused naming {must_name}",
            rc not in (None, 0) and must_name in err, f"exit {rc}: {err[:120]}")


if __name__ == "__main__":
    sys.exit(main())
