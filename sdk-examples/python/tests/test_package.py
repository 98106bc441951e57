#!/usr/bin/env python3
"""Tests of the shapeml Python package (sdk-examples/python/shapeml): the
function table (checked against include/shapeml.h), version, checking and
diagnostics, compile/build/load, entry introspection, calls on NumPy arrays
against a float64 reference, errors as exception classes per status code,
DLPack both ways with NumPy and PyTorch (CPU), the runtime-only library, and
the type annotations of the public API.

Usage: /usr/bin/python3 sdk-examples/python/tests/test_package.py BUILD_DIR   (default build/default)
Last line: `python-package: N passed, M failed`; exit status 1 on any failure.
"""
import ctypes as C
import math
import os
import re
import sys
import tempfile
import traceback

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
import shapeml  # noqa: E402
from shapeml import _table  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "default"))
SDK = os.path.join(BUILD, "libshapeml.so.0")
RUNTIME = os.path.join(BUILD, "libshapeml_runtime.so.0")
MLP = open(os.path.join(ROOT, "examples", "mlp.sml")).read()
BAD = """(module bad
  (func f
    (dims B S D)
    (params (x (tensor f32 (B S D) host)))
    (returns (tensor f32 (B S D D) host))
    (return (reshape x (B S D D)))))"""

TESTS = []


def test(f):
    TESTS.append(f)
    return f


def mlp_inputs(b, s, d, f, seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal(sh).astype(np.float32) * 0.5 for sh in ((b, s, d), (d, f), (f,), (f, d), (d,))]


def mlp_reference(x, w1, b1, w2, b2):
    erf = np.vectorize(math.erf)
    h = x.astype(np.float64) @ w1.astype(np.float64) + b1
    h = h * 0.5 * (1 + erf(h / math.sqrt(2)))
    return h @ w2.astype(np.float64) + b2


@test
def table_matches_header():
    h = open(os.path.join(ROOT, "include", "shapeml.h")).read()
    body = h[h.index("typedef struct shapeml_api {"):h.index("} shapeml_api;")]
    assert tuple(re.findall(r"\(\*(\w+)\)\(", body)) == _table.MEMBERS
    # The Rust and Julia bindings mirror the same table by position.
    rs = open(os.path.join(ROOT, "sdk-examples", "rust", "src", "lib.rs")).read()
    rs = rs[rs.index("pub struct Api {"):]
    rs = rs[:rs.index("\n}")]
    rust = tuple(re.findall(r"pub (\w+):", rs))[5:]  # after struct_size, abi_*, compiler
    assert rust == _table.MEMBERS, set(rust) ^ set(_table.MEMBERS)
    jl = open(os.path.join(ROOT, "sdk-examples", "julia", "Shapeml.jl")).read()
    jl = jl[jl.index("const MEMBERS = ("):]
    jl = jl[:jl.index("\n)")]
    assert tuple(re.findall(r":(\w+),", jl)) == _table.MEMBERS


@test
def version_and_capabilities():
    lib = shapeml.Library(SDK)
    assert lib.abi[0] == _table.ABI_MAJOR and lib.abi[1] >= _table.ABI_MINOR_MIN
    assert lib.version == "%d.%d.%d" % lib.abi
    assert lib.has_compiler
    try:
        shapeml.Library("/nonexistent/libshapeml.so.0")
        raise AssertionError("no error")
    except shapeml.LibraryError:
        pass


@test
def check_and_diagnostics():
    lib = shapeml.Library(SDK)
    assert lib.check(MLP, "mlp.sml").passed
    r = lib.check(BAD, "bad.sml")
    assert not r.passed
    d = r.diagnostics[0]
    assert d.code == "E0303" and d.line == 6 and d.file == "bad.sml", d
    assert d.counterexample and all(v >= 1 for v in d.counterexample.values()), d
    assert "error[E0303]" in r.render() and r.render(json=True).startswith("[")


@test
def compile_introspect_call():
    lib = shapeml.Library(SDK)
    m = lib.compile(MLP, name="mlp.sml")
    assert m.entry_names() == ["mlp"]
    e = m.entry("mlp")
    assert e.shape_variables == ["B", "S", "D", "F"]
    assert [p.name for p in e.params] == ["x", "w1", "b1", "w2", "b2"]
    assert e.params[0].type == "(tensor T (B S D) Dv)" and e.params[0].dims == ("B", "S", "D")
    # Generic in its dtype and device (spec §3.5): the call below binds them from its inputs.
    assert e.params[0].dtype == shapeml.DTYPE_VARIABLE and e.results[0].rank == 3
    assert e.dtype_variables == {"T": ["f32", "f64", "bf16"]} and e.device_variables == ["Dv"]
    args = mlp_inputs(2, 3, 8, 16)
    (y,) = e(*args)
    assert y.shape == (2, 3, 8) and y.dtype == np.float32
    err = np.abs(y - mlp_reference(*args)).max()
    assert err < 1e-5, err


@test
def errors_are_exception_classes():
    lib = shapeml.Library(SDK)
    try:
        lib.compile(BAD, name="bad.sml")
        raise AssertionError("no error")
    except shapeml.CheckFailedError as e:
        assert e.code == 5 and e.name == "CHECK_FAILED" and "E0303" in e.message
    m = lib.compile(MLP, name="mlp.sml")
    try:
        m.entry("nope")
        raise AssertionError("no error")
    except shapeml.NotFoundError as e:
        assert "mlp" in e.message  # lists the entries
    args = mlp_inputs(2, 3, 8, 16)
    args[1] = args[1][:, :15].copy()
    try:
        m.entry("mlp")(*args)
        raise AssertionError("no error")
    except shapeml.InvalidArgumentError as e:
        assert isinstance(e, ValueError) and isinstance(e, shapeml.Error)
    try:
        lib.load("/nonexistent/model.so")
        raise AssertionError("no error")
    except LookupError:
        pass


@test
def context_stream():
    # The stream this Library's compiled modules run on: an int handle on a
    # GPU machine (the same one each time), UNAVAILABLE naming the missing
    # piece without one; the runtime-only library has no contexts.
    lib = shapeml.Library(SDK)
    try:
        s = lib.context_stream(0)
        assert isinstance(s, int) and s != 0 and lib.context_stream(0) == s
        other = shapeml.Library(SDK)  # a second Library: a second context, another stream
        assert other.context_stream(0) != s
    except shapeml.UnavailableError as e:
        assert "plugin" in e.message or "CUDA" in e.message or "cuda" in e.message, e.message
    rt = shapeml.Library(RUNTIME)
    try:
        rt.context_stream(0)
        raise AssertionError("no error")
    except shapeml.UnimplementedError:
        pass


@test
def thread_count_per_call():
    # The same bits for every count (docs/design/cpu-threads.md); a negative count is refused.
    e = shapeml.Library(SDK).compile(MLP, "mlp.sml").entry("mlp")
    args = mlp_inputs(4, 64, 16, 32)
    (one,) = e(*args, num_threads=1)
    (two,) = e(*args, num_threads=2)
    (default,) = e(*args)
    assert one.tobytes() == two.tobytes() == default.tobytes()
    assert np.abs(one - mlp_reference(*args)).max() < 1e-4
    try:
        e(*args, num_threads=-1)
        raise AssertionError("no error")
    except shapeml.InvalidArgumentError as err:
        assert "num_threads is -1" in str(err)


GIVEN = """(module given_heads
  (func head_sums (dims B S H Dh) (given H)
    (params (x (tensor f32 (B S (* H Dh)) host)))
    (returns (tensor f32 (B H S) host))
    (return (permute (reduce_sum (reshape x (B S H Dh)) :axes (3)) (0 2 1)))))
"""


@test
def shape_variables_given_at_the_call():
    # `(given H)`: the number of heads is in no input shape; dims= gives it.
    e = shapeml.Library(SDK).compile(GIVEN, "given.sml").entry("head_sums")
    assert e.shape_variables == ["B", "S", "H", "Dh"]
    assert e.given_shape_variables == ["H"]
    x = np.random.default_rng(3).standard_normal((2, 5, 24)).astype(np.float32)
    for h in (3, 4, 8):
        (y,) = e(x, dims={"H": h})
        want = x.astype(np.float64).reshape(2, 5, h, 24 // h).sum(3).transpose(0, 2, 1)
        assert y.shape == (2, h, 5) and np.abs(y - want).max() < 1e-5
    m = shapeml.Library(SDK).compile(GIVEN, "given.sml")
    (y2,) = m.call("head_sums", x, dims={"H": 4})
    assert np.array_equal(y2, e(x, dims={"H": 4})[0])
    for bad, words in (({}, "takes shape variable `H` at the call"), ({"H": 5}, "for no integer Dh"),
                       ({"H": 4, "B": 2}, "`B` is inferred from the input shapes")):
        try:
            e(x, dims=bad)
            raise AssertionError("no error for %r" % bad)
        except shapeml.InvalidArgumentError as err:
            assert words in str(err), str(err)


@test
def build_targets_native_by_default_and_others_when_asked():
    # The default is the build machine's, as shapemlc's and every binding's.
    import inspect
    assert inspect.signature(shapeml.Library.build).parameters["target"].default == shapeml.TARGET_NATIVE
    assert inspect.signature(shapeml.Library.compile).parameters["target"].default == shapeml.TARGET_NATIVE
    lib = shapeml.Library(SDK)
    with tempfile.TemporaryDirectory() as d:
        native, portable = os.path.join(d, "native.so"), os.path.join(d, "x86-64.so")
        lib.build(MLP, ["mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8"], native, name="mlp.sml")
        lib.build(MLP, ["mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8"], portable, name="mlp.sml", target=shapeml.TARGET_X86_64)
        assert b'(target "x86-64")' in open(portable, "rb").read()
        assert b'(target "x86-64")' not in open(native, "rb").read()
        args = mlp_inputs(1, 2, 4, 8)
        (y,) = lib.load(portable).entry("mlp")(*args)
        assert np.abs(y - mlp_reference(*args)).max() < 1e-5


@test
def aot_then_runtime_library():
    lib = shapeml.Library(SDK)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "mlp.so")
        lib.build(MLP, ["mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8"], out, name="mlp.sml")
        rt = shapeml.Library(RUNTIME)
        assert not rt.has_compiler
        try:
            rt.compile(MLP)
            raise AssertionError("no error")
        except shapeml.UnimplementedError:
            pass
        e = rt.load(out).entry("mlp")
        assert e.aot_specializations == [{"B": 1, "S": 2, "D": 4, "F": 8}]
        args = mlp_inputs(1, 2, 4, 8)
        (y,) = e(*args)
        assert np.abs(y - mlp_reference(*args)).max() < 1e-5
        try:
            e(*mlp_inputs(2, 2, 4, 8))
            raise AssertionError("no error")
        except shapeml.NotFoundError:
            pass


@test
def dlpack_numpy_and_torch():
    import torch
    lib = shapeml.Library(SDK)
    e = lib.compile(MLP, name="mlp.sml").entry("mlp")
    args = mlp_inputs(2, 3, 8, 16)
    # torch tensors in, zero copy: shapeml views torch's memory.
    targs = [torch.from_numpy(a) for a in args]
    t = lib.from_dlpack(targs[0])
    assert t.shape == (2, 3, 8)
    assert shapeml.Tensor is type(t)
    (y,) = e(*targs, tensors=True)
    # ... and out, zero copy: torch and NumPy view shapeml's result.
    ty = torch.from_dlpack(y)
    ny = np.from_dlpack(y)
    assert ty.data_ptr() == ny.ctypes.data
    assert np.abs(ty.numpy() - mlp_reference(*args)).max() < 1e-5
    del y, ty, ny  # deleters run; nothing leaks or double-frees
    # A torch view with an offset still imports at the right address.
    base = torch.arange(12, dtype=torch.float32)
    view = lib.from_dlpack(base[4:10])
    assert np.array_equal(view.numpy(), np.arange(4, 10, dtype=np.float32))


@test
def python_conventions():
    """Paths as os.PathLike, bindings as a string or a list, a rank-0 bf16
    result, Tensor dtype/shape/device/repr, __version__, LibraryError as a
    shapeml.Error, DLPack 1.x (versioned capsules, dl_device, copy)."""
    import pathlib
    import subprocess
    assert re.fullmatch(r"\d+\.\d+\.\d+", shapeml.__version__)
    lib = shapeml.Library(pathlib.Path(SDK))
    try:
        shapeml.Library(pathlib.Path("/nonexistent/libshapeml.so.0"))
        raise AssertionError("no error")
    except shapeml.Error as e:  # LibraryError is a shapeml.Error (and an OSError)
        assert isinstance(e, shapeml.LibraryError) and isinstance(e, OSError) and "/nonexistent" in e.message
    src = ("(module m (func f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (mul x 2.0)))"
           " (func s (params (x (tensor f32 (3) host))) (returns (tensor bf16 () host)) (return (cast (reduce_sum x) bf16))))")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in ("f:N=3;f:N=5;s:", ["f:N=3", "f:N=5", "s:"]):
            so = pathlib.Path(tmp) / ("m_%s.so" % type(spec).__name__)
            lib.build(src, spec, so, name="m.sml")
            mod = lib.load(so)
            (y,) = mod.call("f", np.arange(5, dtype=np.float32))
            assert np.array_equal(y, np.arange(5, dtype=np.float32) * 2)
        (z,) = mod.call("s", np.array([1.5, 2.0, 4.25], np.float32))  # a rank-0 bf16 result
        assert z.shape == () and z.dtype == np.float32 and float(z) == 7.75
    t = lib.from_dlpack(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert (t.dtype, t.shape, t.device) == ("f64", (2, 3), "host")
    assert repr(t) == "shapeml.Tensor(dtype=f64, shape=(2, 3), device=host)"
    cap = t.__dlpack__(max_version=(1, 0))
    is_valid = C.pythonapi.PyCapsule_IsValid
    is_valid.restype, is_valid.argtypes = C.c_int, [C.py_object, C.c_char_p]
    assert is_valid(cap, b"dltensor_versioned") and not is_valid(cap, b"dltensor")
    back = lib.from_dlpack(cap)  # consumes the versioned capsule
    assert np.array_equal(back.numpy(), np.arange(6, dtype=np.float64).reshape(2, 3))
    assert is_valid(t.__dlpack__(), b"dltensor")  # legacy without max_version
    assert is_valid(t.__dlpack__(max_version=(0, 8)), b"dltensor")
    for kwargs in ({"copy": True}, {"dl_device": (2, 0)}):
        try:
            t.__dlpack__(**kwargs)
            raise AssertionError(f"no error for {kwargs}")
        except BufferError:
            pass
    assert t.__dlpack__(dl_device=t.__dlpack_device__(), copy=False) is not None
    assert np.array_equal(np.from_dlpack(t), np.arange(6, dtype=np.float64).reshape(2, 3))
    # Library() with no path on a machine with only the runtime library.
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(RUNTIME, os.path.join(tmp, "libshapeml_runtime.so.0"))
        env = {k: v for k, v in os.environ.items() if k != "SHAPEML_LIBRARY"}
        env["LD_LIBRARY_PATH"] = tmp
        code = ("import sys; sys.path.insert(0, %r); import shapeml; lib = shapeml.Library(); "
                "print(lib.has_compiler, lib.lib.path)") % os.path.join(HERE, "..")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.split() == ["False", "libshapeml_runtime.so.0"], (r.stdout, r.stderr)


@test
def typed_api():
    # Every public function and method is annotated (parameters and result),
    # the annotations resolve, and the package says it is typed (PEP 561).
    import inspect
    import typing
    assert os.path.isfile(os.path.join(os.path.dirname(shapeml.__file__), "py.typed"))
    dunders = {"__init__", "__call__", "__repr__", "__dlpack__", "__dlpack_device__"}
    checked = 0
    for cname in ("Library", "Module", "Entry", "Tensor", "CheckResult", "Device", "bf16"):
        cls = getattr(shapeml, cname)
        for name, member in vars(cls).items():
            fn = member.fget if isinstance(member, property) else member
            if not inspect.isfunction(fn) or (name.startswith("_") and name not in dunders):
                continue
            hints = typing.get_type_hints(fn)  # raises on an annotation that does not resolve
            sig = inspect.signature(fn)
            missing = [p for p in list(sig.parameters)[1:] if p not in hints]
            assert not missing, f"{cname}.{name}: parameters without a type: {missing}"
            assert "return" in hints, f"{cname}.{name}: no return type"
            checked += 1
    for fname in ("from_dlpack", "bf16_bits_to_float32"):
        fn = getattr(shapeml, fname)
        hints = typing.get_type_hints(fn)
        assert "return" in hints and all(p in hints for p in inspect.signature(fn).parameters), fname
        checked += 1
    assert checked >= 35, checked
    assert typing.get_type_hints(shapeml.Library.compile)["return"] is shapeml.Module
    assert typing.get_type_hints(shapeml.from_dlpack)["return"] is shapeml.Tensor


def main():
    passed = failed = 0
    for f in TESTS:
        try:
            f()
            print(f"{f.__name__:<40} PASS", flush=True)
            passed += 1
        except Exception:
            print(f"{f.__name__:<40} FAIL", flush=True)
            traceback.print_exc()
            failed += 1
    print(f"python-package: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
