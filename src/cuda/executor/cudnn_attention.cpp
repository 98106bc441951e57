#include "cuda/executor/cudnn_attention.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#ifdef SHAPEML_WITH_CUDNN_HEADERS
#include <cudnn_graph.h>
#endif

namespace shapeml::cuda {

#ifndef SHAPEML_WITH_CUDNN_HEADERS

std::unique_ptr<CudnnAttention> CudnnAttention::create(const kern::Attention&, std::string& why) {
  why = "this plugin was built without cuDNN's headers";
  return nullptr;
}
CudnnAttention::~CudnnAttention() = default;
std::string CudnnAttention::run(const void*, const void*, const void*, void*, void*, cudaStream_t) { return "cuDNN is not built in"; }

#else

namespace {

// The functions of cuDNN 9's graph library this file calls, found with dlsym.
struct Cudnn {
  std::string error;  // why cuDNN cannot be used; "" when it can
  size_t version = 0;
  size_t (*get_version)() = nullptr;
  const char* (*get_error_string)(cudnnStatus_t) = nullptr;
  void (*get_last_error_string)(char*, size_t) = nullptr;
  cudnnStatus_t (*create)(cudnnHandle_t*) = nullptr;
  cudnnStatus_t (*destroy)(cudnnHandle_t) = nullptr;
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t) = nullptr;
  cudnnStatus_t (*create_desc)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t*) = nullptr;
  cudnnStatus_t (*destroy_desc)(cudnnBackendDescriptor_t) = nullptr;
  cudnnStatus_t (*finalize)(cudnnBackendDescriptor_t) = nullptr;
  cudnnStatus_t (*set_attr)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, int64_t, const void*) = nullptr;
  cudnnStatus_t (*get_attr)(cudnnBackendDescriptor_t const, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, int64_t, int64_t*,
                            void*) = nullptr;
  cudnnStatus_t (*execute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t) = nullptr;
};

template <class F> bool bind(void* lib, const char* sym, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, sym));
  return f != nullptr;
}

const Cudnn& cudnn() {
  static Cudnn c;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> tried;
    const char* env = std::getenv("SHAPEML_CUDNN");
    if (env && std::string(env) == "none") {
      c.error = "cuDNN turned off (SHAPEML_CUDNN=none)";
      return;
    }
    if (env && *env) tried.push_back(env);
    tried.push_back("libcudnn.so.9");
    void* lib = nullptr;
    std::string where;
    for (const std::string& t : tried) {
      if ((lib = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
      where += (where.empty() ? "" : ", ") + t;
    }
    if (!lib) {
      c.error = "cuDNN was not found (tried " + where + "; SHAPEML_CUDNN names it)";
      return;
    }
    if (!bind(lib, "cudnnGetVersion", c.get_version) || !bind(lib, "cudnnGetErrorString", c.get_error_string) ||
        !bind(lib, "cudnnGetLastErrorString", c.get_last_error_string) || !bind(lib, "cudnnCreate", c.create) ||
        !bind(lib, "cudnnDestroy", c.destroy) || !bind(lib, "cudnnSetStream", c.set_stream) ||
        !bind(lib, "cudnnBackendCreateDescriptor", c.create_desc) || !bind(lib, "cudnnBackendDestroyDescriptor", c.destroy_desc) ||
        !bind(lib, "cudnnBackendFinalize", c.finalize) || !bind(lib, "cudnnBackendSetAttribute", c.set_attr) ||
        !bind(lib, "cudnnBackendGetAttribute", c.get_attr) || !bind(lib, "cudnnBackendExecute", c.execute)) {
      c.error = "the cuDNN library found lacks the graph API of cuDNN 9";
      return;
    }
    c.version = c.get_version();
    if (c.version < 90000) c.error = "cuDNN " + std::to_string(c.version) + " is older than 9.0";
  });
  return c;
}

// A failed cuDNN call: its name, status and cuDNN's last message.
struct Failed {
  std::string what;
};

void check(cudnnStatus_t s, const char* call) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  const Cudnn& c = cudnn();
  char last[512] = {0};
  c.get_last_error_string(last, sizeof last);
  throw Failed{std::string(call) + ": " + c.get_error_string(s) + (last[0] ? std::string(" (") + last + ")" : "")};
}

// Owns one backend descriptor.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  explicit Desc(cudnnBackendDescriptorType_t type) { check(cudnn().create_desc(type, &d), "cudnnBackendCreateDescriptor"); }
  ~Desc() {
    if (d) cudnn().destroy_desc(d);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  Desc(Desc&& o) noexcept : d(o.d) { o.d = nullptr; }
  template <class T> Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T& v) {
    check(cudnn().set_attr(d, name, type, 1, &v), "cudnnBackendSetAttribute");
    return *this;
  }
  template <class T> Desc& set_n(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n, const T* v) {
    check(cudnn().set_attr(d, name, type, n, v), "cudnnBackendSetAttribute");
    return *this;
  }
  Desc& finalize() {
    check(cudnn().finalize(d), "cudnnBackendFinalize");
    return *this;
  }
};

// The unique ids of the graph's tensors that a call binds.
enum : int64_t { kQ = 1, kK = 2, kV = 3, kO = 4, kScale = 5, kNegInf = 6, kVirtual = 100 };

// Builds the operation graph of one launch; the descriptors stay alive
// until the execution plan is finalized.
struct GraphBuilder {
  cudnnHandle_t handle;
  std::vector<Desc> keep;            // tensors and op descriptors
  std::vector<cudnnBackendDescriptor_t> ops;
  int64_t next_virtual = kVirtual;

  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t dt, const int64_t (&dims)[4], const int64_t (&strides)[4], bool is_virtual,
                                  bool by_value = false) {
    Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t align = 16;
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, dt)
        .set_n(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims)
        .set_n(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides)
        .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid)
        .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, align)
        .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, is_virtual);
    if (by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, true);
    t.finalize();
    keep.push_back(std::move(t));
    return keep.back().d;
  }
  // A virtual f32 (or `dt`) tensor of `dims`, packed.
  cudnnBackendDescriptor_t virt(const int64_t (&dims)[4], cudnnDataType_t dt = CUDNN_DATA_FLOAT) {
    const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    return tensor(next_virtual++, dt, dims, strides, true);
  }
  void op(Desc&& d) {
    d.finalize();
    keep.push_back(std::move(d));
    ops.push_back(keep.back().d);
  }
  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    Desc m(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const double zero = 0.0;
    m.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT).set(CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, zero).finalize();
    Desc o(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    o.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, a)
        .set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b)
        .set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, c)
        .set(CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, m.d);
    keep.push_back(std::move(m));
    op(std::move(o));
  }
  // y = mode(x[, b][, t]); axis >= 0 for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y,
                 cudnnBackendDescriptor_t t = nullptr, int64_t axis = -1, cudnnDataType_t prec = CUDNN_DATA_FLOAT) {
    Desc p(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    p.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode).set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, prec);
    if (axis >= 0) p.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, axis);
    p.finalize();
    Desc o(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    const float one = 1.0f;
    o.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, p.d)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, one)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, one);
    if (b) o.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b);
    o.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y);
    if (t) o.set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, t);
    keep.push_back(std::move(p));
    op(std::move(o));
  }
  void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    Desc r(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, mode)
        .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT)
        .finalize();
    Desc o(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    o.set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x)
        .set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y)
        .set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, r.d);
    keep.push_back(std::move(r));
    op(std::move(o));
  }
};

}  // namespace

std::unique_ptr<CudnnAttention> CudnnAttention::create(const kern::Attention& a, std::string& why) {
  const Cudnn& c = cudnn();
  if (!c.error.empty()) {
    why = c.error;
    return nullptr;
  }
  std::unique_ptr<CudnnAttention> r(new CudnnAttention());
  try {
    cudnnHandle_t h = nullptr;
    check(c.create(&h), "cudnnCreate");
    r->handle_ = h;
    GraphBuilder g{h, {}, {}, kVirtual};
    const int64_t B = a.batch, H = a.heads, HK = a.heads / a.group, SQ = a.sq, SK = a.sk, D = a.dh;
    // The composite graph cudnn-frontend builds for inference SDPA on cuDNN
    // before 9.21 (where single SDPA, softmax and band-mask operations came):
    // its heuristics map this graph, op for op, to the flash-attention engine.
    // q, v, o as [B, H, S, D] at the launch's strides; k read as kᵀ [B, H, D, Sk]
    // (the same tensor, its last two dims and strides swapped).
    const int64_t qd[4] = {B, H, SQ, D}, qs[4] = {a.stride[0][0], a.stride[0][1], a.stride[0][2], 1};
    // Grouped-query heads: k and v have H / group heads, which cuDNN's
    // graph broadcasts over the query heads as repeat_interleave would.
    const int64_t kd[4] = {B, HK, D, SK}, ks[4] = {a.stride[1][0], a.stride[1][1], 1, a.stride[1][2]};
    const int64_t vd[4] = {B, HK, SK, D}, vs[4] = {a.stride[2][0], a.stride[2][1], a.stride[2][2], 1};
    const int64_t od[4] = {B, H, SQ, D}, os[4] = {a.stride[3][0], a.stride[3][1], a.stride[3][2], 1};
    const int64_t one[4] = {1, 1, 1, 1};
    auto q = g.tensor(kQ, CUDNN_DATA_BFLOAT16, qd, qs, false);
    auto kt = g.tensor(kK, CUDNN_DATA_BFLOAT16, kd, ks, false);
    auto v = g.tensor(kV, CUDNN_DATA_BFLOAT16, vd, vs, false);
    auto o = g.tensor(kO, CUDNN_DATA_BFLOAT16, od, os, false);
    auto scale = g.tensor(kScale, CUDNN_DATA_FLOAT, one, one, false, true);
    const int64_t sd[4] = {B, H, SQ, SK}, rowd[4] = {B, H, SQ, 1};
    auto s = g.virt(sd);
    g.matmul(q, kt, s);
    auto scaled = g.virt(sd);
    g.pointwise(CUDNN_POINTWISE_MUL, s, scale, scaled);
    auto logits = scaled;
    if (a.causal) {
      auto neg_inf = g.tensor(kNegInf, CUDNN_DATA_FLOAT, one, one, false, true);
      auto row = g.virt(sd, CUDNN_DATA_INT32), col = g.virt(sd, CUDNN_DATA_INT32);
      g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scaled, nullptr, row, nullptr, 2);
      g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scaled, nullptr, col, nullptr, 3);
      auto keep = g.virt(sd, CUDNN_DATA_BOOLEAN);
      g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep, nullptr, -1, CUDNN_DATA_BOOLEAN);
      logits = g.virt(sd);
      g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, scaled, neg_inf, logits, keep);
    }
    auto mx = g.virt(rowd);
    g.reduction(CUDNN_REDUCE_TENSOR_MAX, logits, mx);
    auto sub = g.virt(sd);
    g.pointwise(CUDNN_POINTWISE_SUB, logits, mx, sub);
    auto ex = g.virt(sd);
    g.pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, ex);
    auto sum = g.virt(rowd);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, ex, sum);
    // The softmax statistics (max + log sum), virtual: the frontend emits them in inference too.
    auto lg = g.virt(rowd), stats = g.virt(rowd);
    g.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
    g.pointwise(CUDNN_POINTWISE_ADD, mx, lg, stats);
    // The probabilities in bf16, the second product's operand type (as every flash kernel rounds them).
    auto p = g.virt(sd, CUDNN_DATA_BFLOAT16);
    g.pointwise(CUDNN_POINTWISE_DIV, ex, sum, p);
    g.matmul(p, v, o);

    Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.set_n(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(g.ops.size()), g.ops.data())
        .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, h)
        .finalize();
    Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, graph.d)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, CUDNN_HEUR_MODE_A)
        .finalize();
    int64_t count = 0;
    check(c.get_attr(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr), "cudnnBackendGetAttribute");
    if (count <= 0) {
      why = "cuDNN " + std::to_string(c.version) + " has no engine for the attention graph";
      return nullptr;
    }
    std::vector<Desc> cfgs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR), raw.push_back(cfgs.back().d);
    int64_t got = 0;
    check(c.get_attr(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()), "cudnnBackendGetAttribute");
    std::string last;
    for (int64_t i = 0; i < got && !r->plan_; ++i) {
      cudnnBackendDescriptor_t plan = nullptr;
      check(c.create_desc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan), "cudnnBackendCreateDescriptor");
      cudnnStatus_t st = c.set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
      if (st == CUDNN_STATUS_SUCCESS) st = c.set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw[i]);
      if (st == CUDNN_STATUS_SUCCESS) st = c.finalize(plan);
      if (st != CUDNN_STATUS_SUCCESS) {
        last = c.get_error_string(st);
        c.destroy_desc(plan);
        continue;
      }
      int64_t ws = 0, n = 0;
      check(c.get_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws), "cudnnBackendGetAttribute");
      r->plan_ = plan;
      r->workspace_ = static_cast<size_t>(ws);
      // The engine's global index, to say which one ran.
      cudnnBackendDescriptor_t engine = nullptr;
      int64_t idx = -1;
      if (c.create_desc(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) == CUDNN_STATUS_SUCCESS) {
        if (c.get_attr(raw[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) == CUDNN_STATUS_SUCCESS)
          c.get_attr(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &idx);
        c.destroy_desc(engine);
      }
      r->engine_ = "cuDNN " + std::to_string(c.version) + " engine " + std::to_string(idx) + " (heuristics' choice " + std::to_string(i + 1) +
                   " of " + std::to_string(got) + ")";
    }
    if (!r->plan_) {
      why = "none of cuDNN " + std::to_string(c.version) + "'s " + std::to_string(got) + " engines for the attention graph finalized" +
            (last.empty() ? "" : " (last: " + last + ")");
      return nullptr;
    }
  } catch (const Failed& f) {
    why = f.what;
    return nullptr;
  }
  r->scale_ = a.scale;
  r->causal_ = a.causal;
  return r;
}

CudnnAttention::~CudnnAttention() {
  const Cudnn& c = cudnn();
  if (plan_) c.destroy_desc(static_cast<cudnnBackendDescriptor_t>(plan_));
  if (handle_) c.destroy(static_cast<cudnnHandle_t>(handle_));
}

std::string CudnnAttention::run(const void* q, const void* k, const void* v, void* o, void* workspace, cudaStream_t stream) {
  const Cudnn& c = cudnn();
  try {
    const float neg_inf = -std::numeric_limits<float>::infinity();
    // By-value tensors are bound to host pointers, read when the call is enqueued.
    const int64_t uids[6] = {kQ, kK, kV, kO, kScale, kNegInf};
    void* ptrs[6] = {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, &scale_, const_cast<float*>(&neg_inf)};
    const int64_t n = causal_ ? 6 : 5;  // -inf only where the mask uses it
    Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set_n(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids)
        .set_n(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs)
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, workspace)
        .finalize();
    std::lock_guard<std::mutex> lock(mu_);
    check(c.set_stream(static_cast<cudnnHandle_t>(handle_), stream), "cudnnSetStream");
    check(c.execute(static_cast<cudnnHandle_t>(handle_), static_cast<cudnnBackendDescriptor_t>(plan_), pack.d), "cudnnBackendExecute");
  } catch (const Failed& f) {
    return f.what;
  }
  return "";
}

#endif  // SHAPEML_WITH_CUDNN_HEADERS

}  // namespace shapeml::cuda
