#!/usr/bin/env python3
"""Helpers for bench/run.sh (python3 standard library only).

Each subcommand does one step of the benchmark and, where it measures
something, writes a small JSON result that `summary` turns into the report:

  sample       function table of a slice (llvm-nm + function starts) and N
               seeded random addresses strictly inside functions
  upload       POST the fat binary; time upload and upload -> queryable
  accuracy     server vs llvm-symbolizer (and vs the llvm-nm table) on the
               samples: symbol name and offset must agree for every address
  bodies       the wrk request bodies (200 frames each) and their addresses
  symbolizer   time llvm-symbolizer in batch mode on the wrk addresses
  load         how busy the machine is before the throughput runs
  wrk          one wrk run (bench/symbolicate.lua), with the CPU each side used
  summary      print the summary block; exit status says pass or fail
"""
import argparse
import http.client
import json
import math
import os
import random
import re
import resource
import subprocess
import sys
import time

LOAD_ADDRESS = 0x104A38000  # where the bench pretends the image was loaded
HEX = re.compile(r"^(?:0x)?([0-9a-fA-F]+)$")


def die(msg):
    print(f"bench: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read_json(path):
    with open(path) as f:
        return json.load(f)


# ---- sample ------------------------------------------------------------------


def text_section(slice_path):
    """(start, end) of __TEXT,__text from llvm-objdump's section headers."""
    for line in run(["llvm-objdump", "--macho", "--section-headers", slice_path]).splitlines():
        f = line.split()
        if len(f) >= 5 and f[1] == "__text" and f[4] == "TEXT":
            start, size = int(f[3], 16), int(f[2], 16)
            return start, start + size
    die(f"{slice_path}: no __text section")


def function_starts(slice_path):
    out = run(["llvm-objdump", "--macho", "--function-starts", slice_path])
    return sorted({int(m.group(1), 16) for m in map(HEX.match, out.split()) if m})


def function_table(slice_path):
    """Functions of __TEXT,__text as llvm-nm sees them.

    A function is a distinct address carrying t/T symbols (all names there
    are aliases); it extends to the next symbol, the next LC_FUNCTION_STARTS
    entry or the end of __text, whichever comes first."""
    start, end = text_section(slice_path)
    names = {}
    nm = run(["llvm-nm", "-n", "--defined-only", slice_path])
    for line in nm.splitlines():
        f = line.split(None, 2)
        if len(f) != 3 or f[1] not in ("t", "T") or f[2] == "__mh_execute_header":
            continue
        addr = int(f[0], 16)
        if start <= addr < end:
            names.setdefault(addr, []).append((f[1], f[2]))
    starts = function_starts(slice_path)
    bounds = sorted(set(names) | {a for a in starts if start <= a < end} | {end})
    funcs = []
    j = 0
    for addr in sorted(names):
        while bounds[j] <= addr:
            j += 1
        funcs.append({"addr": addr, "end": bounds[j], "names": names[addr]})
    return {"text_start": start, "text_end": end, "function_starts": len(starts),
            "functions": funcs}


def cmd_sample(a):
    table = function_table(a.slice)
    funcs = table["functions"]
    # arm64 code is 4-byte instructions: keep sampled addresses on instruction
    # boundaries, like real return addresses. x86_64: any byte.
    align = 4 if a.arch == "arm64" else 1
    usable = [f for f in funcs if f["end"] - f["addr"] > align]
    rng = random.Random(f"{a.seed}/{a.arch}")
    samples = []
    for _ in range(a.n):
        f = rng.choice(usable)  # functions uniformly, then an address inside
        k = rng.randrange(1, (f["end"] - f["addr"] + align - 1) // align)
        samples.append({"vmaddr": f["addr"] + k * align, "function": f["addr"]})
    aliases = sum(1 for f in funcs if len(f["names"]) > 1)
    write_json(a.out, {"arch": a.arch, "slice": a.slice, "seed": a.seed,
                       "text_start": table["text_start"], "text_end": table["text_end"],
                       "functions": len(funcs), "alias_groups": aliases,
                       "function_starts": table["function_starts"],
                       "names": {str(f["addr"]): [n for _, n in f["names"]] for f in funcs},
                       "samples": samples})
    print(f"{a.arch}: {len(funcs)} functions ({aliases} with aliases, "
          f"{table['function_starts']} function starts), {len(samples)} samples")


# ---- HTTP --------------------------------------------------------------------


def connect(url):
    m = re.match(r"^http://([^:/]+):(\d+)", url)
    if not m:
        die(f"bad url {url}")
    return http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=120)


def post(conn, path, body, ctype):
    conn.request("POST", path, body=body, headers={"Content-Type": ctype})
    r = conn.getresponse()
    return r.status, r.read()


def symbolicate_body(uuid, arch, vmaddrs, text_vmaddr):
    slide = LOAD_ADDRESS - text_vmaddr
    frames = [{"address": "0x%x" % (v + slide)} for v in vmaddrs]
    return json.dumps({"images": [{"uuid": uuid, "arch": arch,
                                   "load_address": "0x%x" % LOAD_ADDRESS}],
                       "threads": [{"id": 0, "frames": frames}]},
                      separators=(",", ":")).encode()


def cmd_upload(a):
    with open(a.file, "rb") as f:
        data = f.read()
    probe = read_json(a.samples)["samples"][0]["vmaddr"]
    conn = connect(a.url)
    t0 = time.perf_counter()
    status, body = post(conn, "/v1/images?name=" + a.name, data, "application/octet-stream")
    t1 = time.perf_counter()
    if status not in (200, 201):
        die(f"upload answered {status}: {body[:300]!r}")
    images = json.loads(body)["images"]
    arm = next((i for i in images if i["arch"] == "arm64"), None)
    if not arm:
        die(f"upload response has no arm64 slice: {images}")
    req = symbolicate_body(arm["uuid"], "arm64", [probe], int(arm["text_vmaddr"], 16))
    tries = 0
    while True:
        tries += 1
        status, body = post(conn, "/v1/symbolicate", req, "application/json")
        if status == 200:
            frame = json.loads(body)["threads"][0]["frames"][0]
            if frame["status"] == "symbolicated":
                break
        if time.perf_counter() - t0 > 30:
            die(f"image not queryable 30 s after upload: {status} {body[:300]!r}")
        time.sleep(0.001)
    t2 = time.perf_counter()
    write_json(a.out, {"bytes": len(data), "upload_ms": (t1 - t0) * 1e3,
                       "queryable_ms": (t2 - t0) * 1e3, "tries": tries,
                       "images": images})
    for i in images:
        print(f"  {i['arch']:7} {i['uuid']} text {i['text_vmaddr']}+0x{i['text_size']:x} "
              f"{i['symbols']} symbols {i['functions']} functions")
    print(f"upload {len(data) / 1e6:.1f} MB: {(t1 - t0) * 1e3:.0f} ms; "
          f"upload->queryable {(t2 - t0) * 1e3:.0f} ms ({tries} probe(s))")


def image_of(upload_result, arch):
    for i in read_json(upload_result)["images"]:
        if i["arch"] == arch:
            return i["uuid"], int(i["text_vmaddr"], 16)
    die(f"no {arch} slice was uploaded")


# ---- accuracy ----------------------------------------------------------------


def strip1(name):
    return name[1:] if name.startswith("_") else name


def server_answers(url, uuid, arch, text_vmaddr, vmaddrs, batch=2000):
    conn = connect(url)
    out = []
    for i in range(0, len(vmaddrs), batch):
        chunk = vmaddrs[i:i + batch]
        status, body = post(conn, "/v1/symbolicate",
                            symbolicate_body(uuid, arch, chunk, text_vmaddr),
                            "application/json")
        if status != 200:
            die(f"/v1/symbolicate answered {status}: {body[:300]!r}")
        frames = json.loads(body)["threads"][0]["frames"]
        if len(frames) != len(chunk):
            die(f"asked {len(chunk)} frames, got {len(frames)}")
        out.extend(frames)
    return out


def symbolizer_answers(slice_path, vmaddrs):
    out = run(["llvm-symbolizer", "--obj=" + slice_path, "--no-demangle",
               "--output-style=JSON"], input="".join("0x%x\n" % v for v in vmaddrs))
    answers = []
    for line in out.splitlines():
        if not line.strip():
            continue
        sym = json.loads(line)["Symbol"][0]
        name = sym.get("FunctionName", "")
        start = int(sym["StartAddress"], 16) if sym.get("StartAddress") else None
        answers.append((None if name in ("", "<invalid>") else name, start))
    if len(answers) != len(vmaddrs):
        die(f"llvm-symbolizer gave {len(answers)} answers for {len(vmaddrs)} addresses")
    return answers


def cmd_accuracy(a):
    s = read_json(a.samples)
    uuid, text_vmaddr = image_of(a.upload, a.arch)
    vmaddrs = [x["vmaddr"] for x in s["samples"]]
    t = time.perf_counter()
    server = server_answers(a.url, uuid, a.arch, text_vmaddr, vmaddrs)
    t_server = time.perf_counter() - t
    t = time.perf_counter()
    llvm = symbolizer_answers(a.slice, vmaddrs)
    t_llvm = time.perf_counter() - t
    agree = nm_agree = 0
    bad = []
    for x, got, (lname, lstart) in zip(s["samples"], server, llvm):
        v = x["vmaddr"]
        sname = got.get("symbol") if got.get("status") == "symbolicated" else None
        soff = got.get("offset")
        loff = v - lstart if lstart is not None else None
        vm_ok = got.get("vmaddr") == "0x%x" % v
        ok = vm_ok and sname is not None and sname == lname and soff == loff
        agree += ok
        # Independent check against the llvm-nm table the sample came from.
        nm_names = [strip1(n) for n in s["names"][str(x["function"])]]
        nm_agree += sname in nm_names and soff == v - x["function"]
        if not ok:
            bad.append({"vmaddr": "0x%x" % v, "function": "0x%x" % x["function"],
                        "nm_names": nm_names,
                        "server": {k: got.get(k) for k in
                                   ("status", "vmaddr", "symbol", "symbol_address", "offset")},
                        "llvm_symbolizer": {"symbol": lname, "offset": loff,
                                            "start": None if lstart is None
                                            else "0x%x" % lstart}})
    write_json(a.out, {"arch": a.arch, "n": len(vmaddrs), "agree": agree,
                       "nm_agree": nm_agree, "functions": s["functions"],
                       "alias_groups": s["alias_groups"],
                       "server_s": t_server, "llvm_s": t_llvm,
                       "disagreements": len(bad), "first_disagreements": bad[:20]})
    print(f"accuracy {a.arch}: {agree}/{len(vmaddrs)} agree with llvm-symbolizer, "
          f"{nm_agree}/{len(vmaddrs)} with the llvm-nm table "
          f"(server {t_server:.2f} s, llvm-symbolizer {t_llvm:.2f} s)")
    for b in bad[:5]:
        print("  DISAGREE " + json.dumps(b))


# ---- wrk bodies and llvm-symbolizer timing -------------------------------------


def cmd_bodies(a):
    s = read_json(a.samples)
    uuid, text_vmaddr = image_of(a.upload, "arm64")
    rng = random.Random(f"{a.seed}/bodies")
    pool = [x["vmaddr"] for x in s["samples"]]
    os.makedirs(a.dir, exist_ok=True)
    addrs = []
    for i in range(a.count):
        chosen = [rng.choice(pool) for _ in range(a.frames)]
        addrs.extend(chosen)
        with open(os.path.join(a.dir, "body-%03d.json" % i), "wb") as f:
            f.write(symbolicate_body(uuid, "arm64", chosen, text_vmaddr))
    with open(os.path.join(a.dir, "addrs.txt"), "w") as f:
        f.writelines("0x%x\n" % v for v in addrs)
    print(f"{a.count} bodies of {a.frames} frames, {len(addrs)} addresses, in {a.dir}")


def time_symbolizer(slice_path, infile, outfile, extra):
    """Wall clock of `llvm-symbolizer --obj=SLICE EXTRA < infile > outfile`."""
    with open(infile, "rb") as i, open(outfile, "wb") as o:
        t = time.perf_counter()
        subprocess.run(["llvm-symbolizer", "--obj=" + slice_path] + extra,
                       stdin=i, stdout=o, check=True)
        return time.perf_counter() - t


def count_answers(outfile, style):
    with open(outfile) as f:
        text = f.read()
    return text.count("\n\n") if style == "LLVM" else text.count("\n")


# What is timed. The first is the headline: the tool as the issue names it,
# default output style (which demangles), answers written to a file.
SYMBOLIZER_VARIANTS = [
    ("default", [], "file"),
    ("default, stdout to /dev/null", [], "null"),
    ("--no-demangle", ["--no-demangle"], "file"),
    ("--output-style=JSON", ["--output-style=JSON"], "file"),
]


def cmd_symbolizer(a):
    with open(a.addrs) as f:
        one = f.read()
    n = one.count("\n")
    work = os.path.dirname(os.path.abspath(a.out))
    infile, outfile = os.path.join(work, "symbolizer-in.txt"), os.path.join(work, "symbolizer-out.txt")
    # The process start (reading the slice, sorting its symbols) counts, as it
    # would for any batch. Startup alone, for the record: one address.
    with open(infile, "w") as f:
        f.write(one[:one.index("\n") + 1])
    startup = time_symbolizer(a.slice, infile, os.devnull, [])
    print(f"llvm-symbolizer startup (1 address): {startup * 1e3:.0f} ms")
    # Repeat the whole address list until the headline run lasts >= min_seconds.
    reps = 1
    while True:
        with open(infile, "w") as f:
            f.write(one * reps)
        dt = time_symbolizer(a.slice, infile, outfile, [])
        if dt >= a.min_seconds:
            break
        reps = max(reps + 1, math.ceil(reps * a.min_seconds * 1.15 / dt))
    res = {"addresses": n, "reps": reps, "startup_s": startup, "variants": []}
    for i, (label, extra, sink) in enumerate(SYMBOLIZER_VARIANTS):
        if i:
            dt = time_symbolizer(a.slice, infile, os.devnull if sink == "null" else outfile, extra)
        if sink == "file":
            style = "JSON" if "--output-style=JSON" in extra else "LLVM"
            got = count_answers(outfile, style)
            if got != n * reps:
                die(f"llvm-symbolizer ({label}) answered {got} of {n * reps}")
        fps = n * reps / dt
        res["variants"].append({"label": label, "args": extra, "sink": sink,
                                "seconds": dt, "frames_per_s": fps})
        print(f"llvm-symbolizer {label:30} {n} addrs x {reps} in {dt:5.2f} s = {fps:10,.0f} frames/s")
    os.unlink(infile)
    os.unlink(outfile)
    write_json(a.out, res)


def cmd_load(a):
    """CPU busy on the machine, in cores, over a.seconds (from /proc/stat)."""
    def snap():
        with open("/proc/stat") as f:
            v = list(map(int, f.readline().split()[1:]))
        return sum(v), v[3] + v[4]
    t0, i0 = snap()
    time.sleep(a.seconds)
    t1, i1 = snap()
    cores = os.cpu_count() or 1
    busy = (1 - (i1 - i0) / max(1, t1 - t0)) * cores
    write_json(a.out, {"busy_cores": busy, "cores": cores})
    print(f"background load: {busy:.2f} of {cores} cores busy")
    if busy > 0.25:
        print(f"WARNING: something else is using {busy:.1f} cores; throughput figures "
              "will be low and noisy")


# ---- wrk ---------------------------------------------------------------------


def proc_cpu_s(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu():
    """(total, idle) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    return sum(v), v[3] + v[4]


def cmd_wrk(a):
    """One wrk run; also the CPU that symd, wrk and everything else used."""
    t = min(a.threads, a.conns)
    cmd = ["wrk", f"-t{t}", f"-c{a.conns}", f"-d{a.seconds}s", "--latency",
           "-s", a.script, a.url + "/v1/symbolicate", "--", a.bodies, str(a.count)]
    m0, s0 = machine_cpu(), proc_cpu_s(a.server_pid)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m1, s1 = machine_cpu(), proc_cpu_s(a.server_pid)
    text = p.stdout + p.stderr
    with open(a.log, "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    rps = re.search(r"Requests/sec:\s*([\d.]+)", text)
    lua = re.search(r"lua: responses (\d+) non2xx (\d+) errors (\d+)", text)
    lat = re.search(r"^\s*Latency\s+(\S+)", text, re.M)
    p99 = re.search(r"^\s*99%\s+(\S+)", text, re.M)
    if p.returncode != 0 or not rps or not lua:
        die(f"wrk failed ({p.returncode}):\n{text}")
    cores = os.cpu_count() or 1
    busy = (1 - (m1[1] - m0[1]) / max(1, m1[0] - m0[0])) * cores
    server = (s1 - s0) / wall
    client = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / wall
    res = {"connections": a.conns, "threads": t, "seconds": a.seconds,
           "frames_per_request": a.frames, "requests_per_s": float(rps.group(1)),
           "frames_per_s": float(rps.group(1)) * a.frames,
           "responses": int(lua.group(1)), "non2xx": int(lua.group(2)),
           "socket_errors": int(lua.group(3)),
           "latency_avg": lat.group(1) if lat else "?",
           "latency_p99": p99.group(1) if p99 else "?",
           "server_cores": server, "wrk_cores": client,
           "other_cores": max(0.0, busy - server - client)}
    write_json(a.out, res)
    print(f"wrk -t{t} -c{a.conns}: {res['requests_per_s']:.0f} req/s = "
          f"{res['frames_per_s']:,.0f} frames/s; latency avg {res['latency_avg']} "
          f"p99 {res['latency_p99']}; {res['non2xx']} non-2xx, "
          f"{res['socket_errors']} socket errors; cores used: symd {server:.2f}, "
          f"wrk {client:.2f}, other {res['other_cores']:.2f}")


# ---- summary -----------------------------------------------------------------


def cmd_summary(a):
    d = a.dir
    up = read_json(os.path.join(d, "upload.json"))
    acc = [read_json(os.path.join(d, f"accuracy-{arch}.json")) for arch in ("arm64", "x86_64")]
    runs = sorted((read_json(os.path.join(d, f)) for f in os.listdir(d)
                   if f.startswith("wrk-") and f.endswith(".json")),
                  key=lambda r: r["connections"])
    sym = read_json(os.path.join(d, "symbolizer.json"))
    load = read_json(os.path.join(d, "load.json"))
    best = max(runs, key=lambda r: r["frames_per_s"])
    head = sym["variants"][0]
    ratio = best["frames_per_s"] / head["frames_per_s"]
    non2xx = sum(r["non2xx"] for r in runs)
    sockerr = sum(r["socket_errors"] for r in runs)
    acc_ok = all(x["agree"] == x["n"] and x["nm_agree"] == x["n"] for x in acc)
    q_ok = up["queryable_ms"] <= 1000
    r_ok = ratio >= 2
    noisy = load["busy_cores"] > 0.25 or best["other_cores"] > 0.25

    def mark(ok):
        return "ok" if ok else "FAIL"

    lines = [
        f"upload {up['bytes'] / 1e6:.1f} MB fat: {up['upload_ms']:.0f} ms; "
        f"upload->queryable: {up['queryable_ms']:.0f} ms (limit 1000 ms) {mark(q_ok)}",
        "accuracy " + "; ".join(f"{x['arch']}: {x['agree']}/{x['n']} agree" for x in acc)
        + " (same names in the llvm-nm table: "
        + ", ".join(f"{x['nm_agree']}/{x['n']}" for x in acc) + f") {mark(acc_ok)}",
        f"symd /v1/symbolicate: {best['frames_per_s']:9.0f} frames/s (wrk {best['seconds']} s, "
        f"-t{best['threads']} -c{best['connections']}, {best['non2xx']} non-2xx; "
        f"symd used {best['server_cores']:.2f} cores, wrk {best['wrk_cores']:.2f})",
        "  all wrk runs, frames/s: "
        + ", ".join(f"c{r['connections']} {r['frames_per_s']:.0f}" for r in runs)
        + f"; {non2xx} non-2xx, {sockerr} socket errors in all",
        f"llvm-symbolizer:      {head['frames_per_s']:9.0f} frames/s ({sym['addresses']} addrs x "
        f"{sym['reps']} in {head['seconds']:.2f} s, 1 core; default style, stdout to a file)",
    ]
    for v in sym["variants"][1:]:
        lines.append(f"  {v['label']:30} {v['frames_per_s']:9.0f} frames/s "
                     f"(symd is {best['frames_per_s'] / v['frames_per_s']:.2f}x)")
    lines.append(f"ratio: {ratio:.2f}x (goal >= 2x) {mark(r_ok)}")
    if noisy:
        lines.append(f"WARNING: other processes were busy ({load['busy_cores']:.2f} cores "
                     f"before the bench, {best['other_cores']:.2f} during the best wrk run); "
                     f"throughput figures are unreliable")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(a.out, "w") as f:
        f.write(text)
    failed = not acc_ok or non2xx > 0 or sockerr > 0
    if a.strict:
        failed = failed or not q_ok or not r_ok
    sys.exit(1 if failed else 0)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("sample")
    s.add_argument("--slice", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--n", type=int, default=20000)
    s.add_argument("--seed", default="1")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_sample)

    s = sub.add_parser("upload")
    s.add_argument("--url", required=True)
    s.add_argument("--file", required=True)
    s.add_argument("--name", default="sentry-cli")
    s.add_argument("--samples", required=True, help="arm64 samples (first one is the probe)")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_upload)

    s = sub.add_parser("accuracy")
    s.add_argument("--url", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--slice", required=True)
    s.add_argument("--samples", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_accuracy)

    s = sub.add_parser("bodies")
    s.add_argument("--samples", required=True)
    s.add_argument("--upload", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--count", type=int, default=64)
    s.add_argument("--frames", type=int, default=200)
    s.add_argument("--seed", default="1")
    s.set_defaults(fn=cmd_bodies)

    s = sub.add_parser("symbolizer")
    s.add_argument("--slice", required=True)
    s.add_argument("--addrs", required=True)
    s.add_argument("--min-seconds", type=float, default=2.0)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_symbolizer)

    s = sub.add_parser("load")
    s.add_argument("--seconds", type=float, default=1.0)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_load)

    s = sub.add_parser("wrk")
    s.add_argument("--url", required=True)
    s.add_argument("--script", required=True)
    s.add_argument("--bodies", required=True)
    s.add_argument("--count", type=int, default=64)
    s.add_argument("--frames", type=int, default=200)
    s.add_argument("--server-pid", type=int, required=True)
    s.add_argument("--conns", type=int, required=True)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--seconds", type=int, default=10)
    s.add_argument("--log", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_wrk)

    s = sub.add_parser("summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--strict", action="store_true",
                   help="also fail when a performance goal is missed")
    s.set_defaults(fn=cmd_summary)

    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
