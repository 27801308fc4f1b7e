"""Machine load before the runs, and wrk at saturation on /v1/symbolicate (symtab, dwarf, pg)."""
import re
import time

from benchlib.common import write_json
from benchlib.measure import Meter
from benchlib.wrk import run_wrk


def cmd_load(a):
    """CPU busy on the machine, in cores, over a.seconds (from /proc/stat)."""
    with Meter() as m:
        time.sleep(a.seconds)
    busy, cores = m.busy_cores, m.cores_total
    write_json(a.out, {"busy_cores": busy, "cores": cores})
    print(f"background load: {busy:.2f} of {cores} cores busy")
    if busy > 0.25:
        print(f"WARNING: something else is using {busy:.1f} cores; throughput figures "
              "will be low and noisy")


def cmd_wrk(a):
    """One wrk run of bench/symbolicate.lua; also the CPU that symd (per
    thread), wrk and everything else used."""
    t = min(a.threads, a.conns)
    cmd = ["wrk", f"-t{t}", f"-c{a.conns}", f"-d{a.seconds}s", "--latency",
           "-s", a.script, a.url + "/v1/symbolicate", "--", a.bodies, str(a.count)]
    text, m, counts = run_wrk(cmd, a.server_pid, a.log, per_thread=True)
    meter, cores = m.meter, m.cores()
    # Busy threads only (the main thread waits for a signal).
    per_thread = [c for c in meter.thread_cores if c >= 0.01]
    # symd's MHD thread pool keeps a connection on the thread that accepted
    # it; when one thread accepted them all, the others idle.
    one_thread = (meter.threads > 2 and bool(per_thread)
                  and per_thread[0] >= 0.9 * cores["server_cores"])
    lat = re.search(r"^\s*Latency\s+(\S+)", text, re.M)
    p99 = re.search(r"^\s*99%\s+(\S+)", text, re.M)
    res = {"connections": a.conns, "threads": t, "seconds": a.seconds,
           "frames_per_request": a.frames, "requests_per_s": counts["requests_per_s"],
           "frames_per_s": counts["requests_per_s"] * a.frames,
           "responses": counts["responses"], "non2xx": counts["non2xx"],
           "socket_errors": counts["socket_errors"],
           "latency_avg": lat.group(1) if lat else "?",
           "latency_p99": p99.group(1) if p99 else "?",
           "server_cores": cores["server_cores"], "server_threads_cores": per_thread,
           "one_thread": one_thread,
           "wrk_cores": cores["client_cores"],
           "other_cores": cores["other_cores"]}
    write_json(a.out, res)
    print(f"wrk -t{t} -c{a.conns}: {res['requests_per_s']:.0f} req/s = "
          f"{res['frames_per_s']:,.0f} frames/s; latency avg {res['latency_avg']} "
          f"p99 {res['latency_p99']}; {res['non2xx']} non-2xx, "
          f"{res['socket_errors']} socket errors; cores used: symd {res['server_cores']:.2f} "
          f"({' + '.join(map(str, per_thread))}), wrk {res['wrk_cores']:.2f}, "
          f"other {res['other_cores']:.2f}"
          + ("; ONE symd thread served every connection" if one_thread else ""))


def register(sub):
    s = sub.add_parser("load", help="how busy the machine is before the throughput runs")
    s.add_argument("--seconds", type=float, default=1.0)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_load)

    s = sub.add_parser("wrk", help="one wrk run (bench/symbolicate.lua), with the CPU each "
                                   "side used")
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
