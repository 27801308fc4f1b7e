#!/usr/bin/env python3
"""Uploads in parts against one plain POST, on loopback (issue 22).

Takes a large dSYM zip of --size-mb: from 256 on the zip of a real dSYM of
that size (bench/build_big_dsym.sh, built and cached the first time); below,
or with --padded, a real DWARF file (the generated program's of the dwarf
section when bench/.cache holds it, else a fixture's) padded with a stored
member of random bytes up to --size-mb. Then it uploads it to two fresh
`symd serve` (SQLite, or --db-uri for PostgreSQL): once as one plain
`POST /v1/images`, once in parts as a CI client would (hash the chunks, ask
`POST /v1/chunks/missing`, send them --concurrency at once, assemble). It
prints the wall times (best of --runs), the ratio, the server's CPU time, its peak RSS
(VmHWM, and the peak of its anonymous memory sampled every 20 ms), and
checks that both answers store the same images.

The padding is the conservative case for the time ratio: symd skips it
after its first bytes, so the reading of DWARF that both ways share is
small next to the transfer, which is what differs.

    python3 bench/chunked_upload.py [--symd ./symd] [--size-mb 500] [--runs 3] [--padded]
"""
import argparse
import concurrent.futures
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib.bigdsym import REAL_FROM_MB, real_dsym_zip  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20


def find_dwarf():
    for p in (os.path.join(ROOT, "bench/.cache/dwarf/prog.dSYM/Contents/Resources/DWARF/prog"),
              os.path.join(ROOT, "fixtures/dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64")):
        if os.path.exists(p):
            return p
    sys.exit("no DWARF file to upload")


def build_zip(path, dwarf, size):
    """A dSYM zip: the DWARF file (deflated) and a stored padding member of
    random bytes (distinct throughout) making the archive about size bytes."""
    with zipfile.ZipFile(path, "w", allowZip64=True) as z:
        z.write(dwarf, "App.dSYM/Contents/Resources/DWARF/App", zipfile.ZIP_DEFLATED)
        left = size - os.path.getsize(path) - 4096
        if left > 0:
            with z.open(zipfile.ZipInfo("App.dSYM/Contents/Resources/padding.bin"), "w",
                        force_zip64=True) as m:
                # every block its own random bytes, so no two chunks are
                # alike (a repeated block would make the chunks of the
                # parts upload nearly identical: not the real case)
                while left > 0:
                    n = min(left, 4 * MIB)
                    m.write(os.urandom(n))
                    left -= n
    return os.path.getsize(path)


LIVE = []  # servers started and not stopped: stopped on the way out, whatever happens


class Server:
    def __init__(self, symd, work, tag, db_uri, extra, tmpdir=None):
        self.db = db_uri or os.path.join(work, tag + ".db")
        self.log = open(os.path.join(work, tag + ".log"), "w")
        env = dict(os.environ, TMPDIR=tmpdir) if tmpdir else None
        self.p = subprocess.Popen([symd, "serve", "--listen", "127.0.0.1:0", "--db", self.db,
                                   "--access-log", "off"] + extra,
                                  stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        LIVE.append(self)
        line = self.p.stdout.readline()
        m = re.search(r":(\d+)\s*$", line)
        if not m:
            sys.exit(f"symd did not start: {line!r}")
        self.port = int(m.group(1))
        self.peak_anon = 0
        self._stop = False
        self._t = threading.Thread(target=self._sample, daemon=True)
        self._t.start()

    def _status(self):
        out = {}
        try:
            with open(f"/proc/{self.p.pid}/status") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if v.strip().endswith("kB"):
                        out[k] = int(v.split()[0]) * 1024
        except OSError:
            pass
        return out

    def _sample(self):
        while not self._stop:
            self.peak_anon = max(self.peak_anon, self._status().get("RssAnon", 0))
            time.sleep(0.02)

    def cpu(self):
        """CPU seconds the server used so far (user + system): a figure the
        machine's other work disturbs less than wall time."""
        try:
            with open(f"/proc/{self.p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return 0.0

    def hwm(self):
        return self._status().get("VmHWM", 0)

    def stop(self):
        if self in LIVE:
            LIVE.remove(self)
        self._stop = True
        if hasattr(self, "_t"):
            self._t.join()
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=60)
        self.log.close()


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def plain_post(port, path):
    with open(path, "rb") as f:
        return request(port, "POST", "/v1/images?name=App.dSYM.zip", body=f,
                       headers={"Content-Length": str(os.path.getsize(path))})


def chunked_upload(port, path, concurrency=None, server=None):
    """The client's whole flow; returns (status, body, phases in seconds and,
    with server, its peak anonymous memory while the chunks went)."""
    t0 = time.perf_counter()
    st, opts = request(port, "GET", "/v1/upload-options")
    opts = json.loads(opts)
    csize, conc = opts["chunk_size"], concurrency or opts["concurrency"]
    size = os.path.getsize(path)
    offsets = list(range(0, size, csize))
    fd = os.open(path, os.O_RDONLY)

    def piece(off):
        return os.pread(fd, min(csize, size - off), off)

    def hash_piece(off):
        return hashlib.sha256(piece(off)).hexdigest()

    with concurrent.futures.ThreadPoolExecutor(conc) as ex:
        hashes = list(ex.map(hash_piece, offsets))
    t1 = time.perf_counter()
    st, miss = request(port, "POST", "/v1/chunks/missing",
                       json.dumps({"chunks": hashes}), {"Content-Type": "application/json"})
    missing = set(json.loads(miss)["missing"])

    def send(i):
        if hashes[i] not in missing:
            return 200
        s, _ = request(port, "POST", "/v1/chunks/" + hashes[i], piece(offsets[i]))
        return s

    # the whole file's hash while the chunks go (hashlib lets go of the GIL)
    whole = hashlib.sha256()
    with concurrent.futures.ThreadPoolExecutor(conc) as ex:
        fut = ex.map(send, range(len(offsets)))
        for off in offsets:
            whole.update(piece(off))
        codes = list(fut)
    if any(c // 100 != 2 for c in codes):
        sys.exit(f"chunk uploads failed: {sorted(set(codes))}")
    t2 = time.perf_counter()
    send_anon = server.peak_anon if server else 0
    st, body = request(port, "POST", "/v1/images/assemble?wait=300",
                       json.dumps({"name": "App.dSYM.zip", "size": size,
                                   "sha256": whole.hexdigest(), "chunks": hashes}),
                       {"Content-Type": "application/json"})
    t3 = time.perf_counter()
    os.close(fd)
    return st, body, {"hash": t1 - t0, "send": t2 - t1, "assemble": t3 - t2,
                      "chunks": len(offsets), "chunk_size": csize, "concurrency": conc,
                      "send_peak_anon": send_anon}


def timeless(body):
    imgs = json.loads(body)["images"]
    for i in imgs:
        i.pop("created_at", None)
        i.pop("updated_at", None)
    return imgs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--symd", default=os.path.join(ROOT, "symd"))
    ap.add_argument("--size-mb", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dwarf", default=None)
    ap.add_argument("--db-uri", default=None, help="a PostgreSQL URI (fresh database) instead of SQLite files")
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--serve-args", default="", help="extra symd serve arguments")
    ap.add_argument("--server-tmpdir", default=None,
                    help="the server's TMPDIR, where it assembles files (e.g. /dev/shm)")
    ap.add_argument("--json", default=None, help="write the figures here too")
    ap.add_argument("--padded", action="store_true",
                    help=f"pad a small DWARF file even from {REAL_FROM_MB} MiB on")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="symd-chunked-")
    try:
        if a.size_mb >= REAL_FROM_MB and not a.padded and not a.dwarf:
            zpath, dwarf = real_dsym_zip(a.size_mb)
            size = os.path.getsize(zpath)
            print(f"file: {size / MIB:.0f} MiB zip of a real dSYM (DWARF "
                  f"{os.path.getsize(dwarf) / MIB:.1f} MiB, stored)")
        else:
            dwarf = a.dwarf or find_dwarf()
            zpath = os.path.join(work, "App.dSYM.zip")
            size = build_zip(zpath, dwarf, a.size_mb * MIB)
            print(f"file: {size / MIB:.0f} MiB zip (DWARF {os.path.getsize(dwarf) / MIB:.1f} MiB "
                  f"from {os.path.relpath(dwarf, ROOT)}, the rest a stored padding member)")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        extra = a.serve_args.split() if a.serve_args else []
        plain_t, chunk_t, phases, plain_cpu, chunk_cpu = [], [], [], [], []
        plain_rss = chunk_rss = plain_anon = chunk_anon = 0
        for r in range(a.runs):
            s = Server(a.symd, work, f"plain{r}", a.db_uri, extra, a.server_tmpdir)
            t = time.perf_counter()
            st, pbody = plain_post(s.port, zpath)
            plain_t.append(time.perf_counter() - t)
            if st != 201:
                sys.exit(f"plain POST: {st} {pbody[:300]!r}")
            plain_rss, plain_anon = max(plain_rss, s.hwm()), max(plain_anon, s.peak_anon)
            plain_cpu.append(s.cpu())
            s.stop()
            if a.db_uri:  # one database: empty it for the chunked server
                subprocess.run(["psql", a.db_uri, "-qc", "DELETE FROM images; DELETE FROM chunks"],
                               check=True)
            s = Server(a.symd, work, f"chunked{r}", a.db_uri, extra, a.server_tmpdir)
            t = time.perf_counter()
            st, cbody, ph = chunked_upload(s.port, zpath, a.concurrency, s)
            chunk_t.append(time.perf_counter() - t)
            phases.append(ph)
            if st != 201:
                sys.exit(f"assemble: {st} {cbody[:300]!r}")
            if timeless(cbody) != timeless(pbody):
                sys.exit("the assembled answer differs from the plain POST's")
            chunk_rss, chunk_anon = max(chunk_rss, s.hwm()), max(chunk_anon, s.peak_anon)
            chunk_cpu.append(s.cpu())
            s.stop()
            if a.db_uri:
                subprocess.run(["psql", a.db_uri, "-qc", "DELETE FROM images; DELETE FROM chunks"],
                               check=True)
            else:
                for f in os.listdir(work):
                    if f.endswith((".db", ".db-wal", ".db-shm")):
                        os.unlink(os.path.join(work, f))
                    elif f.endswith(".db.chunks"):  # the SQLite store's chunk spool
                        shutil.rmtree(os.path.join(work, f))
            print(f"run {r + 1}: plain {plain_t[-1]:.2f} s, chunked {chunk_t[-1]:.2f} s "
                  f"(hash {ph['hash']:.2f}, send {ph['send']:.2f}, assemble {ph['assemble']:.2f}); "
                  f"server CPU {plain_cpu[-1]:.2f} s and {chunk_cpu[-1]:.2f} s")
        best_p, best_c = min(plain_t), min(chunk_t)
        ph = phases[chunk_t.index(best_c)]
        res = {"file_bytes": size, "plain_s": best_p, "chunked_s": best_c,
               "ratio": best_c / best_p, "phases": ph,
               "plain_peak_rss": plain_rss, "chunked_peak_rss": chunk_rss,
               "plain_peak_anon": plain_anon, "chunked_peak_anon": chunk_anon,
               "plain_runs": plain_t, "chunked_runs": chunk_t,
               "plain_server_cpu": plain_cpu, "chunked_server_cpu": chunk_cpu}
        print(f"best of {a.runs}: plain POST {best_p:.2f} s ({size / MIB / best_p:.0f} MiB/s), "
              f"chunked {best_c:.2f} s ({ph['chunks']} chunks of {ph['chunk_size'] / MIB:.0f} MiB, "
              f"{ph['concurrency']} at once): ratio {best_c / best_p:.2f}")
        print(f"server CPU (user + system), least of {a.runs}: plain {min(plain_cpu):.2f} s, "
              f"chunked {min(chunk_cpu):.2f} s")
        print(f"server peak RSS (VmHWM): plain {plain_rss / MIB:.0f} MiB, chunked "
              f"{chunk_rss / MIB:.0f} MiB; peak anonymous: plain {plain_anon / MIB:.0f} MiB, "
              f"chunked {chunk_anon / MIB:.0f} MiB (while the chunks went: "
              f"{max(p['send_peak_anon'] for p in phases) / MIB:.0f} MiB; a plain POST also "
              f"holds its body; zip members past 1 MiB are a mapped temporary file)")
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
    finally:
        for s in list(LIVE):
            s.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
