#!/usr/bin/env python3
"""trace_diff: per-span time differences between two traces, so that a
regression shows which phase or operation moved (docs/design/observability.md).

  trace_diff.py BASE NEW [--top N] [--min-ms X] [--by-category] [--fail-above PCT]

BASE and NEW are each one of
  - a Chrome trace-event JSON (what SHAPEML_TRACE and
    shapeml_unstable_trace_flush_to_file write): complete events ("ph":"X"),
    and begin/end pairs ("B"/"E");
  - a benchmark result file: shapeml's bench/obs_overhead.py output
    ({"results": [{"name": ..., "ms": ...}]}), or Google Benchmark JSON
    ({"benchmarks": [{"name", "real_time", "time_unit"}]}).

For traces, every span name gets its count, its total (inclusive) time and
its self time (inclusive minus the time of the spans nested directly inside it
on the same thread), so a slower parent whose children account for the change
is not blamed. Rows are sorted by the absolute change of self time (of the
mean for benchmark files). Standard library only.

Exit status: 0; 1 with --fail-above PCT when a row's self time grew by more
than PCT percent (and by more than --min-ms); 2 for unreadable input.
"""
import argparse
import json
import sys
from collections import defaultdict


def _unit_ms(unit):
    return {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}.get(unit, 1.0)


def load(path):
    """-> {key: {"count", "total_ms", "self_ms"}} and the kind ("trace" or "bench")."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"trace_diff: cannot read {path}: {e}") from None
    if isinstance(doc, dict) and "results" in doc:
        rows = {}
        for r in doc["results"]:
            rows[r["name"]] = {"count": r.get("count", 1), "total_ms": float(r["ms"]), "self_ms": float(r["ms"])}
        return rows, "bench"
    if isinstance(doc, dict) and "benchmarks" in doc:
        rows = {}
        for b in doc["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            ms = float(b["real_time"]) * _unit_ms(b.get("time_unit", "ns"))
            rows[b["name"]] = {"count": 1, "total_ms": ms, "self_ms": ms}
        return rows, "bench"
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return aggregate(events), "trace"


def spans_of(events):
    """Complete spans (pid, tid, name, cat, ts_us, dur_us) from X events and B/E pairs."""
    out, open_ = [], defaultdict(list)
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            out.append((e.get("pid", 0), e.get("tid", 0), e.get("name", ""), e.get("cat", ""), float(e.get("ts", 0)), float(e.get("dur", 0))))
        elif ph == "B":
            open_[(e.get("pid", 0), e.get("tid", 0))].append(e)
        elif ph == "E":
            stack = open_[(e.get("pid", 0), e.get("tid", 0))]
            if stack:
                b = stack.pop()
                out.append((b.get("pid", 0), b.get("tid", 0), b.get("name", ""), b.get("cat", ""), float(b["ts"]), float(e["ts"]) - float(b["ts"])))
    return out


def aggregate(events, by_category=False):
    spans = spans_of(events)
    self_us = [s[5] for s in spans]
    # Self time: on each thread, walk spans by start (longer first on ties) with
    # a stack of open ones; a span's time is taken from its direct parent.
    by_thread = defaultdict(list)
    for i, s in enumerate(spans):
        by_thread[(s[0], s[1])].append(i)
    for idx in by_thread.values():
        idx.sort(key=lambda i: (spans[i][4], -spans[i][5]))
        stack = []
        for i in idx:
            ts, dur = spans[i][4], spans[i][5]
            while stack and spans[stack[-1]][4] + spans[stack[-1]][5] <= ts:
                stack.pop()
            # The nearest open span that contains this one is its parent
            # (an overlapping, not containing, sibling is skipped).
            for j in reversed(stack):
                if ts + dur <= spans[j][4] + spans[j][5] + 1e-3:
                    self_us[j] -= dur
                    break
            stack.append(i)
    rows = defaultdict(lambda: {"count": 0, "total_ms": 0.0, "self_ms": 0.0})
    for i, s in enumerate(spans):
        key = f"{s[3]}: {s[2]}" if by_category else s[2]
        r = rows[key]
        r["count"] += 1
        r["total_ms"] += s[5] / 1e3
        r["self_ms"] += max(self_us[i], 0.0) / 1e3
    return dict(rows)


def diff(base, new):
    rows = []
    for key in sorted(set(base) | set(new)):
        a = base.get(key, {"count": 0, "total_ms": 0.0, "self_ms": 0.0})
        b = new.get(key, {"count": 0, "total_ms": 0.0, "self_ms": 0.0})
        d = b["self_ms"] - a["self_ms"]
        pct = (d / a["self_ms"] * 100.0) if a["self_ms"] > 0 else (float("inf") if d > 0 else 0.0)
        rows.append({"name": key, "base": a, "new": b, "delta_self_ms": d, "pct": pct})
    rows.sort(key=lambda r: -abs(r["delta_self_ms"]))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description="per-span time differences between two traces or benchmark result files")
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--top", type=int, default=25, help="rows to print (default 25)")
    ap.add_argument("--min-ms", type=float, default=0.0, help="hide rows whose self time moved by less than this")
    ap.add_argument("--by-category", action="store_true", help="key spans by `category: name`")
    ap.add_argument("--fail-above", type=float, default=None, metavar="PCT", help="exit 1 when a row's self time grew by more than PCT%%")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    a = ap.parse_args(argv)
    base, kind_a = load(a.base)
    new, kind_b = load(a.new)
    if a.by_category and kind_a == kind_b == "trace":
        base = aggregate(json.load(open(a.base))["traceEvents"], True)
        new = aggregate(json.load(open(a.new))["traceEvents"], True)
    rows = [r for r in diff(base, new) if abs(r["delta_self_ms"]) >= a.min_ms]
    if a.json:
        print(json.dumps(rows[: a.top], indent=1, default=str))
    else:
        tb = sum(r["self_ms"] for r in base.values())
        tn = sum(r["self_ms"] for r in new.values())
        print(f"self time: base {tb:.3f} ms, new {tn:.3f} ms ({(tn - tb):+.3f} ms)")
        print(f"{'span':<44} {'n base':>7} {'n new':>7} {'self base ms':>13} {'self new ms':>12} {'delta ms':>10} {'delta':>8}")
        for r in rows[: a.top]:
            pct = "new" if r["pct"] == float("inf") else f"{r['pct']:+.1f}%"
            print(f"{r['name'][:44]:<44} {r['base']['count']:>7} {r['new']['count']:>7} {r['base']['self_ms']:>13.3f} "
                  f"{r['new']['self_ms']:>12.3f} {r['delta_self_ms']:>+10.3f} {pct:>8}")
    if a.fail_above is not None:
        bad = [r for r in rows if r["pct"] > a.fail_above and r["delta_self_ms"] > a.min_ms]
        if bad:
            print(f"trace_diff: {len(bad)} span(s) grew by more than {a.fail_above}%: " + ", ".join(r["name"] for r in bad[:5]), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
