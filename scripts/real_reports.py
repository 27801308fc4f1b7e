#!/usr/bin/env python3
"""Runs every report of ../shared/real-reports and ../shared/real-crashes
through `symd crash --json` (a fresh database: every image missing) and
prints, per file, whether it was accepted, its kind, the frames kept against
MANIFEST.tsv's count and its warnings; then a table per format and bug_type.
Exit 1 when a report is refused or a manifest count differs.

    python3 scripts/real_reports.py [--symd ./symd] [--shared ../shared] [-v]
"""
import argparse
import collections
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def frames_of(answer, roles=None):
    """Report frames the answer holds: distinct frame numbers per thread
    (inlined levels share their frame's number); only threads of the given
    roles when roles is set."""
    n = 0
    for t in answer.get("threads", []):
        if roles is None or t.get("role") in roles:
            n += len({f.get("frame") for f in t.get("frames", [])})
    return n


def manifest_frames(answer, row):
    """The frames the manifest counts. A full panic (151) counts its embedded
    stackshot's userFrames + kernelFrames; the panic string's own kernel
    backtrace comes on top (a section of role "kernel")."""
    if answer.get("kind") == "panic" and "stackshot" in row.get("notes", ""):
        roles = {t.get("role") for t in answer.get("threads", [])} - {"kernel"}
        return frames_of(answer, roles)
    return frames_of(answer)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--symd", default=os.path.join(ROOT, "symd"))
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("-v", action="store_true", help="print the warnings")
    a = ap.parse_args()
    manifest = {}
    mpath = os.path.join(a.shared, "real-reports", "MANIFEST.tsv")
    if os.path.exists(mpath):
        with open(mpath, encoding="utf-8") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                manifest[row["file"]] = row
    files = []
    for sub in ("real-reports", "real-crashes"):
        d = os.path.join(a.shared, sub)
        if os.path.isdir(d):
            files += [os.path.join(d, n) for n in sorted(os.listdir(d))
                      if not n.endswith((".md", ".tsv"))]
    if not files:
        print("no real reports found under", a.shared)
        return 0
    bad = 0
    table = collections.defaultdict(lambda: [0, 0, 0, 0])  # files, accepted, exact, warned
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "t.db")
        for path in files:
            name = os.path.basename(path)
            m = manifest.get(name, {})
            p = subprocess.run([a.symd, "crash", "--db", db, "--json", path],
                               capture_output=True, text=True)
            key = (m.get("format", "crash" if name.endswith(".crash") else "?"),
                   m.get("bug_type", ""))
            row = table[key]
            row[0] += 1
            if p.returncode != 0:
                bad += 1
                print(f"REFUSED  {name}: {p.stderr.strip()[:200]}")
                continue
            try:
                ans = json.loads(p.stdout)
            except ValueError as e:
                bad += 1
                print(f"BADJSON  {name}: {e}")
                continue
            row[1] += 1
            got = manifest_frames(ans, m)
            want = m.get("frames")
            exact = want is None or want == "" or int(want) == got
            warns = ans.get("warnings", [])
            if warns:
                row[3] += 1
            if exact:
                row[2] += 1
            else:
                bad += 1
            mark = "ok      " if exact else "FRAMES  "
            print(f"{mark} {name[:90]}: kind {ans.get('kind')}, frames {got}"
                  f"{'' if want in (None, '') else ' of ' + want}, warnings {len(warns)}")
            if a.v:
                for w in warns[:10]:
                    print(f"           {w.get('where')}: {w.get('message')}")
    print()
    print("| format | bug_type | files | accepted | frames as in the manifest | with warnings |")
    print("|---|---|---|---|---|---|")
    for (fmt, bt), (n, acc, ex, w) in sorted(table.items()):
        print(f"| {fmt} | {bt or '-'} | {n} | {acc} | {ex} | {w} |")
    tot = [sum(v[i] for v in table.values()) for i in range(4)]
    print(f"| all | | {tot[0]} | {tot[1]} | {tot[2]} | {tot[3]} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
