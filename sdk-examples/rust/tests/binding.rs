//! Tests of the Rust bindings against a built or installed shapeml.
//! SHAPEML_LIB_DIR names the directory holding libshapeml.so.0 and
//! libshapeml_runtime.so.0 (default: the repository's build/default).
use shapeml::{CallOptions, Code, DLManagedTensorVersioned, Library, MemoryResource, Target, Tensor};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::path::PathBuf;

fn lib_dir() -> PathBuf {
    match std::env::var_os("SHAPEML_LIB_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/default"),
    }
}

fn sdk() -> Library {
    Library::open(lib_dir().join("libshapeml.so.0")).expect("open libshapeml.so.0")
}

const MLP: &str = include_str!("../../../examples/mlp.sml");

const BAD: &str = "(module bad
  (func f
    (dims B S D)
    (params (x (tensor f32 (B S D) host)))
    (returns (tensor f32 (B S D D) host))
    (return (reshape x (B S D D)))))";

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

fn erf(x: f64) -> f64 {
    // Taylor series, accurate to 1e-15 for |x| < 3.
    let mut sum = x;
    let mut term = x;
    for n in 1..200 {
        term *= -x * x / n as f64;
        let add = term / (2 * n + 1) as f64;
        sum += add;
        if add.abs() < 1e-17 {
            break;
        }
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

/// The MLP in float64: y = gelu(x w1 + b1) w2 + b2.
fn reference(x: &[f32], w1: &[f32], b1: &[f32], w2: &[f32], b2: &[f32], rows: usize, d: usize, f: usize) -> Vec<f64> {
    let mut y = vec![0.0; rows * d];
    for r in 0..rows {
        let h: Vec<f64> = (0..f)
            .map(|j| gelu(b1[j] as f64 + (0..d).map(|k| x[r * d + k] as f64 * w1[k * f + j] as f64).sum::<f64>()))
            .collect();
        for k in 0..d {
            y[r * d + k] = b2[k] as f64 + (0..f).map(|j| h[j] * w2[j * d + k] as f64).sum::<f64>();
        }
    }
    y
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1664525).wrapping_add(1013904223);
            ((s >> 8) & 0xffff) as f32 / 65536.0 - 0.5
        })
        .collect()
}

fn mlp_inputs(lib: &Library, b: usize, s: usize, d: usize, f: usize) -> (Vec<Vec<f32>>, Vec<Tensor>) {
    let shapes: Vec<Vec<i64>> = vec![vec![b as i64, s as i64, d as i64], vec![d as i64, f as i64], vec![f as i64], vec![f as i64, d as i64], vec![d as i64]];
    let arrays: Vec<Vec<f32>> = shapes.iter().enumerate().map(|(i, sh)| data(sh.iter().product::<i64>() as usize, i as u32 + 1)).collect();
    let tensors = arrays.iter().zip(&shapes).map(|(a, sh)| Tensor::from_slice(lib, a, sh).unwrap()).collect();
    (arrays, tensors)
}

#[test]
fn version_and_capabilities() {
    let lib = sdk();
    assert!(lib.version().starts_with("0."));
    assert!(lib.has_compiler());
    let c = lib.capabilities().unwrap();
    assert_eq!(c.abi.0, shapeml::ABI_MAJOR);
    assert!(c.abi.1 >= shapeml::ABI_MINOR_MIN);
    assert!(c.jit && c.aot_build);
}

#[test]
fn opening_a_missing_library_is_an_error() {
    let e = Library::open("/nonexistent/libshapeml.so.0").err().unwrap();
    assert_eq!(e.code, Code::LibraryNotLoaded);
}

#[test]
fn check_reads_diagnostics() {
    let lib = sdk();
    assert!(lib.check("mlp.sml", MLP).unwrap().passed());
    let r = lib.check("bad.sml", BAD).unwrap();
    assert!(!r.passed());
    let d = r.diagnostics().unwrap();
    assert_eq!(d[0].code, "E0303");
    assert_eq!(d[0].line, 6);
    assert!(!d[0].counterexample.is_empty(), "a counterexample: {:?}", d[0]);
    assert!(r.render(false).unwrap().contains("error[E0303]"));
    assert!(r.render(true).unwrap().starts_with('['));
}

#[test]
fn compile_introspect_and_call() {
    let lib = sdk();
    let m = lib.compile("mlp.sml", MLP).unwrap();
    assert_eq!(m.entry_names(), vec!["mlp".to_string()]);
    let mlp = m.entry("mlp").unwrap();
    assert_eq!(mlp.name(), "mlp");
    assert_eq!(mlp.shape_variables(), vec!["B", "S", "D", "F"]);
    let params = mlp.params().unwrap();
    assert_eq!(params.len(), 5);
    assert_eq!(params[0].name, "x");
    assert_eq!(params[0].type_text, "(tensor T (B S D) Dv)");
    // T floating (f32 0, f64 1, bf16 2) and the device variable Dv (spec §3.5).
    let tv = mlp.type_variables().unwrap();
    assert_eq!(tv.len(), 2);
    assert_eq!((tv[0].name.as_str(), tv[0].is_device, tv[0].dtypes.clone()), ("T", false, vec![0, 1, 2]));
    assert_eq!((tv[1].name.as_str(), tv[1].is_device, tv[1].dtypes.is_empty()), ("Dv", true, true));
    assert_eq!(mlp.results().unwrap()[0].rank, 3);

    let (b, s, d, f) = (2, 3, 8, 16);
    let (a, t) = mlp_inputs(&lib, b, s, d, f);
    let refs: Vec<&Tensor> = t.iter().collect();
    let y = mlp.call(&refs).unwrap();
    assert_eq!(y[0].shape(), vec![b as i64, s as i64, d as i64]);
    let got = y[0].to_vec::<f32>().unwrap();
    let want = reference(&a[0], &a[1], &a[2], &a[3], &a[4], b * s, d, f);
    let err = got.iter().zip(&want).map(|(g, w)| (*g as f64 - w).abs()).fold(0.0, f64::max);
    assert!(err < 1e-5, "max abs error {}", err);
    assert_eq!(y[0].to_vec::<f64>().unwrap_err().code, Code::InvalidArgument);
}

#[test]
fn errors_map_to_codes() {
    let lib = sdk();
    let e = lib.compile("bad.sml", BAD).err().unwrap();
    assert_eq!(e.code, Code::CheckFailed);
    assert!(e.message.contains("E0303"));
    let m = lib.compile("mlp.sml", MLP).unwrap();
    assert_eq!(m.entry("nope").err().unwrap().code, Code::NotFound);
    let mlp = m.entry("mlp").unwrap();
    let (_, mut t) = mlp_inputs(&lib, 2, 3, 8, 16);
    t[1] = Tensor::from_slice(&lib, &data(8 * 15, 9), &[8, 15]).unwrap(); // F of w1 disagrees with b1
    let refs: Vec<&Tensor> = t.iter().collect();
    let e = mlp.call(&refs).err().unwrap();
    assert_eq!(e.code, Code::InvalidArgument, "{}", e);
    assert_eq!(lib.load("/nonexistent/model.so").err().unwrap().code, Code::NotFound);
}

#[test]
fn aot_build_then_runtime_library() {
    let lib = sdk();
    let out = std::env::temp_dir().join(format!("shapeml-rust-{}.so", std::process::id()));
    lib.build("mlp.sml", MLP, "mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8", &out).unwrap();
    let rt = Library::open(lib_dir().join("libshapeml_runtime.so.0")).unwrap();
    assert!(!rt.has_compiler());
    assert_eq!(rt.compile("mlp.sml", MLP).err().unwrap().code, Code::Unimplemented);
    let m = rt.load(&out).unwrap();
    let mlp = m.entry("mlp").unwrap();
    let (a, t) = mlp_inputs(&rt, 1, 2, 4, 8);
    let refs: Vec<&Tensor> = t.iter().collect();
    let got = mlp.call(&refs).unwrap()[0].to_vec::<f32>().unwrap();
    let want = reference(&a[0], &a[1], &a[2], &a[3], &a[4], 2, 4, 8);
    for (g, w) in got.iter().zip(&want) {
        assert!((*g as f64 - w).abs() < 1e-5);
    }
    // A binding it was not built for: NotFound from the AOT module.
    let (_, t) = mlp_inputs(&rt, 2, 2, 4, 8);
    let refs: Vec<&Tensor> = t.iter().collect();
    assert_eq!(mlp.call(&refs).err().unwrap().code, Code::NotFound);
    std::fs::remove_file(&out).ok();
}

// `(given H)`: the number of heads is in no input shape; CallOptions::dims
// gives it. Values against a float64 loop; a missing H is refused by name.
#[test]
fn shape_variables_given_at_the_call() {
    const SRC: &str = "(module given_heads\n  (func head_sums (dims B S H Dh) (given H)\n    (params (x (tensor f32 (B S (* H Dh)) host)))\n    (returns (tensor f32 (B H S) host))\n    (return (permute (reduce_sum (reshape x (B S H Dh)) :axes (3)) (0 2 1)))))\n";
    let lib = sdk();
    let m = lib.compile("given.sml", SRC).unwrap();
    let e = m.entry("head_sums").unwrap();
    assert_eq!(e.given_shape_variables(), vec!["H".to_string()]);
    let x: Vec<f32> = (0..2 * 3 * 12).map(|i| (i % 7) as f32 * 0.5 - 1.0).collect();
    let t = Tensor::from_slice(&lib, &x, &[2, 3, 12]).unwrap();
    for h in [2i64, 4] {
        let dh = 12 / h;
        let y = e.call_with(&[&t], &CallOptions { dims: vec![("H".into(), h)], ..Default::default() }).unwrap()[0].to_vec::<f32>().unwrap();
        assert_eq!(y.len() as i64, 2 * h * 3);
        for b in 0..2 {
            for hh in 0..h {
                for s in 0..3 {
                    let want: f64 = (0..dh).map(|d| x[((b * 3 + s) * 12 + hh * dh + d) as usize] as f64).sum();
                    assert!((y[((b * h + hh) * 3 + s) as usize] as f64 - want).abs() < 1e-5);
                }
            }
        }
    }
    let err = e.call(&[&t]).err().unwrap();
    assert_eq!(err.code, Code::InvalidArgument);
    assert!(err.message.contains("takes shape variable `H` at the call"), "{}", err.message);
}

// A thread count per call gives the same bits; call_into writes into the
// caller's tensors; a negative count and a wrong output count are refused.
#[test]
fn call_options_threads_and_caller_outputs() {
    let lib = sdk();
    let m = lib.compile("mlp.sml", MLP).unwrap();
    let mlp = m.entry("mlp").unwrap();
    let (a, t) = mlp_inputs(&lib, 4, 64, 16, 32);
    let refs: Vec<&Tensor> = t.iter().collect();
    let one = mlp.call_with(&refs, &CallOptions { num_threads: 1, ..Default::default() }).unwrap()[0].to_vec::<f32>().unwrap();
    let two = mlp.call_with(&refs, &CallOptions { num_threads: 2, ..Default::default() }).unwrap()[0].to_vec::<f32>().unwrap();
    assert_eq!(one.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), two.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    let want = reference(&a[0], &a[1], &a[2], &a[3], &a[4], 4 * 64, 16, 32);
    assert!(one.iter().zip(&want).all(|(g, w)| (*g as f64 - w).abs() < 1e-4));
    let y = Tensor::from_slice(&lib, &vec![f32::NAN; 4 * 64 * 16], &[4, 64, 16]).unwrap();
    mlp.call_into(&refs, &[&y], &CallOptions::default()).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>(), one.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    let e = mlp.call_with(&refs, &CallOptions { num_threads: -1, ..Default::default() }).err().unwrap();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(e.message.contains("num_threads is -1"), "{}", e.message);
    assert_eq!(mlp.call_into(&refs, &[], &CallOptions::default()).err().unwrap().code, Code::InvalidArgument);
    let wrong = Tensor::from_slice(&lib, &vec![0f32; 4 * 64 * 17], &[4, 64, 17]).unwrap();
    assert!(mlp.call_into(&refs, &[&wrong], &CallOptions::default()).is_err());
}

// A memory resource written in Rust: tensors made in it take their bytes
// from it and give them back when dropped; shapeml drops the resource once
// the last user (the handle, then the tensor) lets go.
struct Counting {
    allocations: Arc<AtomicUsize>,
    deallocations: Arc<AtomicUsize>,
    destroyed: Arc<AtomicBool>,
}

impl MemoryResource for Counting {
    fn allocate(&self, bytes: usize, alignment: usize) -> *mut u8 {
        self.allocations.fetch_add(1, Ordering::SeqCst);
        unsafe { std::alloc::alloc(std::alloc::Layout::from_size_align(bytes.max(1), alignment).unwrap()) }
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize) {
        self.deallocations.fetch_add(1, Ordering::SeqCst);
        unsafe { std::alloc::dealloc(ptr, std::alloc::Layout::from_size_align(bytes.max(1), alignment).unwrap()) }
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        self.destroyed.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_memory_resource_written_in_rust() {
    let lib = sdk();
    let (a, d, gone) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let memory = lib.memory_from(Counting { allocations: a.clone(), deallocations: d.clone(), destroyed: gone.clone() }).unwrap();
    let values: Vec<f64> = (0..100).map(|i| i as f64 / 7.0).collect();
    let t = Tensor::from_slice_in(&lib, &memory, &values, &[10, 10]).unwrap();
    assert_eq!(a.load(Ordering::SeqCst), 1);
    assert_eq!(t.to_vec::<f64>().unwrap(), values);
    drop(memory);
    assert!(!gone.load(Ordering::SeqCst), "the tensor still holds the resource");
    assert_eq!(d.load(Ordering::SeqCst), 0);
    drop(t);
    assert_eq!(d.load(Ordering::SeqCst), 1);
    assert!(gone.load(Ordering::SeqCst));
}

// Call options with a Rust memory resource: the results (and the runtime's
// own copies) come from it, and every allocation is given back once the
// results are dropped.
#[test]
fn a_call_allocates_from_a_rust_memory_resource() {
    let lib = sdk();
    let (a, d, gone) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let memory = lib.memory_from(Counting { allocations: a.clone(), deallocations: d.clone(), destroyed: gone.clone() }).unwrap();
    let m = lib.compile("mlp.sml", MLP).unwrap();
    let mlp = m.entry("mlp").unwrap();
    let (x, t) = mlp_inputs(&lib, 2, 8, 16, 32);
    let refs: Vec<&Tensor> = t.iter().collect();
    let options = CallOptions { memory: Some(memory.clone()), ..Default::default() };
    drop(memory);
    let out = mlp.call_with(&refs, &options).unwrap();
    assert!(a.load(Ordering::SeqCst) >= 1, "the result did not come from the Rust resource");
    let want = reference(&x[0], &x[1], &x[2], &x[3], &x[4], 2 * 8, 16, 32);
    assert!(out[0].to_vec::<f32>().unwrap().iter().zip(&want).all(|(g, w)| (*g as f64 - w).abs() < 1e-4));
    drop(out);
    drop(options);
    assert_eq!(a.load(Ordering::SeqCst), d.load(Ordering::SeqCst));
    assert!(gone.load(Ordering::SeqCst));
}

// DLPack both ways, zero copy: an exported tensor views shapeml's bytes
// (same data pointer, shape, dtype f32, CPU), survives the tensor it came
// from, and comes back in as a tensor over the same bytes; a deleter of
// our own runs exactly once, when the imported tensor is dropped.
static DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_and_forward(m: *mut DLManagedTensorVersioned) {
    DELETED.fetch_add(1, Ordering::SeqCst);
    // manager_ctx holds shapeml's own managed tensor, whose deleter frees the bytes.
    let inner = (*m).manager_ctx as *mut DLManagedTensorVersioned;
    drop(Box::from_raw(m));
    if let Some(d) = (*inner).deleter {
        d(inner);
    }
}

#[test]
fn dlpack_out_and_back_in_without_copies() {
    let lib = sdk();
    let values: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
    let t = Tensor::from_slice(&lib, &values, &[3, 4]).unwrap();
    let data = t.data_ptr();
    let m = t.to_dlpack().unwrap();
    drop(t); // the export keeps the bytes alive
    unsafe {
        let dl = &(*m).dl_tensor;
        assert_eq!((*m).version.major, 1);
        assert_eq!(dl.data, data);
        assert_eq!((dl.device.device_type, dl.ndim, dl.dtype.code, dl.dtype.bits, dl.dtype.lanes), (1, 2, 2, 32, 1));
        assert_eq!(std::slice::from_raw_parts(dl.shape, 2), &[3, 4]);
        assert_eq!(std::slice::from_raw_parts(dl.data as *const f32, 12), &values[..]);
        // Wrap it in a managed tensor with our deleter, as a foreign producer would.
        let ours = Box::into_raw(Box::new(DLManagedTensorVersioned {
            version: (*m).version,
            manager_ctx: m as *mut _,
            deleter: Some(count_and_forward),
            flags: 0,
            dl_tensor: shapeml::DLTensor { data: dl.data, device: dl.device, ndim: dl.ndim, dtype: dl.dtype, shape: dl.shape, strides: dl.strides, byte_offset: dl.byte_offset },
        }));
        let back = Tensor::from_dlpack(&lib, ours).unwrap();
        assert_eq!(back.data_ptr(), data);
        assert_eq!(back.shape(), vec![3, 4]);
        assert_eq!(back.to_vec::<f32>().unwrap(), values);
        assert_eq!(DELETED.load(Ordering::SeqCst), 0);
        drop(back);
        assert_eq!(DELETED.load(Ordering::SeqCst), 1);
        // A null pointer is refused with a status, not a crash.
        assert_eq!(Tensor::from_dlpack(&lib, std::ptr::null_mut()).err().unwrap().code, Code::InvalidArgument);
    }
}

// The default target is the build machine's (as shapemlc's and every
// binding's); build_for takes another, which the module's manifest records.
#[test]
fn build_targets_native_by_default_and_others_when_asked() {
    let lib = sdk();
    assert_eq!(Target::default(), Target::Native);
    let dir = std::env::temp_dir();
    let (native, portable) = (dir.join(format!("shapeml-rust-native-{}.so", std::process::id())),
                              dir.join(format!("shapeml-rust-x86-64-{}.so", std::process::id())));
    lib.build("mlp.sml", MLP, "mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8", &native).unwrap();
    lib.build_for("mlp.sml", MLP, "mlp:T=f32,Dv=host,B=1,S=2,D=4,F=8", &portable, Target::X86_64).unwrap();
    let has = |p: &PathBuf, s: &str| std::fs::read(p).unwrap().windows(s.len()).any(|w| w == s.as_bytes());
    assert!(has(&portable, "(target \"x86-64\")"));
    assert!(!has(&native, "(target \"x86-64\")"));
    let m = lib.load(&portable).unwrap();
    let (a, t) = mlp_inputs(&lib, 1, 2, 4, 8);
    let refs: Vec<&Tensor> = t.iter().collect();
    let got = m.entry("mlp").unwrap().call(&refs).unwrap()[0].to_vec::<f32>().unwrap();
    let want = reference(&a[0], &a[1], &a[2], &a[3], &a[4], 2, 4, 8);
    assert!(got.iter().zip(&want).all(|(g, w)| (*g as f64 - w).abs() < 1e-5));
    std::fs::remove_file(&native).ok();
    std::fs::remove_file(&portable).ok();
}

#[test]
fn tensors_from_many_threads() {
    let lib = sdk();
    let m = std::sync::Arc::new(lib.compile("mlp.sml", MLP).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (m, lib) = (m.clone(), lib.clone());
            std::thread::spawn(move || {
                let (_, t) = mlp_inputs(&lib, 1, 2, 4, 8);
                let refs: Vec<&Tensor> = t.iter().collect();
                m.entry("mlp").unwrap().call(&refs).unwrap()[0].to_vec::<f32>().unwrap()
            })
        })
        .collect();
    let results: Vec<Vec<f32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}
