"""shapeml for Python: a ctypes binding of the C ABI (include/shapeml.h),
with NumPy arrays and DLPack (PyTorch, NumPy) at the boundary.

The library is opened with dlopen and used through its versioned function
table (shapeml_get_api, checked once; see _table.py). No compiled extension.

    import shapeml
    lib = shapeml.Library("build/default/libshapeml.so.0")   # or libshapeml_runtime.so.0
    r = lib.check(open("examples/mlp.sml").read(), name="mlp.sml")
    for d in r.diagnostics: print(d.code, d.line, d.message, d.counterexample)
    mod = lib.compile(open("examples/mlp.sml").read(), name="mlp.sml")
    mlp = mod.entry("mlp")
    print(mlp.shape_variables, [p.type for p in mlp.params])
    (y,) = mlp(x, w1, b1, w2, b2)          # NumPy (or DLPack objects, e.g. torch tensors) in, NumPy out
    t = lib.from_dlpack(torch_tensor)       # zero copy into shapeml (or shapeml.from_dlpack)
    torch.from_dlpack(t)                    # zero copy out (t.__dlpack__, DLPack 1.x)
    t.dtype, t.shape, t.device              # "f32", (4, 128, 256), "host"

Paths may be str or os.PathLike. Errors raise shapeml.Error -- the subclass
of its status code (InvalidArgumentError, NotFoundError, CheckFailedError,
...) with the library's code, code name and message, or LibraryError for a
library file that cannot be used. The 0.3 interface (Module.call,
call_tensors, call_into, Device, bf16) is kept as it was.

bf16 (NumPy has no bfloat16 dtype; docs/design/python-bf16.md):
  - outputs come back as float32 by default, which holds every bf16 value
    exactly (the bf16 bits are the high half of the float32); pass
    bf16="bits" to Library(...) or Module.call(...) for the raw bit patterns
    as a uint16 array instead;
  - inputs are passed as shapeml.bf16(a): a float array is rounded to
    nearest even (NaN stays NaN), a uint16 array is taken as raw bits.
"""
from __future__ import annotations  # annotations stay strings: no import cost, forward references

import ctypes as C

import os
from collections import namedtuple
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _table
from ._errors import Error, LibraryError  # noqa: F401

# Types of the annotations (the package is typed: py.typed, PEP 561).
PathLike = Union[str, "os.PathLike[str]"]
ArrayLike = Any  # what numpy.asarray takes
# set_log_sink's callback: level, component, message, fields, module_id, entry
LogSink = Callable[[str, str, str, Dict[str, str], str, str], None]

__version__ = "0.5.0"  # this binding's version; Library(...).version is the library's

_DTYPES = {np.dtype("float32"): 0, np.dtype("float64"): 1, np.dtype("int32"): 3, np.dtype("int64"): 4, np.dtype("bool"): 5}
_NP = {v: k for k, v in _DTYPES.items()}
DTYPE_BF16 = 2
DTYPE_NAMES = {0: "f32", 1: "f64", 2: "bf16", 3: "i32", 4: "i64", 5: "bool"}
# A generic entry's dtype variable in its signature (SHAPEML_DTYPE_VARIABLE), never a tensor's.
DTYPE_VARIABLE = 6
BF16_MODES = ("float32", "bits")


class bf16:
    """An array to pass as a bf16 tensor. `a` is either raw bf16 bit
    patterns (a uint16 array) or floats, rounded to the nearest bf16 (ties
    to even, as PyTorch's .to(torch.bfloat16); NaN stays a quiet NaN)."""

    def __init__(self, a: ArrayLike) -> None:
        a = np.asarray(a)
        if a.dtype == np.uint16:
            self.bits = np.require(a, requirements="C")
        elif a.dtype.kind in "fiub":
            u = np.require(a, np.float32, requirements="C").view(np.uint32).astype(np.uint64)
            r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            nan = np.isnan(np.asarray(a, np.float32))
            self.bits = np.where(nan, (np.asarray(u >> 16, np.uint16) | np.uint16(0x0040)), r).astype(np.uint16)
        else:
            raise TypeError(f"cannot make bf16 from {a.dtype}")

    def to_float32(self) -> np.ndarray:
        return bf16_bits_to_float32(self.bits)


def bf16_bits_to_float32(bits: ArrayLike) -> np.ndarray:
    """Raw bf16 bits (uint16) -> float32, exactly (any rank, rank 0 included)."""
    b = np.asarray(bits, np.uint16)
    return (b.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(b.shape)
TARGET_NATIVE, TARGET_X86_64, TARGET_X86_64_V3, TARGET_X86_64_V4 = 0, 1, 2, 3  # shapeml_target


class InvalidArgumentError(Error, ValueError): pass  # noqa: E701
class ResourceExhaustedError(Error, MemoryError): pass  # noqa: E701
class NotFoundError(Error, LookupError): pass  # noqa: E701
class IOError_(Error, OSError): pass  # noqa: E701
class CheckFailedError(Error): pass  # noqa: E701
class UnimplementedError(Error, NotImplementedError): pass  # noqa: E701
class UnavailableError(Error): pass  # noqa: E701
class InternalError(Error): pass  # noqa: E701
class FailedPreconditionError(Error): pass  # noqa: E701
class IncompatibleModuleError(Error): pass  # noqa: E701
class OutOfRangeError(Error, IndexError): pass  # noqa: E701


ERRORS = {1: InvalidArgumentError, 2: ResourceExhaustedError, 3: NotFoundError, 4: IOError_, 5: CheckFailedError,
          6: UnimplementedError, 7: UnavailableError, 8: InternalError, 9: FailedPreconditionError, 10: IncompatibleModuleError,
          11: OutOfRangeError}


class CallOptions(C.Structure):
    """shapeml_call_options (since 0.3; `reserved`, `num_threads` and the given
    shape variables `dim_names`/`dim_values`/`num_dims` appended)."""
    _fields_ = [("struct_size", C.c_size_t), ("memory", C.c_void_p), ("outputs", C.c_void_p), ("device_index", C.c_int32),
                ("stream", C.c_void_p), ("graph", C.c_int32),  # graph: 0 default, 1 on, 2 off (shapeml_graph_mode)
                ("reserved", C.c_int32), ("num_threads", C.c_int32),
                ("dim_names", C.POINTER(C.c_char_p)), ("dim_values", C.POINTER(C.c_int64)), ("num_dims", C.c_size_t)]


class ModuleOptions(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("memory", C.c_void_p), ("target", C.c_int32)]


class LogField(C.Structure):
    _fields_ = [("key", C.c_char_p), ("value", C.c_char_p)]


class LogRecord(C.Structure):
    """shapeml_unstable_log_record (unstable tier; docs/design/observability.md)."""
    _fields_ = [("struct_size", C.c_size_t), ("level", C.c_int32), ("component", C.c_char_p), ("message", C.c_char_p),
                ("num_fields", C.c_size_t), ("fields", C.POINTER(LogField)), ("time_ns", C.c_uint64), ("thread", C.c_uint32),
                ("module_id", C.c_char_p), ("entry", C.c_char_p)]


LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
_LOG_SINK = C.CFUNCTYPE(None, C.c_void_p, C.POINTER(LogRecord))
_TRACE_WRITER = C.CFUNCTYPE(None, C.c_void_p, C.POINTER(C.c_char), C.c_size_t)


class TraceOptions(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("flags", C.c_uint64)]


def _default_libraries() -> List[str]:
    """Where Library() looks when given no path, in order (see Library)."""
    out = []
    try:
        import shapeml_compiler  # the compiler wheel, when installed
        out.append(shapeml_compiler.LIBRARY)
    except ImportError:
        pass
    out.append("libshapeml.so.0")
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native", "libshapeml_runtime.so.0")
    if os.path.isfile(bundled):
        out.append(bundled)
    out.append("libshapeml_runtime.so.0")
    return out


class Library:
    """libshapeml.so (compiler + runtime) or libshapeml_runtime.so (load/call only)."""

    def __init__(self, path: Optional[PathLike] = None, bf16: str = "float32") -> None:
        """`path` (a str or os.PathLike): libshapeml.so.0 or
        libshapeml_runtime.so.0. Default, the first that loads:
        $SHAPEML_LIBRARY; the compiler wheel's library (package
        shapeml_compiler); libshapeml.so.0 from the loader's search path;
        the runtime library bundled in this package's wheel
        (shapeml/_native); libshapeml_runtime.so.0 from the loader's path."""
        if bf16 not in BF16_MODES:
            raise ValueError(f"bf16 must be one of {BF16_MODES}")
        self.bf16_mode = bf16
        path = os.fspath(path) if path is not None else os.environ.get("SHAPEML_LIBRARY")
        if path:
            self.lib = _table.Table(path)
        else:
            first = None
            for candidate in _default_libraries():
                try:
                    self.lib = _table.Table(candidate)
                    break
                except LibraryError as e:
                    first = first or e
            else:
                raise first
        self.path: str = self.lib.path  # the library file (or loader name) it opened
        self.abi = (self.lib.header.abi_major, self.lib.header.abi_minor, self.lib.header.abi_patch)
        self.has_compiler = self.lib.has_compiler
        L = self.lib
        vp, sz, i32, cp = C.c_void_p, C.c_size_t, C.c_int32, C.c_char_p
        L.shapeml_version.restype = cp
        L.shapeml_status_get_code.restype, L.shapeml_status_get_code.argtypes = i32, [vp]
        L.shapeml_status_get_message.restype, L.shapeml_status_get_message.argtypes = cp, [vp]
        L.shapeml_status_code_name.restype, L.shapeml_status_code_name.argtypes = cp, [i32]
        L.shapeml_status_free.argtypes = [vp]
        sigs = {
            "shapeml_tensor_create_copy": [vp, i32, sz, C.POINTER(C.c_int64), vp, sz, C.POINTER(vp)],
            "shapeml_module_load": [cp, vp, C.POINTER(vp)],
            "shapeml_module_call": [vp, cp, C.POINTER(vp), sz, C.POINTER(vp), sz],
            "shapeml_module_lookup": [vp, cp, C.POINTER(sz), C.POINTER(sz)],
        }
        if hasattr(L, "shapeml_context_create"):
            sigs.update({
                "shapeml_context_create": [vp, C.POINTER(vp)],
                "shapeml_module_compile": [vp, cp, cp, sz, vp, C.POINTER(vp)],
                "shapeml_module_build_shared_object": [vp, cp, cp, sz, cp, i32, cp],
                "shapeml_unstable_context_default_stream": [vp, i32, C.POINTER(vp)],
            })
        for name, args in sigs.items():
            f = getattr(L, name)
            f.restype, f.argtypes = vp, args
        for name in ("shapeml_tensor_release", "shapeml_module_release", "shapeml_context_release"):
            if hasattr(L, name):
                getattr(L, name).argtypes = [vp]
        L.shapeml_tensor_dtype.restype, L.shapeml_tensor_dtype.argtypes = i32, [vp]
        L.shapeml_tensor_rank.restype, L.shapeml_tensor_rank.argtypes = sz, [vp]
        L.shapeml_tensor_shape.restype, L.shapeml_tensor_shape.argtypes = C.POINTER(C.c_int64), [vp]
        L.shapeml_tensor_data.restype, L.shapeml_tensor_data.argtypes = vp, [vp]
        L.shapeml_tensor_byte_size.restype, L.shapeml_tensor_byte_size.argtypes = sz, [vp]
        self.version = L.shapeml_version().decode()
        self._ctx = None

    # ---- observability (unstable tier) ----

    def _obs(self):
        L = self.lib
        if not getattr(self, "_obs_ready", False):
            vp = C.c_void_p
            L.shapeml_unstable_log_set_sink.restype, L.shapeml_unstable_log_set_sink.argtypes = vp, [_LOG_SINK, vp]
            L.shapeml_unstable_log_set_levels.restype, L.shapeml_unstable_log_set_levels.argtypes = vp, [C.c_char_p]
            L.shapeml_unstable_trace_start.restype, L.shapeml_unstable_trace_start.argtypes = vp, [C.POINTER(TraceOptions)]
            L.shapeml_unstable_trace_stop.restype = vp
            L.shapeml_unstable_trace_flush_to_file.restype, L.shapeml_unstable_trace_flush_to_file.argtypes = vp, [C.c_char_p]
            L.shapeml_unstable_trace_flush.restype, L.shapeml_unstable_trace_flush.argtypes = vp, [_TRACE_WRITER, vp]
            self._obs_ready = True
        return L

    def set_log_sink(self, fn: Optional[LogSink]) -> None:
        """fn(level, component, message, fields: dict, module_id, entry), or None to remove it.
        Called on the thread that logs; the library prints nothing by itself."""
        L = self._obs()
        if fn is None:
            self._check(L.shapeml_unstable_log_set_sink(_LOG_SINK(), None))
            self._sink = None
            return

        def sink(user, rec):
            r = rec.contents
            fields = {r.fields[i].key.decode(): r.fields[i].value.decode() for i in range(r.num_fields)}
            fn(LOG_LEVELS[r.level], r.component.decode(), r.message.decode(), fields, r.module_id.decode(), r.entry.decode())

        cb = _LOG_SINK(sink)
        self._check(L.shapeml_unstable_log_set_sink(cb, None))
        self._sink = cb  # kept alive while installed

    def set_log_levels(self, spec: str) -> None:
        """SHAPEML_LOG's syntax, e.g. "info,smt=debug"."""
        self._check(self._obs().shapeml_unstable_log_set_levels(spec.encode()))

    def trace_start(self, gpu_timing: bool = False) -> None:
        self._check(self._obs().shapeml_unstable_trace_start(C.byref(TraceOptions(C.sizeof(TraceOptions), 1 | (2 if gpu_timing else 0)))))

    def trace_stop(self) -> None:
        self._check(self._obs().shapeml_unstable_trace_stop())

    def trace_flush_to_file(self, path: PathLike) -> None:
        """Writes the recorded spans as Chrome trace-event JSON (ui.perfetto.dev) and forgets them."""
        self._check(self._obs().shapeml_unstable_trace_flush_to_file(str(path).encode()))

    def trace_json(self) -> str:
        """The recorded spans as a Chrome trace-event JSON string (and forgets them)."""
        parts = []
        cb = _TRACE_WRITER(lambda user, data, size: parts.append(C.string_at(data, size)))
        self._check(self._obs().shapeml_unstable_trace_flush(cb, None))
        return b"".join(parts).decode()

    def _check(self, status):
        if status:
            code = self.lib.shapeml_status_get_code(status)
            name = self.lib.shapeml_status_code_name(code).decode()
            msg = self.lib.shapeml_status_get_message(status).decode()
            self.lib.shapeml_status_free(status)
            raise ERRORS.get(code, Error)(code, name, msg)

    def _context(self):
        if not self.has_compiler:
            raise UnimplementedError(6, "UNIMPLEMENTED", f"{self.lib.path} has no compiler (libshapeml_runtime.so): load AOT modules")
        if self._ctx is None:
            ctx = C.c_void_p()
            self._check(self.lib.shapeml_context_create(None, C.byref(ctx)))
            self._ctx = ctx
        return self._ctx

    def context_stream(self, device: int = 0) -> Optional[int]:
        """The stream (an int cudaStream_t) that device calls of the modules
        this Library compiled run on when they pass none: its context's
        stream for CUDA device `device`, distinct from every other context's.
        torch.cuda.ExternalStream(lib.context_stream()) orders PyTorch work
        with them. Unstable API (shapeml_unstable_context_default_stream)."""
        ctx = self._context()
        s = C.c_void_p()
        self._check(self.lib.shapeml_unstable_context_default_stream(ctx, device, C.byref(s)))
        return s.value

    def _options(self, target):
        return ModuleOptions(C.sizeof(ModuleOptions), None, target)

    def compile(self, source: str, name: str = "<source>", target: int = TARGET_NATIVE) -> Module:
        """JIT: every function becomes an entry, specialized on first call."""
        ctx = self._context()
        src = source.encode()
        out = C.c_void_p()
        opts = self._options(target)
        self._check(self.lib.shapeml_module_compile(ctx, name.encode(), src, len(src), C.byref(opts), C.byref(out)))
        return Module(self, out)

    def build(self, source: str, bindings: Union[str, Sequence[str]], out_path: PathLike, name: str = "<source>",
              target: int = TARGET_NATIVE) -> None:
        """AOT: a shared object at `out_path` (str or os.PathLike) with one
        specialization per binding: `bindings` is one string
        "ENTRY:VAR=VALUE,...;ENTRY:..." or a list of "ENTRY:VAR=VALUE,..."."""
        ctx = self._context()
        src = source.encode()
        spec = bindings if isinstance(bindings, str) else ";".join(bindings)
        self._check(self.lib.shapeml_module_build_shared_object(ctx, name.encode(), src, len(src), spec.encode(),
                                                                target, os.fsencode(out_path)))

    def load(self, path: PathLike) -> Module:
        """An AOT module (`shapemlc build`); `path` a str or os.PathLike."""
        out = C.c_void_p()
        self._check(self.lib.shapeml_module_load(os.fsencode(path), None, C.byref(out)))
        return Module(self, out)

    # ---- checking (0.1) -------------------------------------------------
    def check(self, source: str, name: str = "<source>") -> CheckResult:
        """Parses and checks a program. A program with errors is not an
        exception: the result's `diagnostics` say what is wrong."""
        L = self.lib
        vp, sz, cp = C.c_void_p, C.c_size_t, C.c_char_p
        L.shapeml_check_source.restype, L.shapeml_check_source.argtypes = vp, [vp, cp, cp, sz, C.POINTER(vp)]
        ctx = self._context()
        src = source.encode()
        out = vp()
        self._check(L.shapeml_check_source(ctx, name.encode(), src, len(src), C.byref(out)))
        return CheckResult(self, out)

    # ---- DLPack ---------------------------------------------------------
    def from_dlpack(self, obj: Any) -> Tensor:
        """A shapeml Tensor viewing `obj` (anything with __dlpack__: a torch
        tensor, a NumPy array...) without copying; the producer's memory is
        kept alive until the Tensor (and every shapeml use of it) is gone."""
        L = self.lib
        if hasattr(obj, "__dlpack__"):
            try:  # a DLPack 1.x producer gives a versioned capsule (with its read-only flag)
                capsule = obj.__dlpack__(max_version=(1, 0))
            except TypeError:  # a producer older than the 2023 protocol
                capsule = obj.__dlpack__()
        else:
            capsule = obj
        versioned = bool(_PyCapsule_IsValid(capsule, b"dltensor_versioned"))
        name = b"dltensor_versioned" if versioned else b"dltensor"
        imp = L.shapeml_tensor_import_dlpack_versioned if versioned else L.shapeml_tensor_import_dlpack
        imp.restype, imp.argtypes = C.c_void_p, [C.c_void_p, C.POINTER(C.c_void_p)]
        if not _PyCapsule_IsValid(capsule, name):
            raise TypeError("from_dlpack needs an object with __dlpack__ or an unconsumed DLPack capsule")
        ptr = _PyCapsule_GetPointer(capsule, name)
        out = C.c_void_p()
        self._check(imp(ptr, C.byref(out)))
        _PyCapsule_SetName(capsule, b"used_dltensor_versioned" if versioned else b"used_dltensor")  # consumed: shapeml calls the deleter
        return Tensor(self, out)

    def _as_tensor(self, a):
        """(handle, owned): a Tensor's handle, a DLPack object imported, or a NumPy copy."""
        if isinstance(a, Tensor):
            return a.handle, False
        if hasattr(a, "__dlpack__") and not isinstance(a, np.ndarray):
            t = self.from_dlpack(a)
            t._keep = a
            h = C.c_void_p(t.handle.value)
            t.handle = None  # ownership moves to the caller of _as_tensor
            return h, True
        return self.tensor(a), True

    def tensor(self, array: Union[ArrayLike, bf16]) -> C.c_void_p:
        if isinstance(array, bf16):
            a, code = array.bits, DTYPE_BF16
        else:
            a = np.require(array, requirements="C")  # keeps rank 0 (ascontiguousarray makes it rank 1)
            if a.dtype not in _DTYPES:
                hint = " (wrap it as shapeml.bf16(a) to pass bf16)" if a.dtype == np.uint16 else ""
                raise TypeError(f"shapeml has no dtype for {a.dtype}{hint}")
            code = _DTYPES[a.dtype]
        shape = (C.c_int64 * max(a.ndim, 1))(*a.shape)
        out = C.c_void_p()
        self._check(self.lib.shapeml_tensor_create_copy(None, code, a.ndim, shape, a.ctypes.data_as(C.c_void_p), a.nbytes,
                                                        C.byref(out)))
        return out

    def to_numpy(self, t: C.c_void_p, bf16: Optional[str] = None) -> np.ndarray:
        """A copy of tensor `t`; bf16 as float32 (exact) or, with
        bf16="bits", as its raw uint16 bit patterns."""
        mode = bf16 if bf16 is not None else self.bf16_mode
        if mode not in BF16_MODES:
            raise ValueError(f"bf16 must be one of {BF16_MODES}")
        L = self.lib
        rank = L.shapeml_tensor_rank(t)
        shape = tuple(L.shapeml_tensor_shape(t)[i] for i in range(rank))
        code = L.shapeml_tensor_dtype(t)
        dtype = np.dtype(np.uint16) if code == DTYPE_BF16 else _NP.get(code)
        if dtype is None:
            raise TypeError(f"shapeml dtype {code} has no NumPy equivalent in this binding")
        n = L.shapeml_tensor_byte_size(t)
        buf = (C.c_char * n).from_address(L.shapeml_tensor_data(t)) if n else b""
        a = np.frombuffer(bytes(buf), dtype=dtype).reshape(shape)
        if code == DTYPE_BF16 and mode == "float32":
            a = bf16_bits_to_float32(a)
        return a


class Module:
    def __init__(self, lib: Library, handle: C.c_void_p) -> None:
        self.lib, self.handle = lib, handle

    def __del__(self):
        if self.handle:
            self.lib.lib.shapeml_module_release(self.handle)
            self.handle = None

    def entry_names(self) -> List[str]:
        """The module's entry points."""
        L = self.lib.lib
        L.shapeml_module_entry_count.restype, L.shapeml_module_entry_count.argtypes = C.c_size_t, [C.c_void_p]
        L.shapeml_module_entry_name.restype, L.shapeml_module_entry_name.argtypes = C.c_char_p, [C.c_void_p, C.c_size_t]
        return [L.shapeml_module_entry_name(self.handle, i).decode() for i in range(L.shapeml_module_entry_count(self.handle))]

    def entry(self, name: str) -> Entry:
        """The entry point `name` as an Entry (NotFoundError lists the entries)."""
        L = self.lib.lib
        L.shapeml_module_get_entry.restype = C.c_void_p
        L.shapeml_module_get_entry.argtypes = [C.c_void_p, C.c_char_p, C.POINTER(C.c_void_p)]
        e = C.c_void_p()
        self.lib._check(L.shapeml_module_get_entry(self.handle, name.encode(), C.byref(e)))
        return Entry(self, e)

    def call(self, entry: str, *arrays: Any, bf16: Optional[str] = None,
             dims: Optional[Mapping[str, int]] = None) -> Tuple[np.ndarray, ...]:
        """entry(*arrays) -> tuple of NumPy arrays. bf16 outputs: see the
        module docstring (bf16=None takes the Library's setting). `dims`:
        the entry's given shape variables (Entry.__call__)."""
        if dims:
            return self.entry(entry)(*arrays, bf16=bf16, dims=dims)
        L = self.lib.lib
        n_in, n_out = C.c_size_t(), C.c_size_t()
        self.lib._check(L.shapeml_module_lookup(self.handle, entry.encode(), C.byref(n_in), C.byref(n_out)))
        ins = [self.lib.tensor(a) for a in arrays]
        in_arr = (C.c_void_p * max(len(ins), 1))(*[t.value for t in ins])
        out_arr = (C.c_void_p * max(n_out.value, 1))()
        try:
            self.lib._check(L.shapeml_module_call(self.handle, entry.encode(), in_arr, len(ins), out_arr, n_out.value))
            return tuple(self.lib.to_numpy(out_arr[i], bf16) for i in range(n_out.value))
        finally:
            for t in ins:
                L.shapeml_tensor_release(t)
            for i in range(n_out.value):
                if out_arr[i]:
                    L.shapeml_tensor_release(out_arr[i])

    def call_tensors(self, entry: str, *tensors: C.c_void_p) -> Tuple[C.c_void_p, ...]:
        """entry(*tensor_handles) -> tuple of owned tensor handles (device
        entries: device tensors in and out; nothing is synchronized)."""
        L = self.lib.lib
        n_in, n_out = C.c_size_t(), C.c_size_t()
        self.lib._check(L.shapeml_module_lookup(self.handle, entry.encode(), C.byref(n_in), C.byref(n_out)))
        in_arr = (C.c_void_p * max(len(tensors), 1))(*[t.value if isinstance(t, C.c_void_p) else t for t in tensors])
        out_arr = (C.c_void_p * max(n_out.value, 1))()
        self.lib._check(L.shapeml_module_call(self.handle, entry.encode(), in_arr, len(tensors), out_arr, n_out.value))
        return tuple(C.c_void_p(out_arr[i]) for i in range(n_out.value))

    def call_into(self, entry: str, inputs: Sequence[C.c_void_p], outputs: Sequence[C.c_void_p], stream: Optional[int] = None,
                  graph: int = 0) -> None:
        """Destination passing through shapeml_entry_call: entry(*inputs)
        written into the caller's `outputs` (tensor handles of the results'
        dtypes, shapes and devices). `stream`: a cudaStream_t for device
        entries (None: the module's default stream: its Library's context
        stream for a compiled module, the device's runtime stream for a
        loaded one). `graph`: CUDA graph replay,
        0 as the plan says, 1 on, 2 off (shapeml_graph_mode)."""
        L = self.lib.lib
        vp, sz = C.c_void_p, C.c_size_t
        L.shapeml_module_get_entry.restype, L.shapeml_module_get_entry.argtypes = vp, [vp, C.c_char_p, C.POINTER(vp)]
        L.shapeml_entry_call.restype = vp
        L.shapeml_entry_call.argtypes = [vp, C.POINTER(vp), sz, C.POINTER(vp), sz, C.POINTER(CallOptions)]
        e = vp()
        self.lib._check(L.shapeml_module_get_entry(self.handle, entry.encode(), C.byref(e)))
        ins = (vp * max(len(inputs), 1))(*[t.value if isinstance(t, vp) else t for t in inputs])
        outs = (vp * max(len(outputs), 1))(*[t.value if isinstance(t, vp) else t for t in outputs])
        opts = CallOptions(C.sizeof(CallOptions), None, C.cast(outs, vp), 0, stream, graph)
        self.lib._check(L.shapeml_entry_call(e, ins, len(inputs), None, 0, C.byref(opts)))


KDL_CUDA = 2  # DLPack's kDLCUDA


class Device:
    """CUDA device use through the runtime (libshapeml_runtime.so or
    libshapeml.so) and the CUDA plugin it loads on first use:

        dev = shapeml.Device(lib, 0)
        x = dev.upload(np_array)                    # a device tensor (handle)
        y, = module.call_tensors("mlp", x, w1)  # device in, device out
        out = dev.download(y)                       # NumPy, after a sync

    Handles returned by upload/call_tensors are owned: free them with
    dev.free(t). Calls of loaded modules enqueue on the device's runtime
    stream, calls of compiled modules on their Library's context stream
    (Library.context_stream); download waits for the work that computes its
    tensor, and sync waits for both streams."""

    def __init__(self, lib: Library, index: int = 0) -> None:
        self.lib, self.index = lib, index
        L = lib.lib
        vp, i32 = C.c_void_p, C.c_int32
        for name, args in {
            "shapeml_device_count": [i32, C.POINTER(i32)],
            "shapeml_memory_create_cuda_async": [i32, C.c_uint64, C.POINTER(vp)],
            "shapeml_tensor_copy_to_device": [vp, vp, vp, C.POINTER(vp)],
            "shapeml_tensor_copy_to_host": [vp, vp, vp, C.POINTER(vp)],
            "shapeml_device_synchronize": [i32, vp],
            "shapeml_device_default_stream": [i32, C.POINTER(vp)],
        }.items():
            f = getattr(L, name)
            f.restype, f.argtypes = vp, args
        L.shapeml_memory_release.argtypes = [vp]
        n = C.c_int32()
        lib._check(L.shapeml_device_count(KDL_CUDA, C.byref(n)))
        if index >= n.value:
            raise Error(1, "INVALID_ARGUMENT", f"no CUDA device {index} ({n.value} found)")
        mem = C.c_void_p()
        lib._check(L.shapeml_memory_create_cuda_async(index, 2**64 - 1, C.byref(mem)))
        self.memory = mem
        s = C.c_void_p()
        lib._check(L.shapeml_device_default_stream(index, C.byref(s)))
        self.stream = s

    def upload(self, array: ArrayLike) -> C.c_void_p:
        host = self.lib.tensor(array)
        out = C.c_void_p()
        try:
            self.lib._check(self.lib.lib.shapeml_tensor_copy_to_device(host, self.memory, self.stream, C.byref(out)))
        finally:
            self.lib.lib.shapeml_tensor_release(host)
        return out

    def download(self, t: C.c_void_p, bf16: Optional[str] = None) -> np.ndarray:
        host = C.c_void_p()
        self.lib._check(self.lib.lib.shapeml_tensor_copy_to_host(t, None, self.stream, C.byref(host)))
        try:
            self.sync()
            return self.lib.to_numpy(host, bf16)
        finally:
            self.lib.lib.shapeml_tensor_release(host)

    def sync(self) -> None:
        self.lib._check(self.lib.lib.shapeml_device_synchronize(self.index, self.stream))
        if getattr(self.lib, "_ctx", None) is not None:  # compiled modules run on the context's stream
            ctx_stream = C.c_void_p(self.lib.context_stream(self.index))
            self.lib._check(self.lib.lib.shapeml_device_synchronize(self.index, ctx_stream))

    def free(self, t: C.c_void_p) -> None:
        self.lib.lib.shapeml_tensor_release(t)



# ---- DLPack capsules (the Python side of the protocol) -------------------
_PyCapsule_New = C.pythonapi.PyCapsule_New
_PyCapsule_New.restype, _PyCapsule_New.argtypes = C.py_object, [C.c_void_p, C.c_char_p, C.c_void_p]
_PyCapsule_GetPointer = C.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype, _PyCapsule_GetPointer.argtypes = C.c_void_p, [C.py_object, C.c_char_p]
_PyCapsule_SetName = C.pythonapi.PyCapsule_SetName
_PyCapsule_SetName.restype, _PyCapsule_SetName.argtypes = C.c_int, [C.py_object, C.c_char_p]
_PyCapsule_IsValid = C.pythonapi.PyCapsule_IsValid
_PyCapsule_IsValid.restype, _PyCapsule_IsValid.argtypes = C.c_int, [C.py_object, C.c_char_p]
_DELETER = C.CFUNCTYPE(None, C.c_void_p)
_DELETER_OFFSET = 56  # offsetof(DLManagedTensor, deleter): DLTensor (48 bytes), manager_ctx
_VERSIONED_DELETER_OFFSET = 16  # offsetof(DLManagedTensorVersioned, deleter): version (8 bytes), manager_ctx


# The destructor gets the dying capsule as a raw pointer (a py_object would
# take a new reference to an object being freed).
_IsValidRaw = C.pythonapi["PyCapsule_IsValid"]
_IsValidRaw.restype, _IsValidRaw.argtypes = C.c_int, [C.c_void_p, C.c_char_p]
_GetPointerRaw = C.pythonapi["PyCapsule_GetPointer"]
_GetPointerRaw.restype, _GetPointerRaw.argtypes = C.c_void_p, [C.c_void_p, C.c_char_p]


@C.CFUNCTYPE(None, C.c_void_p)
def _capsule_destructor(capsule):
    # An unconsumed capsule owns its DLManagedTensor(Versioned): call its deleter.
    for name, offset in ((b"dltensor", _DELETER_OFFSET), (b"dltensor_versioned", _VERSIONED_DELETER_OFFSET)):
        if _IsValidRaw(capsule, name):
            p = _GetPointerRaw(capsule, name)
            deleter = C.c_void_p.from_address(p + offset).value
            if deleter:
                _DELETER(deleter)(p)


class Tensor:
    """A shapeml tensor owned by Python (released when garbage collected).
    Speaks DLPack: torch.from_dlpack(t) and np.from_dlpack(t) view it
    without copying (host tensors; device tensors through torch)."""

    def __init__(self, lib: Library, handle: C.c_void_p) -> None:
        self.lib, self.handle = lib, handle

    def __del__(self):
        if getattr(self, "handle", None):
            self.lib.lib.shapeml_tensor_release(self.handle)
            self.handle = None

    @property
    def shape(self) -> Tuple[int, ...]:
        """The shape, a tuple of ints."""
        L = self.lib.lib
        return tuple(L.shapeml_tensor_shape(self.handle)[i] for i in range(L.shapeml_tensor_rank(self.handle)))

    @property
    def dtype(self) -> str:
        """The dtype's name in the language: "f32", "f64", "bf16", "i32", "i64" or "bool"."""
        return DTYPE_NAMES.get(self.lib.lib.shapeml_tensor_dtype(self.handle), "?")

    @property
    def device(self) -> str:
        """Where the data lives: "host" or "cuda:N"."""
        kind, index = self.__dlpack_device__()
        return f"cuda:{index}" if kind == KDL_CUDA else "host"

    def __repr__(self) -> str:
        return f"shapeml.Tensor(dtype={self.dtype}, shape={self.shape}, device={self.device})"

    def numpy(self, bf16: Optional[str] = None) -> np.ndarray:
        """A NumPy copy (host tensors)."""
        return self.lib.to_numpy(self.handle, bf16)

    def __dlpack__(self, stream: Optional[int] = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """The DLPack capsule (the Array API protocol, DLPack 1.x): a
        versioned capsule ("dltensor_versioned", its read-only flag set for
        a read-only tensor) when the consumer's `max_version` is (1, x) or
        later, else the legacy one. The data is never copied: `copy=True`
        and a `dl_device` other than the tensor's raise BufferError (copy
        with .numpy() or in the consumer). For a CUDA tensor, the producer's
        half of the stream handshake: the consumer's `stream` (an int
        cudaStream_t; None or 1 the legacy default stream, 2 the per-thread
        one; -1 none) waits on the GPU for the work that computes this
        tensor."""
        L = self.lib.lib
        if copy:
            raise BufferError("shapeml.Tensor.__dlpack__ does not copy; copy=True is not supported (use .numpy() for a host copy)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"the tensor is on {self.device}; it cannot be exported to device {tuple(dl_device)} without a copy")
        if stream != -1 and self.__dlpack_device__()[0] == KDL_CUDA:
            f = L.shapeml_unstable_stream_wait_tensor
            f.restype, f.argtypes = C.c_void_p, [C.c_void_p, C.c_void_p]
            self.lib._check(f(C.c_void_p(1 if stream is None else stream), self.handle))
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        export = L.shapeml_tensor_export_dlpack_versioned if versioned else L.shapeml_tensor_export_dlpack
        export.restype, export.argtypes = C.c_void_p, [C.c_void_p, C.POINTER(C.c_void_p)]
        m = C.c_void_p()
        self.lib._check(export(self.handle, C.byref(m)))
        return _PyCapsule_New(m.value, b"dltensor_versioned" if versioned else b"dltensor", C.cast(_capsule_destructor, C.c_void_p))

    def __dlpack_device__(self) -> Tuple[int, int]:
        L = self.lib.lib

        class _Device(C.Structure):
            _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]
        L.shapeml_tensor_device.restype, L.shapeml_tensor_device.argtypes = _Device, [C.c_void_p]
        d = L.shapeml_tensor_device(self.handle)
        return (d.device_type, d.device_id)


_default_library = None


def from_dlpack(x: Any) -> Tensor:
    """A shapeml Tensor viewing `x` (anything with __dlpack__, or a DLPack
    capsule) without copying, through a default Library() opened on first
    use (the Array API's `from_dlpack`)."""
    global _default_library
    if _default_library is None:
        _default_library = Library()
    return _default_library.from_dlpack(x)


Diagnostic = namedtuple("Diagnostic", "code severity message file line column end_line end_column expected actual counterexample notes")
TensorInfo = namedtuple("TensorInfo", "name dtype device_type device_id rank type dims")


class _Diag(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("code", C.c_char_p), ("severity", C.c_int32), ("message", C.c_char_p), ("file", C.c_char_p),
                ("line", C.c_uint32), ("column", C.c_uint32), ("end_line", C.c_uint32), ("end_column", C.c_uint32),
                ("offset", C.c_uint32), ("length", C.c_uint32), ("expected", C.c_char_p), ("actual", C.c_char_p),
                ("counterexample_count", C.c_size_t), ("note_count", C.c_size_t)]


class _TensorInfo(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("name", C.c_char_p), ("dtype", C.c_int32), ("device_type", C.c_int32),
                ("device_id", C.c_int32), ("rank", C.c_size_t), ("type", C.c_char_p)]


class _DimInfo(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("kind", C.c_int32), ("value", C.c_int64), ("variable", C.c_char_p), ("text", C.c_char_p)]


class _TypeVariable(C.Structure):  # shapeml_unstable_type_variable
    _fields_ = [("struct_size", C.c_size_t), ("name", C.c_char_p), ("is_device", C.c_int32), ("dtypes", C.c_uint32)]


def _s(b):
    return b.decode() if b is not None else ""


class CheckResult:
    """The outcome of Library.check: `passed`, `diagnostics`, render()."""

    def __init__(self, lib: Library, handle: C.c_void_p) -> None:
        self.lib, self.handle = lib, handle
        L, vp, sz = lib.lib, C.c_void_p, C.c_size_t
        L.shapeml_check_result_passed.restype, L.shapeml_check_result_passed.argtypes = C.c_int32, [vp]
        L.shapeml_check_result_diagnostic_count.restype, L.shapeml_check_result_diagnostic_count.argtypes = sz, [vp]
        L.shapeml_check_result_get_diagnostic.restype = vp
        L.shapeml_check_result_get_diagnostic.argtypes = [vp, sz, C.POINTER(_Diag)]
        L.shapeml_check_result_get_counterexample.restype = vp
        L.shapeml_check_result_get_counterexample.argtypes = [vp, sz, sz, C.POINTER(C.c_char_p), C.POINTER(C.c_int64)]
        L.shapeml_check_result_get_note.restype, L.shapeml_check_result_get_note.argtypes = vp, [vp, sz, sz, C.POINTER(C.c_char_p)]
        L.shapeml_check_result_render.restype, L.shapeml_check_result_render.argtypes = vp, [vp, C.c_int32, C.POINTER(C.c_char_p)]
        L.shapeml_check_result_release.argtypes = [vp]
        self.passed = bool(L.shapeml_check_result_passed(handle))
        self.diagnostics = [self._diagnostic(i) for i in range(L.shapeml_check_result_diagnostic_count(handle))]

    def _diagnostic(self, i):
        L = self.lib.lib
        d = _Diag()
        d.struct_size = C.sizeof(_Diag)
        self.lib._check(L.shapeml_check_result_get_diagnostic(self.handle, i, C.byref(d)))
        cex = {}
        for k in range(d.counterexample_count):
            name, value = C.c_char_p(), C.c_int64()
            self.lib._check(L.shapeml_check_result_get_counterexample(self.handle, i, k, C.byref(name), C.byref(value)))
            cex[_s(name.value)] = value.value
        notes = []
        for k in range(d.note_count):
            note = C.c_char_p()
            self.lib._check(L.shapeml_check_result_get_note(self.handle, i, k, C.byref(note)))
            notes.append(_s(note.value))
        return Diagnostic(_s(d.code), d.severity, _s(d.message), _s(d.file), d.line, d.column, d.end_line, d.end_column,
                          _s(d.expected), _s(d.actual), cex, notes)

    def render(self, json: bool = False) -> str:
        """Every diagnostic as text with carets, or (json=True) a JSON array."""
        out = C.c_char_p()
        self.lib._check(self.lib.lib.shapeml_check_result_render(self.handle, 1 if json else 0, C.byref(out)))
        return _s(out.value)

    def __del__(self):
        if getattr(self, "handle", None):
            self.lib.lib.shapeml_check_result_release(self.handle)
            self.handle = None


class Entry:
    """An entry point: its signature (params, results, shape_variables,
    constraints, aot_specializations) and a call on arrays. Keeps its module alive."""

    def __init__(self, module: Module, handle: C.c_void_p) -> None:
        self.module, self.handle = module, handle
        L, vp, sz = module.lib.lib, C.c_void_p, C.c_size_t
        for f, r in (("name", C.c_char_p), ("param_count", sz), ("result_count", sz), ("shape_variable_count", sz),
                     ("constraint_count", sz), ("aot_specialization_count", sz)):
            fn = getattr(L, "shapeml_entry_" + f)
            fn.restype, fn.argtypes = r, [vp]
        for f in ("shape_variable", "constraint"):
            fn = getattr(L, "shapeml_entry_" + f)
            fn.restype, fn.argtypes = C.c_char_p, [vp, sz]
        L.shapeml_entry_get_tensor_info.restype = vp
        L.shapeml_entry_get_tensor_info.argtypes = [vp, C.c_int32, sz, C.POINTER(_TensorInfo)]
        L.shapeml_entry_get_dim.restype = vp
        L.shapeml_entry_get_dim.argtypes = [vp, C.c_int32, sz, sz, C.POINTER(_DimInfo)]
        L.shapeml_entry_get_aot_specialization.restype = vp
        L.shapeml_entry_get_aot_specialization.argtypes = [vp, sz, C.POINTER(C.c_int64), sz]
        L.shapeml_entry_call.restype = vp
        L.shapeml_entry_call.argtypes = [vp, C.POINTER(vp), sz, C.POINTER(vp), sz, C.POINTER(CallOptions)]
        self.name = _s(L.shapeml_entry_name(handle))
        self.shape_variables = [_s(L.shapeml_entry_shape_variable(handle, i)) for i in range(L.shapeml_entry_shape_variable_count(handle))]
        # The variables every call gives with dims= (`(given ...)` in the source).
        self.given_shape_variables = []
        if hasattr(L, "shapeml_entry_shape_variable_is_given"):
            L.shapeml_entry_shape_variable_is_given.restype = C.c_int32
            L.shapeml_entry_shape_variable_is_given.argtypes = [vp, sz]
            self.given_shape_variables = [v for i, v in enumerate(self.shape_variables) if L.shapeml_entry_shape_variable_is_given(handle, i)]
        # A generic entry's variables (spec §3.5): dtype variables with the dtypes each ranges
        # over, e.g. {"T": ["f32", "f64", "bf16"]}, and device variables, e.g. ["Dv"]; a call
        # binds them from its arguments. Empty for other entries (and libraries before 0.4).
        self.dtype_variables, self.device_variables = {}, []
        if hasattr(L, "shapeml_unstable_entry_type_variable_count"):
            L.shapeml_unstable_entry_type_variable_count.restype, L.shapeml_unstable_entry_type_variable_count.argtypes = sz, [vp]
            L.shapeml_unstable_entry_get_type_variable.restype = vp
            L.shapeml_unstable_entry_get_type_variable.argtypes = [vp, sz, C.POINTER(_TypeVariable)]
            for i in range(L.shapeml_unstable_entry_type_variable_count(handle)):
                tv = _TypeVariable()
                tv.struct_size = C.sizeof(_TypeVariable)
                self.module.lib._check(L.shapeml_unstable_entry_get_type_variable(handle, i, C.byref(tv)))
                if tv.is_device:
                    self.device_variables.append(_s(tv.name))
                else:
                    self.dtype_variables[_s(tv.name)] = [n for d, n in sorted(DTYPE_NAMES.items()) if tv.dtypes & (1 << d)]
        self.constraints = [_s(L.shapeml_entry_constraint(handle, i)) for i in range(L.shapeml_entry_constraint_count(handle))]
        self.params = [self._info(0, i) for i in range(L.shapeml_entry_param_count(handle))]
        self.results = [self._info(1, i) for i in range(L.shapeml_entry_result_count(handle))]
        self.aot_specializations = []
        for k in range(L.shapeml_entry_aot_specialization_count(handle)):
            v = (C.c_int64 * max(len(self.shape_variables), 1))()
            self.module.lib._check(L.shapeml_entry_get_aot_specialization(handle, k, v, len(self.shape_variables)))
            self.aot_specializations.append(dict(zip(self.shape_variables, v)))

    def _info(self, kind, i):
        L = self.module.lib.lib
        t = _TensorInfo()
        t.struct_size = C.sizeof(_TensorInfo)
        self.module.lib._check(L.shapeml_entry_get_tensor_info(self.handle, kind, i, C.byref(t)))
        dims = []
        for d in range(t.rank):
            di = _DimInfo()
            di.struct_size = C.sizeof(_DimInfo)
            self.module.lib._check(L.shapeml_entry_get_dim(self.handle, kind, i, d, C.byref(di)))
            dims.append(di.value if di.kind == 0 else _s(di.text))
        return TensorInfo(_s(t.name), _NP.get(t.dtype, t.dtype), t.device_type, t.device_id, t.rank, _s(t.type), tuple(dims))

    def __call__(self, *args: Any, bf16: Optional[str] = None, tensors: bool = False, num_threads: int = 0,
                 dims: Optional[Mapping[str, int]] = None) -> Tuple[Any, ...]:
        """entry(*args): NumPy arrays (copied in), Tensors, or DLPack objects
        such as torch tensors (zero copy). Returns a tuple of NumPy arrays,
        or of Tensors with tensors=True (e.g. for torch.from_dlpack).
        `num_threads` (host entries): the threads this call's parallel loops
        may use, the calling one included; 0 the default
        (SHAPEML_NUM_THREADS, else the CPUs the process may run on); the
        results are the same bits for every count. `dims`: the values of
        the entry's given shape variables (given_shape_variables), e.g.
        dims={"H": 4}; the others are inferred from the arguments."""
        lib, L = self.module.lib, self.module.lib.lib
        handles = []
        try:
            for a in args:
                handles.append(lib._as_tensor(a))
            ins = (C.c_void_p * max(len(handles), 1))(*[h.value for h, _ in handles])
            n_out = len(self.results)
            outs = (C.c_void_p * max(n_out, 1))()
            given = dict(dims or {})
            names = (C.c_char_p * max(len(given), 1))(*[str(k).encode() for k in given])
            values = (C.c_int64 * max(len(given), 1))(*[int(v) for v in given.values()])
            opts = CallOptions(C.sizeof(CallOptions), None, None, 0, None, 0, 0, num_threads, names, values, len(given))
            lib._check(L.shapeml_entry_call(self.handle, ins, len(handles), outs, n_out, C.byref(opts)))
            results = [Tensor(lib, C.c_void_p(outs[i])) for i in range(n_out)]
            return tuple(results) if tensors else tuple(t.numpy(bf16) for t in results)
        finally:
            for h, owned in handles:
                if owned:
                    L.shapeml_tensor_release(h)
