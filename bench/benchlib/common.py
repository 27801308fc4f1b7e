"""Small helpers of every bench step: failing, running a tool, JSON files."""
import json
import math
import os
import subprocess
import sys

MIB = 2 ** 20


def die(msg):
    print(f"bench: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    """A tool's stdout (text); a non-zero exit raises."""
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_result(d, name):
    """The result file NAME of directory D, or None when that step did not run."""
    p = os.path.join(d, name)
    return read_json(p) if os.path.exists(p) else None


def numbered_results(d, prefix):
    """Results PREFIX-N.json of directory D (N = 1, 2, ... with no gap), in order."""
    out = []
    while os.path.exists(os.path.join(d, f"{prefix}-{len(out) + 1}.json")):
        out.append(read_json(os.path.join(d, f"{prefix}-{len(out) + 1}.json")))
    return out


def fastest(runs):
    """The run of the most frames per second (None for no runs)."""
    return max(runs, key=lambda r: r["frames_per_s"]) if runs else None


def pct(values, p):
    """Nearest-rank percentile of a list (p in 0..100)."""
    v = sorted(values)
    if not v:
        return None
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]
