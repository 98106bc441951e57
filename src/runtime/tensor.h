// Runtime tensors: a DLPack DLTensor with an owner.
//
// A Tensor's FIRST member is its DLTensor, so a `Tensor*` and a `DLTensor*`
// to its descriptor are interchangeable (Tensor::from_dl goes back); the C ABI
// hands out that DLTensor. Tensors are reference counted (intrusive, atomic)
// and immutable in shape; they own their shape/stride arrays. Their data is
// either allocated from a MemoryResource (the tensor remembers the resource,
// the byte count and the alignment, for sized deallocation) or borrowed from
// someone else together with a release callback (zero copy: DLPack imports,
// user buffers).
#pragma once
#include "shapeml_dlpack.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "runtime/memory_resource.h"
#include "runtime/status.h"
#include "types/dtype.h"

namespace shapeml::runtime {

/// DLPack's kDLBool (include/shapeml_dlpack.h). shapeml's bool is
/// one byte: {kDLBool, 8, 1}.
inline constexpr uint8_t kDLBoolCode = kDLBool;

/// Tensors of higher rank are rejected (DLPack has no bound; this keeps
/// messages and stack buffers small).
inline constexpr int kMaxRank = 64;

/// shapeml dtype -> DLPack: f32 {kDLFloat,32,1}, f64 {kDLFloat,64,1},
/// bf16 {kDLBfloat,16,1}, i32 {kDLInt,32,1}, i64 {kDLInt,64,1}, bool {kDLBool,8,1}.
DLDataType to_dl_dtype(types::DType d);
/// The inverse; nullopt for every other DLDataType (u8, f16, lanes != 1, ...).
std::optional<types::DType> from_dl_dtype(DLDataType d);
/// Bytes per element.
size_t dtype_size(types::DType d);
/// A DLDataType written for people: "f32", "u8", "bool", "f32x4", "code7:16".
std::string dl_dtype_str(DLDataType d);

DLDevice to_dl_device(types::Device d);
/// kDLCPU -> host, kDLCUDA -> cuda(n); nullopt for every other device type.
std::optional<types::Device> from_dl_device(DLDevice d);
/// "cpu", "cuda:0", "cuda_host:0", "device_type 9:0".
std::string dl_device_str(DLDevice d);
/// The same for a raw device type number (any int32, in range or not).
std::string dl_device_type_str(int32_t device_type, int32_t device_id);

/// Called once when a borrowed tensor dies.
struct TensorDeleter {
  void (*fn)(void* ctx) = nullptr;
  void* ctx = nullptr;
};

class Tensor;

/// An owning reference to a Tensor (intrusive; copying retains).
class TensorRef {
 public:
  TensorRef() = default;
  TensorRef(std::nullptr_t) {}  // NOLINT
  TensorRef(const TensorRef& o);
  TensorRef(TensorRef&& o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
  TensorRef& operator=(TensorRef o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  ~TensorRef();

  /// Takes over a reference the caller already owns (no retain).
  static TensorRef adopt(Tensor* t) {
    TensorRef r;
    r.t_ = t;
    return r;
  }
  /// Adds a reference to `t`.
  static TensorRef share(Tensor* t);

  Tensor* get() const { return t_; }
  Tensor* operator->() const { return t_; }
  Tensor& operator*() const { return *t_; }
  explicit operator bool() const { return t_ != nullptr; }
  /// Gives up ownership without releasing; the caller now owns a reference.
  Tensor* detach() { return std::exchange(t_, nullptr); }

 private:
  Tensor* t_ = nullptr;
};

/// A CUDA stream shapeml orders work on, and what keeps it alive: a
/// context's stream (ContextStreams), or NULL stream for the device's runtime
/// stream (alive for the process; owner empty). docs/design/cuda-plugin.md.
struct StreamRef {
  void* stream = nullptr;
  std::shared_ptr<void> owner;
};

class Tensor {
 public:
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  /// A new dense row-major tensor from `mr` (NULL: host), zero-filled unless
  /// `zero` is false. A tensor with no elements holds no allocation (data NULL).
  static Result<TensorRef> create(types::DType dtype, std::span<const int64_t> shape, const MemoryResourcePtr& mr = nullptr,
                                  bool zero = true);
  /// For a device call's outputs: a new uninitialized tensor from the device
  /// resource `mr`, allocated in order on `home` (and freed on it), without
  /// waiting for anything — usable at once by work enqueued on `home`.
  static Result<TensorRef> create_on_stream(types::DType dtype, std::span<const int64_t> shape, const MemoryResourcePtr& mr,
                                            const StreamRef& home);
  /// A new dense tensor holding a copy of `bytes` bytes at `data`; `bytes`
  /// must be exactly numel * dtype_size (row-major element order).
  static Result<TensorRef> copy_of(types::DType dtype, std::span<const int64_t> shape, const void* data, size_t bytes,
                                   const MemoryResourcePtr& mr = nullptr);
  /// Wraps someone else's memory without copying. `strides` (in elements)
  /// may be empty for row-major. `deleter.fn(deleter.ctx)` runs once when the
  /// tensor dies — but only if this call succeeds: on failure the caller
  /// keeps ownership of `data`.
  static Result<TensorRef> borrow(types::DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides,
                                  void* data, types::Device device, TensorDeleter deleter, uint64_t byte_offset = 0);

  /// The Tensor whose descriptor `dl` is. Only valid for a DLTensor obtained
  /// from Tensor::as_dl() (the C ABI's tensors), never for a foreign one.
  static Tensor* from_dl(DLTensor* dl) { return reinterpret_cast<Tensor*>(dl); }
  static const Tensor* from_dl(const DLTensor* dl) { return reinterpret_cast<const Tensor*>(dl); }

  void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() const noexcept;
  int32_t use_count() const noexcept { return refs_.load(std::memory_order_relaxed); }

  /// The DLPack descriptor; shape and strides are never NULL (strides are
  /// explicit even when row-major).
  const DLTensor& dl() const { return dl_; }
  /// The descriptor as the C ABI hands it out (Tensor::from_dl inverts it).
  DLTensor* as_dl() { return &dl_; }

  types::DType dtype() const { return dtype_; }
  types::Device device() const;
  int ndim() const { return dl_.ndim; }
  std::span<const int64_t> shape() const { return {dl_.shape, static_cast<size_t>(dl_.ndim)}; }
  std::span<const int64_t> strides() const { return {dl_.strides, static_cast<size_t>(dl_.ndim)}; }
  int64_t numel() const { return numel_; }
  /// numel * dtype_size.
  size_t nbytes() const;
  /// The first element: dl().data + dl().byte_offset.
  void* data() const { return dl_.data ? static_cast<char*>(dl_.data) + dl_.byte_offset : nullptr; }
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data());
  }
  /// Dense row-major (strides of size-1 dimensions do not matter; a tensor
  /// with no elements is contiguous).
  bool is_contiguous() const;
  /// Imported with DLPack's READ_ONLY flag: the runtime never writes it.
  bool is_read_only() const { return read_only_; }
  void set_read_only(bool r) { read_only_ = r; }
  /// Whether the data came from a MemoryResource (else it is borrowed).
  bool owns_data() const;
  /// "(tensor f32 (2 3) host)"
  std::string type_str() const;

  /// A dense, row-major copy from `mr` (any strides accepted).
  Result<TensorRef> contiguous_copy(const MemoryResourcePtr& mr = nullptr) const;

  // Stream ordering of device tensors (docs/design/cuda-plugin.md, "Streams").
  /// The stream the memory is allocated and freed on (NULL: the device's
  /// runtime stream; also for borrowed and host tensors).
  void* home_stream() const;
  /// The stream whose enqueued work may still be writing this tensor (a
  /// device call's output), or an empty ref when its contents are complete.
  StreamRef writer() const;
  /// Records that work on `s` writes this tensor (empty: complete now).
  void set_writer(const StreamRef& s) const;
  /// Records that work on `s` (not the home stream) uses this tensor: at the
  /// last release, the home stream waits for `s` before the memory is freed
  /// (so a stream-ordered resource cannot hand it out while `s` still uses it).
  void note_use_on(const StreamRef& s) const;

 private:
  struct Storage;
  Tensor() = default;
  ~Tensor();
  static Result<TensorRef> make(types::DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides,
                                types::Device device);
  // Allocates nbytes() (> 0) from `mr` in order on home.stream and owns it;
  // RESOURCE_EXHAUSTED naming the resource when it cannot.
  Status allocate_storage(const MemoryResourcePtr& mr, const StreamRef& home);

  // Layout: dl_ MUST stay first (from_dl); every member has the same access so
  // that the class is standard-layout (static_assert in tensor.cpp).
  DLTensor dl_{};
  mutable std::atomic<int32_t> refs_{1};
  types::DType dtype_ = types::DType::F32;
  bool read_only_ = false;
  int64_t numel_ = 0;
  int64_t* dims_ = nullptr;      // shape then strides, 2 * ndim, owned
  Storage* storage_ = nullptr;   // who frees the data
};

/// Row-major strides (in elements) for `shape`.
void row_major_strides(std::span<const int64_t> shape, int64_t* out);
/// Whether strides describe dense row-major storage for shape.
bool is_compact_row_major(std::span<const int64_t> shape, const int64_t* strides);

}  // namespace shapeml::runtime
