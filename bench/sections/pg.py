"""The postgres section: symd on PostgreSQL against SQLite (one node), and two nodes against one:
symbolication of the symtab bodies, and crash posts stored."""
import os
import sys

from benchlib.common import die, fastest, numbered_results, read_json, read_result
from benchlib.measure import Figure, Report, ratio_block

# The measuring is bench.py wrk's (sections/load.py), driven by bench/run.sh:
# one node each on the symtab bodies with the index cached (what a
# symbolication costs once the image is in the node's cache), then two nodes
# on one PostgreSQL database, wrk on both at once, summed, against the one node.
# The crash path is crash-wrk's (sections/crash.py): a real report posted and
# stored (Prefer: return=minimal), every post a distinct report, SQLite and
# PostgreSQL in turn each round, then on two nodes at once.

# The issue 23 goal: crash posts stored on PostgreSQL at 0.7x SQLite's rate.
CRASH_GOAL = 0.7


def ms(us):
    return f"{us / 1e3:.1f} ms"


def crash_summary(rep, d, cores):
    """The crash path's lines: stored reports/s and p99 on PostgreSQL against
    SQLite, and two nodes against one. Returns its runs."""
    missing = read_result(d, "pg-crash-missing.json")
    if missing:
        rep.check(False, "crash posts", goal=False)
        rep.lines.append(f"Crash posts: FAIL: not measured: no real report {missing['missing']} "
                         "(set BENCH_PG_REPORT or BENCH_CRASH_REPORTS)")
        return []
    sq_runs = numbered_results(d, "pg-crash-sqlite-1node")
    pg_runs = numbered_results(d, "pg-crash-postgresql-1node")
    pairs = list(zip(numbered_results(d, "pg-crash-2nodes-a"),
                     numbered_results(d, "pg-crash-2nodes-b")))
    if not sq_runs or not pg_runs or not pairs:
        rep.check(False, "crash posts", goal=False)
        rep.lines.append("Crash posts: FAIL: incomplete results")
        return []
    info = read_result(d, "pg-crash-report.json") or {}
    sq, pg = fastest(sq_runs), fastest(pg_runs)
    rep.lines.append(
        f"Crash posts stored, one node ({info.get('file', 'the real report')}: "
        f"{sq['frames_per_request']} frames; POST /v1/crashes, Prefer: return=minimal, each post "
        f"a distinct report; {sq['connections']} connections; SQLite and PostgreSQL in turn, "
        f"best of {len(sq_runs)} rounds):")
    rec = rep.compare("ratio PostgreSQL/SQLite, stored reports/s",
                      Figure("PostgreSQL", pg["requests_per_s"], "reports/s"),
                      Figure("SQLite", sq["requests_per_s"], "reports/s"), goal=CRASH_GOAL)
    rep.lines += ratio_block(
        rec, f"p99 {ms(pg['latency_us']['p99'])}, symd {pg['server_cores']:.2f} cores, "
             f"PostgreSQL and the rest {pg['other_cores']:.2f}",
        f"p99 {ms(sq['latency_us']['p99'])}, symd {sq['server_cores']:.2f} cores", indent="  ")
    each = [rep.compare(f"round {i}", Figure("PostgreSQL", p["requests_per_s"], "reports/s"),
                        Figure("SQLite", q["requests_per_s"], "reports/s"))
            for i, (q, p) in enumerate(zip(sq_runs, pg_runs), 1)]
    rep.details.append("  crash posts, PostgreSQL/SQLite by round: " + ", ".join(
        f"{r['name']} {r['ratio']:.2f}x ({r['ours']['value']:,.0f} / "
        f"{r['reference']['value']:,.0f})" for r in each if r["ratio"] is not None))
    two, ra, rb = max(((a["requests_per_s"] + b["requests_per_s"], a, b) for a, b in pairs),
                      key=lambda x: x[0])
    rep.lines.append(f"Crash posts stored on two nodes on one PostgreSQL database, wrk on both "
                     f"at once ({ra['connections']} connections each):")
    rec = rep.compare("ratio two nodes/one, stored reports/s",
                      Figure("two nodes", two, "reports/s"),
                      Figure("one node", pg["requests_per_s"], "reports/s"))
    rep.lines += ratio_block(rec, f"node a {ra['requests_per_s']:,.0f} (p99 "
                                  f"{ms(ra['latency_us']['p99'])}) + node b "
                                  f"{rb['requests_per_s']:,.0f} (p99 "
                                  f"{ms(rb['latency_us']['p99'])})", indent="  ")
    rep.lines.append(f"  (on this {cores}-core machine both nodes, both wrk and PostgreSQL "
                     "share the cores: this shows a second node's overhead, not scaling)")
    runs = sq_runs + pg_runs + [x for p in pairs for x in p]
    if any(x["unexpected"] for x in runs):
        rep.check(False, "crash posts answered 201", goal=False)
        rep.lines.append(f"  FAIL: answers other than 201: "
                         f"{sum(x['unexpected'] for x in runs)}")
    return runs


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
    crash_runs = crash_summary(rep, d, a.cores)
    bad_crash = sum(x["non2xx"] + x["socket_errors"] for x in crash_runs)
    rep.check(bad_crash == 0, "crash requests", goal=False)
    if crash_runs:
        rep.lines.append(f"  non-2xx answers and socket errors in the crash runs: {bad_crash}")
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
