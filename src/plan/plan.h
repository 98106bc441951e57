// A GPU dispatch plan: the contract between the compiler's GPU lowering
// (src/lower/gpu, which makes it), the module (which stores it, as text, in a
// JIT module or an AOT shared object) and the CUDA plugin (src/cuda, which
// executes it). Plain data, like IREE's HAL command buffers or TVM's graph
// executor JSON: one plan is one entry point at one binding of its shape
// variables, so every shape in it is concrete.
//
// Buffers ("slots") are the tensors the launches read and write:
//   input i   the call's i-th input tensor (device memory, dense row-major)
//   output i  the call's i-th output tensor (device memory, dense row-major)
//   temp      an intermediate at `offset` bytes into the call's workspace
//             (one allocation per call, `workspace_bytes`, 256-byte aligned
//             offsets); slots whose lifetimes do not overlap share bytes
//   view      bytes of slot `alias` from `offset` on, with another shape
//             (reshape of a dense tensor: offset 0; one part of a merged
//             result: offset > 0): no launch, no copy
//   host_input i / host_output i   a host tensor of a mixed-placement entry
//             (copy_to_device reads one; copy_to_host writes one)
// Launches run in order on the call's stream. The executor allocates nothing
// and never synchronizes the host inside a plan.
//
// Launch kinds (`kernel`) and what they read (every launch also knows the
// dtypes and shapes of its slots, which is how it derives strides):
//   unary     op in {neg abs exp log sqrt rsqrt tanh sigmoid relu gelu silu
//             sin cos not}; 1 in, 1 out
//   binary    op in {add sub mul div max min pow and or}; 2 in (broadcast to out:
//             right-aligned, size-1 dims stretch, missing leading dims), 1 out
//   compare   op in {eq ne lt le gt ge}; 2 in (broadcast), 1 out (bool)
//   select    3 in (cond bool, a, b; broadcast), 1 out
//   cast      1 in, 1 out (dtype of out)
//   fill      0 in, 1 out; `scalar` (also `const`, a rank-0 fill)
//   iota      0 in, 1 out; ints = {axis}
//   matmul    2 in (A [..., M, K], B [..., K, N]; batch dims broadcast as
//             NumPy's), 1 out; op "tf32" allows TF32 tensor cores for f32;
//             ints = {transA, transB} (an operand stored with its last two
//             dims swapped), `scalar` = alpha (0 meaning 1), `flag` 1: the
//             third input is C of the output's shape (out = alpha A B + C);
//             or 3 in, the third a bias [N] added to every row (fused into
//             the cuBLASLt epilogue: `(add (matmul a w) b)`); every floating
//             dtype, bf16 included (f32 compute and scale);
//             or a group (lower/gpu/group_matmuls.h): ints = {transA,
//             transB, k}, 1 + k in (one A [..., M, K], k weights of one
//             shape [K, N] / [N, K]), k out (out i = A B_i), floating, no
//             scale, bias or residual: one batched GEMM over the k weights
//   transpose 1 in, 1 out; ints = the permutation (out dim i = in dim perm[i])
//   reduce    op in {sum max min mean}; 1 in, 1 out; ints = axes (sorted);
//             `flag` = keepdims
//   softmax   op in {softmax log_softmax}; 1 in, 1 out; ints = {axis}; or,
//             with `flag` 1 (causal), ints = {axis, offset}: the axis is the
//             last, and column j of the row at position i of the axis before
//             it reads as -inf when j > i + offset (a causal mask folded in:
//             `(softmax (select (ge (iota 0) (iota 1)) s -inf))`, offset 0)
//   rmsnorm   2 in (x [..., n], g [n]), 1 out of x's shape; `scalar` = eps:
//             x / sqrt(mean(x^2 over the last axis) + eps) * g in one launch
//   gated     op = an activation (a unary op); 2 in (a, b) and 1 out of one
//             shape: act(a) * b in one launch (SwiGLU's silu(x Wg) * (x Wu))
//   repeat    1 in, 1 out; ints = {axis, repeats} (repeat_interleave)
//   gather    2 in (table [V, ...], idx i32/i64), 2 out (the result, and a
//             bounds-check record: a temp i64 [1] slot); see below
//   take_along 2 in (x, idx i32/i64 of x's shape without the axis), 2 out
//             (result, bounds-check record); ints = {axis}
// Index launches check every index against [0, V) on the device: a bad one
// is never read through, and the executor reports the first bad position
// after the plan as OUT_OF_RANGE (it synchronizes the stream at the end of
// such a plan to do so; docs/design/index-checks.md).
//   attention 3 in (q, k, v), 1 out: softmax(q k^T * scale, masked) v per batch
//             and head in one launch, no scores in memory; strided accesses
//             (the head split/merge permutes folded in), grouped-query heads,
//             a causal mask; bf16 or f32, op "tf32": f32 on TF32 tensor
//             cores (plan/attention_launch.h has the ints)
//   concat    n in, 1 out; ints = {axis}
//   fused     0 to 8 in (each broadcast to out), 1 out; ints = an expression
//             program over the inputs, immediates and iota indices
//             (plan/fused_program.h): a group of elementwise launches merged by
//             the compiler (docs/design/gpu-fusion.md); op "-": the plugin's
//             interpreter runs the program, op NAME: the kernel NAME of the
//             plan's code object (below), which the compiler generated for
//             this launch from the same program (docs/design/gpu-generated-kernels.md)
//   slice     1 in, 1 out; ints = {axis, start} (size from out's shape)
//   broadcast 1 in, 1 out (broadcast_to)
//   copy      1 in, 1 out of the same bytes (device to device, host to
//             device or device to host by the slots' kinds)
//   tf32_split  1 in (f32, rank >= 2), 1 out (f32): the operand of an f32
//             matmul run as 3xTF32 (lower/gpu/split_fp32_matmuls.h),
//             its K axis (ints = {axis}, one of the last two) three times as
//             long: three blocks along it, x's TF32 part `hi` and the TF32
//             rounding of the rest `lo = x - hi`, in the order op "lhs":
//             (hi, hi', lo') and op "rhs": (hi, lo', hi'), where a primed
//             part is 0 for a non-finite x (so that inf * 0 never appears:
//             the product of the split operands is hi*hi + hi*lo + lo*hi,
//             and infinities meet only the other's hi, as in fp32)
// `library` names what runs the launch ("cublasLt", "shapeml"), `why` says
// why it was chosen (printed by `shapemlc --emit=gpu-plan`).
//
// Plan-level `graph on|off ; why`: whether a call replays the plan as a CUDA
// graph by default (docs/design/cuda-graphs.md). The planner says `on` when
// the plan can be captured (device slots only: a copy from pageable host
// memory cannot be captured) and the compile option allows it. A plan text
// without the line (made before graph replay existed) reads as `off`.
//
// Plan-level `branches on|off ; why`: whether the graph gives each launch
// only the edges its bytes need (plan/launch_dependencies.h), so that
// independent launches run side by side, or keeps them one chain in plan
// order. Decided with `graph`; a plan text without the line reads as `off`.
//
// Plan-level `code ARCH cubin BASE64 ptx BASE64`: the code object of the
// kernels the compiler generated for this plan (machine code for ARCH, e.g.
// sm_90, and its PTX, which newer GPUs compile when they load it), shipped in
// the plan so that the machine running the module compiles nothing. Absent
// when no launch names a generated kernel.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shapeml::plan {

/// Element types, numbered as types::DType (f32 f64 bf16 i32 i64 bool).
enum class GpuDType : int32_t { F32 = 0, F64 = 1, BF16 = 2, I32 = 3, I64 = 4, Bool = 5 };

/// Bytes per element (bool is one byte).
int64_t gpu_dtype_size(GpuDType d);
const char* gpu_dtype_name(GpuDType d);
std::optional<GpuDType> parse_gpu_dtype(const std::string& s);
/// f32, f64 or bf16.
inline bool gpu_dtype_is_float(GpuDType d) { return d == GpuDType::F32 || d == GpuDType::F64 || d == GpuDType::BF16; }
/// `v` as a floating slot of dtype d holds it (a fill's scalar stored: f32
/// rounds to nearest, bf16 to f32 and then to nearest even; NaN stays NaN).
/// What the planner folds constants to, and what fused kernels are given.
double gpu_stored_value(double v, GpuDType d);
/// The bits of `v` stored in one element of dtype d, low bits first: what a
/// `fill` writes and a fused launch's immediate is (floats round to nearest,
/// bf16 via f32 to nearest even; to an integer, the language's saturating
/// cast, NaN -> 0; to bool, v != 0).
uint64_t gpu_scalar_bits(double v, GpuDType d);

struct GpuSlot {
  enum class Kind { Input, Output, Temp, View, HostInput, HostOutput } kind = Kind::Temp;
  int32_t index = 0;    // Input/Output/HostInput/HostOutput: which one
  int32_t alias = -1;   // View: the slot whose bytes it shares
  GpuDType dtype = GpuDType::F32;
  std::vector<int64_t> shape;
  int64_t offset = 0;  // Temp: byte offset into the workspace; View: byte offset into its alias
  int64_t numel() const;
  int64_t bytes() const { return numel() * gpu_dtype_size(dtype); }
};

/// A slot kind's name in the plan text ("input", "host_output", ...).
const char* slot_kind_name(GpuSlot::Kind k);

/// What a launch runs (the list above); its text name is the plan text's.
enum class LaunchKind : int32_t {
  Unary, Binary, Compare, Select, Cast, Fill, Iota, Matmul, Transpose, Reduce, Softmax, Scan, RmsNorm, Gated, Repeat, Gather,
  TakeAlong, Attention, Concat, Fused, Slice, Broadcast, Copy, Tf32Split
};
/// The kind's name in the plan text ("take_along", "rmsnorm", ...).
const char* launch_kind_name(LaunchKind k);
std::optional<LaunchKind> parse_launch_kind(const std::string& s);
/// The op of a `reduce` launch numbered as the kernels number it (sum 0,
/// max 1, mean 2, min 3), and of a `softmax` launch (softmax 0,
/// log_softmax 1); -1 for any other name. (Unary, binary and compare ops:
/// plan/fused_program.h's op_number.)
int reduce_op_number(const std::string& op);
int softmax_op_number(const std::string& op);

/// Whether a launch of kind k reads indices and checks their bounds (gather,
/// take_along): it writes a bounds-check record, and the call reads it.
inline bool checks_indices(LaunchKind k) { return k == LaunchKind::Gather || k == LaunchKind::TakeAlong; }

struct GpuLaunch {
  LaunchKind kind = LaunchKind::Copy;  // see the list above
  std::string op;      // unary/binary/compare/reduce: which one
  std::vector<int32_t> inputs, outputs;  // slot indices
  std::vector<int64_t> ints;
  double scalar = 0;   // fill
  bool flag = false;   // reduce: keepdims
  std::string library = "shapeml";
  std::string why;
};

struct GpuPlan {
  std::string entry;
  int32_t device = 0;
  std::map<std::string, int64_t> binding;
  int64_t workspace_bytes = 0;
  int32_t num_inputs = 0, num_outputs = 0;
  std::vector<GpuSlot> slots;
  std::vector<GpuLaunch> launches;
  /// Whether calls replay the plan as a CUDA graph by default, and why.
  bool graph = false;
  std::string graph_why = "not recorded (a plan made before graph replay)";
  /// Whether the graph runs launches that share no bytes side by side
  /// (plan/launch_dependencies.h), and why; off: one chain, in plan order.
  bool branches = false;
  std::string branches_why = "not recorded (a plan made before graph branches)";
  /// The generated kernels' code object (the `code` line): "" when none.
  std::string code_arch;   // "sm_90"
  std::string code_cubin;  // machine code for code_arch (bytes)
  std::string code_ptx;    // the same kernels as PTX (text)

  /// The slot whose bytes slot `s` is (a view's alias, transitively), and
  /// where in it `s` starts, in bytes (views may sit at an offset).
  int32_t root(int32_t s) const {
    while (slots[static_cast<size_t>(s)].kind == GpuSlot::Kind::View) s = slots[static_cast<size_t>(s)].alias;
    return s;
  }
  int64_t offset_in_root(int32_t s) const {
    int64_t off = 0;
    for (; slots[static_cast<size_t>(s)].kind == GpuSlot::Kind::View; s = slots[static_cast<size_t>(s)].alias) off += slots[static_cast<size_t>(s)].offset;
    return off;
  }

  /// The plan as text: one line per slot and per launch, stable and
  /// round-trippable (parse(to_text()) == *this). Also what
  /// `--emit=gpu-plan` prints, with `why` as comments.
  std::string to_text() const;
  /// Parses to_text()'s format and runs the plan verifier (plan/verify.h)
  /// on the result; nullopt with `error` naming the line or the defect.
  /// `over_limit`, when given, says whether the defect is a kernel limit
  /// (a valid plan this executor cannot run) rather than a malformed plan.
  static std::optional<GpuPlan> parse(const std::string& text, std::string& error, bool* over_limit = nullptr);
};

}  // namespace shapeml::plan
