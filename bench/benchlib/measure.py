"""The one step of every section: run, collect wall time and cores, print ours vs reference."""
import json
import os
import resource
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from typing import NamedTuple

from benchlib.common import die

CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---- CPU and memory from /proc ---------------------------------------------------


def _stat_cpu_s(path):
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_cpu_s(pid):
    """utime + stime of a process (all its threads), in seconds."""
    return _stat_cpu_s(f"/proc/{pid}/stat")


def thread_cpu_s(pid):
    """{tid: utime + stime in seconds} of each thread of a process."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[tid] = _stat_cpu_s(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue
    return out


def machine_cpu():
    """(total, idle) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    return sum(v), v[3] + v[4]


def vm_status(pid):
    """VmRSS and VmHWM of a process, in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out


class RssSampler(threading.Thread):
    """Samples a process's VmRSS every `period` seconds; keeps the maximum."""

    def __init__(self, pid, period=0.01):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.peak, self.samples = 0, 0
        self.halt = threading.Event()

    def run(self):
        while True:
            try:
                rss = vm_status(self.pid).get("VmRSS", 0)
            except OSError:
                return
            self.peak = max(self.peak, rss)
            self.samples += 1
            if self.halt.wait(self.period):
                return

    def stop(self):
        self.halt.set()
        self.join()
        return self.peak


# ---- measuring a stretch of time and one command ----------------------------------


class Meter:
    """Wall time and CPU over a `with` block: what this process's children
    used (getrusage), what one server process used (/proc/PID, per thread
    when asked) and how busy the whole machine was (/proc/stat). "Other" is
    the machine's CPU beyond the server and the children."""

    def __init__(self, server_pid=None, per_thread=False):
        self.server_pid, self.per_thread = server_pid, per_thread

    def __enter__(self):
        pid = self.server_pid
        self._machine0 = machine_cpu()
        self._server0 = proc_cpu_s(pid) if pid else 0.0
        self._threads0 = thread_cpu_s(pid) if pid and self.per_thread else {}
        self._children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        m1 = machine_cpu()
        pid = self.server_pid
        r0, m0 = self._children0, self._machine0
        self.children_cpu_s = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
        self.server_cpu_s = proc_cpu_s(pid) - self._server0 if pid else 0.0
        # Share of the machine busy over the stretch, in cores.
        self.cores_total = os.cpu_count() or 1
        self.busy_cores = (1 - (m1[1] - m0[1]) / max(1, m1[0] - m0[0])) * self.cores_total
        self.thread_cores = []
        if pid and self.per_thread:
            th1 = thread_cpu_s(pid)
            self.thread_cores = sorted(
                (round((th1[t] - self._threads0.get(t, 0)) / self.wall, 2) for t in th1),
                reverse=True)
            self.threads = len(th1)
        return False

    def cores(self):
        """Cores used over the stretch: by the server, by the children (the
        client, or the reference tool) and by the rest of the machine."""
        server, client = self.server_cpu_s / self.wall, self.children_cpu_s / self.wall
        return {"server_cores": server, "client_cores": client,
                "other_cores": max(0.0, self.busy_cores - server - client)}


class Measured(NamedTuple):
    """One command run under a Meter."""
    seconds: float     # wall time of the command
    cpu_s: float       # its user + sys CPU (and its waited-for children's)
    max_rss: int       # its peak RSS, bytes
    returncode: int
    output: bytes      # stdout (and stderr when merged) unless sent to a file
    meter: Meter

    def cores(self):
        """Cores the command, the watched server and the rest of the machine used."""
        return self.meter.cores()


def run_measured(cmd, stdin=None, stdout=None, merge_stderr=True, server_pid=None,
                 per_thread=False, check=True):
    """Runs cmd once under a Meter (server_pid: a server it drives). stdin:
    a file to read or None (inherited); stdout: a file to write, or None to
    capture it (with stderr unless merge_stderr is false). The command's
    own CPU and peak RSS come from wait4. check: a non-zero exit dies."""
    with ExitStack() as files:
        fin = files.enter_context(open(stdin, "rb")) if stdin else None
        fout = files.enter_context(open(stdout, "wb")) if stdout else subprocess.PIPE
        ferr = subprocess.STDOUT if stdout is None and merge_stderr else None
        with Meter(server_pid, per_thread) as meter:
            p = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=ferr)
            out = b""
            if p.stdout:
                out = p.stdout.read()
                p.stdout.close()
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if check and p.returncode != 0:
        die(f"{' '.join(cmd)} failed ({p.returncode}):\n{out.decode(errors='replace')}")
    return Measured(meter.wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, p.returncode,
                    out, meter)


class Repeated(NamedTuple):
    """One command run as many processes under one Meter."""
    runs: int          # processes run
    par: int           # how many ran at once
    seconds: float     # wall time of them all
    cpu_s: float       # their user + sys CPU together (getrusage of the children)
    failed: int        # processes that exited non-zero
    meter: Meter

    def per_s(self):
        """Processes finished per second of wall time."""
        return self.runs / self.seconds

    def per_cpu_s(self):
        """Processes finished per second of their own CPU."""
        return self.runs / self.cpu_s if self.cpu_s else None


def run_repeated(cmd, runs, par=1):
    """Runs cmd `runs` times, each a fresh process (output discarded), `par`
    of them at once (a thread each keeps one running), under one Meter: the
    wall time of them all and their CPU from getrusage(RUSAGE_CHILDREN), so
    nothing else of this process may wait for children meanwhile. A tool
    that answers one input per process, as minidump_stackwalk does, is
    measured the way it is used."""
    lock = threading.Lock()
    left = [runs]
    failed = [0]

    def worker():
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode
            if rc != 0:
                with lock:
                    failed[0] += 1

    with Meter() as meter:
        threads = [threading.Thread(target=worker) for _ in range(max(1, par))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return Repeated(runs, max(1, par), meter.wall, meter.children_cpu_s, failed[0], meter)


# ---- ours against the reference ------------------------------------------------------


class Figure(NamedTuple):
    """One side of a comparison: what was measured, its value and unit."""
    label: str
    value: float
    unit: str = ""


def show(value, unit=""):
    """A figure as every summary prints it."""
    if value is None:
        return "?"
    if isinstance(value, int) or abs(value) >= 100:
        s = f"{value:,.0f}"
    elif abs(value) >= 10:
        s = f"{value:.1f}"
    else:
        s = f"{value:.2f}"
    return f"{s} {unit}" if unit else s


def compare(name, ours, reference, goal=None, at_most=False):
    """The record of one comparison: ours / reference, and whether the goal
    (ratio >= goal, or <= goal with at_most) is met."""
    ratio = ours.value / reference.value if reference.value else None
    ok = None
    if goal is not None:
        ok = ratio is not None and (ratio <= goal if at_most else ratio >= goal)
    return {"name": name,
            "ours": {"label": ours.label, "value": ours.value, "unit": ours.unit},
            "reference": {"label": reference.label, "value": reference.value,
                          "unit": reference.unit},
            "ratio": ratio,
            "goal": None if goal is None else ("<= " if at_most else ">= ") + f"{goal:g}",
            "ok": ok}


def mark(ok):
    return "ok" if ok else "FAIL"


def ratio_text(rec):
    """'2.70x (goal >= 2x) ok': the ratio and its goal."""
    r = "n/a" if rec["ratio"] is None else f"{rec['ratio']:.2f}x"
    if rec["goal"] is None:
        return r
    return f"{r} (goal {rec['goal']}x) {mark(rec['ok'])}"


def ratio_line(rec, indent="  "):
    """One line: 'NAME: RATIO (ours VALUE vs reference VALUE UNIT)'."""
    o, r = rec["ours"], rec["reference"]
    ours = show(o["value"]) if o["unit"] == r["unit"] else show(o["value"], o["unit"])
    both = f"{o['label']} {ours} vs {r['label']} {show(r['value'], r['unit'])}"
    return f"{indent}{rec['name']}: {ratio_text(rec)} ({both})"


def ratio_block(rec, ours_note="", reference_note="", indent=""):
    """Three lines: our figure, the reference's, then 'NAME: RATIO'."""
    o, r = rec["ours"], rec["reference"]
    w = max(len(o["label"]), len(r["label"])) + 1
    vs = [show(o["value"]), show(r["value"])]
    vw = max(map(len, vs))
    return [f"{indent}{o['label'] + ':':<{w}} {vs[0]:>{vw}} {o['unit']}"
            + (f" ({ours_note})" if ours_note else ""),
            f"{indent}{r['label'] + ':':<{w}} {vs[1]:>{vw}} {r['unit']}"
            + (f" ({reference_note})" if reference_note else ""),
            f"{indent}{rec['name']}: {ratio_text(rec)}"]


def ratio_row(title, recs, indent="  "):
    """Several comparisons on one line: 'TITLE: NAME RATIO, NAME RATIO'."""
    return f"{indent}{title}: " + ", ".join(f"{r['name']} {ratio_text(r)}" for r in recs)


class Report:
    """A section's summary: its lines, the details, trailing notes, every
    comparison made and what failed. finish() prints it and writes OUT (the
    text) and OUT's .json twin (the comparisons)."""

    def __init__(self, section):
        self.section = section
        self.lines, self.details, self.notes = [], [], []
        self.comparisons = []
        self.failed, self.goals_missed = [], []

    def compare(self, name, ours, reference, goal=None, at_most=False):
        rec = compare(name, ours, reference, goal, at_most)
        self.comparisons.append(rec)
        if rec["ok"] is False:
            self.goals_missed.append(name)
        return rec

    def check(self, ok, name, goal=True):
        """A pass/fail that is no ratio: a goal (fails only --strict) or a
        correctness check (always fails). Returns ok."""
        if not ok:
            (self.goals_missed if goal else self.failed).append(name)
        return ok

    def text(self):
        return "\n".join(self.lines + (["details:"] + self.details if self.details else [])
                         + self.notes) + "\n"

    def finish(self, out, strict=False):
        """Prints and writes the summary; returns the exit status: 1 on a
        failure (or, strict, a missed goal)."""
        text = self.text()
        print(text, end="")
        with open(out, "w") as f:
            f.write(text)
        doc = {"section": self.section, "comparisons": self.comparisons,
               "failed": self.failed, "goals_missed": self.goals_missed}
        with open(os.path.splitext(out)[0] + ".json", "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        if self.failed:
            print(f"{self.section} bench: failed: {', '.join(self.failed)}", file=sys.stderr)
        if strict and self.goals_missed:
            print(f"{self.section} bench: goals missed: {', '.join(self.goals_missed)}",
                  file=sys.stderr)
        return 1 if self.failed or (strict and self.goals_missed) else 0
