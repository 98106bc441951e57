#!/usr/bin/env python3
"""tools/trace_diff.py on fixture traces (tests/obs/fixtures): the span that
moved is found by its self time, its parents are not blamed, benchmark result
files compare by name, and --fail-above gates.

Usage: test_trace_diff.py SOURCE_DIR
"""
import io
import json
import os
import sys
from contextlib import redirect_stdout, redirect_stderr

src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "tools"))
import trace_diff  # noqa: E402

fx = os.path.join(src, "tests", "obs", "fixtures")
base, new = os.path.join(fx, "base.trace.json"), os.path.join(fx, "new.trace.json")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = trace_diff.main(args)
    return rc, out.getvalue(), err.getvalue()


# Aggregation: self time subtracts direct children on the same thread only.
agg = trace_diff.aggregate(json.load(open(base))["traceEvents"])
check(agg["elaborate"]["self_ms"] == (1000 - 50) / 1e3, f"elaborate's self time excludes its z3 query: {agg['elaborate']}")
check(agg["check_source"]["self_ms"] == (1340 - 100 - 1000 - 200) / 1e3, f"check_source's self time: {agg['check_source']}")
check(agg["call mlp"]["count"] == 2, "both threads' calls are counted")
check(abs(agg["call mlp"]["self_ms"] - 2 * 30 / 1e3) < 1e-9, f"call's self time excludes alloc and run: {agg['call mlp']}")

rc, out, _ = run([base, new, "--json"])
rows = json.loads(out)
check(rc == 0, "exit 0 without --fail-above")
check(rows[0]["name"] == "elaborate", f"the top row is the phase that moved: {rows[0]['name']}")
check(abs(rows[0]["delta_self_ms"] - 1.0) < 1e-9 and abs(rows[0]["pct"] - 1000 / 950 * 100) < 1e-6, f"elaborate +1 ms: {rows[0]}")
by = {r["name"]: r for r in rows}
check(abs(by["check_source"]["delta_self_ms"]) < 1e-9, "the parent check_source is not blamed")
check(abs(by["z3 query"]["delta_self_ms"]) < 1e-9, "the unchanged child is unchanged")
check(abs(by["run compiled code"]["delta_self_ms"]) < 1e-9, "the run did not move")
check(abs(by["alloc"]["delta_self_ms"] - 0.045) < 1e-9, f"alloc grew by 45 us: {by['alloc']}")

rc, out, _ = run([base, new])
check("elaborate" in out.splitlines()[2], f"the table's first row is elaborate:\n{out}")

rc, _, err = run([base, new, "--fail-above", "50", "--min-ms", "0.01"])
check(rc == 1 and "elaborate" in err, f"--fail-above 50 fails on elaborate (+105%): rc={rc} {err!r}")
rc, _, _ = run([base, base, "--fail-above", "1"])
check(rc == 0, "a trace against itself passes --fail-above")

rc, out, _ = run([os.path.join(fx, "base.bench.json"), os.path.join(fx, "new.bench.json"), "--json"])
rows = json.loads(out)
check(rows[0]["name"] == "mlp/default" and abs(rows[0]["delta_self_ms"] - 1.0) < 1e-9, f"benchmark files compare by name: {rows[0]}")

rc, out, _ = run([base, new, "--by-category", "--json"])
check(json.loads(out)[0]["name"] == "compiler: elaborate", f"--by-category keys by category: {out[:200]}")

try:
    run([os.path.join(fx, "missing.json"), new])
    check(False, "a missing file is an error")
except SystemExit as e:
    check("cannot read" in str(e), f"a missing file names itself: {e}")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("ok")
