#!/usr/bin/env python3
"""The on-disk JIT cache (docs/design/jit-cache.md), through `shapemlc run`
in separate processes, as a user meets it:

  - a first run compiles and stores one entry; a second run of the same
    program and binding loads it: its trace has no LLVM optimization span
    and a `jit cache hit` span, and its result is bit-identical;
  - another binding, another target, or a changed source is a miss (a new
    entry); an unchanged one still hits;
  - a corrupt (truncated) or foreign entry is a miss that compiles anew,
    gives the same result and replaces the entry;
  - SHAPEML_JIT_CACHE=off stores nothing; an unwritable directory is no
    error (nothing stored, the run succeeds, nothing on stderr);
  - SHAPEML_JIT_CACHE_MAX_MB bounds the directory (oldest entries removed).

Usage: test_jit_cache.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

build, src = sys.argv[1], sys.argv[2]
shapemlc = os.path.join(build, "shapemlc")
mlp = os.path.join(src, "examples", "mlp.sml")
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(tmp, cache_env, bind="T=f32,B=2,S=4,D=8,F=16", source=mlp, target=None, tag="r"):
    """Runs the MLP; returns (result bytes, span names of the trace, stderr)."""
    trace = os.path.join(tmp, tag + ".json")
    out = os.path.join(tmp, tag + ".npy")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHAPEML_")}
    env.update(cache_env, SHAPEML_TRACE=trace)
    args = [shapemlc, "run", source, "--bind", bind, "--output", out]
    args += [a for i, p in enumerate(["x", "w1", "b1", "w2", "b2"]) for a in ("--random", f"{p}={i + 1}")]
    if target:
        args += ["--target", target]
    r = subprocess.run(args, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"shapemlc run failed with {r.returncode}: {r.stderr}")
    with open(trace) as f:
        names = {e.get("name") for e in json.load(f)["traceEvents"]}
    with open(out, "rb") as f:
        return f.read(), names, r.stderr


def entries(d):
    return sorted(n for n in os.listdir(d) if n.endswith(".jit")) if os.path.isdir(d) else []


with tempfile.TemporaryDirectory() as tmp:
    cache = os.path.join(tmp, "cache", "jit")  # created by the first run
    env = {"SHAPEML_JIT_CACHE_DIR": cache}
    y1, s1, e1 = run(tmp, env, tag="cold")
    check("llvm optimize" in s1 and "jit cache hit" not in s1, "first run compiles")
    check(len(entries(cache)) == 1, f"first run stores one entry (found {entries(cache)})")
    check(stat.S_IMODE(os.stat(cache).st_mode) == 0o700, "the cache directory is private (0700)")
    y2, s2, e2 = run(tmp, env, tag="warm")
    check("jit cache hit" in s2 and "llvm optimize" not in s2 and "mlir to llvm" not in s2, "second run loads the entry, no compile")
    check(y1 == y2, "the cached code gives the bit-identical result")
    check(e1 == "" and e2 == "", "nothing on stderr")

    y3, s3, _ = run(tmp, env, bind="T=f32,B=3,S=4,D=8,F=16", tag="bind")
    check("llvm optimize" in s3 and len(entries(cache)) == 2, "another binding is a miss with its own entry")
    _, s4, _ = run(tmp, env, target="x86-64", tag="target")
    check("llvm optimize" in s4 and len(entries(cache)) == 3, "another target is a miss with its own entry")
    changed = os.path.join(tmp, "mlp_changed.sml")
    with open(mlp) as f, open(changed, "w") as g:
        g.write(f.read() + "\n; a comment changes the source\n")
    _, s5, _ = run(tmp, env, source=changed, tag="source")
    check("llvm optimize" in s5 and len(entries(cache)) == 4, "a changed source is a miss with its own entry")
    _, s6, _ = run(tmp, env, tag="again")
    check("jit cache hit" in s6 and "llvm optimize" not in s6, "the first entry still hits")

    # Corrupt every entry: truncated, then foreign bytes of the right length.
    first = os.path.join(cache, entries(cache)[0])
    for damage in ("truncated", "foreign"):
        for n in entries(cache):
            p = os.path.join(cache, n)
            data = open(p, "rb").read()
            with open(p, "wb") as f:
                f.write(data[: len(data) // 2] if damage == "truncated" else data[:60] + bytes(len(data) - 60))
        y7, s7, e7 = run(tmp, env, tag=damage)
        check("llvm optimize" in s7 and y7 == y1 and e7 == "", f"a {damage} entry is a miss that compiles anew, same result")
        _, s8, _ = run(tmp, env, tag=damage + "_after")
        check("jit cache hit" in s8 and "llvm optimize" not in s8, f"the {damage} entry was replaced")

    off = os.path.join(tmp, "off")
    _, s9, _ = run(tmp, {"SHAPEML_JIT_CACHE_DIR": off, "SHAPEML_JIT_CACHE": "off"}, tag="off")
    check(entries(off) == [] and "jit cache hit" not in s9, "SHAPEML_JIT_CACHE=off stores nothing")

    ro = os.path.join(tmp, "readonly")
    os.makedirs(ro)
    os.chmod(ro, 0o500)
    if os.access(ro, os.W_OK):  # root writes anywhere: make it a file instead
        os.chmod(ro, 0o700)
        shutil.rmtree(ro)
        open(ro, "w").close()
    y10, _, e10 = run(tmp, {"SHAPEML_JIT_CACHE_DIR": os.path.join(ro, "jit")}, tag="ro")
    check(y10 == y1 and e10 == "", "an unusable cache directory is no error and changes nothing")

    small = os.path.join(tmp, "small")
    for b in range(2, 7):
        run(tmp, {"SHAPEML_JIT_CACHE_DIR": small, "SHAPEML_JIT_CACHE_MAX_MB": "0.02"}, bind=f"T=f32,B={b},S=4,D=8,F=16", tag=f"small{b}")
    size = sum(os.path.getsize(os.path.join(small, n)) for n in entries(small))
    check(0 < size <= 0.02 * (1 << 20) and len(entries(small)) < 5, f"the size bound holds ({size} bytes in {len(entries(small))} entries)")

print(f"jit-cache: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
