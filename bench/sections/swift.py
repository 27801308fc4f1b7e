"""The swift section: symd demangle vs llvm-cxxfilt, a Swift-heavy index vs llvm-symbolizer."""
import os
import sys
import time

from benchlib.common import die, read_json, run, write_json
from benchlib.macho import strip1
from benchlib.measure import Figure, Report, mark, ratio_block, run_measured

SWIFT_PREFIXES = ("$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0")


def swift_names(nm_files):
    """Distinct Swift names (leading '_' of the symbol table removed) of
    llvm-nm listings."""
    names = set()
    for path in nm_files:
        with open(path) as f:
            for line in f:
                name = line.rstrip("\n").rsplit(" ", 1)[-1]
                name = strip1(name)
                if name.startswith(SWIFT_PREFIXES):
                    names.add(name)
    return sorted(names)



def cmd_swift_names(a):
    names = swift_names(a.nm)
    if not names:
        die("no Swift names in " + " ".join(a.nm))
    reps = max(1, a.lines // len(names))
    infile = os.path.join(a.work, "swift-names.txt")
    with open(infile, "w") as f:
        for _ in range(reps):
            f.write("\n".join(names) + "\n")
    total = reps * len(names)
    res = {"distinct": len(names), "lines": total, "styles": {}}
    for label, cmd in (("simplified", [a.symd, "demangle"]),
                       ("full", [a.symd, "demangle", "--style", "full"]),
                       ("llvm-cxxfilt", ["llvm-cxxfilt"])):
        best = None
        for _ in range(a.runs):
            m = run_measured(cmd, stdin=infile, merge_stderr=False)
            secs, cpu, out = m.seconds, m.cpu_s, m.output
            lines = out.count(b"\n")
            if lines != total:
                die(f"{label}: {lines} lines out for {total} in")
            if best is None or secs < best["seconds"]:
                changed = sum(1 for x, y in zip(out.split(b"\n")[:len(names)], names)
                              if x.decode() != y)
                best = {"seconds": secs, "cpu_s": cpu, "names_per_s": total / secs,
                        "changed": changed}
        res["styles"][label] = best
        print(f"{label:13} {best['names_per_s']:10.0f} names/s ({total} lines in "
              f"{best['seconds']:.2f} s; {best['changed']}/{len(names)} distinct names changed)")
    write_json(a.out, res)


def cmd_swift_first(a):
    probe = read_json(a.samples)["samples"][0]["vmaddr"]
    best = None
    for _ in range(a.runs):
        t = time.perf_counter()
        out = run(["llvm-symbolizer", "--obj=" + a.slice, "--no-demangle", "0x%x" % probe])
        secs = time.perf_counter() - t
        if not out.strip() or out.startswith("??"):
            die(f"llvm-symbolizer gave no name for 0x{probe:x}: {out!r}")
        best = secs if best is None else min(best, secs)
    write_json(a.out, {"first_answer_ms": best * 1e3, "probe": "0x%x" % probe})
    print(f"llvm-symbolizer's first answer from {os.path.basename(a.slice)}: {best * 1e3:.0f} ms")



def cmd_swift_summary(a):
    """The Swift section's summary: symd demangle against llvm-cxxfilt, and a
    Swift-heavy index's upload -> queryable against llvm-symbolizer's first
    answer."""
    d = a.dir
    names = read_json(os.path.join(d, "swift-names.json"))
    up = read_json(os.path.join(d, "swift-upload.json"))
    first = read_json(os.path.join(d, "swift-first.json"))
    acc = [read_json(os.path.join(d, f"swift-accuracy-{arch}.json")) for arch in ("arm64", "x86_64")]
    st = names["styles"]
    rep = Report("Swift")
    q_ok = rep.check(up["queryable_ms"] <= 1000, "upload->queryable")
    acc_ok = rep.check(all(x["agree"] == x["n"] and x["edges"]["agree"] == x["edges"]["n"]
                           for x in acc), "accuracy", goal=False)
    syms = sum(i["symbols"] for i in up["images"])
    rep.lines.append(f"Swift names demangled (symd demangle, {names['distinct']} real names of "
                     f"aperture, {names['lines']} lines):")
    rec = rep.compare("symd demangle/llvm-cxxfilt",
                      Figure("symd demangle, simplified", st["simplified"]["names_per_s"], "names/s"),
                      Figure("llvm-cxxfilt", st["llvm-cxxfilt"]["names_per_s"], "names/s"))
    rep.lines += ratio_block(rec, f"full style {st['full']['names_per_s']:,.0f}/s",
                             "passes the same lines through: it reads no Swift", indent="  ")
    rep.lines.append(f"  distinct names shown demangled: simplified {st['simplified']['changed']}/"
                     f"{names['distinct']}, full {st['full']['changed']}/{names['distinct']}")
    rep.lines.append(f"Swift-heavy index: aperture {up['bytes'] / 1e6:.1f} MB fat, {syms} symbols:")
    rec = rep.compare("upload->queryable/first answer",
                      Figure("symd upload->queryable", up["queryable_ms"], "ms"),
                      Figure("llvm-symbolizer's first answer from the file",
                             first["first_answer_ms"], "ms"))
    rep.lines += ratio_block(rec, f"upload {up['upload_ms']:.0f} ms; limit 1000 ms {mark(q_ok)}",
                             indent="  ")
    rep.lines.append("Swift accuracy vs llvm-symbolizer --no-demangle: " + "; ".join(
        f"{x['arch']} {x['agree']}/{x['n']}, edges {x['edges']['agree']}/{x['edges']['n']}, "
        f"{x['demangled']}/{x['n']} shown demangled" for x in acc) + f" {mark(acc_ok)}")
    sys.exit(rep.finish(a.out, a.strict))


def register(sub):
    s = sub.add_parser("swift-names", help="Swift names per second through symd demangle in both "
                                           "styles, beside llvm-cxxfilt")
    s.add_argument("--nm", action="append", required=True, help="an llvm-nm listing (repeat)")
    s.add_argument("--symd", required=True)
    s.add_argument("--work", required=True)
    s.add_argument("--lines", type=int, default=500000)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_swift_names)

    s = sub.add_parser("swift-first", help="llvm-symbolizer's first answer from the file (its cold "
                                           "start)")
    s.add_argument("--slice", required=True)
    s.add_argument("--samples", required=True)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_swift_first)

    s = sub.add_parser("swift-summary", help="print the Swift summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--strict", action="store_true")
    s.set_defaults(fn=cmd_swift_summary)
