//! Safe Rust bindings of the shapeml C ABI (`include/shapeml.h`).
//!
//! The library is loaded at run time with `dlopen`; one symbol,
//! `shapeml_get_api`, gives the versioned function table (`shapeml_api`),
//! checked once when the library is opened. Every handle is an owning Rust
//! value whose `Drop` releases it; every fallible call returns
//! `Result<T, Error>` whose `Code` is the library's stable status code.
//!
//! ```no_run
//! let lib = shapeml::Library::open("libshapeml.so.0")?;
//! let m = lib.compile("mlp.sml", &std::fs::read_to_string("examples/mlp.sml").unwrap())?;
//! let mlp = m.entry("mlp")?;
//! # Ok::<(), shapeml::Error>(())
//! ```
//!
//! Only `std` is used (no crates), and nothing newer than Rust 1.63.
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::path::Path;
use std::ptr;
use std::sync::Arc;

/// The ABI major version these bindings speak (`SHAPEML_VERSION_MAJOR`).
pub const ABI_MAJOR: u32 = 0;
/// The oldest ABI minor these bindings need (entries as handles: 0.3).
pub const ABI_MINOR_MIN: u32 = 3;

// ---------------------------------------------------------------------------
// Raw declarations, mirroring shapeml.h.

/// An opaque `shapeml_status`.
#[repr(C)]
pub struct Status {
    _private: [u8; 0],
}

type Unused = Option<unsafe extern "C" fn()>;

/// `shapeml_api`: members in the header's order (all pointer-sized); the ones
/// these bindings do not call are typed `Unused`.
#[repr(C)]
pub struct Api {
    pub struct_size: usize,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub abi_patch: u32,
    pub compiler: i32,
    pub version: Option<unsafe extern "C" fn() -> *const c_char>,
    pub version_number: Option<unsafe extern "C" fn() -> u32>,
    pub status_get_code: Option<unsafe extern "C" fn(*const Status) -> i32>,
    pub status_get_message: Option<unsafe extern "C" fn(*const Status) -> *const c_char>,
    pub status_free: Option<unsafe extern "C" fn(*mut Status)>,
    pub status_code_name: Option<unsafe extern "C" fn(i32) -> *const c_char>,
    pub context_create: Option<unsafe extern "C" fn(*const c_void, *mut *mut c_void) -> *mut Status>,
    pub context_retain: Unused,
    pub context_release: Option<unsafe extern "C" fn(*mut c_void)>,
    pub check_source: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, usize, *mut *mut c_void) -> *mut Status>,
    pub check_result_retain: Unused,
    pub check_result_release: Option<unsafe extern "C" fn(*mut c_void)>,
    pub check_result_passed: Option<unsafe extern "C" fn(*const c_void) -> i32>,
    pub check_result_diagnostic_count: Option<unsafe extern "C" fn(*const c_void) -> usize>,
    pub check_result_get_diagnostic: Option<unsafe extern "C" fn(*const c_void, usize, *mut RawDiagnostic) -> *mut Status>,
    pub check_result_get_note: Unused,
    pub check_result_get_counterexample: Option<unsafe extern "C" fn(*const c_void, usize, usize, *mut *const c_char, *mut i64) -> *mut Status>,
    pub check_result_render: Option<unsafe extern "C" fn(*const c_void, i32, *mut *const c_char) -> *mut Status>,
    pub memory_create_host: Unused,
    pub memory_create_from_resource: Option<unsafe extern "C" fn(*const RawMemoryResource, *mut *mut c_void) -> *mut Status>,
    pub memory_create_statistics_adaptor: Unused,
    pub memory_create_pool: Unused,
    pub memory_create_logging_adaptor: Unused,
    pub memory_get_statistics: Unused,
    pub memory_retain: Option<unsafe extern "C" fn(*mut c_void)>,
    pub memory_release: Option<unsafe extern "C" fn(*mut c_void)>,
    pub tensor_create: Unused,
    pub tensor_create_copy: Option<unsafe extern "C" fn(*mut c_void, i32, usize, *const i64, *const c_void, usize, *mut *mut c_void) -> *mut Status>,
    pub tensor_retain: Unused,
    pub tensor_release: Option<unsafe extern "C" fn(*mut c_void)>,
    pub tensor_dtype: Option<unsafe extern "C" fn(*const c_void) -> i32>,
    pub tensor_rank: Option<unsafe extern "C" fn(*const c_void) -> usize>,
    pub tensor_shape: Option<unsafe extern "C" fn(*const c_void) -> *const i64>,
    pub tensor_data: Option<unsafe extern "C" fn(*const c_void) -> *mut c_void>,
    pub tensor_byte_size: Option<unsafe extern "C" fn(*const c_void) -> usize>,
    pub tensor_dltensor: Unused,
    pub tensor_export_dlpack: Unused,
    pub tensor_export_dlpack_versioned: Option<unsafe extern "C" fn(*mut c_void, *mut *mut DLManagedTensorVersioned) -> *mut Status>,
    pub tensor_import_dlpack: Unused,
    pub tensor_import_dlpack_versioned: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned, *mut *mut c_void) -> *mut Status>,
    pub tensor_load_npy: Unused,
    pub tensor_save_npy: Unused,
    pub npz_load: Unused,
    pub npz_count: Unused,
    pub npz_name: Unused,
    pub npz_get: Unused,
    pub npz_release: Unused,
    pub module_compile: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, usize, *const c_void, *mut *mut c_void) -> *mut Status>,
    pub module_load: Option<unsafe extern "C" fn(*const c_char, *const c_void, *mut *mut c_void) -> *mut Status>,
    pub module_build_shared_object: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, usize, *const c_char, i32, *const c_char) -> *mut Status>,
    pub module_retain: Unused,
    pub module_release: Option<unsafe extern "C" fn(*mut c_void)>,
    pub module_entry_count: Option<unsafe extern "C" fn(*const c_void) -> usize>,
    pub module_entry_name: Option<unsafe extern "C" fn(*const c_void, usize) -> *const c_char>,
    pub module_lookup: Unused,
    pub module_call: Unused,
    pub device_count: Unused,
    pub device_default_stream: Unused,
    pub device_name: Unused,
    pub device_synchronize: Unused,
    pub entry_aot_specialization_count: Unused,
    pub entry_call: Option<unsafe extern "C" fn(*mut c_void, *const *mut c_void, usize, *mut *mut c_void, usize, *const c_void) -> *mut Status>,
    pub entry_constraint: Unused,
    pub entry_constraint_count: Unused,
    pub entry_get_aot_specialization: Unused,
    pub entry_get_dim: Unused,
    pub entry_get_tensor_info: Option<unsafe extern "C" fn(*const c_void, i32, usize, *mut RawTensorInfo) -> *mut Status>,
    pub entry_name: Option<unsafe extern "C" fn(*const c_void) -> *const c_char>,
    pub entry_param_count: Option<unsafe extern "C" fn(*const c_void) -> usize>,
    pub entry_result_count: Option<unsafe extern "C" fn(*const c_void) -> usize>,
    pub entry_shape_variable: Option<unsafe extern "C" fn(*const c_void, usize) -> *const c_char>,
    pub entry_shape_variable_count: Option<unsafe extern "C" fn(*const c_void) -> usize>,
    pub entry_shape_variable_is_given: Option<unsafe extern "C" fn(*const c_void, usize) -> i32>,
    pub entry_specialize: Unused,
    pub get_capabilities: Option<unsafe extern "C" fn(*mut RawCapabilities) -> *mut Status>,
    pub module_build: Unused,
    pub memory_create_cuda: Unused,
    pub memory_create_cuda_async: Unused,
    pub memory_create_from_device_resource: Unused,
    pub memory_device: Unused,
    pub module_get_entry: Option<unsafe extern "C" fn(*const c_void, *const c_char, *mut *mut c_void) -> *mut Status>,
    pub module_get_entry_at: Unused,
    pub module_name: Option<unsafe extern "C" fn(*const c_void) -> *const c_char>,
    pub module_target: Unused,
    pub status_create: Unused,
    pub tensor_copy_to_device: Unused,
    pub tensor_copy_to_host: Unused,
    pub tensor_create_uninitialized: Unused,
    pub tensor_device: Unused,
    pub tensor_is_read_only: Unused,
    pub tensor_strides: Unused,
    pub tensor_wrap: Unused,
}

#[repr(C)]
pub struct RawDiagnostic {
    struct_size: usize,
    code: *const c_char,
    severity: i32,
    message: *const c_char,
    file: *const c_char,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    offset: u32,
    length: u32,
    expected: *const c_char,
    actual: *const c_char,
    counterexample_count: usize,
    note_count: usize,
}

#[repr(C)]
pub struct RawTensorInfo {
    struct_size: usize,
    name: *const c_char,
    dtype: i32,
    device_type: i32,
    device_id: i32,
    rank: usize,
    type_text: *const c_char,
}

#[repr(C)]
pub struct RawCapabilities {
    struct_size: usize,
    abi_major: u32,
    abi_minor: u32,
    abi_patch: u32,
    module_abi_version: u32,
    jit: i32,
    aot_build: i32,
    cuda_plugin: i32,
}

const RTLD_NOW: c_int = 2;
const RTLD_LOCAL: c_int = 0;

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

// ---------------------------------------------------------------------------
// Errors.

/// The library's stable status codes (`docs/design/status-codes.md`), plus
/// the two ways opening a library can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArgument,
    ResourceExhausted,
    NotFound,
    IoError,
    CheckFailed,
    Unimplemented,
    Unavailable,
    Internal,
    FailedPrecondition,
    IncompatibleModule,
    OutOfRange,
    /// A code this binding does not know yet (the enum is append-only).
    Other(i32),
    /// The file could not be loaded with `dlopen`, or has no `shapeml_get_api`.
    LibraryNotLoaded,
    /// The library speaks another ABI major version, or a too old minor.
    IncompatibleLibrary,
}

impl Code {
    fn from_raw(code: i32) -> Code {
        match code {
            1 => Code::InvalidArgument,
            2 => Code::ResourceExhausted,
            3 => Code::NotFound,
            4 => Code::IoError,
            5 => Code::CheckFailed,
            6 => Code::Unimplemented,
            7 => Code::Unavailable,
            8 => Code::Internal,
            9 => Code::FailedPrecondition,
            10 => Code::IncompatibleModule,
            11 => Code::OutOfRange,
            c => Code::Other(c),
        }
    }
}

/// An error: the status code and the library's message.
#[derive(Debug, Clone)]
pub struct Error {
    pub code: Code,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn error(code: Code, message: &str) -> Error {
    Error { code, message: message.to_string() }
}

unsafe fn string(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| error(Code::InvalidArgument, "a string holds a NUL byte"))
}

// ---------------------------------------------------------------------------
// The library.

struct Inner {
    api: &'static Api,
    context: *mut c_void, // NULL in libshapeml_runtime.so
    handle: *mut c_void,  // dlopen's: the unstable tier's symbols are looked up by name
}

// The C ABI's objects are thread-safe as documented in shapeml.h.
unsafe impl Send for Inner {}
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(release) = self.api.context_release {
            unsafe { release(self.context) };
        }
        // The library stays loaded (no dlclose): DLPack deleters and LLVM's
        // process-wide state may still point into it.
    }
}

macro_rules! func {
    ($inner:expr, $name:ident) => {
        match $inner.api.$name {
            Some(f) => f,
            None => {
                return Err(error(
                    Code::Unimplemented,
                    concat!("shapeml_", stringify!($name), " is not in this library (libshapeml_runtime.so has no compiler)"),
                ))
            }
        }
    };
}

impl Inner {
    /// NULL -> Ok; a status -> Err with its code and message (and frees it).
    fn check(&self, st: *mut Status) -> Result<()> {
        if st.is_null() {
            return Ok(());
        }
        unsafe {
            let code = self.api.status_get_code.unwrap()(st);
            let message = string(self.api.status_get_message.unwrap()(st));
            self.api.status_free.unwrap()(st);
            Err(Error { code: Code::from_raw(code), message })
        }
    }
}

/// A loaded `libshapeml.so` (compiler and runtime) or `libshapeml_runtime.so`
/// (load and call only). Cheap to clone; thread-safe.
#[derive(Clone)]
pub struct Library {
    inner: Arc<Inner>,
}

/// The CPU a module's code is generated for (`shapeml_target`). The default,
/// as in `shapemlc` and every binding, is `Native`: the build machine's full
/// instruction set. Artifacts that travel take `X86_64` (any x86-64) or
/// `X86_64V3` (AVX2 and FMA) / `X86_64V4` (AVX-512); a module whose level
/// the CPU lacks is refused when it loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Target {
    #[default]
    Native = 0,
    X86_64 = 1,
    X86_64V3 = 2,
    X86_64V4 = 3,
}

/// What a library can do (`shapeml_get_capabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub abi: (u32, u32, u32),
    pub module_abi_version: u32,
    pub jit: bool,
    pub aot_build: bool,
    pub cuda_plugin: bool,
}

impl Library {
    /// Opens the library at `path` (a file name is searched as `dlopen` does)
    /// and checks its ABI version once.
    pub fn open<P: AsRef<Path>>(path: P) -> Result<Library> {
        let name = cstring(&path.as_ref().to_string_lossy())?;
        unsafe {
            let handle = dlopen(name.as_ptr(), RTLD_NOW | RTLD_LOCAL);
            if handle.is_null() {
                return Err(error(Code::LibraryNotLoaded, &string(dlerror())));
            }
            let sym = dlsym(handle, b"shapeml_get_api\0".as_ptr() as *const c_char);
            if sym.is_null() {
                return Err(error(Code::LibraryNotLoaded, "the library has no shapeml_get_api (shapeml older than 0.4?)"));
            }
            let get: unsafe extern "C" fn(u32) -> *const Api = std::mem::transmute(sym);
            let api = get(ABI_MAJOR);
            if api.is_null() {
                return Err(error(Code::IncompatibleLibrary, &format!("the library does not implement ABI major {}", ABI_MAJOR)));
            }
            let api: &'static Api = &*api;
            if api.abi_minor < ABI_MINOR_MIN || api.struct_size < std::mem::size_of::<Api>() {
                return Err(error(
                    Code::IncompatibleLibrary,
                    &format!("the library is ABI {}.{}; these bindings need {}.{} or newer", api.abi_major, api.abi_minor, ABI_MAJOR, ABI_MINOR_MIN),
                ));
            }
            let mut inner = Inner { api, context: ptr::null_mut(), handle };
            if let Some(create) = api.context_create {
                let mut ctx = ptr::null_mut();
                inner.check(create(ptr::null(), &mut ctx))?;
                inner.context = ctx;
            }
            Ok(Library { inner: Arc::new(inner) })
        }
    }

    /// The library's version, e.g. "0.4.0".
    pub fn version(&self) -> String {
        unsafe { string(self.inner.api.version.unwrap()()) }
    }

    /// True for libshapeml.so (checking, JIT, AOT builds); false for libshapeml_runtime.so.
    pub fn has_compiler(&self) -> bool {
        self.inner.api.compiler != 0
    }

    pub fn capabilities(&self) -> Result<Capabilities> {
        let mut c = RawCapabilities {
            struct_size: std::mem::size_of::<RawCapabilities>(),
            abi_major: 0,
            abi_minor: 0,
            abi_patch: 0,
            module_abi_version: 0,
            jit: 0,
            aot_build: 0,
            cuda_plugin: 0,
        };
        self.inner.check(unsafe { self.inner.api.get_capabilities.unwrap()(&mut c) })?;
        Ok(Capabilities {
            abi: (c.abi_major, c.abi_minor, c.abi_patch),
            module_abi_version: c.module_abi_version,
            jit: c.jit != 0,
            aot_build: c.aot_build != 0,
            cuda_plugin: c.cuda_plugin != 0,
        })
    }

    /// Parses and checks a program. A program with errors is `Ok`: its
    /// diagnostics are in the result.
    pub fn check(&self, name: &str, source: &str) -> Result<CheckResult> {
        let f = func!(self.inner, check_source);
        let n = cstring(name)?;
        let mut raw = ptr::null_mut();
        self.inner.check(unsafe { f(self.inner.context, n.as_ptr(), source.as_ptr() as *const c_char, source.len(), &mut raw) })?;
        Ok(CheckResult { lib: self.inner.clone(), raw })
    }

    /// Checks and JIT-compiles a program (`Code::CheckFailed` with the
    /// rendered diagnostics when it has errors).
    pub fn compile(&self, name: &str, source: &str) -> Result<Module> {
        let f = func!(self.inner, module_compile);
        let n = cstring(name)?;
        let mut raw = ptr::null_mut();
        self.inner.check(unsafe { f(self.inner.context, n.as_ptr(), source.as_ptr() as *const c_char, source.len(), ptr::null(), &mut raw) })?;
        Ok(Module { lib: self.inner.clone(), raw })
    }

    /// Compiles ahead of time into a shared object for the default target
    /// (`Target::Native`); `bindings` as `shapemlc build --bind`, e.g.
    /// "mlp:T=f32,Dv=host,B=2,S=8,D=16,F=32" (`;` between several).
    pub fn build<P: AsRef<Path>>(&self, name: &str, source: &str, bindings: &str, out: P) -> Result<()> {
        self.build_for(name, source, bindings, out, Target::default())
    }

    /// `build` for `target`.
    pub fn build_for<P: AsRef<Path>>(&self, name: &str, source: &str, bindings: &str, out: P, target: Target) -> Result<()> {
        let f = func!(self.inner, module_build_shared_object);
        let (n, b, o) = (cstring(name)?, cstring(bindings)?, cstring(&out.as_ref().to_string_lossy())?);
        self.inner.check(unsafe {
            f(self.inner.context, n.as_ptr(), source.as_ptr() as *const c_char, source.len(), b.as_ptr(), target as i32, o.as_ptr())
        })
    }

    /// Loads an ahead-of-time compiled module (both libraries). Loading runs
    /// the object's code: load only trusted paths.
    pub fn load<P: AsRef<Path>>(&self, path: P) -> Result<Module> {
        let p = cstring(&path.as_ref().to_string_lossy())?;
        let mut raw = ptr::null_mut();
        self.inner.check(unsafe { self.inner.api.module_load.unwrap()(p.as_ptr(), ptr::null(), &mut raw) })?;
        Ok(Module { lib: self.inner.clone(), raw })
    }
}

// ---------------------------------------------------------------------------
// Checking.

/// One diagnostic (`shapeml_diagnostic`), copied out of the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub code: String,
    pub severity: i32,
    pub message: String,
    pub line: u32,
    pub column: u32,
    pub expected: String,
    pub actual: String,
    /// Shape-variable values that break the obligation, if any.
    pub counterexample: Vec<(String, i64)>,
}

/// The outcome of checking one program.
pub struct CheckResult {
    lib: Arc<Inner>,
    raw: *mut c_void,
}

impl CheckResult {
    pub fn passed(&self) -> bool {
        unsafe { self.lib.api.check_result_passed.unwrap()(self.raw) != 0 }
    }

    pub fn diagnostics(&self) -> Result<Vec<Diagnostic>> {
        let api = self.lib.api;
        let n = unsafe { api.check_result_diagnostic_count.unwrap()(self.raw) };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut d = RawDiagnostic {
                struct_size: std::mem::size_of::<RawDiagnostic>(),
                code: ptr::null(),
                severity: 0,
                message: ptr::null(),
                file: ptr::null(),
                line: 0,
                column: 0,
                end_line: 0,
                end_column: 0,
                offset: 0,
                length: 0,
                expected: ptr::null(),
                actual: ptr::null(),
                counterexample_count: 0,
                note_count: 0,
            };
            self.lib.check(unsafe { api.check_result_get_diagnostic.unwrap()(self.raw, i, &mut d) })?;
            let mut counterexample = Vec::new();
            for k in 0..d.counterexample_count {
                let (mut name, mut value) = (ptr::null(), 0i64);
                self.lib.check(unsafe { api.check_result_get_counterexample.unwrap()(self.raw, i, k, &mut name, &mut value) })?;
                counterexample.push((unsafe { string(name) }, value));
            }
            unsafe {
                out.push(Diagnostic {
                    code: string(d.code),
                    severity: d.severity,
                    message: string(d.message),
                    line: d.line,
                    column: d.column,
                    expected: string(d.expected),
                    actual: string(d.actual),
                    counterexample,
                });
            }
        }
        Ok(out)
    }

    /// All diagnostics as text with carets (`json` false) or as a JSON array.
    pub fn render(&self, json: bool) -> Result<String> {
        let mut s = ptr::null();
        self.lib.check(unsafe { self.lib.api.check_result_render.unwrap()(self.raw, if json { 1 } else { 0 }, &mut s) })?;
        Ok(unsafe { string(s) })
    }
}

impl Drop for CheckResult {
    fn drop(&mut self) {
        unsafe { self.lib.api.check_result_release.unwrap()(self.raw) }
    }
}

unsafe impl Send for CheckResult {}
unsafe impl Sync for CheckResult {}

// ---------------------------------------------------------------------------
// Tensors.

/// Element types a `Tensor` can hold, with their `shapeml_dtype`.
pub trait Element: Copy + Default {
    const DTYPE: i32;
}
impl Element for f32 {
    const DTYPE: i32 = 0;
}
impl Element for f64 {
    const DTYPE: i32 = 1;
}
impl Element for i32 {
    const DTYPE: i32 = 3;
}
impl Element for i64 {
    const DTYPE: i32 = 4;
}

/// A host tensor owned by shapeml (dense, row-major).
pub struct Tensor {
    lib: Arc<Inner>,
    raw: *mut c_void,
}

unsafe impl Send for Tensor {}
unsafe impl Sync for Tensor {}

impl Tensor {
    /// A tensor holding a copy of `data` (row-major) with `shape`.
    pub fn from_slice<T: Element>(lib: &Library, data: &[T], shape: &[i64]) -> Result<Tensor> {
        Self::create_copy(lib, ptr::null_mut(), data, shape)
    }

    /// `from_slice` with the bytes from `memory` (released to it when the
    /// tensor's last reference goes).
    pub fn from_slice_in<T: Element>(lib: &Library, memory: &Memory, data: &[T], shape: &[i64]) -> Result<Tensor> {
        Self::create_copy(lib, memory.raw, data, shape)
    }

    fn create_copy<T: Element>(lib: &Library, memory: *mut c_void, data: &[T], shape: &[i64]) -> Result<Tensor> {
        let mut raw = ptr::null_mut();
        let bytes = std::mem::size_of_val(data);
        lib.inner.check(unsafe {
            lib.inner.api.tensor_create_copy.unwrap()(
                memory,
                T::DTYPE,
                shape.len(),
                shape.as_ptr(),
                data.as_ptr() as *const c_void,
                bytes,
                &mut raw,
            )
        })?;
        Ok(Tensor { lib: lib.inner.clone(), raw })
    }

    pub fn shape(&self) -> Vec<i64> {
        unsafe {
            let n = self.lib.api.tensor_rank.unwrap()(self.raw);
            let p = self.lib.api.tensor_shape.unwrap()(self.raw);
            if n == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(p, n).to_vec()
            }
        }
    }

    /// The `shapeml_dtype` (0 f32, 1 f64, 2 bf16, 3 i32, 4 i64, 5 bool).
    pub fn dtype(&self) -> i32 {
        unsafe { self.lib.api.tensor_dtype.unwrap()(self.raw) }
    }

    /// The elements, copied out; `InvalidArgument` when `T` is not the dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.dtype() != T::DTYPE {
            return Err(error(Code::InvalidArgument, &format!("the tensor's dtype is {}, not {}", self.dtype(), T::DTYPE)));
        }
        unsafe {
            let bytes = self.lib.api.tensor_byte_size.unwrap()(self.raw);
            let n = bytes / std::mem::size_of::<T>();
            let mut v = vec![T::default(); n];
            if n > 0 {
                ptr::copy_nonoverlapping(self.lib.api.tensor_data.unwrap()(self.raw) as *const T, v.as_mut_ptr(), n);
            }
            Ok(v)
        }
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        unsafe { self.lib.api.tensor_release.unwrap()(self.raw) }
    }
}

// ---- Memory resources written in Rust (shapeml_memory_resource) -----------

/// Where tensors' bytes come from, written in Rust: shapeml calls these from
/// any thread (so `Send + Sync`). `allocate` returns null when it cannot.
pub trait MemoryResource: Send + Sync {
    fn allocate(&self, bytes: usize, alignment: usize) -> *mut u8;
    /// `ptr` from `allocate` with the same `bytes` and `alignment`.
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize);
}

#[repr(C)]
pub struct RawMemoryResource {
    struct_size: usize,
    user: *mut c_void,
    allocate: Option<unsafe extern "C" fn(*mut c_void, usize, usize, *mut c_void) -> *mut c_void>,
    deallocate: Option<unsafe extern "C" fn(*mut c_void, *mut c_void, usize, usize, *mut c_void)>,
    statistics: Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> i32>,
    destroy: Option<unsafe extern "C" fn(*mut c_void)>,
}

type BoxedResource = Box<dyn MemoryResource>;

unsafe extern "C" fn resource_allocate(user: *mut c_void, bytes: usize, alignment: usize, _stream: *mut c_void) -> *mut c_void {
    let r = &*(user as *const BoxedResource);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.allocate(bytes, alignment))).unwrap_or(ptr::null_mut()) as *mut c_void
}
unsafe extern "C" fn resource_deallocate(user: *mut c_void, p: *mut c_void, bytes: usize, alignment: usize, _stream: *mut c_void) {
    let r = &*(user as *const BoxedResource);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.deallocate(p as *mut u8, bytes, alignment)));
}
unsafe extern "C" fn resource_destroy(user: *mut c_void) {
    drop(Box::from_raw(user as *mut BoxedResource));
}

/// A shapeml memory resource (`shapeml_memory*`); dropping it lets go of
/// this handle's reference (tensors made from it keep it alive).
pub struct Memory {
    lib: Arc<Inner>,
    raw: *mut c_void,
}

unsafe impl Send for Memory {}
unsafe impl Sync for Memory {}

impl Drop for Memory {
    fn drop(&mut self) {
        unsafe { self.lib.api.memory_release.unwrap()(self.raw) }
    }
}

/// Another reference to the same resource.
impl Clone for Memory {
    fn clone(&self) -> Memory {
        unsafe { self.lib.api.memory_retain.unwrap()(self.raw) };
        Memory { lib: self.lib.clone(), raw: self.raw }
    }
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Memory({:p})", self.raw)
    }
}

/// The same resource.
impl PartialEq for Memory {
    fn eq(&self, other: &Memory) -> bool {
        self.raw == other.raw
    }
}
impl Eq for Memory {}

impl Library {
    /// A memory resource whose allocations `resource` makes; shapeml drops
    /// `resource` once the last user (this handle, a tensor) lets go.
    pub fn memory_from<R: MemoryResource + 'static>(&self, resource: R) -> Result<Memory> {
        let user = Box::into_raw(Box::new(Box::new(resource) as BoxedResource)) as *mut c_void;
        let vt = RawMemoryResource {
            struct_size: std::mem::size_of::<RawMemoryResource>(),
            user,
            allocate: Some(resource_allocate),
            deallocate: Some(resource_deallocate),
            statistics: None,
            destroy: Some(resource_destroy),
        };
        let mut raw = ptr::null_mut();
        if let Err(e) = self.inner.check(unsafe { self.inner.api.memory_create_from_resource.unwrap()(&vt, &mut raw) }) {
            unsafe { resource_destroy(user) };
            return Err(e);
        }
        Ok(Memory { lib: self.inner.clone(), raw })
    }
}

// ---- DLPack 1.x (dlpack.h's layout; docs/design/dlpack.md) ----------------

/// DLPack's version of a managed tensor (`DLPackVersion`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

/// `DLDevice`: device type (1 CPU, 2 CUDA) and index.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

/// `DLDataType`: type code (0 int, 2 float, 4 bfloat, 6 bool), bits, lanes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

/// `DLTensor`, the borrowed view inside a managed tensor.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// `DLManagedTensorVersioned`: who owns it calls `deleter(self)` once.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
pub const DLPACK_FLAG_READ_ONLY: u64 = 1;

impl Tensor {
    /// Exports the tensor as a DLPack 1.x managed tensor, zero copy: the
    /// consumer owns the returned pointer and calls its `deleter` once; the
    /// data stays alive until then, whatever happens to `self`.
    pub fn to_dlpack(&self) -> Result<*mut DLManagedTensorVersioned> {
        let mut out = ptr::null_mut();
        self.lib.check(unsafe { self.lib.api.tensor_export_dlpack_versioned.unwrap()(self.raw, &mut out) })?;
        Ok(out)
    }

    /// Takes a DLPack 1.x managed tensor, zero copy; on success shapeml owns
    /// it (and calls its deleter when the tensor is dropped), on failure the
    /// caller still does.
    ///
    /// # Safety
    /// `managed` must point to a valid `DLManagedTensorVersioned` that no one
    /// else will use or delete after a successful call.
    pub unsafe fn from_dlpack(lib: &Library, managed: *mut DLManagedTensorVersioned) -> Result<Tensor> {
        let mut raw = ptr::null_mut();
        lib.inner.check(lib.inner.api.tensor_import_dlpack_versioned.unwrap()(managed, &mut raw))?;
        Ok(Tensor { lib: lib.inner.clone(), raw })
    }

    /// The start of the tensor's data (host memory for host tensors).
    pub fn data_ptr(&self) -> *mut c_void {
        unsafe { self.lib.api.tensor_data.unwrap()(self.raw) }
    }
}

// ---------------------------------------------------------------------------
// Modules and entries.

/// A compiled (JIT) or loaded (AOT) module.
pub struct Module {
    lib: Arc<Inner>,
    raw: *mut c_void,
}

unsafe impl Send for Module {}
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        unsafe { self.lib.api.module_release.unwrap()(self.raw) }
    }
}

/// A parameter or result of an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: i32,
    pub device_type: i32,
    pub rank: usize,
    /// The whole type as text, e.g. "(tensor f32 (B S D) host)".
    pub type_text: String,
}

/// A dtype or device variable of a generic entry (spec §3.5; the C ABI's
/// unstable `shapeml_unstable_entry_get_type_variable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeVariable {
    pub name: String,
    pub is_device: bool,
    /// What a dtype variable ranges over (`shapeml_dtype` values, ascending); empty for a device variable.
    pub dtypes: Vec<i32>,
}

#[repr(C)]
struct RawTypeVariable {
    struct_size: usize,
    name: *const c_char,
    is_device: i32,
    dtypes: u32,
}

/// An entry point, borrowed from its module (the lifetime says so).
pub struct Entry<'m> {
    module: &'m Module,
    raw: *mut c_void,
}

impl Module {
    pub fn name(&self) -> String {
        unsafe { string(self.lib.api.module_name.unwrap()(self.raw)) }
    }

    pub fn entry_names(&self) -> Vec<String> {
        let api = self.lib.api;
        let n = unsafe { api.module_entry_count.unwrap()(self.raw) };
        (0..n).map(|i| unsafe { string(api.module_entry_name.unwrap()(self.raw, i)) }).collect()
    }

    /// Resolves an entry once (`NotFound` lists the entries).
    pub fn entry(&self, name: &str) -> Result<Entry<'_>> {
        let n = cstring(name)?;
        let mut raw = ptr::null_mut();
        self.lib.check(unsafe { self.lib.api.module_get_entry.unwrap()(self.raw, n.as_ptr(), &mut raw) })?;
        Ok(Entry { module: self, raw })
    }
}

impl<'m> Entry<'m> {
    fn api(&self) -> &'static Api {
        self.module.lib.api
    }

    pub fn name(&self) -> String {
        unsafe { string(self.api().entry_name.unwrap()(self.raw)) }
    }

    pub fn shape_variables(&self) -> Vec<String> {
        let n = unsafe { self.api().entry_shape_variable_count.unwrap()(self.raw) };
        (0..n).map(|i| unsafe { string(self.api().entry_shape_variable.unwrap()(self.raw, i)) }).collect()
    }

    /// The shape variables every call gives in `CallOptions::dims`
    /// (declared `(given ...)` in the source): no input shape determines
    /// them. The others are inferred from the inputs.
    pub fn given_shape_variables(&self) -> Vec<String> {
        let is_given = match self.api().entry_shape_variable_is_given {
            Some(f) => f,
            None => return Vec::new(),
        };
        self.shape_variables().into_iter().enumerate().filter(|(i, _)| unsafe { is_given(self.raw, *i) } != 0).map(|(_, v)| v).collect()
    }

    /// A generic entry's dtype variables in declaration order, then its
    /// device variables; none for an entry that is not generic (or a library
    /// without the unstable tier). A call binds them from its inputs.
    pub fn type_variables(&self) -> Result<Vec<TypeVariable>> {
        let lib = &self.module.lib;
        let (count, get) = unsafe {
            let c = dlsym(lib.handle, b"shapeml_unstable_entry_type_variable_count\0".as_ptr() as *const c_char);
            let g = dlsym(lib.handle, b"shapeml_unstable_entry_get_type_variable\0".as_ptr() as *const c_char);
            if c.is_null() || g.is_null() {
                return Ok(Vec::new());
            }
            let c: unsafe extern "C" fn(*const c_void) -> usize = std::mem::transmute(c);
            let g: unsafe extern "C" fn(*const c_void, usize, *mut RawTypeVariable) -> *mut Status = std::mem::transmute(g);
            (c, g)
        };
        let n = unsafe { count(self.raw) };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut v = RawTypeVariable { struct_size: std::mem::size_of::<RawTypeVariable>(), name: ptr::null(), is_device: 0, dtypes: 0 };
            lib.check(unsafe { get(self.raw, i, &mut v) })?;
            out.push(TypeVariable {
                name: unsafe { string(v.name) },
                is_device: v.is_device != 0,
                dtypes: (0..32).filter(|d| v.dtypes & (1u32 << d) != 0).collect(),
            });
        }
        Ok(out)
    }

    fn infos(&self, kind: i32, n: usize) -> Result<Vec<TensorInfo>> {
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut t = RawTensorInfo {
                struct_size: std::mem::size_of::<RawTensorInfo>(),
                name: ptr::null(),
                dtype: 0,
                device_type: 0,
                device_id: 0,
                rank: 0,
                type_text: ptr::null(),
            };
            self.module.lib.check(unsafe { self.api().entry_get_tensor_info.unwrap()(self.raw, kind, i, &mut t) })?;
            out.push(TensorInfo {
                name: unsafe { string(t.name) },
                dtype: t.dtype,
                device_type: t.device_type,
                rank: t.rank,
                type_text: unsafe { string(t.type_text) },
            });
        }
        Ok(out)
    }

    pub fn params(&self) -> Result<Vec<TensorInfo>> {
        self.infos(0, unsafe { self.api().entry_param_count.unwrap()(self.raw) })
    }

    pub fn results(&self) -> Result<Vec<TensorInfo>> {
        self.infos(1, unsafe { self.api().entry_result_count.unwrap()(self.raw) })
    }

    /// Calls the entry (inputs borrowed; results new tensors you own).
    pub fn call(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        self.call_with(inputs, &CallOptions::default())
    }

    /// `call` with options (threads, given shape variables, memory, stream).
    pub fn call_with(&self, inputs: &[&Tensor], options: &CallOptions) -> Result<Vec<Tensor>> {
        let api = self.api();
        let n_out = unsafe { api.entry_result_count.unwrap()(self.raw) };
        let raw_in: Vec<*mut c_void> = inputs.iter().map(|t| t.raw).collect();
        let mut raw_out = vec![ptr::null_mut(); n_out];
        let dims = GivenDims::new(options)?;
        let raw_opts = options.raw(ptr::null(), &dims);
        self.module.lib.check(unsafe {
            api.entry_call.unwrap()(self.raw, raw_in.as_ptr(), raw_in.len(), raw_out.as_mut_ptr(), n_out, &raw_opts as *const RawCallOptions as *const c_void)
        })?;
        Ok(raw_out.into_iter().map(|raw| Tensor { lib: self.module.lib.clone(), raw }).collect())
    }

    /// Destination passing: writes the results into `outputs`, tensors you
    /// made with the results' dtypes and exact shapes (one per result, not
    /// overlapping an input). Nothing is allocated for them.
    pub fn call_into(&self, inputs: &[&Tensor], outputs: &[&Tensor], options: &CallOptions) -> Result<()> {
        let api = self.api();
        let n_out = unsafe { api.entry_result_count.unwrap()(self.raw) };
        if outputs.len() != n_out {
            return Err(Error { code: Code::InvalidArgument, message: format!("call_into: {} output(s) given, the entry returns {}", outputs.len(), n_out) });
        }
        let raw_in: Vec<*mut c_void> = inputs.iter().map(|t| t.raw).collect();
        let raw_given: Vec<*mut c_void> = outputs.iter().map(|t| t.raw).collect();
        let dims = GivenDims::new(options)?;
        let raw_opts = options.raw(raw_given.as_ptr(), &dims);
        self.module.lib.check(unsafe {
            api.entry_call.unwrap()(self.raw, raw_in.as_ptr(), raw_in.len(), ptr::null_mut(), 0, &raw_opts as *const RawCallOptions as *const c_void)
        })
    }
}

/// Options of one call (`shapeml_call_options`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// Host entries: the threads this call's parallel loops may use, the
    /// calling one included; 0 the default (`SHAPEML_NUM_THREADS`, else the
    /// CPUs the process may run on). Results are the same bits for every count.
    pub num_threads: i32,
    /// The values of the entry's given shape variables
    /// (`Entry::given_shape_variables`), e.g. `vec![("H".into(), 4)]`; the
    /// others are inferred from the inputs. Exactly the given ones, each >= 1.
    pub dims: Vec<(String, i64)>,
    /// Where the results and the call's temporaries come from (`None`: the
    /// module's resource), e.g. a Rust `MemoryResource` (`Library::memory_from`).
    pub memory: Option<Memory>,
    /// Device entries: the `cudaStream_t` the call is enqueued on, as an
    /// address (0: the module's default stream).
    pub stream: usize,
}

/// The given shape variables as C arrays, alive for one call.
struct GivenDims {
    _names: Vec<std::ffi::CString>,
    name_ptrs: Vec<*const c_char>,
    values: Vec<i64>,
}

impl GivenDims {
    fn new(options: &CallOptions) -> Result<GivenDims> {
        let mut names = Vec::with_capacity(options.dims.len());
        for (n, _) in &options.dims {
            names.push(std::ffi::CString::new(n.as_str()).map_err(|_| Error {
                code: Code::InvalidArgument,
                message: format!("CallOptions::dims: the name {:?} contains a NUL byte", n),
            })?);
        }
        let name_ptrs = names.iter().map(|c| c.as_ptr()).collect();
        Ok(GivenDims { _names: names, name_ptrs, values: options.dims.iter().map(|(_, v)| *v).collect() })
    }
}

#[repr(C)]
struct RawCallOptions {
    struct_size: usize,
    memory: *mut c_void,
    outputs: *const *mut c_void,
    device_index: i32,
    stream: *mut c_void,
    graph: i32,
    reserved: i32,
    num_threads: i32,
    dim_names: *const *const c_char,
    dim_values: *const i64,
    num_dims: usize,
}

impl CallOptions {
    fn raw(&self, outputs: *const *mut c_void, dims: &GivenDims) -> RawCallOptions {
        RawCallOptions {
            struct_size: std::mem::size_of::<RawCallOptions>(),
            memory: self.memory.as_ref().map_or(ptr::null_mut(), |m| m.raw),
            outputs,
            device_index: 0,
            stream: self.stream as *mut c_void,
            graph: 0,
            reserved: 0,
            num_threads: self.num_threads,
            dim_names: if dims.values.is_empty() { ptr::null() } else { dims.name_ptrs.as_ptr() },
            dim_values: if dims.values.is_empty() { ptr::null() } else { dims.values.as_ptr() },
            num_dims: dims.values.len(),
        }
    }
}
