#!/usr/bin/env python3
"""symd upload --url end to end (issue 22): the client against a real symd,
directly and through Debian's nginx with client_max_body_size 2m.

  - an .xcarchive laid out as Xcode writes one (app, framework, dSYMs) and a
    dSYM zip of UPLOAD_TEST_MB (64) MB pass through nginx in chunks the
    client cuts below the proxy's limit; every image is then queryable
    (GET /v1/images/{uuid}, debug_info for the dSYMs). Below 256 MB the zip
    is a small real DWARF file padded with random bytes; from 256 on
    (UPLOAD_TEST_MB=500: the issue's acceptance run) it is the zip of a real
    dSYM of that size (bench/build_big_dsym.sh: a generated program, built
    and cached in bench/.cache the first time, about 2 minutes for 500), and
    addresses in its functions symbolicate through nginx to the function,
    file and line llvm-symbolizer gives;
  - while the server reads the zip its anonymous memory (RssAnon, sampled
    every 20 ms) grows by far less than the zip's big member: inflated
    members past 1 MiB live in a mapped temporary file, not on the heap;
  - a second run sends 0 chunks and 0 bytes;
  - one plain POST of the zip gets nginx's 413 and the client says what to
    change;
  - a run SIGKILLed at half its chunks (counted in symd's access log) and
    run again sends at most the chunks still missing plus one (the client's
    --json count and the server's log agree);
  - tokens (--token-file, SYMD_URL and SYMD_UPLOAD_TOKEN twins), --wait,
    https:// and DeviceSupport folders refused, exit statuses.

    python3 tests/upload/run.py [--symd ./symd]      (ends "N passed, N failed")
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1 << 20
REAL_FROM_MB = 256  # from this UPLOAD_TEST_MB on, the big zip is a real dSYM
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}")
    return cond


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Symd:
    def __init__(self, symd, work, tag, extra=()):
        self.access = os.path.join(work, tag + ".access")
        self.err = open(os.path.join(work, tag + ".log"), "w")
        self.p = subprocess.Popen([symd, "serve", "--listen", "127.0.0.1:0", "--db",
                                   os.path.join(work, tag + ".db"), "--access-log", self.access,
                                   *extra], stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.p.stdout.readline()
        m = re.search(r":(\d+)\s*$", line)
        if not m:
            sys.exit(f"symd did not start: {line!r}")
        self.port = int(m.group(1))
        self.url = f"http://127.0.0.1:{self.port}"
        self.anon_base = self.rss_anon()
        self.peak_anon = self.anon_base
        self._stop = False
        self._t = threading.Thread(target=self._sample, daemon=True)
        self._t.start()

    def rss_anon(self):
        """The server's anonymous memory now (bytes): heap, not page cache."""
        try:
            with open(f"/proc/{self.p.pid}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def _sample(self):
        while not self._stop:
            self.peak_anon = max(self.peak_anon, self.rss_anon())
            time.sleep(0.02)

    def chunk_posts(self, status=None):
        """POST /v1/chunks/<sha256> lines of the access log (of a status)."""
        n = 0
        try:
            with open(self.access) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) > 4 and parts[2] == "POST" and \
                            re.fullmatch(r"/v1/chunks/[0-9a-f]{64}", parts[3]) and \
                            (status is None or parts[4] == str(status)):
                        n += 1
        except OSError:
            pass
        return n

    def stop(self):
        self._stop = True
        self._t.join()
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=60)
        self.err.close()


class Nginx:
    """Debian's nginx in the foreground, its files in work/nginx."""

    def __init__(self, work, upstream_port, extra=""):
        d = os.path.join(work, "nginx")
        os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
        self.port = free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    upstream symd {{ server 127.0.0.1:{upstream_port}; keepalive 8; }}
    server {{
        listen 127.0.0.1:{self.port};
        client_max_body_size 2m;
        {extra}
        location / {{
            proxy_pass http://symd;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_request_buffering off;
            proxy_read_timeout 600s;
        }}
    }}
}}
""")
        self.p = subprocess.Popen(["nginx", "-c", conf, "-p", d],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.p.send_signal(signal.SIGQUIT)
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def upload(symd, url, paths, *extra, env=None, timeout=600):
    """symd upload --url URL --json ...: (exit status, summary or None, stderr)."""
    args = [symd, "upload"] + (["--url", url] if url else []) + ["--json", "--no-progress",
                                                                 *extra, *paths]
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = None
    return r.returncode, doc, r.stderr


def get_image(url, uuid):
    try:
        with urllib.request.urlopen(f"{url}/v1/images/{uuid}", timeout=30) as r:
            return json.loads(r.read())
    except Exception:
        return None


def fx(rel):
    return os.path.join(ROOT, "fixtures", rel)


def make_xcarchive(root):
    """App.xcarchive: the app (fat), a framework (a dylib), their dSYMs."""
    app = os.path.join(root, "Products/Applications/App.app")
    fw = os.path.join(app, "Frameworks/Fix.framework")
    os.makedirs(fw)
    shutil.copy(fx("bin/bigapp-fat"), os.path.join(app, "App"))
    with open(os.path.join(app, "Info.plist"), "w") as f:
        f.write("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict/></plist>\n")
    shutil.copy(fx("bin/libfix-arm64.dylib"), os.path.join(fw, "Fix"))
    for name, src in (("App.app.dSYM", "bigapp-arm64.dSYM"),
                      ("Other.app.dSYM", "inliner-arm64.dSYM")):
        shutil.copytree(fx("dsym/" + src), os.path.join(root, "dSYMs", name), symlinks=True)
    with open(os.path.join(root, "Info.plist"), "w") as f:
        f.write("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict/></plist>\n")


def make_dsym_zip(path, size, dwarf):
    """A dSYM zip of about size bytes: a real DWARF file (deflated) and a
    stored member of random bytes (the server reads the DWARF, skips the
    rest: the bytes on the wire are what this test is about)."""
    with zipfile.ZipFile(path, "w", allowZip64=True) as z:
        z.write(dwarf, "Big.dSYM/Contents/Resources/DWARF/Big", zipfile.ZIP_DEFLATED)
        left = size - os.path.getsize(path) - 4096
        with z.open(zipfile.ZipInfo("Big.dSYM/Contents/Resources/blob.bin"), "w",
                    force_zip64=True) as m:
            while left > 0:  # fresh random bytes: no two chunks alike
                n = min(left, 4 * MIB)
                m.write(os.urandom(n))
                left -= n
    return os.path.getsize(path)


def real_dsym_zip(path, mb):
    """The zip of a real dSYM of mb MB (bench/build_big_dsym.sh, cached),
    linked at path; (its size, the DWARF file inside it)."""
    r = subprocess.run(["bash", os.path.join(ROOT, "bench/build_big_dsym.sh"), str(mb)],
                       stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("bench/build_big_dsym.sh failed")
    z = r.stdout.strip().splitlines()[-1]
    try:
        os.link(z, path)
    except OSError:
        shutil.copy(z, path)
    return os.path.getsize(path), os.path.join(os.path.dirname(z),
                                                "prog.dSYM/Contents/Resources/DWARF/prog")


def symbolicate_check(url, uuid, dwarf, n=12):
    """n addresses inside functions of the big dSYM (spread over the file,
    a few instructions in), through url's /v1/symbolicate (the image at its
    own vmaddr): (agreeing, asked, first disagreements) against
    llvm-symbolizer on the same DWARF file."""
    nm = subprocess.run(["llvm-nm", "-n", "--defined-only", dwarf], capture_output=True,
                        text=True).stdout.split("\n")
    funcs = []
    for line in nm:
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT" and "_f" in parts[2]:
            funcs.append((int(parts[0], 16), parts[2]))
    if not funcs:
        return 0, 0, ["llvm-nm found no functions"]
    picks = [funcs[i * (len(funcs) - 1) // (n - 1)] for i in range(n)]
    addrs = [a + 8 * (1 + i % 5) for i, (a, _) in enumerate(picks)]
    ref = subprocess.run(["llvm-symbolizer", "--obj=" + dwarf, "--output-style=JSON",
                          "--no-demangle"] + ["0x%x" % a for a in addrs],
                         capture_output=True, text=True).stdout
    want = []
    for line in ref.splitlines():  # one array of every address (or one object a line)
        if line.strip():
            doc = json.loads(line)
            want += [d["Symbol"][0] for d in (doc if isinstance(doc, list) else [doc])]
    body = json.dumps({"images": [{"uuid": uuid, "arch": "arm64", "slide": "0x0"}],
                       "threads": [{"id": 0, "frames": [{"address": "0x%x" % a, "image": 0,
                                                         "adjust": "none"} for a in addrs]}]})
    req = urllib.request.Request(url + "/v1/symbolicate", data=body.encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        frames = json.loads(r.read())["threads"][0]["frames"]
    good, bad = 0, []
    for a, w, f in zip(addrs, want, frames):
        got = (f.get("mangled"), os.path.basename(f.get("file") or ""), f.get("line"))
        exp = (w["FunctionName"], os.path.basename(w["FileName"]), w["Line"])
        if got == exp and f.get("status") == "symbolicated":
            good += 1
        else:
            bad.append(f"0x{a:x}: symd {got}, llvm-symbolizer {exp}")
    return good, len(addrs), bad[:3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--symd", default=os.environ.get("SYMD_BIN", os.path.join(ROOT, "symd")))
    a = ap.parse_args()
    symd = os.path.abspath(a.symd)
    mb = int(os.environ.get("UPLOAD_TEST_MB", "64"))
    if not shutil.which("nginx"):
        check(False, "nginx is installed (scripts/deps.sh: nginx-light)")
        print(f"{passed} passed, {failed} failed")
        return 1
    work = tempfile.mkdtemp(prefix="symd-upload-")
    servers = []
    try:
        xc = os.path.join(work, "App.xcarchive")
        make_xcarchive(xc)
        big = os.path.join(work, "Big.dSYM.zip")
        real = mb >= REAL_FROM_MB
        if real:
            size, big_dwarf = real_dsym_zip(big, mb)
        else:
            size = make_dsym_zip(big, mb * MIB, fx("dsym/swifty-arm64.dSYM/Contents/Resources/"
                                                    "DWARF/swifty-arm64"))
        print(f"     Big.dSYM.zip: {size / MIB:.0f} MiB, "
              f"{'a real dSYM' if real else 'a small DWARF file and random bytes'}")
        s = Symd(symd, work, "main")
        servers.append(s)
        ng = Nginx(work, s.port)
        servers.append(ng)

        # 1. the xcarchive and the big zip through nginx, in chunks
        t0 = time.time()
        rc, doc, err = upload(symd, ng.url, [xc, big])
        secs = time.time() - t0
        ok = check(rc == 0 and doc is not None, f"first run through nginx exits 0 ({err.strip()[-300:]})")
        if ok:
            files = {os.path.relpath(f["path"], work): f for f in doc["files"]}
            check(doc["found"] == 5 and doc["uploaded"] == 5 and doc["failed"] == 0,
                  f"5 files found and uploaded: {doc['found']} {doc['uploaded']} {doc['failed']}")
            others = sum(len(fs) for _, _, fs in os.walk(xc)) - 4  # 4 Mach-O files
            check(doc["ignored"] == others, f"the {others} other files (Info.plist...) ignored "
                                            f"({doc['ignored']})")
            check(doc["chunk_size"] <= 2 * MIB and "client_max_body_size" in doc.get("note", ""),
                  f"chunks cut to {doc['chunk_size']} below the proxy's 2m, and a note says so")
            check(doc["bytes_sent"] >= size, f"{doc['bytes_sent']} bytes sent for a {size}-byte zip")
            items = [(it["uuid"], it["arch"], it["debug_info"])
                     for f in doc["files"] for it in f["items"]]
            check(len(items) == 6, f"6 images in the files ({len(items)})")
            good = 0
            for uuid, arch, dbg in items:
                img = get_image(ng.url, uuid)
                slices = img.get("images", []) if isinstance(img, dict) else []
                if any(sl.get("arch") == arch and (sl.get("debug_info") or not dbg)
                       for sl in slices):
                    good += 1
                else:
                    print(f"     {uuid} {arch}: {img}")
            check(good == len(items), f"every image queryable through nginx ({good}/{len(items)})")
            check("Big.dSYM.zip" in files and files["Big.dSYM.zip"]["kind"] == "zip",
                  "the zip recognised as a zip")
            print(f"     first run: {secs:.1f} s, {doc['chunks_sent']} chunks, "
                  f"{doc['bytes_sent']} bytes")
            # Its biggest member is most of the zip (the padding, or the
            # DWARF file). Held on the heap, anonymous memory would grow by
            # all of it; what may grow is chunks in flight (4 of 2 MiB),
            # reading the small files, and for the real dSYM its line and
            # symbol indexes (proportional to its debug info, not its bytes).
            grow = s.peak_anon - s.anon_base
            bound = (96 if real else 32) * MIB
            check(grow < bound, f"the server's anonymous memory grew by {grow / MIB:.0f} MiB "
                                f"(bound {bound / MIB:.0f}) reading a {size / MIB:.0f} MiB zip "
                                f"(peak {s.peak_anon / MIB:.0f} MiB)")
            if real and "Big.dSYM.zip" in files:
                its = files["Big.dSYM.zip"]["items"]
                good, asked, bad = symbolicate_check(ng.url, its[0]["uuid"] if its else "",
                                                     big_dwarf)
                check(asked > 0 and good == asked,
                      f"{good}/{asked} addresses of the big dSYM symbolicate through nginx to "
                      f"llvm-symbolizer's function, file and line {bad}")

        # 2. a second run sends nothing
        before = s.chunk_posts()
        rc, doc, err = upload(symd, ng.url, [xc, big])
        check(rc == 0 and doc and doc["chunks_sent"] == 0 and doc["bytes_sent"] == 0 and
              doc["present"] == 5, f"second run: 0 chunks, 0 bytes, 5 present ({doc and doc['chunks_sent']})")
        check(s.chunk_posts() == before, "second run: no chunk reached symd")

        # 3. one plain POST of the zip: nginx's 413, and what to change
        s2 = Symd(symd, work, "plain")  # a fresh server: nothing present
        servers.append(s2)
        ng2 = Nginx(os.path.join(work, "n2"), s2.port)
        servers.append(ng2)
        rc, doc, err = upload(symd, ng2.url, [big], "--plain")
        msg = doc["files"][0].get("error", "") if doc else ""
        check(rc == 1 and "413" in msg and "client_max_body_size" in msg and "--plain" in msg,
              f"a plain POST through nginx: 413 and what to change: {msg[:200]}")

        # 4. killed at half its chunks, run again
        big2 = os.path.join(work, "Big2.dSYM.zip")
        size2 = make_dsym_zip(big2, mb * MIB, fx("dsym/inliner-x86_64.dSYM/Contents/Resources/"
                                                 "DWARF/inliner-x86_64"))
        chunk = 2 * MIB
        total = (size2 + chunk - 1) // chunk
        base = s2.chunk_posts(201)
        p = subprocess.Popen([symd, "upload", "--url", ng2.url, "--json", "--no-progress",
                              "--jobs", "2", big2], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.time() + 300
        while s2.chunk_posts(201) - base < total // 2 and p.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(0.3)  # requests under way when the client died reach the log
        stored1 = s2.chunk_posts(201) - base
        check(0 < stored1 < total, f"killed after {stored1} of {total} chunks")
        before = s2.chunk_posts()
        rc, doc, err = upload(symd, ng2.url, [big2])
        sent2 = s2.chunk_posts() - before
        missing = total - stored1
        check(rc == 0 and doc and doc["uploaded"] == 1, f"the rerun stores the zip ({err.strip()[-200:]})")
        if doc:
            check(doc["chunks_sent"] <= missing + 1,
                  f"the rerun sent {doc['chunks_sent']} chunks, at most the {missing} missing + 1")
            check(sent2 == doc["chunks_sent"],
                  f"symd saw {sent2} chunk posts, the client counted {doc['chunks_sent']}")
        ng2.stop()
        servers.remove(ng2)

        # an older symd (no /v1/upload-options): whole files, one POST each
        ng3 = Nginx(os.path.join(work, "n3"), s2.port,
                    "location = /v1/upload-options { return 404; }")
        servers.append(ng3)
        lib = fx("bin/libfix-x86_64.dylib")
        rc, doc, err = upload(symd, ng3.url, [lib])
        check(rc == 0 and doc and doc["uploaded"] == 1 and doc["chunks_sent"] == 0 and
              doc["bytes_sent"] == os.path.getsize(lib),
              "a server without /v1/upload-options gets one plain POST per file")
        ng3.stop()
        servers.remove(ng3)

        # 5. tokens, twins, --wait, refusals (straight to symd)
        tok = os.path.join(work, "token")
        with open(tok, "w") as f:
            f.write("s3cret\n")
        s3 = Symd(symd, work, "tok", ["--upload-token", "s3cret"])
        servers.append(s3)
        one = fx("bin/inliner-arm64")
        rc, doc, err = upload(symd, s3.url, [one])
        check(rc == 1 and doc and "401" in doc["files"][0].get("error", ""),
              "no token: exit 1, the 401 named")
        rc, doc, err = upload(symd, s3.url, [one], "--token-file", tok, "--wait")
        check(rc == 0 and doc and doc["uploaded"] == 1, f"--token-file and --wait: uploaded ({err.strip()[-200:]})")
        rc, doc, err = upload(symd, None, [one, fx("dsym/inliner-arm64.dSYM")],
                              env={"SYMD_URL": s3.url, "SYMD_UPLOAD_TOKEN": "s3cret"})
        check(rc == 0 and doc and doc["present"] == 1 and doc["uploaded"] == 1,
              "SYMD_URL and SYMD_UPLOAD_TOKEN: the binary present, its dSYM uploaded")
        rc, doc, err = upload(symd, "https://127.0.0.1:1", [one])
        check(rc == 2 and "https" in err, "https:// refused with exit 2")
        ds = os.path.join(work, "iOS DeviceSupport", "16.0 (20A362)", "Symbols")
        os.makedirs(ds)
        rc, doc, err = upload(symd, s3.url, [os.path.dirname(ds)], "--token", "s3cret")
        check(rc == 1 and doc and "symd import" in doc["files"][0].get("error", ""),
              "a DeviceSupport folder refused, pointing at symd import")
        rc, doc, err = upload(symd, "http://127.0.0.1:%d" % free_port(), [one], "--retries", "1")
        check(rc == 1 and doc and "connect" in doc["files"][0].get("error", ""),
              "a server that is not there: exit 1, the failure named")
        r = subprocess.run([symd, "upload", "--url", s3.url, "--token", "s3cret", one],
                           capture_output=True, text=True)
        check(r.returncode == 0 and "1 found, 1 already there" in r.stdout,
              f"the text summary: {r.stdout.strip()[-120:]}")
        # retries: symd comes up a second after the client starts
        port = free_port()
        p = subprocess.Popen([symd, "upload", "--url", f"http://127.0.0.1:{port}", "--json",
                              "--no-progress", "--retries", "8", one], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        late = subprocess.Popen([symd, "serve", "--listen", f"127.0.0.1:{port}", "--db",
                                 os.path.join(work, "late.db"), "--access-log", "off"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            out, _ = p.communicate(timeout=120)
            doc = json.loads(out) if out.strip() else None
            check(p.returncode == 0 and doc and doc["uploaded"] == 1 and doc["retries"] >= 1,
                  f"connection refused is retried with backoff until symd answers "
                  f"({doc and doc['retries']} retries)")
        finally:
            late.send_signal(signal.SIGTERM)
            late.wait(timeout=60)
        # the local form keeps working
        r = subprocess.run([symd, "upload", "--db", os.path.join(work, "local.db"), one],
                           capture_output=True, text=True)
        check(r.returncode == 0 and r.stdout.startswith("created "), "symd upload --db still stores locally")
    finally:
        for x in reversed(servers):
            try:
                x.stop()
            except Exception:
                pass
        if failed == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"     kept {work}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
