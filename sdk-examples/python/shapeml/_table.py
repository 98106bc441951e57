"""The function table (shapeml_get_api): the one symbol this package
resolves. The library is opened with ctypes (dlopen); every stable function
is then called through the versioned table, checked once here."""
import ctypes as C

from ._errors import LibraryError

ABI_MAJOR = 0       # SHAPEML_VERSION_MAJOR this package speaks
ABI_MINOR_MIN = 3   # the oldest minor it needs (entries as handles)

# The members of shapeml_api after its header, in order (include/shapeml.h;
# tests/test_package.py checks this list against the header).
MEMBERS = (
    "version",
    "version_number",
    "status_get_code",
    "status_get_message",
    "status_free",
    "status_code_name",
    "context_create",
    "context_retain",
    "context_release",
    "check_source",
    "check_result_retain",
    "check_result_release",
    "check_result_passed",
    "check_result_diagnostic_count",
    "check_result_get_diagnostic",
    "check_result_get_note",
    "check_result_get_counterexample",
    "check_result_render",
    "memory_create_host",
    "memory_create_from_resource",
    "memory_create_statistics_adaptor",
    "memory_create_pool",
    "memory_create_logging_adaptor",
    "memory_get_statistics",
    "memory_retain",
    "memory_release",
    "tensor_create",
    "tensor_create_copy",
    "tensor_retain",
    "tensor_release",
    "tensor_dtype",
    "tensor_rank",
    "tensor_shape",
    "tensor_data",
    "tensor_byte_size",
    "tensor_dltensor",
    "tensor_export_dlpack",
    "tensor_export_dlpack_versioned",
    "tensor_import_dlpack",
    "tensor_import_dlpack_versioned",
    "tensor_load_npy",
    "tensor_save_npy",
    "npz_load",
    "npz_count",
    "npz_name",
    "npz_get",
    "npz_release",
    "module_compile",
    "module_load",
    "module_build_shared_object",
    "module_retain",
    "module_release",
    "module_entry_count",
    "module_entry_name",
    "module_lookup",
    "module_call",
    "device_count",
    "device_default_stream",
    "device_name",
    "device_synchronize",
    "entry_aot_specialization_count",
    "entry_call",
    "entry_constraint",
    "entry_constraint_count",
    "entry_get_aot_specialization",
    "entry_get_dim",
    "entry_get_tensor_info",
    "entry_name",
    "entry_param_count",
    "entry_result_count",
    "entry_shape_variable",
    "entry_shape_variable_count",
    "entry_shape_variable_is_given",
    "entry_specialize",
    "get_capabilities",
    "module_build",
    "memory_create_cuda",
    "memory_create_cuda_async",
    "memory_create_from_device_resource",
    "memory_device",
    "module_get_entry",
    "module_get_entry_at",
    "module_name",
    "module_target",
    "status_create",
    "tensor_copy_to_device",
    "tensor_copy_to_host",
    "tensor_create_uninitialized",
    "tensor_device",
    "tensor_is_read_only",
    "tensor_strides",
    "tensor_wrap",
)


class _Header(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("abi_major", C.c_uint32), ("abi_minor", C.c_uint32), ("abi_patch", C.c_uint32),
                ("compiler", C.c_int32)]




class Table:
    """Looks like a ctypes.CDLL for `shapeml_*` names, but every function comes
    from the table: `t.shapeml_tensor_create` is a ctypes function object
    (set its argtypes/restype as with CDLL). A member the library lacks
    (the compiler's, in libshapeml_runtime.so) is an AttributeError, so
    hasattr() answers "can this library do it". The unstable tier, which is
    not in the table, is looked up with dlsym."""

    def __init__(self, path):
        try:
            self._dll = C.CDLL(path, mode=getattr(C, "RTLD_LOCAL", 0))
        except OSError as e:
            raise LibraryError(f"cannot load {path}: {e}") from None
        try:
            get = self._dll.shapeml_get_api
        except AttributeError:
            raise LibraryError(f"{path} has no shapeml_get_api (shapeml older than 0.4?)") from None
        get.restype, get.argtypes = C.c_void_p, [C.c_uint32]
        addr = get(ABI_MAJOR)
        if not addr:
            raise LibraryError(f"{path} does not implement ABI major {ABI_MAJOR}")
        self.header = _Header.from_address(addr)
        if self.header.abi_minor < ABI_MINOR_MIN:
            raise LibraryError(f"{path} is ABI {self.header.abi_major}.{self.header.abi_minor}; need {ABI_MAJOR}.{ABI_MINOR_MIN}+")
        n = (self.header.struct_size - C.sizeof(_Header)) // C.sizeof(C.c_void_p)
        self._slots = (C.c_void_p * n).from_address(addr + C.sizeof(_Header))
        self._index = {"shapeml_" + m: i for i, m in enumerate(MEMBERS) if i < n}
        self.path = path

    @property
    def has_compiler(self):
        return bool(self.header.compiler)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        i = self._index.get(name)
        if i is None:
            f = getattr(self._dll, name)  # unstable tier, or not a shapeml name
        else:
            p = self._slots[i]
            if not p:
                raise AttributeError(f"{name} is not in {self.path} (no compiler in libshapeml_runtime.so)")
            f = C.CFUNCTYPE(C.c_int)(p)
        self.__dict__[name] = f  # one object per name, so argtypes set once stay
        return f
