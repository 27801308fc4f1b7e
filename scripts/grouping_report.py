#!/usr/bin/env python3
"""How symd groups the real reports of ../shared (issue 21, item 6).

Starts a fresh `symd serve` (a throwaway database, every image missing),
posts every report of ../shared/real-reports, real-crashes and reporters,
reads each stored crash back and prints:

  - groups: the (kind, signature) groups the reports make;
  - reports whose blamed thread has an app frame: the crashed thread, or a
    Last Exception / Application Specific Backtrace, holds a frame in one of
    the app's own images (an image the answer says is not the OS's, that
    has a name or a UUID; a frame at address 0 is nobody's);
  - how many of those are grouped under a system or machinery frame: their
    signature (its frame part, before " | EXC_...") is neither the function
    name of such an app frame that is not crash machinery nor the place
    ("Image + 0x1a2b") of one;
  - incidents split across groups: reports of one incident (the same
    incident_id: an .ips and its .crash, a KSCrash JSON and its text) filed
    under more than one (kind, signature).

The check is the script's own, not symd's: names are compared after the
normalisation the README describes (first line, no " + N", " [inlined]",
"(file:line)" or "+ N " written inside a name, mangled names through `symd
demangle`), and MACHINERY mirrors the README's list.

    python3 scripts/grouping_report.py [--symd ./symd] [--shared ../shared] [-v] [--check]

-v lists the reports grouped under a system or machinery frame and the split
incidents; --check exits 1 when there is any.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DIRS = ("real-reports", "real-crashes", "reporters")

# Crash machinery as the README lists it: base names (no parameters, Swift
# closures of them included, Objective-C categories dropped), then prefixes.
MACHINERY = {
    "abort", "__abort", "abort_message", "raise", "__pthread_kill", "pthread_kill",
    "__abort_with_payload", "abort_with_payload", "abort_with_payload_wrapper_internal",
    "abort_with_reason", "_os_crash", "_os_crash_msg", "_os_crash_fallback", "__assert_rtn",
    "__assert", "__stack_chk_fail", "__chk_fail", "__chk_fail_overflow", "__chk_fail_overlap",
    "malloc_vreport", "malloc_report", "malloc_zone_error", "szone_error",
    "free_list_checksum_botch", "_os_unfair_lock_corruption_abort",
    "_os_unfair_lock_recursive_abort", "_os_unfair_lock_unowned_abort",
    "objc_exception_throw", "objc_exception_rethrow", "_objc_terminate", "objc_terminate",
    "__exceptionPreprocess", "_CFThrowFormattedException", "+[NSException raise:format:]",
    "+[NSException raise:format:arguments:]", "-[NSException raise]",
    "-[NSAssertionHandler handleFailureInMethod:object:file:lineNumber:description:]",
    "-[NSAssertionHandler handleFailureInFunction:file:lineNumber:description:]",
    "-[NSObject doesNotRecognizeSelector:]", "___forwarding___", "_CF_forwarding_prep_0",
    "__forwarding_prep_0___", "__cxa_throw", "__cxa_rethrow", "__cxa_rethrow_primary_exception",
    "__cxa_bad_cast", "__cxa_bad_typeid", "__cxa_throw_bad_array_new_length", "std::terminate",
    "std::__terminate", "std::rethrow_exception", "std::__1::rethrow_exception",
    "default_terminate_handler", "demangling_terminate_handler",
    "demangling_unexpected_handler", "__cxxabiv1::failed_throw",
    "std::__1::__libcpp_verbose_abort", "std::__libcpp_verbose_abort", "__libcpp_verbose_abort",
    "_assertionFailure", "assertionFailure", "_fatalErrorMessage", "fatalError",
    "preconditionFailure", "_preconditionFailure", "precondition", "_precondition", "assert",
    "_unimplementedInitializer", "swift_unexpectedError", "swift_willThrow",
    "swift_willThrowTypedImpl", "swift_errorInMain", "swift_deletedMethodError",
    "swift_dynamicCastFailure", "swift::swift_dynamicCastFailure", "swift::fatalError",
    "swift::fatalErrorv", "swift_reportError", "_swift_stdlib_reportFatalError",
    "_swift_stdlib_reportFatalErrorInFile", "_swift_stdlib_reportUnimplementedInitializer",
    "_swift_runtime_on_report",
}
MACHINERY_PREFIX = ("Swift runtime failure:", "__clang_trap_msg$", "swift_abort",
                    "swift::swift_abort", "std::__throw_", "std::__1::__throw_")
# machinery when the frame below is the app's
BEFORE_APP_PREFIX = ("objc_msgSend", "_objc_msgSend", "objc_msgLookup", "objc_retain",
                     "objc_release", "swift_retain", "swift_release")


def base_name(n):
    while True:
        m = re.match(r"(?:closure #\d+ in |implicit closure #\d+ in |partial apply for |"
                     r"specialized |merged )", n)
        if not m:
            break
        n = n[m.end():]
    if n.startswith(("-[", "+[")):
        return re.sub(r"\([^)]*\)", "", n)
    n = n.split("(", 1)[0]
    return re.sub(r"\[abi:[^\]]*\]", "", n).rstrip()


def machinery(n, next_is_app=False):
    if re.search(r": assertion .* failed", n):
        return True
    b = base_name(n)
    if b in MACHINERY or b.startswith(MACHINERY_PREFIX):
        return True
    return next_is_app and b.startswith(BEFORE_APP_PREFIX)


class Demangler:
    """Mangled names through `symd demangle`, all at once."""

    def __init__(self, symd):
        self.symd = symd
        self.cache = {}

    def many(self, names):
        todo = sorted({n for n in names if n not in self.cache})
        if todo:
            out = subprocess.run([self.symd, "demangle"], input="\n".join(todo) + "\n",
                                 capture_output=True, text=True, check=True).stdout
            for raw, shown in zip(todo, out.split("\n")):
                if shown == raw and raw[:1] == "_":  # the leading '_' a device kept
                    alt = subprocess.run([self.symd, "demangle"], input=raw[1:] + "\n",
                                         capture_output=True, text=True).stdout.rstrip("\n")
                    shown = alt if alt != raw[1:] else raw
                self.cache[raw] = shown


def normalise(sym, image, dem):
    """A frame's function name as a signature writes it; None when none."""
    if not sym:
        return None
    n = re.split(r"[\r\n]", sym, 1)[0]
    n = re.sub(r"[ \t\v\f]+", " ", n).strip()
    while True:
        m = (re.search(r" \[inlined\]$", n) or re.search(r" \([^()]*:\d+(?::\d+)?\)$", n)
             or re.search(r" \+ (?:0x[0-9a-fA-F]+|\d+)$", n))
        if not m:
            break
        n = n[:m.start()]
    n = re.sub(r" ?\+ \d+ \(", "(", n)
    n = n.split("$VARIANT$", 1)[0] if n.find("$VARIANT$") > 0 else n
    n = re.sub(r"\.cold\.\d+$", "", n)
    if re.match(r"_?(?:_Z|_R|\$|_T)", n):
        dem.many([n])
        n = dem.cache.get(n, n)
    if not n or n in ("???", "<redacted>") or re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", n) \
            or n == image:
        return None
    return n


def frame_part(signature):
    """The signature without its exception type."""
    head, sep, tail = signature.rpartition(" | ")
    if sep and re.match(r"(EXC_|SIG)", tail):
        return head
    return signature


def blamed_threads(crash):
    return [t for t in crash.get("threads", [])
            if t.get("crashed") or t.get("role") in ("last_exception", "app_specific")]


def judge(crash, dem):
    """(has an app frame, grouped under an app frame, why not)."""
    images = crash.get("images", [])

    def image_of(fr):
        i = fr.get("image_index")
        if isinstance(i, int) and 0 <= i < len(images):
            return images[i]
        for im in images:
            if fr.get("image") and im.get("name") == fr.get("image"):
                return im
        return None

    def is_app(fr):
        im = image_of(fr)
        if im is None or im.get("system") or int(fr.get("address", "0x0"), 16) == 0:
            return False
        return bool(im.get("name") and im["name"] != "???") or \
            bool(im.get("uuid") and set(im["uuid"]) - {"0", "-"})

    threads = blamed_threads(crash)
    dem.many([f.get("symbol") for t in threads for f in t.get("frames", [])
              if f.get("symbol") and re.match(r"_?(?:_Z|_R|\$|_T)", f["symbol"])])
    names, places, any_app = set(), set(), False
    for t in threads:
        frames = t.get("frames", [])
        for k, fr in enumerate(frames):
            if not is_app(fr):
                continue
            any_app = True
            im = image_of(fr)
            places.add(fr.get("image") or im.get("name") or "")
            n = normalise(fr.get("symbol"), im.get("name"), dem)
            if n:
                nxt = frames[k + 1] if k + 1 < len(frames) else None
                if not machinery(n, bool(nxt and is_app(nxt))):
                    names.add(n)
    if not any_app:
        return False, None, None
    sig = frame_part(crash.get("signature") or "")
    if sig in names:
        return True, True, None
    m = re.fullmatch(r"(.*) \+ 0x[0-9a-f]+", sig)
    if m and m.group(1) in places:
        return True, True, None
    why = "machinery" if machinery(sig) else "not an app frame"
    return True, False, why


def post(port, path, body=None, method="GET"):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                                 method=method)
    if body is not None:
        req.add_header("Content-Type", "application/octet-stream")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None


def stored_ids(answer):
    """Every stored crash id an answer to POST /v1/crashes gives."""
    if isinstance(answer, dict):
        if isinstance(answer.get("id"), int) and "signature" in answer:
            yield answer["id"]
        for v in answer.values():
            yield from stored_ids(v)
    elif isinstance(answer, list):
        for v in answer:
            yield from stored_ids(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--symd", default=os.path.join(ROOT, "symd"))
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("-v", action="store_true", help="list what is grouped wrongly")
    ap.add_argument("--check", action="store_true", help="exit 1 when anything is")
    a = ap.parse_args()
    files = []
    for sub in DIRS:
        d = os.path.join(a.shared, sub)
        if os.path.isdir(d):
            files += [os.path.join(d, n) for n in sorted(os.listdir(d))
                      if not n.endswith((".md", ".tsv"))]
    if not files:
        sys.exit("no reports under %s" % a.shared)
    tmp = tempfile.mkdtemp(prefix="symd-grouping-")
    proc = subprocess.Popen([a.symd, "serve", "--listen", "127.0.0.1:0", "--db",
                             os.path.join(tmp, "g.db"), "--access-log", "off"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if not m:
            sys.exit("symd did not start: %r" % line)
        port = int(m.group(1))
        dem = Demangler(a.symd)
        ids, refused = {}, []
        for f in files:
            with open(f, "rb") as fh:
                status, answer = post(port, "/v1/crashes", fh.read(), "POST")
            got = list(stored_ids(answer)) if status in (200, 201) else []
            if not got:
                refused.append((os.path.basename(f), status))
            for i in got:
                ids[i] = os.path.basename(f)
        crashes = {}
        for i in ids:
            status, c = post(port, "/v1/crashes/%d" % i)
            if status == 200:
                crashes[i] = c
        status, g = post(port, "/v1/crashes/groups?limit=1000")
        groups = g.get("groups", []) if status == 200 else []
        with_app = wrong = 0
        wrong_list = []
        for i, c in sorted(crashes.items()):
            has_app, ok, why = judge(c, dem)
            with_app += has_app
            if has_app and not ok:
                wrong += 1
                wrong_list.append((ids[i], c.get("kind"), c.get("signature"), why))
        incidents = collections.defaultdict(list)
        for i, c in crashes.items():
            if c.get("incident_id"):
                incidents[c["incident_id"].upper()].append(
                    (ids[i], c.get("kind"), c.get("signature")))
        twice = {k: v for k, v in incidents.items() if len(v) > 1}
        split = {k: v for k, v in twice.items() if len({(x[1], x[2]) for x in v}) > 1}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)

    print("reports posted: %d files, %d stored crashes, %d refused"
          % (len(files), len(crashes), len(refused)))
    print("groups: %d" % len(groups))
    print("reports whose blamed thread has an app frame: %d" % with_app)
    print("  grouped under a system or machinery frame: %d" % wrong)
    print("incidents posted more than once: %d" % len(twice))
    print("  split across groups: %d" % len(split))
    if a.v:
        for name, kind, sig, why in wrong_list:
            print("  wrong (%s): %s [%s] %r" % (why, name, kind, sig))
        for k, v in sorted(split.items()):
            print("  split %s:" % k)
            for name, kind, sig in v:
                print("      %s [%s] %r" % (name, kind, sig))
        for name, status in refused:
            print("  refused (%s): %s" % (status, name))
    if a.check and (wrong or split):
        sys.exit(1)


if __name__ == "__main__":
    main()
