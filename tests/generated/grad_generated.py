#!/usr/bin/env python3
"""Reverse mode on generated programs (spec §4.26): for each well-shaped
program of gen_programs.py (generic in its floating dtype, run in float64), a function `probe`
with the last function's shape variables, constraints and parameters returns
one of its floating results, and `(grad dprobe probe)` is appended. Then:

  check     the module checks, or fails only with E0602 (an operation with no
            derivative rule, such as gelu, on a differentiated path) — never
            an internal error: the pass's output re-verifies with symbolic
            shapes on programs nobody wrote by hand
  numbers   when it checks, dprobe at a binding sampled from the program's
            constraints (uniform inputs in [-2, 2]) returns probe's result
            exactly, and its gradients match a central finite difference of
            probe along a random direction: |fd - <g, v>| <= 1e-5 (|<g, v>| + 1)
            with h = 1e-6. Points where the function is not smooth (a select
            or relu switching, a cast to an integer, a tie) are detected by
            the finite difference disagreeing with itself at h and h/8, and
            skipped (counted); so are non-finite results.

    grad_generated.py --sdk build/default/libshapeml.so --shapemlc build/default/shapemlc --count N --seed S

Last line: `grad-generated: N checked, K numeric, M failed, S skipped`; exit
status 1 when any failed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "sdk-examples", "python"))
import gen_programs as G  # noqa: E402

H = 1e-6


def probe_source(prog):
    """The program (f64) with `probe` and `(grad dprobe probe)` appended, or
    None when the last function has no floating result or parameter."""
    main = prog.funcs[-1]
    fl = [i for i, t in enumerate(main.returns) if t.dtype in ("f32", "f64", "bf16")]
    if not fl or not any(t.dtype in ("f32", "f64", "bf16") for _, t in main.params):
        return None, None
    p = G.Func("probe", main.dims, main.where)
    p.params = list(main.params)
    names = ["r%d" % i for i in range(len(main.returns))]
    p.lets = [G.Let(names, None, G.Call(main.name, [G.Ref(n) for n, _ in main.params]))]
    p.returns = [main.returns[fl[0]]]
    p.results = [names[fl[0]]]
    prog.funcs.append(p)
    # Every function with a floating parameter generic in its floating dtype
    # (spec §3.5): the float64 inputs below make it f64 throughout.
    src = G.print_program(prog, float_var="Tf")[0]
    prog.funcs.pop()
    src = src.rstrip()
    assert src.endswith(")")
    return src[:-1] + "\n  (grad dprobe probe))\n", main


def inputs_for(func, env, rng):
    arrs = []
    for _, tt in func.params:
        shape = tuple(G.deval(d, env) for d in tt.dims)
        if tt.dtype in ("f32", "f64", "bf16"):
            arrs.append(rng.uniform(-2, 2, shape).astype(np.float64))
        elif tt.dtype in ("i32", "i64"):
            arrs.append(rng.integers(-5, 6, shape).astype(np.int32 if tt.dtype == "i32" else np.int64))
        else:
            arrs.append(rng.integers(0, 2, shape).astype(np.bool_))
    return arrs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdk", required=True)
    ap.add_argument("--shapemlc", required=True)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    import shapeml
    lib = shapeml.Library(a.sdk)
    rng = np.random.default_rng(a.seed)
    checked = numeric = failed = 0
    skipped = {}

    def skip(why):
        skipped[why] = skipped.get(why, 0) + 1

    work = tempfile.mkdtemp(prefix="grad-generated-")
    i = 0
    while checked < a.count and i < a.count * 6:
        index = i
        i += 1
        try:
            prog, _worlds, models = G.generate_program(a.seed, index, min_lets=6, max_lets=30)
        except RuntimeError:
            skip("generator")
            continue
        src, fmain = probe_source(prog)
        if src is None:
            skip("no floating result or parameter")
            continue
        if "(cuda" in src:
            skip("device placement (the CPU back end runs this test)")
            continue
        path = os.path.join(work, "gen_%d.sml" % index)
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([a.shapemlc, "check", "--format=json", path], capture_output=True, text=True)
        checked += 1
        try:
            diags = json.loads(r.stderr) if r.stderr.strip() else []  # diagnostics go to stderr
        except json.JSONDecodeError:
            diags = [{"code": "unparsable output"}]
        codes = sorted({d.get("code") for d in diags})
        if r.returncode not in (0, 1) or any(c != "E0602" for c in codes) or (r.returncode == 1 and not codes):
            failed += 1
            print("FAIL gen_%d: check rc=%d codes=%s %s" % (index, r.returncode, codes, (r.stderr or r.stdout)[-300:].replace("\n", " | ")))
            continue
        if codes:
            skip("E0602 (no derivative rule on the path)")
            continue
        env = models[-1][0]
        xs = inputs_for(fmain, env, rng)
        fidx = [k for k, (_, t) in enumerate(fmain.params) if t.dtype in ("f32", "f64", "bf16")]
        try:
            m = lib.compile(src, "gen_%d.sml" % index)
            out = m.call("dprobe", *xs)
            y = m.call("probe", *xs)[0]
        except shapeml.Error as e:
            skip("run: " + e.name)
            continue
        if not np.array_equal(out[0], y, equal_nan=True):
            failed += 1
            print("FAIL gen_%d: dprobe's primal differs from probe" % index)
            continue
        grads = out[1:]
        if len(grads) != len(fidx) or any(g.shape != xs[k].shape for g, k in zip(grads, fidx)):
            failed += 1
            print("FAIL gen_%d: gradient shapes %s" % (index, [g.shape for g in grads]))
            continue
        if not np.all(np.isfinite(y)) or not all(np.all(np.isfinite(g)) for g in grads):
            skip("non-finite values")
            continue
        vs = {k: rng.standard_normal(xs[k].shape) for k in fidx}
        an = sum(float(np.sum(g * vs[k])) for g, k in zip(grads, fidx))

        def fd(h):
            plus = [x.copy() for x in xs]
            minus = [x.copy() for x in xs]
            for k in fidx:
                plus[k] = xs[k] + h * vs[k]
                minus[k] = xs[k] - h * vs[k]
            return (float(np.sum(m.call("probe", *plus)[0])) - float(np.sum(m.call("probe", *minus)[0]))) / (2 * h)
        f1, f2 = fd(H), fd(H / 8)
        tol = 1e-5 * (abs(an) + 1)
        if not np.isfinite(f1) or abs(f1 - f2) > tol:
            skip("not smooth at the sampled point")
            continue
        numeric += 1
        if abs(f1 - an) > tol:
            failed += 1
            print("FAIL gen_%d: <g, v> = %.10g, finite difference %.10g" % (index, an, f1))
    print("# skipped: %s" % json.dumps(skipped, sort_keys=True))
    print("grad-generated: %d checked, %d numeric, %d failed, %d skipped" % (checked, numeric, failed, sum(skipped.values())))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
