// The plan executor (executor.h): plan_create parses and checks a dispatch
// plan and prepares every launch once (resolved shapes, coalesced broadcast
// strides, grid sizes, cuBLASLt descriptors and algorithms); plan_execute
// only resolves slot pointers and enqueues. See docs/design/gpu-kernels.md.
#include "cuda/executor/executor.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#ifndef SHAPEML_INSTRUMENTATION
#define SHAPEML_INSTRUMENTATION 1
#endif
#if SHAPEML_INSTRUMENTATION
#include <nvtx3/nvToolsExt.h>  // header-only (NVTX3): no library to link
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "plan/attention_launch.h"
#include "plan/launch_dependencies.h"
#include "plan/fused_program.h"
#include "plan/geometry.h"
#include "plan/plan.h"
#include "plan/verify.h"
#include "cuda/cuda_error.h"
#include "cuda/executor/cudnn_attention.h"
#include "cuda/executor/device_guard.h"
#include "cuda/executor/grid.cuh"
#include "cuda/executor/kernels.h"
#include "cuda/executor/lt_tuning.h"

namespace {

using shapeml::plan::GpuDType;
using shapeml::plan::GpuLaunch;
using shapeml::plan::GpuPlan;
using shapeml::plan::GpuSlot;
using shapeml::cuda::DeviceGuard;
namespace kern = shapeml::cuda::kern;
namespace plan = shapeml::plan;

// The plan's fused encoding and the kernel's POD number kinds alike.
constexpr bool same_kind(int a, int b) { return a == b; }
static_assert(same_kind(shapeml::plan::fused::kLoad, kern::FK_LOAD) && same_kind(shapeml::plan::fused::kConst, kern::FK_CONST) &&
              same_kind(shapeml::plan::fused::kIota, kern::FK_IOTA) && same_kind(shapeml::plan::fused::kUnary, kern::FK_UNARY) &&
              same_kind(shapeml::plan::fused::kBinary, kern::FK_BINARY) && same_kind(shapeml::plan::fused::kCompare, kern::FK_COMPARE) &&
              same_kind(shapeml::plan::fused::kSelect, kern::FK_SELECT) && same_kind(shapeml::plan::fused::kCast, kern::FK_CAST));
static_assert(shapeml::plan::fused::kMaxNodes == kern::kFusedMaxNodes && shapeml::plan::fused::kMaxInputs == kern::kFusedMaxInputs &&
              shapeml::plan::fused::kMaxInputs + shapeml::plan::fused::kMaxIotaAxes <= kern::kFusedMaxOperands);
static_assert(kern::U_NEG == 0 && kern::U_ABS == 1 && kern::U_RELU == 8 && kern::U_ERF + 1 == shapeml::plan::fused::kUnaryNot &&
                  kern::B_POW == 6 && kern::kFusedAnd == shapeml::plan::fused::kBinaryAnd && kern::kFusedOr == shapeml::plan::fused::kBinaryOr &&
                  kern::C_GE == 5,
              "plan/fused_program.h numbers ops as kernels.h does");
static_assert(kern::R_SUM == 0 && kern::R_MAX == 1 && kern::R_MEAN == 2 && kern::R_MIN == 3, "plan::reduce_op_number numbers as kernels.h");

// include/shapeml.h status numbering (plugin_api.h).
constexpr int32_t kOk = 0, kInvalidArgument = 1, kResourceExhausted = 2, kUnimplemented = 6, kUnavailable = 7, kInternal = 8, kFailedPrecondition = 9,
                  kOutOfRange = 11;

int32_t write_err(char* err, size_t err_size, int32_t code, const std::string& msg) {
  if (err && err_size > 0) {
    size_t n = std::min(msg.size(), err_size - 1);
    std::memcpy(err, msg.data(), n);
    err[n] = '\0';
  }
  return code;
}

// One CUDA-to-status map for the plugin (cuda_error.h).
int32_t cuda_code(cudaError_t e) { return shapeml::cuda::status_code_of(e); }

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

int32_t cublas_code(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_ALLOC_FAILED: return kResourceExhausted;
    case CUBLAS_STATUS_NOT_INITIALIZED: return kUnavailable;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH: return kUnimplemented;
    default: return kInternal;
  }
}

std::string cublas_text(cublasStatus_t s) { return std::string("cublasStatus ") + std::to_string(static_cast<int>(s)); }

// A failure while preparing a plan: a status code and its message.
struct Failure {
  int32_t code = kOk;
  std::string msg;
};

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// ---- where a slot's bytes are: a caller buffer or the workspace, plus bytes.
struct SlotRef {
  bool in_workspace = false;
  bool host = false;   // host_input / host_output
  int32_t buffer = 0;  // index into buffers[] (inputs first, then outputs)
  int64_t offset = 0;  // bytes
  int64_t bytes = 0;   // the slot's size
};

struct Operand {
  int32_t slot = -1;
  int64_t extra = 0;  // bytes past the slot's start (slice, concat pieces)
};

// One enqueued operation. Most launches are one step; concat is one per piece.
struct Step {
  enum class Kind {
    Noop, Unary, Binary, Compare, Logical, LogicalNot, Select, Cast, Fill, Iota, Strided, Tiled, Reduce, Softmax, Scan, Gather, TakeAlong,
    MatmulLt, MatmulInt, Memcpy, MemsetZero, Fused, RmsNorm, Gated, StridedGroup, Attention, Tf32Split
  } kind = Kind::Noop;
  int32_t op = 0;
  kern::DT dt = kern::DT::F32, dt_to = kern::DT::F32;
  int64_t esize = 0, n = 0;
  bool same = false;
  bool reverse = false;  // scan
  kern::Geom geom;
  kern::ReduceGeom rgeom;
  Operand in[3];
  Operand out;
  uint64_t bits = 0;                 // fill
  int64_t dim = 0, inner = 0;        // iota
  // tiled transpose, matmul; softmax, scan: batch = outer, rows = n, cols = inner;
  // gather: rows = indices, cols = row size, kdim = V; take_along: batch =
  // outer, kdim = V, cols = inner
  int64_t batch = 0, rows = 0, cols = 0, kdim = 0, stride_a = 0, stride_b = 0;
  Operand check;                     // gather, take_along: the bounds-check record
  int64_t bytes = 0;                 // memcpy / memset
  cudaMemcpyKind copy_kind = cudaMemcpyDeviceToDevice;
  int32_t lt = -1;                   // index into plan->lt
  bool bias = false;                 // matmul: in[2] is a bias [N] added to every row (cuBLASLt epilogue)
  bool tf32 = false;                 // matmul: f32 inputs through TF32 tensor cores
  bool trans_a = false, trans_b = false;  // matmul: A stored as [..., K, M], B as [..., N, K]
  bool accumulate = false;           // matmul: in[2] is C of the output's shape: out = A B + C
  double alpha = 1;                  // matmul: out = alpha A B (+ bias or C); the launch's scalar, 0 meaning 1
  bool reuse_lt = false;             // matmul: one more piece of the previous step's GEMM (same descriptors)
  int32_t fused = -1;                // index into plan->fused
  kern::Mask mask;                   // softmax: the causal mask folded in (rows 0: none)
  double eps = 0;                    // rmsnorm
  int32_t group = 0;                 // strided group: how many (input, output) pairs
  Operand group_in[kern::kMaxCopyGroup], group_out[kern::kMaxCopyGroup];
  kern::Attention attention;         // attention: all but the pointers (in[0..2], out; their offsets in `extra`)
  std::shared_ptr<shapeml::cuda::CudnnAttention> cudnn;  // attention: cuDNN's plan, when it runs the launch (create())
  int64_t cudnn_ws = 0;              // its workspace: bytes from the plan's library region (lt_offset), its own
  // matmul group (plan.h): A is in[0]; the weights and results; where its
  // pointer table lies (bytes from the plan's table region, see create())
  int32_t gemm_group = 0;
  Operand gemm_w[shapeml::plan::kMaxGemmGroup], gemm_out[shapeml::plan::kMaxGemmGroup];
  int64_t table = 0;
};

// A fused launch, prepared: the decoded program, the coalesced geometry
// (inputs, then one pseudo-operand per iota axis) and the input slots.
struct FusedPrep {
  kern::FusedProgram prog;
  kern::FusedGeom geom;
  std::vector<int32_t> inputs;
  std::string generated;           // the launch's op: its kernel in the plan's code object ("" = interpret)
  cudaKernel_t kernel = nullptr;   // that kernel, loaded; null: the interpreter runs the program
};

// A bounds check to read back after the plan: where the record is, and what
// to say about a bad index.
struct IndexCheck {
  std::string name;   // "launch 3 (gather)"
  std::string where;  // the launch's `why` (the source operation)
  Operand record;
  int32_t idx_slot = -1;
  std::vector<int64_t> idx_shape;
  bool idx_i64 = true;
  int64_t bound = 0;  // V
};

struct Prepared {
  std::string name;  // "launch 3 (binary add)"
  std::string kernel, library;  // the plan's, for trace spans
  std::vector<Step> steps;
  std::vector<int32_t> reads, writes;  // the launch's slots (graph branches: plan/launch_dependencies.h)
};

// A cuBLASLt matmul, prepared: descriptors and two algorithms (one for
// 16-byte-aligned base pointers, one for any element-aligned pointers).
struct LtMatmul {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;  // column-major views (see prepare_lt)
  cublasLtMatmulAlgo_t algo_aligned{}, algo_any{};
  size_t ws_aligned = 0, ws_any = 0;
  int64_t ws_offset = 0;  // its own part of the cuBLASLt region (bytes from lt_offset); see create()
  bool has_aligned = false, has_any = false;
  bool f64 = false;
  bool bias = false;
  std::string choice;  // how the aligned variant's algorithm was chosen (lt_tuning.h)
  // The bias pointer is a descriptor attribute, set per call: a plan run
  // from several threads at once takes turns setting it and enqueueing.
  std::shared_ptr<std::mutex> bias_mu = std::make_shared<std::mutex>();
};

}  // namespace

struct shapeml_cuda_plan {
  int32_t device = 0;
  int max_blocks = 1024;
  int32_t num_inputs = 0, num_outputs = 0;
  int64_t plan_workspace = 0;  // the plan's own temps
  int64_t lt_offset = 0;       // where cuBLASLt's region starts in the workspace
  int64_t lt_bytes = 0;        // its size
  std::vector<SlotRef> slots;
  std::vector<Prepared> launches;
  std::vector<LtMatmul> lt;
  std::vector<IndexCheck> checks;
  std::vector<FusedPrep> fused;
  cudaLibrary_t code = nullptr;  // the plan's generated kernels (its `code` line), loaded
  cublasLtHandle_t lt_handle = nullptr;
  shapeml::cuda::PlanGraphFacts graph;  // for graph replay (graph.h)
  // GPU timing (observer flag 2): a begin and an end event per launch, made
  // on the first timed execution; `timing_mu` serializes timed executions.
  std::vector<cudaEvent_t> events;
  std::mutex timing_mu;

  ~shapeml_cuda_plan() {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    for (LtMatmul& m : lt) {
      if (m.la) cublasLtMatrixLayoutDestroy(m.la);
      if (m.lb) cublasLtMatrixLayoutDestroy(m.lb);
      if (m.lc) cublasLtMatrixLayoutDestroy(m.lc);
      if (m.desc) cublasLtMatmulDescDestroy(m.desc);
    }
    if (lt_handle) cublasLtDestroy(lt_handle);
    if (code) cudaLibraryUnload(code);
  }
};

namespace {

// ---- shapes and strides (plan/geometry.h) --------------------------------

using shapeml::plan::broadcast_strides;
using shapeml::plan::dense_strides;
using shapeml::plan::numel;
using shapeml::plan::Shape;
using shapeml::plan::shape_str;

// The coalesced iteration space as the kernels' POD; false above kMaxRank.
bool coalesce(const Shape& shape, const std::vector<Shape>& strides, kern::Geom& g) {
  const size_t nops = strides.size();
  Shape sh;
  std::vector<Shape> st;
  shapeml::plan::coalesce_dims(shape, strides, sh, st);
  if (sh.size() > static_cast<size_t>(kern::kMaxRank)) return false;
  g = kern::Geom{};
  g.rank = static_cast<int32_t>(sh.size());
  for (size_t d = 0; d < sh.size(); ++d) {
    g.shape[d] = sh[d];
    for (size_t k = 0; k < nops; ++k) g.stride[k][d] = st[k][d];
  }
  return true;
}

bool is_int(GpuDType d) { return d == GpuDType::I32 || d == GpuDType::I64; }
kern::DT to_dt(GpuDType d) { return static_cast<kern::DT>(static_cast<int32_t>(d)); }
using plan::gpu_dtype_is_float;
using plan::gpu_scalar_bits;

// The kernels' unary (not `not`) and binary (not `and`, `or`) op numbers, by
// the one name table of plan/fused_program.h.
int unary_op_number(const std::string& op) {
  int n = shapeml::plan::fused::op_number(shapeml::plan::fused::kUnary, op);
  return n < shapeml::plan::fused::kUnaryNot ? n : -1;
}
int binary_op_number(const std::string& op) {
  int n = shapeml::plan::fused::op_number(shapeml::plan::fused::kBinary, op);
  return n < shapeml::plan::fused::kBinaryAnd ? n : -1;
}

// ---- preparing launches (host only: no device needed) --------------------
//
// plan_create runs the plan verifier (plan/verify.h, through
// GpuPlan::parse) before any of this: every dtype, shape, axis, operand
// count and kernel limit below has been checked, so preparing a launch only
// computes what its kernels take (coalesced strides, grid sizes, cuBLASLt
// descriptors). A geometry that still does not fit is a verifier bug and is
// reported as INTERNAL, never run.

struct Builder {
  const GpuPlan& plan;
  Failure fail;
  std::vector<IndexCheck> checks;
  std::vector<FusedPrep> fused;

  const GpuSlot& slot(int32_t i) const { return plan.slots[static_cast<size_t>(i)]; }

  bool geom(const std::string& where, const Shape& shape, const std::vector<Shape>& strides, kern::Geom& g) {
    if (coalesce(shape, strides, g)) return true;
    fail = {kInternal, where + ": internal: the plan verifier let through " + shape_str(shape) + ", which does not coalesce to " +
                           std::to_string(kern::kMaxRank) + " dimensions"};
    return false;
  }

  // A fused launch: its program decoded node by node into the kernel's POD,
  // with the immediates converted as a fill converts its scalar and iota
  // axes turned into pseudo-operands.
  bool prepare_fused(const GpuLaunch& l, const GpuSlot& out, Step& st, const std::string& w) {
    namespace F = shapeml::plan::fused;
    std::vector<F::Node> nodes;
    F::decode(l.ints, nodes);
    std::vector<Shape> shapes;
    for (int32_t s : l.inputs) shapes.push_back(slot(s).shape);
    F::Operands ops;  // the inputs' broadcast strides, then one pseudo-operand per iota axis
    F::operands(nodes, shapes, out.shape, ops);  // verified: every input broadcasts
    const std::vector<Shape>& strides = ops.strides;
    FusedPrep f;
    f.inputs = l.inputs;
    f.generated = l.op;
    f.prog.n = static_cast<int32_t>(nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) {
      const F::Node& n = nodes[k];
      kern::FusedNode& d = f.prog.node[k];
      d.kind = static_cast<int8_t>(n.kind);  // F::Kind and kern::FusedKind agree (static_asserts above)
      d.op = static_cast<int8_t>(n.op < 0 ? 0 : n.op);
      d.dt = static_cast<int8_t>(n.dtype);
      d.sdt = d.dt;
      auto node_ref = [](int64_t i) { return static_cast<int16_t>(i < 0 ? 0 : i); };
      switch (n.kind) {
        case F::kLoad: d.a = static_cast<int16_t>(n.a); break;
        case F::kConst: f.prog.imm[k] = gpu_scalar_bits(F::bits_double(n.a), n.dtype); break;
        case F::kIota: d.a = static_cast<int16_t>(ops.iota_operand[k]); break;
        default:
          d.a = node_ref(n.a), d.b = node_ref(n.b), d.c = node_ref(n.c);
          if (n.kind == F::kCompare || n.kind == F::kCast) d.sdt = static_cast<int8_t>(nodes[static_cast<size_t>(n.a)].dtype);
          break;
      }
    }
    Shape sh;
    std::vector<Shape> cst;
    plan::coalesce_dims(out.shape, strides, sh, cst);
    if (sh.size() > static_cast<size_t>(kern::kMaxRank) || strides.size() > static_cast<size_t>(kern::kFusedMaxOperands)) {
      fail = {kInternal, w + ": internal: the plan verifier let through a fused launch over the kernel's limits"};
      return false;
    }
    f.geom.rank = static_cast<int32_t>(sh.size());
    f.geom.nops = static_cast<int32_t>(strides.size());
    for (size_t d = 0; d < sh.size(); ++d) {
      f.geom.shape[d] = sh[d];
      for (size_t k = 0; k < strides.size(); ++k) f.geom.stride[k][d] = cst[k][d];
    }
    st.kind = st.n == 0 ? Step::Kind::Noop : Step::Kind::Fused;
    st.fused = static_cast<int32_t>(fused.size());
    fused.push_back(std::move(f));
    return true;
  }

  bool prepare(const GpuLaunch& l, Prepared& p) {
    using K = plan::LaunchKind;
    const std::string& w = p.name;
    const GpuSlot& out = slot(l.outputs[0]);
    Step st;
    st.out.slot = l.outputs[0];
    for (size_t i = 0; i < l.inputs.size() && i < 3; ++i) st.in[i].slot = l.inputs[i];
    st.esize = gpu_dtype_size(out.dtype);
    st.n = out.numel();
    st.dt = to_dt(out.dtype);

    switch (l.kind) {
      case K::Unary: {
        if (l.op == "not") {
          st.kind = Step::Kind::LogicalNot;
          break;
        }
        st.kind = Step::Kind::Unary;
        st.op = unary_op_number(l.op);
        break;
      }
      case K::Binary:
      case K::Compare: {
        const GpuSlot& a = slot(l.inputs[0]);
        const GpuSlot& b = slot(l.inputs[1]);
        const bool cmp = l.kind == K::Compare;
        const int lop = cmp ? -1 : l.op == "and" ? 0 : l.op == "or" ? 1 : -1;
        Shape sa, sb;
        broadcast_strides(a.shape, out.shape, sa);
        broadcast_strides(b.shape, out.shape, sb);
        if (!geom(w, out.shape, {sa, sb}, st.geom)) return false;
        st.same = st.geom.rank == 1 && st.geom.stride[0][0] == 1 && st.geom.stride[1][0] == 1;
        st.kind = cmp ? Step::Kind::Compare : lop >= 0 ? Step::Kind::Logical : Step::Kind::Binary;
        st.op = lop >= 0 ? lop : cmp ? shapeml::plan::fused::op_number(shapeml::plan::fused::kCompare, l.op) : binary_op_number(l.op);
        st.dt = to_dt(a.dtype);
        break;
      }
      case K::Select: {
        Shape sc, sa, sb;
        broadcast_strides(slot(l.inputs[0]).shape, out.shape, sc);
        broadcast_strides(slot(l.inputs[1]).shape, out.shape, sa);
        broadcast_strides(slot(l.inputs[2]).shape, out.shape, sb);
        if (!geom(w, out.shape, {sc, sa, sb}, st.geom)) return false;
        st.kind = Step::Kind::Select;
        break;
      }
      case K::Cast: {
        const GpuSlot& a = slot(l.inputs[0]);
        if (a.dtype == out.dtype) {
          st.kind = Step::Kind::Memcpy;
          st.bytes = out.bytes();
        } else {
          st.kind = Step::Kind::Cast;
          st.dt = to_dt(a.dtype);
          st.dt_to = to_dt(out.dtype);
        }
        break;
      }
      case K::Fill:
        st.kind = Step::Kind::Fill;
        st.bits = gpu_scalar_bits(l.scalar, out.dtype);
        break;
      case K::Iota: {
        int64_t axis = l.ints[0] < 0 ? l.ints[0] + static_cast<int64_t>(out.shape.size()) : l.ints[0];
        st.kind = st.n == 0 ? Step::Kind::Noop : Step::Kind::Iota;
        st.dim = out.shape[static_cast<size_t>(axis)];
        st.inner = 1;
        for (size_t d = static_cast<size_t>(axis) + 1; d < out.shape.size(); ++d) st.inner *= out.shape[d];
        break;
      }
      case K::Fused:
        if (!prepare_fused(l, out, st, w)) return false;
        break;
      case K::Transpose:
        if (!prepare_transpose(l, st, w)) return false;
        break;
      case K::Broadcast: {
        Shape sa;
        broadcast_strides(slot(l.inputs[0]).shape, out.shape, sa);
        if (!geom(w, out.shape, {dense_strides(out.shape), sa}, st.geom)) return false;
        st.kind = Step::Kind::Strided;
        break;
      }
      case K::Slice: {
        const GpuSlot& a = slot(l.inputs[0]);
        const size_t r = a.shape.size();
        const size_t ax = static_cast<size_t>(l.ints[0] < 0 ? l.ints[0] + static_cast<int64_t>(r) : l.ints[0]);
        Shape in_st = dense_strides(a.shape);
        st.in[0].extra = l.ints[1] * in_st[ax] * st.esize;
        if (!geom(w, out.shape, {dense_strides(out.shape), in_st}, st.geom)) return false;
        st.kind = Step::Kind::Strided;
        break;
      }
      case K::Concat: return prepare_concat(l, st, p);
      case K::Copy: {
        const GpuSlot& a = slot(l.inputs[0]);
        bool hin = a.kind == GpuSlot::Kind::HostInput || a.kind == GpuSlot::Kind::HostOutput;
        bool hout = out.kind == GpuSlot::Kind::HostInput || out.kind == GpuSlot::Kind::HostOutput;
        st.kind = Step::Kind::Memcpy;
        st.bytes = out.bytes();
        st.copy_kind = hin ? (hout ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice) : (hout ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
        break;
      }
      case K::Reduce:
        if (!prepare_reduce(l, st, w)) return false;
        break;
      case K::Matmul: return prepare_matmul(l, st, p);
      case K::Softmax: prepare_softmax(l, st); break;
      case K::Scan: {
        size_t ax;
        axis_split(slot(l.inputs[0]).shape, l.ints[0], st.batch, st.rows, st.cols, ax);
        st.reverse = l.flag;
        st.kind = st.n == 0 ? Step::Kind::Noop : Step::Kind::Scan;
        st.dt = to_dt(slot(l.inputs[0]).dtype);
        break;
      }
      case K::RmsNorm:  // x / sqrt(mean(x^2) + eps) * g over the last axis (docs/design/gpu-fused-kernels.md)
        st.cols = slot(l.inputs[0]).shape.back();
        st.rows = st.cols == 0 ? 0 : st.n / st.cols;
        st.eps = l.scalar;
        st.kind = st.n == 0 ? Step::Kind::Noop : Step::Kind::RmsNorm;
        break;
      case K::Gated:  // act(a) * b, dense, one shape
        st.op = unary_op_number(l.op);
        st.kind = st.n == 0 ? Step::Kind::Noop : Step::Kind::Gated;
        break;
      case K::Repeat:
        if (!prepare_repeat(l, st, w)) return false;
        break;
      case K::Attention: prepare_attention(l, st); break;
      case K::Tf32Split: {  // [outer, n, inner] -> [outer, 3n, inner] along the K axis (plan.h)
        size_t ax;
        axis_split(slot(l.inputs[0]).shape, l.ints[0], st.batch, st.rows, st.cols, ax);
        st.op = l.op == "rhs" ? 1 : 0;
        st.kind = st.n == 0 ? Step::Kind::Noop : Step::Kind::Tf32Split;
        break;
      }
      case K::Gather:
      case K::TakeAlong: prepare_index(l, st, w); break;
    }
    if (st.kind == Step::Kind::Memcpy && st.bytes == 0) st.kind = Step::Kind::Noop;
    if (st.kind != Step::Kind::Noop) p.steps.push_back(st);
    return true;
  }

  bool prepare_transpose(const GpuLaunch& l, Step& st, const std::string& w) {
    const GpuSlot& a = slot(l.inputs[0]);
    const GpuSlot& out = slot(l.outputs[0]);
    const size_t r = a.shape.size();
    Shape in_dense = dense_strides(a.shape), in_st(r);
    for (size_t i = 0; i < r; ++i) in_st[i] = in_dense[static_cast<size_t>(l.ints[i])];
    if (!geom(w, out.shape, {dense_strides(out.shape), in_st}, st.geom)) return false;
    const kern::Geom& g = st.geom;
    // A batched 2-D transpose after coalescing: out [B, C, R] from in [B, R, C].
    int64_t B = 1, C = 0, R = 0;
    bool tiled = false;
    if (g.rank == 2 && g.stride[1][0] == 1 && g.stride[1][1] == g.shape[0]) {
      C = g.shape[0], R = g.shape[1], tiled = true;
    } else if (g.rank == 3 && g.stride[1][1] == 1 && g.stride[1][2] == g.shape[1] && g.stride[1][0] == g.shape[1] * g.shape[2]) {
      B = g.shape[0], C = g.shape[1], R = g.shape[2], tiled = true;
    }
    if (l.inputs.size() > 1) {  // one launch for the group (the planner groups only permutes that keep the last axis)
      st.kind = Step::Kind::StridedGroup;
      st.group = static_cast<int32_t>(l.inputs.size());
      for (size_t k = 0; k < l.inputs.size(); ++k) st.group_in[k] = Operand{l.inputs[k], 0}, st.group_out[k] = Operand{l.outputs[k], 0};
    } else if (tiled && B <= 65535 && (R + 31) / 32 <= 65535) {
      st.kind = Step::Kind::Tiled;
      st.batch = B, st.rows = R, st.cols = C;
    } else {
      st.kind = Step::Kind::Strided;
    }
    return true;
  }

  bool prepare_concat(const GpuLaunch& l, Step& st, Prepared& p) {
    const std::string& w = p.name;
    const GpuSlot& out = slot(l.outputs[0]);
    const size_t r = out.shape.size();
    const size_t ax = static_cast<size_t>(l.ints[0] < 0 ? l.ints[0] + static_cast<int64_t>(r) : l.ints[0]);
    Shape out_st = dense_strides(out.shape);
    bool equal = l.inputs.size() >= 2 && l.inputs.size() <= static_cast<size_t>(kern::kMaxCopyGroup);
    for (int32_t s : l.inputs) equal &= slot(s).shape == slot(l.inputs[0]).shape;
    if (equal) {
      // Pieces of one shape (a merged GEMM's weights): one launch of the
      // grouped copy, each piece at its offset along the axis.
      const GpuSlot& a = slot(l.inputs[0]);
      st.kind = Step::Kind::StridedGroup;
      st.n = a.numel();
      st.group = static_cast<int32_t>(l.inputs.size());
      for (size_t k = 0; k < l.inputs.size(); ++k)
        st.group_in[k] = Operand{l.inputs[k], 0}, st.group_out[k] = Operand{l.outputs[0], static_cast<int64_t>(k) * a.shape[ax] * out_st[ax] * st.esize};
      if (!geom(w, a.shape, {out_st, dense_strides(a.shape)}, st.geom)) return false;
      if (st.n > 0) p.steps.push_back(st);
      return true;
    }
    int64_t at = 0;
    for (int32_t s : l.inputs) {
      const GpuSlot& a = slot(s);
      Step piece = st;
      piece.kind = Step::Kind::Strided;
      piece.in[0] = Operand{s, 0};
      piece.out.extra = at * out_st[ax] * st.esize;
      piece.n = a.numel();
      if (!geom(w, a.shape, {out_st, dense_strides(a.shape)}, piece.geom)) return false;
      if (piece.n > 0) p.steps.push_back(piece);
      at += a.shape[ax];
    }
    return true;
  }

  bool prepare_reduce(const GpuLaunch& l, Step& st, const std::string& w) {
    const GpuSlot& a = slot(l.inputs[0]);
    const size_t r = a.shape.size();
    std::vector<bool> red(r, false);
    for (int64_t x : l.ints) red[static_cast<size_t>(x < 0 ? x + static_cast<int64_t>(r) : x)] = true;
    Shape in_st = dense_strides(a.shape), ks, kst, rs, rst;
    for (size_t d = 0; d < r; ++d) {
      (red[d] ? rs : ks).push_back(a.shape[d]);
      (red[d] ? rst : kst).push_back(in_st[d]);
    }
    kern::Geom kg, rg;
    if (!geom(w, ks, {kst}, kg) || !geom(w, rs, {rst}, rg)) return false;
    kern::ReduceGeom& g = st.rgeom;
    g.keep_rank = kg.rank;
    g.red_rank = rg.rank;
    for (int d = 0; d < kg.rank; ++d) g.keep_shape[d] = kg.shape[d], g.keep_stride[d] = kg.stride[0][d];
    for (int d = 0; d < rg.rank; ++d) g.red_shape[d] = rg.shape[d], g.red_stride[d] = rg.stride[0][d];
    g.n_out = numel(ks);
    g.n_red = numel(rs);
    bool inner_kept = g.keep_stride[g.keep_rank - 1] == 1 && g.keep_shape[g.keep_rank - 1] > 1;
    g.block_per_output = !inner_kept && g.n_red >= 32;
    st.kind = g.n_out == 0 ? Step::Kind::Noop : Step::Kind::Reduce;
    st.op = shapeml::plan::reduce_op_number(l.op);  // numbered as kern::ReduceOp (static_assert above)
    st.dt = to_dt(a.dtype);
    return true;
  }

  // The axis of a launch (ints[0], negative from the end; the verifier
  // checked it) as [outer, n, inner] sizes of `shape`.
  static void axis_split(const Shape& shape, int64_t axis_in, int64_t& outer, int64_t& n, int64_t& inner, size_t& ax) {
    const int64_t r = static_cast<int64_t>(shape.size());
    ax = static_cast<size_t>(axis_in < 0 ? axis_in + r : axis_in);
    outer = 1, inner = 1, n = shape[ax];
    for (size_t d = 0; d < ax; ++d) outer *= shape[d];
    for (size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
  }

  void prepare_softmax(const GpuLaunch& l, Step& st) {
    const GpuSlot& a = slot(l.inputs[0]);
    size_t ax;
    axis_split(a.shape, l.ints[0], st.batch, st.rows, st.cols, ax);
    if (l.flag) {
      // Causal: column j of the row at position i along the axis before
      // the softmax axis is masked (-inf) when j > i + offset.
      st.mask.rows = a.shape[ax - 1];
      st.mask.offset = l.ints[1];
      if (st.mask.rows == 0) st.mask.rows = 1;  // no rows at all: nothing runs (st.n == 0)
    }
    st.kind = st.n == 0 ? Step::Kind::Noop : Step::Kind::Softmax;
    st.op = shapeml::plan::softmax_op_number(l.op);  // 1: log_softmax
    st.dt = to_dt(a.dtype);
  }

  // Fused attention: the kernel's arguments from the launch's layout
  // (plan/attention_launch.h; the verifier ran check_attention).
  void prepare_attention(const GpuLaunch& l, Step& st) {
    shapeml::plan::AttentionLayout a;
    a.from_ints(l.ints);
    kern::Attention& k = st.attention;
    k.batch = a.batch, k.heads = a.heads, k.group = a.group, k.sq = a.sq, k.sk = a.sk, k.dh = a.dh;
    k.scale = static_cast<float>(l.scalar);
    k.causal = l.flag;
    k.offset = a.offset;
    const shapeml::plan::AttentionAccess* acc[4] = {&a.q, &a.k, &a.v, &a.o};
    for (int i = 0; i < 4; ++i) {
      k.stride[i][0] = acc[i]->batch, k.stride[i][1] = acc[i]->head, k.stride[i][2] = acc[i]->row;
      (i < 3 ? st.in[i] : st.out).extra = acc[i]->offset * st.esize;
    }
    st.tf32 = l.op == "tf32";
    st.kind = Step::Kind::Attention;
  }

  // repeat_interleave: out [pre, d*r, post] read as [pre, d, r, post] from
  // in [pre, d, post] with stride 0 along r: a strided copy.
  bool prepare_repeat(const GpuLaunch& l, Step& st, const std::string& w) {
    int64_t pre, d, post, r = l.ints[1];
    size_t ax;
    axis_split(slot(l.inputs[0]).shape, l.ints[0], pre, d, post, ax);
    Shape four = {pre, d, r, post};
    if (!geom(w, four, {dense_strides(four), Shape{d * post, post, 0, 1}}, st.geom)) return false;
    st.kind = Step::Kind::Strided;
    return true;
  }

  void prepare_index(const GpuLaunch& l, Step& st, const std::string& w) {
    const GpuSlot& x = slot(l.inputs[0]);
    const GpuSlot& idx = slot(l.inputs[1]);
    IndexCheck c;
    c.name = w;
    c.where = l.why;
    c.record = Operand{l.outputs[1], 0};
    c.idx_slot = l.inputs[1];
    c.idx_shape = idx.shape;
    c.idx_i64 = idx.dtype == GpuDType::I64;
    st.check = c.record;
    st.dt = to_dt(idx.dtype);
    if (l.kind == plan::LaunchKind::Gather) {
      st.kind = Step::Kind::Gather;
      st.rows = numel(idx.shape);
      st.cols = numel(Shape(x.shape.begin() + 1, x.shape.end()));
      st.kdim = x.shape[0];
    } else {
      size_t ax;
      axis_split(x.shape, l.ints[0], st.batch, st.kdim, st.cols, ax);
      st.kind = Step::Kind::TakeAlong;
    }
    c.bound = st.kdim;
    checks.push_back(std::move(c));
  }

  // Batch dims broadcast as NumPy's (plan::matmul_geometry):
  //   B shared ([K, N] or all batch dims 1), A not broadcast: one GEMM with
  //   the batch folded into M (A is dense);
  //   otherwise strided batched GEMMs over the coalesced batch space: the
  //   innermost coalesced batch dim is the GEMM's batch (stride 0 where an
  //   operand is broadcast), one GEMM per index of the outer ones.
  bool prepare_matmul(const GpuLaunch& l, Step& st, Prepared& p) {
    if (l.ints.size() == 3) {  // a group: one pointer-array batched GEMM over the weights
      st.gemm_group = static_cast<int32_t>(l.ints[2]);
      for (int32_t i = 0; i < st.gemm_group; ++i) {
        st.gemm_w[i].slot = l.inputs[static_cast<size_t>(1 + i)];
        st.gemm_out[i].slot = l.outputs[static_cast<size_t>(i)];
      }
      st.in[2] = Operand{};
    }
    const GpuSlot& a = slot(l.inputs[0]);
    const GpuSlot& b = slot(l.inputs[1]);
    const GpuSlot& out = slot(l.outputs[0]);
    st.tf32 = l.op == "tf32" && a.dtype == GpuDType::F32;
    st.trans_a = !l.ints.empty() && l.ints[0] == 1;
    st.trans_b = !l.ints.empty() && l.ints[1] == 1;
    st.alpha = l.scalar != 0 ? l.scalar : 1;
    plan::MatmulGeometry mg;
    plan::matmul_geometry(a.shape, b.shape, st.trans_a, st.trans_b, mg);
    const int64_t M = mg.m, K = mg.k, N = mg.n;
    if (l.inputs.size() == 3 && st.gemm_group == 0) (l.flag ? st.accumulate : st.bias) = true;  // residual C of the output's shape, or a bias [N]
    const int64_t batch = numel(mg.batch);
    st.dt = to_dt(a.dtype);
    st.kdim = K, st.cols = N;
    if (batch == 0 || M == 0 || N == 0) return true;  // nothing to compute
    if (K == 0) {  // every result is zeros
      st.kind = Step::Kind::MemsetZero, st.bytes = out.bytes();
      for (int32_t i = 0; i < std::max<int32_t>(st.gemm_group, 1); ++i) {
        if (st.gemm_group > 0) st.out = st.gemm_out[i];
        p.steps.push_back(st);
      }
      return true;
    }
    st.kind = gpu_dtype_is_float(a.dtype) ? Step::Kind::MatmulLt : Step::Kind::MatmulInt;
    if (mg.folded) {  // shared weight: A is one [batch*M, K] matrix
      st.batch = 1, st.rows = M * batch, st.stride_a = 0, st.stride_b = 0;
      p.steps.push_back(st);
      return true;
    }
    if (st.gemm_group > 0) {  // the verifier keeps a group's weights 2-D, which always fold
      fail = {kInvalidArgument, p.name + ": a matmul group whose weights are not matrices"};
      return false;
    }
    // The coalesced batch space and A's and B's strides over it, in
    // matrices (plan::matmul_geometry, which the verifier bounded).
    const Shape& space = mg.coalesced_batch;
    const Shape &sa = mg.coalesced_strides[0], &sb = mg.coalesced_strides[1];
    const size_t inner = space.size() - 1;
    st.batch = space[inner], st.rows = M;
    st.stride_a = sa[inner] * M * K, st.stride_b = sb[inner] * K * N;
    for (int64_t piece = 0; piece < mg.pieces; ++piece) {
      Step s2 = st;
      int64_t q = piece, oa = 0, ob = 0;
      for (size_t d = inner; d-- > 0;) {
        int64_t r = q % space[d];
        q /= space[d];
        oa += r * sa[d], ob += r * sb[d];
      }
      int64_t es = st.esize;
      s2.in[0].extra = oa * M * K * es;
      s2.in[1].extra = ob * K * N * es;
      s2.out.extra = piece * st.batch * M * N * es;
      if (st.accumulate) s2.in[2].extra = s2.out.extra;
      s2.reuse_lt = piece > 0;
      p.steps.push_back(s2);
    }
    return true;
  }
};

// ---- cuBLASLt -----------------------------------------------------------

constexpr size_t kLtMaxWorkspace = size_t{32} << 20;  // cuBLAS's Hopper recommendation
// The most workspace a cuDNN attention launch may have (create()); more runs the own kernel.
constexpr size_t kCudnnMaxWorkspace = size_t{256} << 20;

int64_t pow2_align(std::initializer_list<int64_t> byte_counts) {
  int64_t a = 16;
  for (int64_t b : byte_counts)
    while (a > 1 && b % a != 0) a /= 2;
  return a;
}

// Row-major C[M,N] = A[M,K] B[K,N] is column-major C^T = B^T A^T: cuBLASLt's
// "A" is our B viewed as column-major [N, K] (ld N), its "B" our A as
// column-major [K, M] (ld K), its C our C as column-major [N, M] (ld N). No
// transposes, no copies; batches are strided.
// The plan's generated kernels: its code object loaded once per plan (the
// machine code when the device runs it, else the PTX, which the driver
// compiles), each fused launch's kernel looked up by name. Code that does
// not load leaves the launches to the interpreter, which runs the same
// program: slower, never wrong; trace spans say which ran ("fused
// (generated)" or "fused (interpreted)"). Only a failing device is an error.
Failure load_generated_code(shapeml_cuda_plan& plan, const GpuPlan& gp) {
  bool wanted = false;
  for (const FusedPrep& f : plan.fused) wanted |= !f.generated.empty();
  if (!wanted || gp.code_arch.empty()) return {};
  DeviceGuard guard(plan.device);
  if (guard.status != cudaSuccess) return {cuda_code(guard.status), "cudaSetDevice failed: " + cuda_text(guard.status)};
  cudaError_t e = cudaLibraryLoadData(&plan.code, gp.code_cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: the PTX may still load
    plan.code = nullptr;
    e = cudaLibraryLoadData(&plan.code, gp.code_ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e != cudaSuccess) {
      cudaGetLastError();
      plan.code = nullptr;
    }
  }
  for (FusedPrep& f : plan.fused) {
    if (f.generated.empty() || !plan.code) continue;
    if (cudaLibraryGetKernel(&f.kernel, plan.code, f.generated.c_str()) != cudaSuccess) {
      cudaGetLastError();
      f.kernel = nullptr;
    }
  }
  for (Prepared& p : plan.launches)
    for (const Step& st : p.steps)
      if (st.kind == Step::Kind::Fused && !plan.fused[static_cast<size_t>(st.fused)].generated.empty())
        p.kernel = plan.fused[static_cast<size_t>(st.fused)].kernel ? "fused (generated)" : "fused (interpreted)";
  return {};
}

Failure prepare_lt(cublasLtHandle_t h, const Step& st, LtMatmul& m, const std::string& w, int32_t device) {
  auto fail = [&](const char* call, cublasStatus_t s) { return Failure{cublas_code(s), w + ": " + call + " failed: " + cublas_text(s)}; };
  cudaDataType_t t = st.dt == kern::DT::F64 ? CUDA_R_64F : st.dt == kern::DT::BF16 ? CUDA_R_16BF : CUDA_R_32F;
  // Full fp32 unless the plan allows TF32 tensor cores (a compile option).
  cublasComputeType_t ct = st.dt == kern::DT::F64 ? CUBLAS_COMPUTE_64F : st.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = st.dt == kern::DT::F64 ? CUDA_R_64F : CUDA_R_32F;
  m.f64 = st.dt == kern::DT::F64;
  m.bias = st.bias;
  const int64_t M = st.rows, N = st.cols, K = st.kdim, es = st.esize;
  cublasStatus_t s;
  if ((s = cublasLtMatmulDescCreate(&m.desc, ct, scale)) != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulDescCreate", s);
  if (st.bias) {
    // In the column-major view (C^T = B^T A^T) the rows of Lt's D are our
    // columns, so BIAS (one value per row of D) adds bias[j] to our column j.
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    if ((s = cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi)) != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtMatmulDescSetAttribute(EPILOGUE_BIAS)", s);
    cudaDataType_t bt = t;
    if ((s = cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt)) != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)", s);
  }
  // A transposed operand: our B stored as [N, K] row-major is column-major
  // [K, N] (ld K), read with op T; our A stored as [K, M] is column-major
  // [M, K] (ld M), read with op T.
  if (st.trans_b || st.trans_a) {
    cublasOperation_t ta = st.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = st.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    if ((s = cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) != CUBLAS_STATUS_SUCCESS ||
        (s = cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)) != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtMatmulDescSetAttribute(TRANSA/TRANSB)", s);
  }
  if (st.trans_b) s = cublasLtMatrixLayoutCreate(&m.la, t, static_cast<uint64_t>(K), static_cast<uint64_t>(N), K);
  else s = cublasLtMatrixLayoutCreate(&m.la, t, static_cast<uint64_t>(N), static_cast<uint64_t>(K), N);
  if (s != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatrixLayoutCreate", s);
  if (st.trans_a) s = cublasLtMatrixLayoutCreate(&m.lb, t, static_cast<uint64_t>(M), static_cast<uint64_t>(K), M);
  else s = cublasLtMatrixLayoutCreate(&m.lb, t, static_cast<uint64_t>(K), static_cast<uint64_t>(M), K);
  if (s != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatrixLayoutCreate", s);
  if ((s = cublasLtMatrixLayoutCreate(&m.lc, t, static_cast<uint64_t>(N), static_cast<uint64_t>(M), N)) != CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtMatrixLayoutCreate", s);
  if (st.gemm_group > 0) {
    // A group: Lt's A, B and D are arrays of k pointers in device memory
    // (the weights, A repeated, the results; written per call, see execute).
    int32_t count = st.gemm_group;
    uint32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
    for (cublasLtMatrixLayout_t lay : {m.la, m.lb, m.lc}) {
      if ((s = cublasLtMatrixLayoutSetAttribute(lay, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count)) != CUBLAS_STATUS_SUCCESS)
        return fail("cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", s);
      if ((s = cublasLtMatrixLayoutSetAttribute(lay, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof mode)) != CUBLAS_STATUS_SUCCESS)
        return fail("cublasLtMatrixLayoutSetAttribute(BATCH_MODE)", s);
    }
  } else if (st.batch > 1) {
    int32_t count = static_cast<int32_t>(st.batch);
    int64_t sa = st.stride_b, sb = st.stride_a, sc = M * N;  // Lt's A is our B
    for (auto [lay, stride] : {std::pair{m.la, sa}, std::pair{m.lb, sb}, std::pair{m.lc, sc}}) {
      if ((s = cublasLtMatrixLayoutSetAttribute(lay, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count)) != CUBLAS_STATUS_SUCCESS)
        return fail("cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", s);
      if ((s = cublasLtMatrixLayoutSetAttribute(lay, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride)) !=
          CUBLAS_STATUS_SUCCESS)
        return fail("cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", s);
    }
  }
  // Two algorithm choices: base pointers 16-byte aligned (alignment then
  // limited by leading dimensions and batch strides), or only element-aligned.
  for (int variant = 0; variant < 2; ++variant) {
    uint32_t al_a = variant == 0 ? static_cast<uint32_t>(pow2_align({(st.trans_b ? K : N) * es, st.stride_b * es})) : static_cast<uint32_t>(es);
    uint32_t al_b = variant == 0 ? static_cast<uint32_t>(pow2_align({(st.trans_a ? M : K) * es, st.stride_a * es})) : static_cast<uint32_t>(es);
    uint32_t al_c = variant == 0 ? static_cast<uint32_t>(pow2_align({N * es, M * N * es})) : static_cast<uint32_t>(es);
    cublasLtMatmulPreference_t pref = nullptr;
    if ((s = cublasLtMatmulPreferenceCreate(&pref)) != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulPreferenceCreate", s);
    size_t ws = kLtMaxWorkspace;
    int found = 0;
    s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c);
    if (s != CUBLAS_STATUS_SUCCESS) {
      cublasLtMatmulPreferenceDestroy(pref);
      return fail("cublasLtMatmulPreferenceSetAttribute", s);
    }
    // The aligned variant (what a call normally gets) asks for several
    // candidates: the heuristic's first, or with SHAPEML_CUBLASLT_TUNING=on
    // the fastest by time (lt_tuning.h).
    // (A group's pointer arrays are not what the timing's scratch operands
    // are: it keeps the heuristic's first.)
    std::vector<cublasLtMatmulHeuristicResult_t> cands(variant == 0 && st.gemm_group == 0 && shapeml::cuda::lt_tuning_on() ? shapeml::cuda::kLtCandidates : 1);
    s = cublasLtMatmulAlgoGetHeuristic(h, m.desc, m.la, m.lb, m.lc, m.lc, pref, static_cast<int>(cands.size()), cands.data(), &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0) continue;  // this variant has none
    cands.resize(static_cast<size_t>(found));
    size_t pick = 0;
    if (variant == 0) {
      shapeml::cuda::LtProblem prob;
      prob.desc = m.desc, prob.la = m.la, prob.lb = m.lb, prob.lc = m.lc;
      prob.f64 = m.f64, prob.bias = st.bias, prob.accumulate = st.accumulate;
      const int64_t batches = std::max<int64_t>(st.batch, 1);
      prob.lt_a_bytes = static_cast<size_t>(((batches - 1) * st.stride_b + K * N) * es);  // Lt's A is our B
      prob.lt_b_bytes = static_cast<size_t>(((batches - 1) * st.stride_a + M * K) * es);
      prob.c_bytes = static_cast<size_t>(batches * M * N * es);
      prob.bias_bytes = static_cast<size_t>(N * es);
      prob.device = device;
      prob.key = std::to_string(static_cast<int>(st.dt)) + (st.tf32 ? " tf32" : "") + " M" + std::to_string(M) + " N" + std::to_string(N) +
                 " K" + std::to_string(K) + " b" + std::to_string(st.batch) + " sa" + std::to_string(st.stride_a) + " sb" +
                 std::to_string(st.stride_b) + (st.trans_a ? " tA" : "") + (st.trans_b ? " tB" : "") + (st.bias ? " bias" : "") +
                 (st.accumulate ? " acc" : "") + (st.gemm_group > 0 ? " group" + std::to_string(st.gemm_group) : "") + " al" + std::to_string(al_a) + "/" + std::to_string(al_b) + "/" + std::to_string(al_c);
      pick = shapeml::cuda::fastest_lt_candidate(h, prob, cands, m.choice);
    }
    (variant == 0 ? m.algo_aligned : m.algo_any) = cands[pick].algo;
    (variant == 0 ? m.ws_aligned : m.ws_any) = cands[pick].workspaceSize;
    (variant == 0 ? m.has_aligned : m.has_any) = true;
  }
  if (!m.has_aligned && !m.has_any)
    return fail("cublasLtMatmulAlgoGetHeuristic (no algorithm for these shapes and types)", CUBLAS_STATUS_NOT_SUPPORTED);
  return {};
}

int32_t create(int32_t device, const char* plan_text, shapeml_cuda_plan** out, char* err, size_t err_size) {
  if (!out) return write_err(err, err_size, kInvalidArgument, "plan_create: plan is NULL");
  *out = nullptr;
  if (!plan_text) return write_err(err, err_size, kInvalidArgument, "plan_create: plan_text is NULL");
  // GpuPlan::parse runs the plan verifier, the compiler's own (plan/verify.h):
  // a malformed plan is INVALID_ARGUMENT, one over a kernel limit
  // UNIMPLEMENTED, both before anything touches the device.
  std::string perr;
  bool over_limit = false;
  std::optional<GpuPlan> parsed = GpuPlan::parse(plan_text, perr, &over_limit);
  if (!parsed) return write_err(err, err_size, over_limit ? kUnimplemented : kInvalidArgument, "plan_create: " + perr);
  const GpuPlan& gp = *parsed;

  auto plan = std::make_unique<shapeml_cuda_plan>();
  plan->device = device;
  plan->num_inputs = gp.num_inputs;
  plan->num_outputs = gp.num_outputs;
  plan->plan_workspace = gp.workspace_bytes;
  for (const GpuSlot& s : gp.slots) {
    SlotRef r;
    switch (s.kind) {
      case GpuSlot::Kind::Input: r.buffer = s.index; break;
      case GpuSlot::Kind::HostInput: r.buffer = s.index, r.host = true; break;
      case GpuSlot::Kind::Output: r.buffer = gp.num_inputs + s.index; break;
      case GpuSlot::Kind::HostOutput: r.buffer = gp.num_inputs + s.index, r.host = true; break;
      case GpuSlot::Kind::Temp: r.in_workspace = true, r.offset = s.offset; break;
      case GpuSlot::Kind::View:  // verified: alias < this slot, offset inside it
        r = plan->slots[static_cast<size_t>(s.alias)];
        r.offset += s.offset;
        break;
    }
    r.bytes = s.bytes();
    plan->slots.push_back(r);
  }
  plan->graph.device = device;
  plan->graph.num_inputs = gp.num_inputs;
  plan->graph.on = gp.graph;
  plan->graph.why = gp.graph_why;
  plan->graph.blocker = shapeml::plan::graph_blocker(gp);
  plan->graph.branches = gp.branches;
  plan->graph.buffer_bytes.assign(static_cast<size_t>(gp.num_inputs + gp.num_outputs), 0);
  for (const GpuSlot& s : gp.slots) {
    size_t at = s.kind == GpuSlot::Kind::Input ? static_cast<size_t>(s.index)
                : s.kind == GpuSlot::Kind::Output ? static_cast<size_t>(gp.num_inputs + s.index) : SIZE_MAX;
    if (at != SIZE_MAX) plan->graph.buffer_bytes[at] = std::max(plan->graph.buffer_bytes[at], s.bytes());
  }
  Builder b{gp, {}, {}, {}};
  for (size_t i = 0; i < gp.launches.size(); ++i) {
    const GpuLaunch& l = gp.launches[i];
    Prepared p;
    p.name = "launch " + std::to_string(i) + " (" + plan::launch_kind_name(l.kind) + (l.op.empty() ? "" : " " + l.op) + ")";
    p.kernel = plan::launch_kind_name(l.kind);
    p.library = l.library;
    p.reads = l.inputs;
    p.writes = l.outputs;
    if (!b.prepare(l, p)) return write_err(err, err_size, b.fail.code, "plan_create: " + b.fail.msg);
    plan->launches.push_back(std::move(p));
  }
  plan->checks = std::move(b.checks);
  plan->fused = std::move(b.fused);

  // The device: present, and one this build has code for (sm_90 and newer).
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return write_err(err, err_size, kUnavailable, "plan_create: cudaGetDeviceCount failed (no usable CUDA driver or GPU): " + cuda_text(e));
  if (device < 0 || device >= count)
    return write_err(err, err_size, kUnavailable, "plan_create: no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " present)");
  int major = 0, sms = 0;
  if ((e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess)
    return write_err(err, err_size, cuda_code(e), "plan_create: cudaDeviceGetAttribute failed: " + cuda_text(e));
  if (major < 9)
    return write_err(err, err_size, kUnavailable,
                     "plan_create: device " + std::to_string(device) + " has compute capability " + std::to_string(major) + ".x; this build needs 9.0 or newer");
  plan->max_blocks = std::max(1, sms) * 32;

  bool any_lt = false, any_attention = false;
  for (const Prepared& p : plan->launches)
    for (const Step& s : p.steps) any_lt |= s.kind == Step::Kind::MatmulLt, any_attention |= s.kind == Step::Kind::Attention;
  if (any_attention) {  // here, not at the first launch: that may be inside a stream capture
    DeviceGuard guard(device);
    if (guard.status != cudaSuccess) return write_err(err, err_size, cuda_code(guard.status), "plan_create: cudaSetDevice failed: " + cuda_text(guard.status));
    if ((e = kern::attention_setup()) != cudaSuccess)
      return write_err(err, err_size, cuda_code(e), "plan_create: setting the attention kernels' shared memory failed: " + cuda_text(e));
    // Launches of library cudnn (the planner's choice, plan/attention_launch.h)
    // run on cuDNN's fused attention; without cuDNN (SHAPEML_CUDNN=none
    // turns it off), or where none of its engines takes the graph, on the
    // own kernel: the trace's span then says `shapeml` and why.
    for (Prepared& p : plan->launches)
      for (Step& st : p.steps) {
        if (st.kind != Step::Kind::Attention || p.library != "cudnn") continue;
        std::string why;
        std::unique_ptr<shapeml::cuda::CudnnAttention> c = shapeml::cuda::CudnnAttention::create(st.attention, why);
        if (c && c->workspace_bytes() > kCudnnMaxWorkspace) why = "cuDNN asks for " + std::to_string(c->workspace_bytes()) + " bytes of workspace", c.reset();
        if (c) {
          p.kernel = "attention (" + c->engine() + ")";
          st.cudnn = std::move(c);
        } else {
          p.library = "shapeml";
          p.kernel = "attention (own kernel: " + why + ")";
        }
      }
  }
  if (Failure f = load_generated_code(*plan, gp); f.code != kOk) return write_err(err, err_size, f.code, "plan_create: " + f.msg);
  if (any_lt) {
    DeviceGuard guard(device);
    if (guard.status != cudaSuccess) return write_err(err, err_size, cuda_code(guard.status), "plan_create: cudaSetDevice failed: " + cuda_text(guard.status));
    cublasStatus_t s = cublasLtCreate(&plan->lt_handle);
    if (s != CUBLAS_STATUS_SUCCESS) {
      plan->lt_handle = nullptr;
      return write_err(err, err_size, cublas_code(s), "plan_create: cublasLtCreate failed: " + cublas_text(s));
    }
    // Each matmul gets its own part of the region when all of them fit in
    // one cuBLAS-recommended workspace, so that matmuls on parallel graph
    // branches do not share scratch bytes; otherwise they share one part
    // (and the branches analysis orders them).
    size_t need = 0, sum = 0;
    for (Prepared& p : plan->launches)
      for (Step& st : p.steps) {
        if (st.kind != Step::Kind::MatmulLt) continue;
        if (st.reuse_lt && !plan->lt.empty()) {  // another piece of the same broadcast GEMM
          st.lt = static_cast<int32_t>(plan->lt.size() - 1);
          continue;
        }
        plan->lt.emplace_back();
        st.lt = static_cast<int32_t>(plan->lt.size() - 1);
        Failure f = prepare_lt(plan->lt_handle, st, plan->lt.back(), p.name, device);
        if (f.code != kOk) return write_err(err, err_size, f.code, "plan_create: " + f.msg);
        LtMatmul& m = plan->lt.back();
        const size_t mine = std::max(m.ws_any, m.ws_aligned);
        m.ws_offset = static_cast<int64_t>(sum);
        need = std::max(need, mine);
        sum += static_cast<size_t>(align_up(static_cast<int64_t>(mine), 256));
      }
    if (sum > kLtMaxWorkspace || !gp.branches) {
      for (LtMatmul& m : plan->lt) m.ws_offset = 0;
      sum = need;
    }
    // After cuBLASLt's scratch: each matmul group's three pointer arrays
    // (Lt's A, B, D; k pointers each), its own bytes, written by the group's
    // launch of every call.
    sum = static_cast<size_t>(align_up(static_cast<int64_t>(sum), 256));
    for (Prepared& p : plan->launches)
      for (Step& st : p.steps)
        if (st.kind == Step::Kind::MatmulLt && st.gemm_group > 0) {
          st.table = static_cast<int64_t>(sum);
          sum += static_cast<size_t>(align_up(3 * st.gemm_group * static_cast<int64_t>(sizeof(void*)), 256));
        }
    if (sum > 0) {
      plan->lt_offset = align_up(plan->plan_workspace, 256);
      plan->lt_bytes = static_cast<int64_t>(sum);
    }
  }
  // cuDNN's workspaces, each launch its own part, after cuBLASLt's region
  // (so no two launches share scratch bytes and graph branches need no
  // order between them).
  for (Prepared& p : plan->launches)
    for (Step& st : p.steps)
      if (st.cudnn && st.cudnn->workspace_bytes() > 0) {
        if (plan->lt_bytes == 0) plan->lt_offset = align_up(plan->plan_workspace, 256);
        st.cudnn_ws = align_up(plan->lt_bytes, 256);
        plan->lt_bytes = st.cudnn_ws + static_cast<int64_t>(st.cudnn->workspace_bytes());
      }
  *out = plan.release();
  return kOk;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// After a plan with index operations: wait for the stream, read each
// bounds-check record and report the first bad index (its value, read back
// from the index tensor, and its position) as OUT_OF_RANGE. The one host
// synchronization a plan may do, and only plans with index operations do it
// (docs/design/index-checks.md).
template <class Ptr>
int32_t read_checks(const shapeml_cuda_plan* plan, Ptr&& ptr, cudaStream_t stream, char* err, size_t err_size) {
  std::vector<unsigned long long> recs(plan->checks.size());
  for (size_t i = 0; i < plan->checks.size(); ++i) {
    cudaError_t e = cudaMemcpyAsync(&recs[i], ptr(plan->checks[i].record), sizeof recs[i], cudaMemcpyDeviceToHost, stream);
    if (e != cudaSuccess)
      return write_err(err, err_size, cuda_code(e), "plan_execute: reading the bounds check of " + plan->checks[i].name + " failed: " + cuda_text(e));
  }
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
    return write_err(err, err_size, cuda_code(e), "plan_execute: cudaStreamSynchronize (bounds checks) failed: " + cuda_text(e));
  for (size_t i = 0; i < plan->checks.size(); ++i) {
    const IndexCheck& c = plan->checks[i];
    if (recs[i] == ~0ull) continue;
    int64_t pos = static_cast<int64_t>(recs[i]), value = 0;
    const char* at = ptr(Operand{c.idx_slot, 0}) + pos * (c.idx_i64 ? 8 : 4);
    int32_t v32 = 0;
    cudaError_t e = cudaMemcpyAsync(c.idx_i64 ? static_cast<void*>(&value) : static_cast<void*>(&v32), at, c.idx_i64 ? 8 : 4,
                                    cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (!c.idx_i64) value = v32;
    std::string index = e == cudaSuccess ? std::to_string(value) : "(unreadable)";
    std::string where;
    for (size_t d = c.idx_shape.size(); d-- > 0;) {
      int64_t n = c.idx_shape[d] > 0 ? c.idx_shape[d] : 1;
      where = std::to_string(pos % n) + (where.empty() ? "" : ", ") + where;
      pos /= n;
    }
    return write_err(err, err_size, kOutOfRange,
                     "plan_execute: " + c.name + (c.where.empty() ? "" : " [" + c.where + "]") + ": index " + index + " is out of range [0, " +
                         std::to_string(c.bound) + ") at indices[" + where + "]; the outputs of this call are unspecified");
  }
  return kOk;
}

std::atomic<const shapeml_cuda_observer*> g_observer{nullptr};

uint64_t host_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// An NVTX range for the scope (named after the launch, so Nsight Systems and
// Nsight Compute show shapeml's names); popped on every return path.
#if SHAPEML_INSTRUMENTATION
struct NvtxRange {
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
};
#else
struct NvtxRange {
  explicit NvtxRange(const char*) {}
};
#endif

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o;
}

int32_t execute(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream_ptr, char* err, size_t err_size);
int32_t execute_hooked(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream_ptr, char* err, size_t err_size, void* hook,
                       void (*on_launch)(void* hook, size_t index, bool after));

// plan_execute with the observer's spans (and GPU timing) around execute().
int32_t execute_observed(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream_ptr, char* err, size_t err_size) {
  const shapeml_cuda_observer* obs = SHAPEML_INSTRUMENTATION ? g_observer.load(std::memory_order_acquire) : nullptr;
  uint32_t flags = obs && plan ? obs->flags() : 0;
  if (!(flags & 1u)) return execute(plan, buffers, workspace, stream_ptr, err, err_size);
  cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
  bool timing = (flags & 2u) != 0;
  if (timing) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) timing = false;
  }
  std::unique_lock<std::mutex> lock(plan->timing_mu, std::defer_lock);
  if (timing) {
    lock.lock();
    DeviceGuard guard(plan->device);
    size_t need = 2 * plan->launches.size();
    while (plan->events.size() < need) {
      cudaEvent_t e = nullptr;
      if (cudaEventCreate(&e) != cudaSuccess) {
        timing = false;
        break;
      }
      plan->events.push_back(e);
    }
  }
  std::vector<uint64_t> begin(plan->launches.size()), end(plan->launches.size());
  struct Hook {
    shapeml_cuda_plan* plan;
    bool timing;
    cudaStream_t stream;
    std::vector<uint64_t>* begin;
    std::vector<uint64_t>* end;
  } hook{plan, timing, stream, &begin, &end};
  int32_t rc = execute_hooked(plan, buffers, workspace, stream_ptr, err, err_size, &hook,
                              [](void* h, size_t i, bool after) {
                                Hook* k = static_cast<Hook*>(h);
                                if (k->timing) cudaEventRecord(k->plan->events[2 * i + (after ? 1 : 0)], k->stream);
                                (after ? *k->end : *k->begin)[i] = host_ns();
                              });
  for (size_t i = 0; i < plan->launches.size(); ++i) {
    if (!end[i]) break;
    const Prepared& p = plan->launches[i];
    std::string args = "\"kernel\":\"" + json_escape(p.kernel) + "\",\"library\":\"" + json_escape(p.library) + "\",\"device\":" + std::to_string(plan->device);
    obs->span("gpu op", p.name.c_str(), begin[i], end[i] - begin[i], args.c_str(), 0);
  }
  if (timing && rc == 0 && !plan->launches.empty() && end.back()) {
    // GPU time per launch: on a pseudo-thread (the device's timeline), placed
    // from the first launch's host enqueue time.
    if (cudaEventSynchronize(plan->events[2 * plan->launches.size() - 1]) == cudaSuccess) {
      uint64_t base = begin[0];
      for (size_t i = 0; i < plan->launches.size(); ++i) {
        float from0 = 0, dur = 0;
        if (cudaEventElapsedTime(&from0, plan->events[0], plan->events[2 * i]) != cudaSuccess ||
            cudaEventElapsedTime(&dur, plan->events[2 * i], plan->events[2 * i + 1]) != cudaSuccess)
          break;
        const Prepared& p = plan->launches[i];
        std::string args = "\"gpu_ms\":" + std::to_string(dur) + ",\"device\":" + std::to_string(plan->device);
        obs->span("gpu time", p.name.c_str(), base + static_cast<uint64_t>(from0 * 1e6), static_cast<uint64_t>(dur * 1e6), args.c_str(),
                  1000000u + static_cast<uint32_t>(plan->device));
      }
    }
  }
  return rc;
}

int32_t execute(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream_ptr, char* err, size_t err_size) {
  return execute_hooked(plan, buffers, workspace, stream_ptr, err, err_size, nullptr, nullptr);
}

int32_t execute_hooked(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream_ptr, char* err, size_t err_size, void* hook,
                       void (*on_launch)(void* hook, size_t index, bool after)) {
  if (!plan) return write_err(err, err_size, kInvalidArgument, "plan_execute: plan is NULL");
  if (!buffers && plan->num_inputs + plan->num_outputs > 0) return write_err(err, err_size, kInvalidArgument, "plan_execute: buffers is NULL");
  if (!workspace && plan->lt_offset + plan->lt_bytes + plan->plan_workspace > 0)
    return write_err(err, err_size, kInvalidArgument, "plan_execute: workspace is NULL but the plan needs one");
  cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
  // A non-sticky error the host program left behind would be read by the
  // first launch's cudaGetLastError and blamed on it: clear it first.
  (void)cudaGetLastError();
  DeviceGuard guard(plan->device);
  if (guard.status != cudaSuccess) return write_err(err, err_size, cuda_code(guard.status), "plan_execute: cudaSetDevice failed: " + cuda_text(guard.status));
  if (!plan->checks.empty()) {
    // Bounds checks are read back after the plan (the host waits for the
    // stream), which a stream being captured into a graph cannot do: refuse
    // before enqueueing anything, so the caller's capture stays intact.
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t ce = cudaStreamIsCapturing(stream, &cs);
    if (ce != cudaSuccess) return write_err(err, err_size, cuda_code(ce), "plan_execute: cudaStreamIsCapturing failed: " + cuda_text(ce));
    if (cs != cudaStreamCaptureStatusNone)
      return write_err(err, err_size, kFailedPrecondition,
                       "plan_execute: " + plan->checks.front().name + " (" + plan->checks.front().where +
                           ") checks its indices on the device and reports a bad one after the plan, which needs the host to wait for the "
                           "stream; the stream is being captured into a CUDA graph, where that cannot be done: call it outside the capture");
  }
  char* ws = static_cast<char*>(workspace);
  auto ptr = [&](const Operand& o) -> char* {
    const SlotRef& r = plan->slots[static_cast<size_t>(o.slot)];
    char* base = r.in_workspace ? ws : static_cast<char*>(buffers[r.buffer]);
    return base + r.offset + o.extra;
  };
  const int mb = plan->max_blocks;
  for (size_t li = 0; li < plan->launches.size(); ++li) {
    const Prepared& p = plan->launches[li];
    NvtxRange range(p.name.c_str());
    if (on_launch) on_launch(hook, li, false);
    struct After {
      void* hook;
      void (*fn)(void*, size_t, bool);
      size_t i;
      ~After() {
        if (fn) fn(hook, i, true);
      }
    } after{hook, on_launch, li};
    for (const Step& st : p.steps) {
      cudaError_t e = cudaSuccess;
      const char* call = "kernel launch";
      switch (st.kind) {
        case Step::Kind::Noop: break;
        case Step::Kind::Unary: e = kern::unary(st.dt, st.op, ptr(st.in[0]), ptr(st.out), st.n, mb, stream); break;
        case Step::Kind::Binary:
          e = kern::binary(st.dt, st.op, ptr(st.in[0]), ptr(st.in[1]), ptr(st.out), st.geom, st.n, st.same, mb, stream);
          break;
        case Step::Kind::Logical:
          e = kern::logical(st.op, ptr(st.in[0]), ptr(st.in[1]), ptr(st.out), st.geom, st.n, st.same, mb, stream);
          break;
        case Step::Kind::LogicalNot: e = kern::logical_not(ptr(st.in[0]), ptr(st.out), st.n, mb, stream); break;
        case Step::Kind::Softmax:
          e = kern::softmax(st.dt, st.op == 1, ptr(st.in[0]), ptr(st.out), st.batch, st.rows, st.cols, st.mask, mb, stream);
          break;
        case Step::Kind::Scan: e = kern::scan(st.dt, ptr(st.in[0]), ptr(st.out), st.batch, st.rows, st.cols, st.reverse, mb, stream); break;
        case Step::Kind::RmsNorm:
          e = kern::rmsnorm(st.dt, ptr(st.in[0]), ptr(st.in[1]), ptr(st.out), st.rows, st.cols, st.eps, mb, stream);
          break;
        case Step::Kind::Tf32Split:
          e = kern::tf32_split(st.op == 1, reinterpret_cast<const float*>(ptr(st.in[0])), reinterpret_cast<float*>(ptr(st.out)), st.batch, st.rows,
                               st.cols, mb, stream);
          break;
        case Step::Kind::Gated: e = kern::gated(st.dt, st.op, ptr(st.in[0]), ptr(st.in[1]), ptr(st.out), st.n, mb, stream); break;
        case Step::Kind::Attention: {
          kern::Attention a = st.attention;
          a.q = ptr(st.in[0]), a.k = ptr(st.in[1]), a.v = ptr(st.in[2]), a.o = ptr(st.out);
          a.sms = mb / 32;  // max_blocks is 32 per SM
          if (st.cudnn && aligned16(a.q) && aligned16(a.k) && aligned16(a.v) && aligned16(a.o)) {
            void* cws = st.cudnn->workspace_bytes() > 0 ? ws + plan->lt_offset + st.cudnn_ws : nullptr;
            if (std::string f = st.cudnn->run(a.q, a.k, a.v, a.o, cws, stream); !f.empty())
              return write_err(err, err_size, kInternal, "plan_execute: " + p.name + ": cuDNN's attention failed: " + f);
            break;
          }
          e = st.dt != kern::DT::F32 ? kern::attention(a, stream) : st.tf32 ? kern::attention_tf32(a, stream) : kern::attention_f32(a, stream);
          break;
        }
        case Step::Kind::Gather:
        case Step::Kind::TakeAlong: {
          auto* rec = reinterpret_cast<unsigned long long*>(ptr(st.check));
          call = "cudaMemsetAsync";
          e = cudaMemsetAsync(rec, 0xFF, sizeof *rec, stream);  // UINT64_MAX: no bad index yet
          if (e != cudaSuccess) break;
          call = "kernel launch";
          e = st.kind == Step::Kind::Gather
                  ? kern::gather(st.dt, st.esize, ptr(st.in[0]), ptr(st.in[1]), ptr(st.out), st.rows, st.kdim, st.cols, rec, mb, stream)
                  : kern::take_along(st.dt, st.esize, ptr(st.in[0]), ptr(st.in[1]), ptr(st.out), st.batch, st.kdim, st.cols, rec, mb, stream);
          break;
        }
        case Step::Kind::Compare:
          e = kern::compare(st.dt, st.op, ptr(st.in[0]), ptr(st.in[1]), ptr(st.out), st.geom, st.n, st.same, mb, stream);
          break;
        case Step::Kind::Select:
          e = kern::select(st.esize, ptr(st.in[0]), ptr(st.in[1]), ptr(st.in[2]), ptr(st.out), st.geom, st.n, mb, stream);
          break;
        case Step::Kind::Cast: e = kern::cast(st.dt, st.dt_to, ptr(st.in[0]), ptr(st.out), st.n, mb, stream); break;
        case Step::Kind::Fill: e = kern::fill(st.esize, st.bits, ptr(st.out), st.n, mb, stream); break;
        case Step::Kind::Iota: e = kern::iota(st.dt, ptr(st.out), st.n, st.dim, st.inner, mb, stream); break;
        case Step::Kind::Fused: {
          const FusedPrep& f = plan->fused[static_cast<size_t>(st.fused)];
          const void* ins[kern::kFusedMaxInputs] = {};
          for (size_t k = 0; k < f.inputs.size(); ++k) ins[k] = ptr(Operand{f.inputs[k], 0});
          if (f.kernel) {  // generated for this launch: (const void* in0, ..., void* out), n built in
            void* outp = ptr(st.out);
            void* args[kern::kFusedMaxInputs + 1];
            for (size_t k = 0; k < f.inputs.size(); ++k) args[k] = &ins[k];
            args[f.inputs.size()] = &outp;
            e = cudaLaunchKernel(reinterpret_cast<const void*>(f.kernel), dim3(static_cast<unsigned>(kern::blocks_for(st.n, mb))),
                                 dim3(kern::kThreads), args, 0, stream);
          } else {
            e = kern::fused(f.prog, f.geom, ins, ptr(st.out), st.n, mb, stream);
          }
          break;
        }
        case Step::Kind::Strided: e = kern::strided_copy(st.esize, ptr(st.in[0]), ptr(st.out), st.geom, st.n, mb, stream); break;
        case Step::Kind::StridedGroup: {
          kern::CopyGroup g;
          g.count = st.group;
          for (int32_t k = 0; k < st.group; ++k) g.in[k] = ptr(st.group_in[k]), g.out[k] = ptr(st.group_out[k]);
          e = kern::strided_copy_group(st.esize, g, st.geom, st.n, mb, stream);
          break;
        }
        case Step::Kind::Tiled: e = kern::transpose_tiled(st.esize, ptr(st.in[0]), ptr(st.out), st.batch, st.rows, st.cols, stream); break;
        case Step::Kind::Reduce: e = kern::reduce(st.dt, st.op, ptr(st.in[0]), ptr(st.out), st.rgeom, mb, stream); break;
        case Step::Kind::MatmulInt:
          e = kern::matmul_int(st.dt, ptr(st.in[0]), ptr(st.in[1]), ptr(st.out), st.batch, st.rows, st.cols, st.kdim, st.stride_a, st.stride_b,
                               stream);
          break;
        case Step::Kind::Memcpy:
          call = "cudaMemcpyAsync";
          e = cudaMemcpyAsync(ptr(st.out), ptr(st.in[0]), static_cast<size_t>(st.bytes), st.copy_kind, stream);
          break;
        case Step::Kind::MemsetZero:
          call = "cudaMemsetAsync";
          e = cudaMemsetAsync(ptr(st.out), 0, static_cast<size_t>(st.bytes), stream);
          break;
        case Step::Kind::MatmulLt: {
          const LtMatmul& m = plan->lt[static_cast<size_t>(st.lt)];
          const void* a = ptr(st.in[0]);
          const void* b = ptr(st.in[1]);
          void* c = ptr(st.out);
          // A fused residual is cuBLASLt's C (beta = 1); D is the output.
          const void* c_in = st.accumulate ? static_cast<const void*>(ptr(st.in[2])) : c;
          bool al = m.has_aligned && aligned16(a) && aligned16(b) && aligned16(c) && aligned16(c_in);
          if (st.gemm_group > 0) {
            // The group's pointer arrays, by a one-block kernel before the
            // GEMM (kernel parameters: a graph captures them, a re-capture
            // on new buffers renews them): Lt's A = our weights, its B = our
            // A (the same for each), its D = our results.
            kern::PointerTable t;
            t.n = 3 * st.gemm_group;
            for (int32_t i = 0; i < st.gemm_group; ++i) {
              t.p[i] = ptr(st.gemm_w[i]);
              t.p[st.gemm_group + i] = const_cast<void*>(a);
              t.p[2 * st.gemm_group + i] = ptr(st.gemm_out[i]);
              al = al && aligned16(t.p[i]) && aligned16(t.p[2 * st.gemm_group + i]);
            }
            void** table = reinterpret_cast<void**>(ws + plan->lt_offset + st.table);
            if ((e = kern::write_pointers(table, t, stream)) != cudaSuccess) break;
            b = table;
            a = table + st.gemm_group;
            c = table + 2 * st.gemm_group;
            c_in = c;
          }
          if (!al && !m.has_any)
            return write_err(err, err_size, kInvalidArgument,
                             "plan_execute: " + p.name + ": operands not 16-byte aligned and cuBLASLt offered no algorithm for that");
          const float one_f = 1.0f, zero_f = 0.0f, alpha_f = static_cast<float>(st.alpha);
          const double one_d = 1.0, zero_d = 0.0, alpha_d = st.alpha;
          const void* alpha = m.f64 ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
          const void* beta = m.f64 ? static_cast<const void*>(st.accumulate ? &one_d : &zero_d)
                                   : static_cast<const void*>(st.accumulate ? &one_f : &zero_f);
          size_t wsz = al ? m.ws_aligned : m.ws_any;
          // Lt's A is our B and its B our A (see prepare_lt).
          std::unique_lock<std::mutex> bias_lock;
          if (m.bias) {
            const void* bias = ptr(st.in[2]);
            if (reinterpret_cast<uintptr_t>(bias) % 16 != 0)
              return write_err(err, err_size, kInvalidArgument, "plan_execute: " + p.name + ": the fused bias is not 16-byte aligned");
            bias_lock = std::unique_lock<std::mutex>(*m.bias_mu);
            cublasStatus_t bs = cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
            if (bs != CUBLAS_STATUS_SUCCESS)
              return write_err(err, err_size, cublas_code(bs), "plan_execute: " + p.name + ": setting the bias pointer failed: " + cublas_text(bs));
          }
          cublasStatus_t s = cublasLtMatmul(plan->lt_handle, m.desc, alpha, b, m.la, a, m.lb, beta, c_in, m.lc, c, m.lc,
                                            al ? &m.algo_aligned : &m.algo_any, wsz ? ws + plan->lt_offset + m.ws_offset : nullptr, wsz, stream);
          if (s != CUBLAS_STATUS_SUCCESS)
            return write_err(err, err_size, cublas_code(s), "plan_execute: " + p.name + ": cublasLtMatmul failed: " + cublas_text(s));
          e = cudaGetLastError();
          break;
        }
      }
      if (e != cudaSuccess) return write_err(err, err_size, cuda_code(e), "plan_execute: " + p.name + ": " + call + " failed: " + cuda_text(e));
    }
  }
  return plan->checks.empty() ? kOk : read_checks(plan, ptr, stream, err, err_size);
}

// The capture's dependencies around each launch of execute_branched:
// before launch i, the last nodes of the launches it waits for; after it,
// its own last nodes (tails[i]; for a launch that enqueued nothing, those it
// waited for). The first CUDA error is kept and reported after the plan.
struct CaptureBranches {
  cudaStream_t stream;
  const std::vector<std::vector<size_t>>& deps;
  std::vector<std::vector<cudaGraphNode_t>> tails;
  std::vector<char> waited_for;
  cudaError_t error = cudaSuccess;
  const char* call = "";

  CaptureBranches(cudaStream_t s, const std::vector<std::vector<size_t>>& d) : stream(s), deps(d), tails(d.size()), waited_for(d.size(), 0) {}

  void set(std::vector<cudaGraphNode_t>& nodes) {
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    cudaError_t e = cudaStreamUpdateCaptureDependencies(stream, nodes.data(), nullptr, nodes.size(), cudaStreamSetCaptureDependencies);
    if (e != cudaSuccess && error == cudaSuccess) error = e, call = "cudaStreamUpdateCaptureDependencies";
  }
  void on_launch(size_t i, bool after) {
    if (error != cudaSuccess) return;
    if (!after) {
      std::vector<cudaGraphNode_t> nodes;
      for (size_t d : deps[i]) {
        nodes.insert(nodes.end(), tails[d].begin(), tails[d].end());
        waited_for[d] = 1;
      }
      set(nodes);
      return;
    }
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t* last = nullptr;
    size_t count = 0;
    cudaError_t e = cudaStreamGetCaptureInfo(stream, &cs, nullptr, nullptr, &last, nullptr, &count);
    if (e != cudaSuccess) {
      error = e, call = "cudaStreamGetCaptureInfo";
      return;
    }
    tails[i].assign(last, last + count);
  }
  // The end of the plan waits for every branch: the launches nothing waited for.
  void join() {
    if (error != cudaSuccess) return;
    std::vector<cudaGraphNode_t> sinks;
    for (size_t i = 0; i < tails.size(); ++i)
      if (!waited_for[i]) sinks.insert(sinks.end(), tails[i].begin(), tails[i].end());
    set(sinks);
  }
};

// Under a capture of our own (graph.cpp): each launch's nodes depend only on
// the nodes of the launches whose bytes it must wait for.
int32_t execute_branched(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream_ptr, char* err, size_t err_size) {
  if (!plan) return write_err(err, err_size, kInvalidArgument, "plan_execute: plan is NULL");
  if (!buffers && plan->num_inputs + plan->num_outputs > 0) return write_err(err, err_size, kInvalidArgument, "plan_execute: buffers is NULL");
  const size_t n = plan->launches.size();
  char* ws = static_cast<char*>(workspace);
  auto range = [&](int32_t slot) {
    const SlotRef& r = plan->slots[static_cast<size_t>(slot)];
    const char* base = r.in_workspace ? ws : static_cast<const char*>(buffers[r.buffer]);
    const uintptr_t b = reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(r.offset);
    return shapeml::plan::ByteRange{b, b + static_cast<uintptr_t>(r.bytes)};
  };
  std::vector<shapeml::plan::LaunchAccess> access(n);
  for (size_t i = 0; i < n; ++i) {
    const Prepared& p = plan->launches[i];
    for (int32_t s : p.reads) access[i].reads.push_back(range(s));
    for (int32_t s : p.writes) access[i].writes.push_back(range(s));
    for (const Step& st : p.steps)  // cuBLASLt's scratch bytes are written too
      if (st.kind == Step::Kind::MatmulLt && st.lt >= 0) {
        const LtMatmul& m = plan->lt[static_cast<size_t>(st.lt)];
        const uintptr_t b = reinterpret_cast<uintptr_t>(ws) + static_cast<uintptr_t>(plan->lt_offset + m.ws_offset);
        access[i].writes.push_back({b, b + std::max(m.ws_aligned, m.ws_any)});
      }
  }
  const std::vector<std::vector<size_t>> deps = shapeml::plan::launch_dependencies(access);

  CaptureBranches br(static_cast<cudaStream_t>(stream_ptr), deps);
  int32_t rc = execute_hooked(plan, buffers, workspace, stream_ptr, err, err_size, &br,
                              [](void* h, size_t i, bool after) { static_cast<CaptureBranches*>(h)->on_launch(i, after); });
  if (rc != 0) return rc;
  br.join();
  if (br.error != cudaSuccess)
    return write_err(err, err_size, cuda_code(br.error), std::string("plan_execute: ") + br.call + " failed while capturing the graph's branches: " + cuda_text(br.error));
  return kOk;
}

}  // namespace

namespace shapeml::cuda {

int32_t plan_create(int32_t device, const char* plan_text, shapeml_cuda_plan** plan, char* err, size_t err_size) {
  try {
    return create(device, plan_text, plan, err, err_size);
  } catch (const std::bad_alloc&) {
    return write_err(err, err_size, kResourceExhausted, "plan_create: out of host memory");
  } catch (...) {
    return write_err(err, err_size, kInternal, "plan_create: unexpected C++ exception");
  }
}

int64_t plan_workspace_bytes(const shapeml_cuda_plan* plan) {
  if (!plan) return 0;
  return plan->lt_bytes > 0 ? plan->lt_offset + plan->lt_bytes : plan->plan_workspace;
}

int32_t plan_execute(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size) {
  try {
    return execute_observed(plan, buffers, workspace, stream, err, err_size);
  } catch (...) {
    return write_err(err, err_size, kInternal, "plan_execute: unexpected C++ exception");
  }
}

int32_t plan_execute_branched(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size) {
  try {
    return execute_branched(plan, buffers, workspace, stream, err, err_size);
  } catch (const std::bad_alloc&) {
    return write_err(err, err_size, kResourceExhausted, "plan_execute: out of host memory");
  } catch (...) {
    return write_err(err, err_size, kInternal, "plan_execute: unexpected C++ exception");
  }
}

void plan_destroy(shapeml_cuda_plan* plan) { delete plan; }

void set_observer(const shapeml_cuda_observer* observer) { g_observer.store(observer, std::memory_order_release); }

const PlanGraphFacts& plan_graph_facts(const shapeml_cuda_plan* plan) { return plan->graph; }

}  // namespace shapeml::cuda
