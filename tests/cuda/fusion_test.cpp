// Fused against unfused plans on a real GPU: each plan is built by hand (or
// read from the transformer block's planned text), fused with the compiler's
// pass (src/lower/gpu/fuse_elementwise.cpp, compiled into this binary: it
// needs no compiler front end), and both run on the same inputs. The claim is
// bit-identical outputs, so outputs are compared byte for byte (NaN payloads
// included), with special values (NaN, inf, -0, subnormals) among the inputs.
// Without a GPU every test prints "skipped: no GPU".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lower/gpu/fuse_elementwise.h"
#include "lower/gpu/generate_kernels.h"
#include "test_util.h"
#include "plan/verify.h"

namespace shapeml::cuda::test {
namespace {

using Bytes = std::vector<uint8_t>;

// Runs `p` (through its text form and the four executor functions) on raw
// input bytes; the outputs' raw bytes. Outputs and workspace are poisoned.
std::vector<Bytes> run_bytes(const GpuPlan& p, const std::vector<Bytes>& inputs) {
  std::vector<Bytes> results;
  std::string text = p.to_text();
  shapeml_cuda_plan* plan = nullptr;
  char err[1024] = "";
  int32_t rc = plan_create(0, text.c_str(), &plan, err, sizeof err);
  EXPECT_EQ(rc, 0) << err << "\n" << text;
  if (rc != 0) return results;
  std::vector<int64_t> out_bytes(static_cast<size_t>(p.num_outputs), 0);
  for (const GpuSlot& s : p.slots)
    if (s.kind == GpuSlot::Kind::Output) out_bytes[static_cast<size_t>(s.index)] = s.bytes();
  std::vector<void*> bufs;
  for (const Bytes& b : inputs) {
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, b.size() + 16), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d, b.data(), b.size(), cudaMemcpyHostToDevice), cudaSuccess);
    bufs.push_back(d);
  }
  for (int64_t n : out_bytes) {
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, static_cast<size_t>(n) + 16), cudaSuccess);
    EXPECT_EQ(cudaMemset(d, 0xFF, static_cast<size_t>(n) + 16), cudaSuccess);
    bufs.push_back(d);
  }
  int64_t wsb = plan_workspace_bytes(plan);
  void* ws = nullptr;
  if (wsb > 0) {
    EXPECT_EQ(cudaMalloc(&ws, static_cast<size_t>(wsb)), cudaSuccess);
    EXPECT_EQ(cudaMemset(ws, 0xFF, static_cast<size_t>(wsb)), cudaSuccess);
  }
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  rc = plan_execute(plan, bufs.data(), ws, s, err, sizeof err);
  EXPECT_EQ(rc, 0) << err;
  cudaError_t e = cudaStreamSynchronize(s);
  EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
  for (size_t i = 0; i < out_bytes.size(); ++i) {
    Bytes b(static_cast<size_t>(out_bytes[i]));
    EXPECT_EQ(cudaMemcpy(b.data(), bufs[inputs.size() + i], b.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    results.push_back(std::move(b));
  }
  cudaStreamDestroy(s);
  for (void* d : bufs) cudaFree(d);
  if (ws) cudaFree(ws);
  plan_destroy(plan);
  return results;
}

std::mt19937_64& rng() {
  static std::mt19937_64 g(12345);
  return g;
}

// Random values of dtype dt with special values mixed in for floats (every
// 7th element: NaN, +-inf, -0, a subnormal, huge, tiny).
Tensor values(GpuDType dt, Shape s, double lo = -3, double hi = 3, bool specials = true) {
  Tensor t{dt, std::move(s), {}};
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<int> k(-50, 50), b(0, 1);
  const double special[] = {std::nan(""), INFINITY, -INFINITY, -0.0, 1e-40, 3e38, -1e-30, 0.0};
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = 0;
    if (dt == GpuDType::F32 || dt == GpuDType::F64) v = specials && i % 7 == 3 ? special[(i / 7) % 8] : u(rng());
    else if (dt == GpuDType::Bool) v = b(rng());
    else v = k(rng());
    t.v.push_back(v);
  }
  return t;
}

// `f` with its fused launches' programs compiled into generated kernels
// (lower/gpu/generate_kernels.h, NVRTC where the tests run); a failure when
// nothing was generated, with the reason the pass wrote.
GpuPlan generated(const GpuPlan& f, const std::string& what) {
  GpuPlan g = f;
  int n = lower::gpu::generate_fused_kernels(g);
  std::string why;
  for (const auto& l : g.launches)
    if (l.kind == plan::LaunchKind::Fused) why = l.why;
  EXPECT_GT(n, 0) << what << ": no kernel generated: " << why;
  EXPECT_EQ(shapeml::plan::verify_message(g), "") << what;
  return g;
}

void expect_same_bytes(const std::vector<Bytes>& a, const std::vector<Bytes>& b, const GpuPlan& f, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    size_t first = a[i].size();
    for (size_t k = 0; k < a[i].size() && first == a[i].size(); ++k)
      if (a[i][k] != b[i][k]) first = k;
    EXPECT_EQ(first, a[i].size()) << what << ": output " << i << " differs first at byte " << first << "\nfused plan:\n" << f.to_text();
  }
}

// Fuses `p`, checks the pass did fuse (at least `min_saved` launches fewer),
// runs the unfused plan, the fused one (interpreted) and the fused one with
// generated kernels on `inputs` and requires byte-identical outputs.
void expect_identical(const GpuPlan& p, const std::vector<Tensor>& inputs, size_t min_saved, const std::string& what) {
  ASSERT_EQ(shapeml::plan::verify_message(p), "") << what;
  GpuPlan f = lower::gpu::fuse_elementwise(p);
  ASSERT_EQ(shapeml::plan::verify_message(f), "") << what;
  ASSERT_GE(p.launches.size(), f.launches.size() + min_saved) << what << ": not fused\n" << f.to_text();
  std::vector<Bytes> in;
  for (const Tensor& t : inputs) in.push_back(encode(t));
  std::vector<Bytes> a = run_bytes(p, in);
  expect_same_bytes(a, run_bytes(f, in), f, what + " (interpreted)");
  GpuPlan g = generated(f, what);
  expect_same_bytes(a, run_bytes(g, in), g, what + " (generated)");
}

const GpuDType kFloats[] = {GpuDType::F32, GpuDType::F64};

// rmsnorm's tail, (mul (mul x (rsqrt (add ms eps))) g): broadcast [N 1] and
// [D] operands, eps an immediate.
TEST(Fusion, RmsnormTailBitIdentical) {
  REQUIRE_GPU();
  for (GpuDType dt : kFloats) {
    Shape sx{67, 257}, sm{67, 1}, sg{257};
    PlanBuilder b;
    int32_t x = b.input(0, dt, sx), ms = b.input(1, dt, sm), g = b.input(2, dt, sg);
    int32_t eps = b.slot(GpuSlot::Kind::Temp, 0, dt, {}, 0);
    int32_t a = b.slot(GpuSlot::Kind::Temp, 0, dt, sm, 256);
    int32_t r = b.slot(GpuSlot::Kind::Temp, 0, dt, sm, 1024);
    int32_t m = b.slot(GpuSlot::Kind::Temp, 0, dt, sx, 2048);
    int32_t o = b.output(0, dt, sx);
    b.launch("fill", "", {}, {eps}, {}, 1e-5);
    b.launch("binary", "add", {ms, eps}, {a});
    b.launch("unary", "rsqrt", {a}, {r});
    b.launch("binary", "mul", {x, r}, {m});
    b.launch("binary", "mul", {m, g}, {o});
    expect_identical(b.p, {values(dt, sx), values(dt, sm, 0, 4), values(dt, sg)}, 4, std::string("rmsnorm ") + plan::gpu_dtype_name(dt));
  }
}

// The causal mask: select(ge(iota0, iota1), scores * rsqrt(fill Dh), fill -inf)
// with the [S S] mask broadcast over [B H S S].
TEST(Fusion, CausalMaskWithIotasBitIdentical) {
  REQUIRE_GPU();
  for (GpuDType dt : kFloats) {
    Shape ss{2, 3, 37, 37}, sm{37, 37};
    PlanBuilder b;
    int32_t sc = b.input(0, dt, ss);
    int64_t off = 0;
    auto temp = [&](GpuDType d, Shape s) {
      int32_t t = b.slot(GpuSlot::Kind::Temp, 0, d, s, off);
      off += (numel(s) * plan::gpu_dtype_size(d) + 255) / 256 * 256;
      return t;
    };
    int32_t dh = temp(dt, {}), c = temp(dt, {}), scaled = temp(dt, ss), i0 = temp(GpuDType::I32, sm), i1 = temp(GpuDType::I32, sm),
            ge = temp(GpuDType::Bool, sm), ninf = temp(dt, {});
    int32_t o = b.output(0, dt, ss);
    b.launch("fill", "", {}, {dh}, {}, 64);
    b.launch("unary", "rsqrt", {dh}, {c});
    b.launch("binary", "mul", {sc, c}, {scaled});
    b.launch("iota", "", {}, {i0}, {0});
    b.launch("iota", "", {}, {i1}, {1});
    b.launch("compare", "ge", {i0, i1}, {ge});
    b.launch("fill", "", {}, {ninf}, {}, -INFINITY);
    b.launch("select", "", {ge, scaled, ninf}, {o});
    expect_identical(b.p, {values(dt, ss)}, 7, std::string("mask ") + plan::gpu_dtype_name(dt));
  }
}

// Every unary op under every binary op (one broadcast operand), in f32 and
// f64, on special values: out_k = binary_k(u(x), y) - y * u(x), the unary's
// value read twice inside the group (a DAG, evaluated once per element).
TEST(Fusion, EveryUnaryAndBinaryOpOnSpecialValuesBitIdentical) {
  REQUIRE_GPU();
  const char* unary[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu", "sin", "cos"};
  const char* binary[] = {"add", "sub", "mul", "div", "max", "min", "pow"};
  for (GpuDType dt : kFloats)
    for (const char* u : unary) {
      Shape sx{5, 1031}, sy{1031};
      PlanBuilder b;
      int32_t x = b.input(0, dt, sx), y = b.input(1, dt, sy);
      int64_t off = 0;
      auto temp = [&]() {
        int32_t t = b.slot(GpuSlot::Kind::Temp, 0, dt, sx, off);
        off += (numel(sx) * plan::gpu_dtype_size(dt) + 255) / 256 * 256;
        return t;
      };
      for (size_t k = 0; k < std::size(binary); ++k) {
        int32_t t = temp(), p = temp(), q = temp();
        int32_t o = b.output(static_cast<int32_t>(k), dt, sx);
        b.launch("unary", u, {x}, {t});
        b.launch("binary", binary[k], {t, y}, {p});
        b.launch("binary", "mul", {y, t}, {q});
        b.launch("binary", "sub", {p, q}, {o});
      }
      expect_identical(b.p, {values(dt, sx), values(dt, sy, -2, 2)}, 3 * std::size(binary), std::string(u) + " " + plan::gpu_dtype_name(dt));
    }
}

// Integers, bools and casts: compare, not/and/or, select, casts between all
// fusible dtypes (saturating float -> int, NaN -> 0, int wrap), integer
// division corners, iota of every dtype.
TEST(Fusion, IntegersBoolsAndCastsBitIdentical) {
  REQUIRE_GPU();
  const GpuDType all[] = {GpuDType::F32, GpuDType::F64, GpuDType::I32, GpuDType::I64, GpuDType::Bool};
  for (GpuDType from : all)
    for (GpuDType to : all) {
      Shape s{3, 211};
      PlanBuilder b;
      int32_t x = b.input(0, from, s), y = b.input(1, to, {211}), m = b.input(2, GpuDType::Bool, {3, 1});
      int64_t off = 0;
      auto temp = [&](GpuDType d, Shape sh) {
        int32_t t = b.slot(GpuSlot::Kind::Temp, 0, d, sh, off);
        off += (numel(sh) * plan::gpu_dtype_size(d) + 255) / 256 * 256;
        return t;
      };
      int32_t c = temp(to, s), io = temp(to, s), cmp = temp(GpuDType::Bool, s), nt = temp(GpuDType::Bool, s), an = temp(GpuDType::Bool, s),
              orr = temp(GpuDType::Bool, s), sel = temp(to, s);
      int32_t o0 = b.output(0, to, s);
      int32_t o1 = b.output(1, GpuDType::Bool, s);
      b.launch("cast", "", {x}, {c});                   // from -> to
      b.launch("iota", "", {}, {io}, {1});              // in `to`
      b.launch("compare", "lt", {c, y}, {cmp});         // broadcast y
      b.launch("unary", "not", {cmp}, {nt});
      b.launch("binary", "and", {nt, m}, {an});         // broadcast m
      b.launch("binary", "or", {an, cmp}, {orr});
      b.launch("select", "", {an, c, io}, {sel});
      if (to == GpuDType::Bool) b.launch("binary", "and", {sel, orr}, {o0});
      else b.launch("binary", to == GpuDType::F32 || to == GpuDType::F64 ? "add" : "div", {sel, y}, {o0});
      b.launch("compare", "ne", {orr, an}, {o1});
      Tensor tx = values(from, s, -3e9, 3e9), ty = values(to, {211});
      if (to == GpuDType::I32 || to == GpuDType::I64) ty.v[5] = 0, ty.v[6] = -1;  // division by 0 and -1
      expect_identical(b.p, {tx, ty, values(GpuDType::Bool, {3, 1})}, 2,
                       std::string("cast ") + plan::gpu_dtype_name(from) + " -> " + plan::gpu_dtype_name(to));
    }
}

// More than 2^31 elements: the 64-bit index path, and broadcasting there.
// (out[i, j] = not x[j] over [2147484, 1000] bools: 2.1 GB.)
TEST(Fusion, SixtyFourBitIndexPath) {
  REQUIRE_GPU();
  Shape so{2147484, 1000}, sx{1000};
  PlanBuilder b;
  int32_t x = b.input(0, GpuDType::Bool, sx);
  int32_t t = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::Bool, sx, 0);
  int32_t o = b.output(0, GpuDType::Bool, so);
  b.launch("unary", "not", {x}, {t});
  int32_t one = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::Bool, {}, 1024);
  int32_t zero = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::Bool, {}, 2048);
  b.launch("fill", "", {}, {one}, {}, 1);
  b.launch("fill", "", {}, {zero}, {}, 0);
  b.launch("select", "", {t, one, zero}, {o});
  GpuPlan f = lower::gpu::fuse_elementwise(b.p);
  ASSERT_EQ(f.launches.size(), 1u) << f.to_text();
  Tensor tx = values(GpuDType::Bool, sx);
  for (const GpuPlan& run : {f, generated(f, "64-bit")}) {  // interpreted, then generated (its 64-bit index math)
    std::vector<Bytes> r = run_bytes(run, {encode(tx)});
    ASSERT_EQ(r.size(), 1u);
    const Bytes& out = r[0];
    ASSERT_EQ(static_cast<int64_t>(out.size()), numel(so));
    int bad = 0;
    auto check_row = [&](int64_t row) {
      for (int64_t j = 0; j < 1000 && bad < 5; ++j)
        if (out[static_cast<size_t>(row * 1000 + j)] != (tx.v[static_cast<size_t>(j)] != 0 ? 0 : 1)) {
          ++bad;
          ADD_FAILURE() << (run.code_arch.empty() ? "interpreted" : "generated") << ": row " << row << " col " << j;
        }
    };
    for (int64_t row : {int64_t{0}, int64_t{1}, int64_t{2147482}, int64_t{2147483}, int64_t{1073741}}) check_row(row);
  }
}

// The transformer block as planned by shapemlc, fused and unfused (the plan
// texts gpu-stage.sh writes; the test skips without them): the whole block's
// output bit for bit.
TEST(Fusion, TransformerBlockPlanBitIdentical) {
  REQUIRE_GPU();
  const char* dir = std::getenv("SHAPEML_TEST_FUSION_PLANS");
  if (!dir) GTEST_SKIP() << "skipped: SHAPEML_TEST_FUSION_PLANS (a folder with block.fused.plan.txt and block.unfused.plan.txt) is not set";
  auto read = [&](const std::string& name) {
    std::ifstream f(std::string(dir) + "/" + name);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  std::string err;
  auto unfused = GpuPlan::parse(read("block.unfused.plan.txt"), err);
  ASSERT_TRUE(unfused) << err;
  auto fused = GpuPlan::parse(read("block.fused.plan.txt"), err);
  ASSERT_TRUE(fused) << err;
  ASSERT_LT(fused->launches.size(), unfused->launches.size());
  // shapemlc generated the fused launches' kernels where it ran: without
  // them (the interpreter's plan) the plan is the pass's here, the compiler's.
  ASSERT_FALSE(fused->code_arch.empty()) << "shapemlc generated no kernels for the fused block:\n" << fused->to_text();
  GpuPlan interpreted = *fused;
  interpreted.code_arch.clear(), interpreted.code_cubin.clear(), interpreted.code_ptx.clear();
  for (GpuLaunch& l : interpreted.launches)
    if (l.kind == plan::LaunchKind::Fused) {
      EXPECT_FALSE(l.op.empty()) << l.why;
      l.op.clear();
      if (size_t at = l.why.rfind("; generated kernel"); at != std::string::npos) l.why.resize(at);
    }
  EXPECT_EQ(lower::gpu::fuse_elementwise(*unfused).to_text(), interpreted.to_text());
  std::vector<Bytes> in;
  for (const GpuSlot& s : unfused->slots)
    if (s.kind == GpuSlot::Kind::Input) {
      if (in.size() <= static_cast<size_t>(s.index)) in.resize(static_cast<size_t>(s.index) + 1);
      in[static_cast<size_t>(s.index)] = encode(values(s.dtype, s.shape, -0.5, 0.5, false));
    }
  std::vector<Bytes> a = run_bytes(*unfused, in), b = run_bytes(*fused, in), c = run_bytes(interpreted, in);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(a[0] == b[0]) << "the fused block's output (generated kernels) differs from the unfused one";
  EXPECT_TRUE(a[0] == c[0]) << "the fused block's output (interpreted) differs from the unfused one";
}

}  // namespace
}  // namespace shapeml::cuda::test
