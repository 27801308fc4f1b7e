"""One wrk run against a symd server, measured: its output, log and the cores each side used."""
import re

from benchlib.common import die
from benchlib.measure import run_measured


def run_wrk(cmd, server_pid, log, per_thread=False):
    """Runs the wrk command line cmd (its Lua script prints 'lua: responses N
    non2xx N errors N') under a Meter watching server_pid. Writes the command
    line and wrk's output to log. Returns (output text, the Measured run,
    {requests_per_s, responses, non2xx, socket_errors})."""
    m = run_measured(cmd, server_pid=server_pid, per_thread=per_thread, check=False)
    text = m.output.decode(errors="replace")
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    rps = re.search(r"Requests/sec:\s*([\d.]+)", text)
    lua = re.search(r"lua: responses (\d+) non2xx (\d+) errors (\d+)", text)
    if m.returncode != 0 or not rps or not lua:
        die(f"wrk failed ({m.returncode}):\n{text}")
    return text, m, {"requests_per_s": float(rps.group(1)), "responses": int(lua.group(1)),
                     "non2xx": int(lua.group(2)), "socket_errors": int(lua.group(3))}
