"""The postgres section: symd on PostgreSQL against SQLite (one node), and two nodes against one."""
import os
import sys

from benchlib.common import die, fastest, numbered_results, read_json, read_result
from benchlib.measure import Figure, Report, ratio_block

# The measuring is bench.py wrk's (sections/load.py), driven by bench/run.sh:
# one node each on the symtab bodies with the index cached (what a
# symbolication costs once the image is in the node's cache), then two nodes
# on one PostgreSQL database, wrk on both at once, summed, against the one node.


def fastest_of(d, label):
    """The fastest of the runs pg-LABEL-R.json."""
    runs = numbered_results(d, f"pg-{label}")
    if not runs:
        die(f"no pg-{label}-*.json results")
    return fastest(runs)


def cmd_pg_summary(a):
    """The PostgreSQL section's summary (or why it was skipped)."""
    d = a.dir
    rep = Report("postgres")
    skipped = read_result(d, "pg-skipped.json")
    if skipped:
        rep.lines.append(f"PostgreSQL: SKIPPED ({skipped['skipped']}); bash scripts/deps.sh "
                         "installs it")
        sys.exit(rep.finish(a.out))
    sq, pg = fastest_of(d, "sqlite-1node"), fastest_of(d, "postgresql-1node")
    two_nodes = [(ra["frames_per_s"] + rb["frames_per_s"], ra, rb) for ra, rb in
                 zip(numbered_results(d, "pg-2nodes-a"), numbered_results(d, "pg-2nodes-b"))]
    two, ra, rb = max(two_nodes, key=lambda x: x[0])
    bad = sum(x["non2xx"] + x["socket_errors"] for x in (sq, pg, ra, rb))
    rep.check(bad == 0, "requests", goal=False)
    up_sq = read_json(os.path.join(d, "pg-upload-sqlite.json"))
    up_pg = read_json(os.path.join(d, "pg-upload-postgresql.json"))
    rep.lines.append(f"PostgreSQL vs SQLite, one node, the index cached ({sq['connections']} "
                     f"connections, {sq['frames_per_request']} frames per request):")
    rec = rep.compare("ratio PostgreSQL/SQLite",
                      Figure("PostgreSQL", pg["frames_per_s"], "frames/s"),
                      Figure("SQLite", sq["frames_per_s"], "frames/s"))
    rep.lines += ratio_block(
        rec, f"p99 {pg['latency_p99']}, symd {pg['server_cores']:.2f} cores, PostgreSQL and the "
             f"rest {pg['other_cores']:.2f}",
        f"p99 {sq['latency_p99']}, symd {sq['server_cores']:.2f} cores", indent="  ")
    rep.lines.append(
        f"  upload of sentry-cli ({up_sq['bytes'] / 1e6:.1f} MB): SQLite {up_sq['upload_ms']:.0f} ms, "
        f"PostgreSQL {up_pg['upload_ms']:.0f} ms; upload->queryable "
        f"{up_sq['queryable_ms']:.0f} / {up_pg['queryable_ms']:.0f} ms")
    rep.lines.append(f"Two nodes on one PostgreSQL database, wrk on both at once "
                     f"({ra['connections']} connections each):")
    rec = rep.compare("ratio two nodes/one", Figure("two nodes", two, "frames/s"),
                      Figure("one node", pg["frames_per_s"], "frames/s"))
    rep.lines += ratio_block(rec, f"node a {ra['frames_per_s']:,.0f} + node b "
                                  f"{rb['frames_per_s']:,.0f}", indent="  ")
    rep.lines += [
        f"  (on this {a.cores}-core machine the two nodes, both wrk and PostgreSQL share the "
        f"cores: this shows the overhead of a second node more than scaling, which needs a "
        f"machine per node)",
        f"  non-2xx answers and socket errors in all runs: {bad}"]
    # In a one-node run nothing else should use the CPU (PostgreSQL idles
    # while the index is cached); in the two-node runs the other node and
    # its wrk count as "other" by design.
    for n, x in (("SQLite", sq), ("PostgreSQL", pg)):
        if x["other_cores"] > 0.25:
            rep.lines.append(f"  note: other processes used {x['other_cores']:.2f} cores during "
                             f"the best {n} run: its ratios are not reliable; run again on an "
                             "idle machine")
    sys.exit(rep.finish(a.out))


def register(sub):
    s = sub.add_parser("pg-summary", help="print the PostgreSQL summary")
    s.add_argument("--dir", required=True)
    s.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_pg_summary)
