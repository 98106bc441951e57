// CPU back end tests: programs of every operation family are JIT-compiled,
// run on inputs, and compared with float64 reference loops written here
// (an independent implementation: nothing of shapeml computes the expected
// values). Also: the emitted MLIR verifies, bad bindings and non-CPU
// programs are rejected with messages, AOT shared objects load with dlopen
// and carry a manifest, and need only libc/libm.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "driver/frontend.h"
#include "lower/cpu/cpu_backend.h"
#include "lower/cpu/link_elf.h"
#include "lower/cpu/pipeline.h"

namespace cpu = shapeml::lower::cpu;
using shapeml::types::DType;

namespace {

// ---- values -------------------------------------------------------------------

struct Tensor {
  DType dt = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> v;  // row-major
};

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// bf16 round-to-nearest-even of a float (independent of the back end's).
float to_bf16(float x) {
  if (std::isnan(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint64_t w = u;
  w += 0x7fff + ((u >> 16) & 1);
  u = static_cast<uint32_t>(w) & 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

size_t width(DType d) {
  switch (d) {
    case DType::F32: case DType::I32: return 4;
    case DType::F64: case DType::I64: return 8;
    case DType::BF16: return 2;
    case DType::Bool: return 1;
    case DType::Var: break;
  }
  return 4;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, AlignedFree>;

Buffer alloc(DType dt, int64_t n) {
  size_t bytes = std::max<size_t>(64, (static_cast<size_t>(n) * width(dt) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, bytes);
  std::memset(p, 0xA5, bytes);  // garbage: outputs must be fully written
  return Buffer(p);
}

void store(void* p, DType dt, int64_t i, double x) {
  switch (dt) {
    case DType::F32: static_cast<float*>(p)[i] = static_cast<float>(x); break;
    case DType::F64: static_cast<double*>(p)[i] = x; break;
    case DType::BF16: {
      float f = to_bf16(static_cast<float>(x));
      uint32_t u;
      std::memcpy(&u, &f, 4);
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(u >> 16);
      break;
    }
    case DType::I32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(x); break;
    case DType::I64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(x); break;
    case DType::Bool: static_cast<uint8_t*>(p)[i] = x != 0; break;
    case DType::Var: break;
  }
}

double load(const void* p, DType dt, int64_t i) {
  switch (dt) {
    case DType::F32: return static_cast<const float*>(p)[i];
    case DType::F64: return static_cast<const double*>(p)[i];
    case DType::BF16: {
      uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case DType::I32: return static_cast<const int32_t*>(p)[i];
    case DType::I64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::Bool: return static_cast<const uint8_t*>(p)[i];
    case DType::Var: break;
  }
  return 0;
}

// ---- compile and run -------------------------------------------------------------

std::shared_ptr<shapeml::check::CheckResult> check(const std::string& src) {
  auto r = std::make_shared<shapeml::check::CheckResult>(shapeml::driver::check_source("test.sml", src));
  if (!r->ok()) {
    std::string msg;
    for (const auto& d : r->diags.all()) msg += shapeml::syntax::render_text(d, *r->source) + "\n";
    ADD_FAILURE() << "program does not check:\n" << msg << src;
  }
  return r;
}

cpu::CpuJit& jit() {
  static cpu::CpuJit j;
  return j;
}

cpu::CpuJit& naive_jit() {
  static cpu::CpuJit j(cpu::CpuTarget{}, [] {
    cpu::CompileOptions o;
    o.matmul = cpu::MatmulStrategy::Naive;
    return o;
  }());
  return j;
}

// Compiles `entry` at `b`, runs it on `ins`, returns the outputs. An entry
// with index checks gets its error record (zeroed) after the outputs; its
// words land in `*record` when given.
std::vector<Tensor> run(const std::string& src, const std::string& entry, const std::map<std::string, int64_t>& b, const std::vector<Tensor>& ins,
                        cpu::CpuJit& j = jit(), std::vector<int64_t>* record = nullptr) {
  auto r = check(src);
  if (!r->ok()) return {};
  std::string err;
  cpu::ConcreteSignature sig;
  if (!cpu::specialize_signature(*r->module, entry, b, sig, err)) {
    ADD_FAILURE() << err;
    return {};
  }
  // The emitted MLIR must parse and verify on its own.
  std::string text = cpu::emit_mlir(*r->module, entry, b, {}, &err);
  EXPECT_FALSE(text.empty()) << err;
  EXPECT_EQ(cpu::detail::verify_mlir(text), "") << text;
  auto fn = j.compile(*r->module, entry, b, err);
  if (!fn) {
    ADD_FAILURE() << "compile failed: " << err;
    return {};
  }
  for (const auto& n : j.last_notes()) ADD_FAILURE() << "note: " << n;
  EXPECT_EQ(sig.params.size(), ins.size());
  std::vector<Buffer> bufs;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < ins.size() && i < sig.params.size(); ++i) {
    EXPECT_EQ(ins[i].dt, sig.params[i].dtype) << "input " << i;
    EXPECT_EQ(ins[i].shape, sig.params[i].shape) << "input " << i;
    EXPECT_EQ(static_cast<int64_t>(ins[i].v.size()), numel(ins[i].shape)) << "input " << i;
    bufs.push_back(alloc(ins[i].dt, numel(ins[i].shape)));
    for (size_t k = 0; k < ins[i].v.size(); ++k) store(bufs.back().get(), ins[i].dt, static_cast<int64_t>(k), ins[i].v[k]);
    ptrs.push_back(bufs.back().get());
  }
  for (const auto& o : sig.results) {
    bufs.push_back(alloc(o.dtype, o.num_elements()));
    ptrs.push_back(bufs.back().get());
  }
  if (sig.error_record) {
    bufs.push_back(alloc(DType::I64, static_cast<int64_t>(sig.error_record)));
    std::memset(bufs.back().get(), 0, sig.error_record * 8);
    ptrs.push_back(bufs.back().get());
  }
  std::vector<std::vector<uint8_t>> before;
  for (size_t i = 0; i < ins.size(); ++i) {
    const uint8_t* p = static_cast<const uint8_t*>(ptrs[i]);
    before.emplace_back(p, p + numel(ins[i].shape) * static_cast<int64_t>(width(ins[i].dt)));
  }
  fn(ptrs.data());
  // Generated code never writes its inputs.
  for (size_t i = 0; i < ins.size(); ++i) EXPECT_EQ(std::memcmp(before[i].data(), ptrs[i], before[i].size()), 0) << "input " << i << " was modified";
  std::vector<Tensor> outs;
  for (size_t i = 0; i < sig.results.size(); ++i) {
    Tensor t{sig.results[i].dtype, sig.results[i].shape, {}};
    const void* p = ptrs[ins.size() + i];
    for (int64_t k = 0; k < numel(t.shape); ++k) t.v.push_back(load(p, t.dt, k));
    outs.push_back(std::move(t));
  }
  if (record) {
    record->clear();
    if (sig.error_record) {
      const auto* w = static_cast<const int64_t*>(ptrs.back());
      record->assign(w, w + sig.error_record);
    }
  }
  return outs;
}

std::string compile_error(const std::string& src, const std::string& entry, const std::map<std::string, int64_t>& b) {
  auto r = check(src);
  if (!r->ok()) return "<does not check>";
  std::string err;
  auto fn = jit().compile(*r->module, entry, b, err);
  EXPECT_EQ(fn, nullptr);
  return err;
}

// ---- references ------------------------------------------------------------------

// Flat index into `in` (right-aligned, literal-1 dims broadcast) of the
// output element with multi-index `idx`.
int64_t bcast_index(const std::vector<int64_t>& idx, const std::vector<int64_t>& in) {
  int64_t flat = 0;
  size_t off = idx.size() - in.size();
  for (size_t j = 0; j < in.size(); ++j) flat = flat * in[j] + (in[j] == 1 ? 0 : idx[off + j]);
  return flat;
}

std::vector<int64_t> unflatten(int64_t f, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t j = shape.size(); j-- > 0;) {
    idx[j] = f % shape[j];
    f /= shape[j];
  }
  return idx;
}

std::vector<int64_t> bshape(const std::vector<std::vector<int64_t>>& shapes) {
  size_t n = 0;
  for (auto& s : shapes) n = std::max(n, s.size());
  std::vector<int64_t> out(n, 1);
  for (auto& s : shapes)
    for (size_t j = 0; j < s.size(); ++j) out[n - s.size() + j] = std::max(out[n - s.size() + j], s[j]);
  return out;
}

Tensor map_ref(const std::vector<Tensor>& ins, DType out_dt, const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<int64_t>> shapes;
  for (auto& t : ins) shapes.push_back(t.shape);
  Tensor o{out_dt, bshape(shapes), {}};
  for (int64_t k = 0; k < numel(o.shape); ++k) {
    auto idx = unflatten(k, o.shape);
    std::vector<double> xs;
    for (auto& t : ins) xs.push_back(t.v[bcast_index(idx, t.shape)]);
    o.v.push_back(f(xs));
  }
  return o;
}

Tensor random(DType dt, std::vector<int64_t> shape, double lo, double hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t{dt, std::move(shape), {}};
  for (int64_t i = 0; i < numel(t.shape); ++i) {
    double x = u(rng);
    switch (dt) {
      case DType::F32: x = static_cast<float>(x); break;
      case DType::BF16: x = to_bf16(static_cast<float>(x)); break;
      case DType::I32: case DType::I64: x = std::floor(x); break;
      case DType::Bool: x = x > (lo + hi) / 2; break;
      default: break;
    }
    t.v.push_back(x);
  }
  return t;
}

Tensor values(DType dt, std::vector<int64_t> shape, std::vector<double> v) { return Tensor{dt, std::move(shape), std::move(v)}; }

double tol_for(DType dt) {
  switch (dt) {
    case DType::F32: return 2e-6;
    case DType::F64: return 1e-13;
    case DType::BF16: return 1.6e-2;
    default: return 0;
  }
}

void expect_close(const Tensor& got, const Tensor& want, double rtol = -1, double atol = -1, const std::string& what = "") {
  ASSERT_EQ(got.shape, want.shape) << what;
  ASSERT_EQ(got.dt, want.dt) << what;
  if (rtol < 0) rtol = tol_for(want.dt);
  if (atol < 0) atol = rtol;
  int bad = 0;
  for (size_t i = 0; i < want.v.size(); ++i) {
    double g = got.v[i], w = want.v[i];
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok && bad++ < 5) ADD_FAILURE() << what << " element " << i << ": got " << g << ", want " << w;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.v.size() << " elements differ";
}

std::string ty(DType dt) { return std::string(shapeml::types::dtype_name(dt)); }

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? " " : "") + std::to_string(s[i]);
  return r + ")";
}

std::string tt(DType dt, const std::vector<int64_t>& s) { return "(tensor " + ty(dt) + " " + shape_text(s) + " host)"; }

// In long double (x87: exponent range to 1e-4951), so that results that are
// subnormal in double (sigmoid(-730) ~ 1e-317) are computed without
// underflow; 1 / (1 + exp(-x)) in double would give 0 there.
long double sigmoid_ld(long double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }
double sigmoid(double x) { return static_cast<double>(sigmoid_ld(x)); }
double silu(double x) { return static_cast<double>(x * sigmoid_ld(x)); }

// ---- elementwise -----------------------------------------------------------------

struct UnaryCase {
  const char* op;
  double lo, hi;
  std::function<double(double)> f;
};

std::vector<UnaryCase> float_unary() {
  return {
      {"neg", -3, 3, [](double x) { return -x; }},
      {"abs", -3, 3, [](double x) { return std::fabs(x); }},
      {"exp", -5, 5, [](double x) { return std::exp(x); }},
      {"log", 0.01, 20, [](double x) { return std::log(x); }},
      {"sqrt", 0, 20, [](double x) { return std::sqrt(x); }},
      {"rsqrt", 0.01, 20, [](double x) { return 1 / std::sqrt(x); }},
      {"tanh", -6, 6, [](double x) { return std::tanh(x); }},
      {"sigmoid", -12, 12, sigmoid},
      {"relu", -3, 3, [](double x) { return std::isnan(x) || x > 0 ? x : 0; }},  // NaN propagates
      {"gelu", -6, 6, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"silu", -12, 12, silu},
  };
}

class FloatUnary : public ::testing::TestWithParam<std::tuple<int, DType>> {};

TEST_P(FloatUnary, MatchesReference) {
  auto [which, dt] = GetParam();
  UnaryCase c = float_unary()[which];
  std::string src = "(module u (func f (dims N M) (params (x (tensor " + ty(dt) + " (N M) host)))" +
                    " (returns (tensor " + ty(dt) + " (N M) host)) (return (" + c.op + " x))))";
  Tensor x = random(dt, {7, 33}, c.lo, c.hi, 42 + which);
  auto out = run(src, "f", {{"N", 7}, {"M", 33}}, {x});
  ASSERT_EQ(out.size(), 1u);
  Tensor want = map_ref({x}, dt, [&](const std::vector<double>& v) {
    double r = c.f(v[0]);
    if (dt == DType::F32) return static_cast<double>(static_cast<float>(r));
    if (dt == DType::BF16) return static_cast<double>(to_bf16(static_cast<float>(r)));
    return r;
  });
  // Transcendental f32 functions are within a few ulp (erf/tanh are
  // polynomial approximations); gelu/silu compose several.
  double rtol = dt == DType::F32 ? 4e-6 : tol_for(dt);
  expect_close(out[0], want, rtol, dt == DType::F32 ? 1e-6 : rtol, c.op);
}

INSTANTIATE_TEST_SUITE_P(AllOps, FloatUnary,
                         ::testing::Combine(::testing::Range(0, 11), ::testing::Values(DType::F32, DType::F64, DType::BF16)),
                         [](const auto& info) {
                           return std::string(float_unary()[std::get<0>(info.param)].op) + "_" + ty(std::get<1>(info.param));
                         });

TEST(Elementwise, SpecialValues) {
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // Also subnormal inputs (f32: 1e-40, 2^-149; f64: 1e-310, 2^-1074) and
  // arguments whose exp/sigmoid/silu are subnormal (f32: -88 ... -103; f64:
  // -710 ... -744).
  std::vector<double> xs = {0.0, -0.0, 1e-30, -1e-30, 88.0, 89.0, 100.0, -87.0, -104.0, -200.0, 1e30, -1e30, inf, -inf, nan, 1.0, -1.0,
                            1e-40, -1e-40, 1.401298464324817e-45, -1.401298464324817e-45, 1e-310, -1e-310, 4.9406564584124654e-324,
                            -88.0, -90.5, -95.0, -100.0, -103.0, 95.0, 103.0, -710.0, -730.0, -744.0, 730.0};
  for (DType dt : {DType::F32, DType::F64}) {
    for (const auto& c : float_unary()) {
      std::string op = c.op;
      std::string src = "(module s (func f (params (x " + tt(dt, {static_cast<int64_t>(xs.size())}) + ")) (returns " +
                        tt(dt, {static_cast<int64_t>(xs.size())}) + ") (return (" + op + " x))))";
      Tensor x = values(dt, {static_cast<int64_t>(xs.size())}, xs);
      if (dt == DType::F32)
        for (auto& v : x.v) v = static_cast<float>(v);
      auto out = run(src, "f", {}, {x});
      ASSERT_EQ(out.size(), 1u);
      Tensor want = map_ref({x}, dt, [&](auto& v) {
        double r = c.f(v[0]);
        if (op == "silu" && std::isinf(v[0])) r = v[0] > 0 ? inf : nan;  // -inf * 0
        if (op == "gelu" && std::isinf(v[0])) r = v[0] > 0 ? inf : nan;  // -inf * 0
        return dt == DType::F32 ? static_cast<double>(static_cast<float>(r)) : r;
      });
      // Near the f32 range limits relative error grows (exp(88)). Subnormal
      // results are not flushed to zero: within 4 units of the smallest
      // subnormal (docs/design/subnormals.md).
      expect_close(out[0], want, dt == DType::F32 ? 1e-5 : 1e-13, dt == DType::F32 ? 4 * 1.401298464324817e-45 : 4 * 4.9406564584124654e-324,
                   op + " " + ty(dt) + " special values");
    }
  }
}

TEST(Elementwise, IntegerUnary) {
  for (DType dt : {DType::I32, DType::I64}) {
    std::string src = "(module u (func f (params (x " + tt(dt, {6}) + ")) (returns " + tt(dt, {6}) + " " + tt(dt, {6}) + " " + tt(dt, {6}) +
                      ") (return (neg x) (abs x) (relu x))))";
    Tensor x = values(dt, {6}, {-5, -1, 0, 1, 7, -123456});
    auto out = run(src, "f", {}, {x});
    ASSERT_EQ(out.size(), 3u);
    expect_close(out[0], map_ref({x}, dt, [](auto& v) { return -v[0]; }), 0, 0, "neg");
    expect_close(out[1], map_ref({x}, dt, [](auto& v) { return std::fabs(v[0]); }), 0, 0, "abs");
    expect_close(out[2], map_ref({x}, dt, [](auto& v) { return std::max(v[0], 0.0); }), 0, 0, "relu");
  }
}

struct BinCase {
  const char* op;
  std::function<double(double, double)> f;
};

TEST(Elementwise, FloatBinaryWithBroadcasting) {
  std::vector<BinCase> cases = {
      {"add", [](double a, double b) { return a + b; }},   {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},   {"div", [](double a, double b) { return a / b; }},
      {"max", [](double a, double b) { return std::max(a, b); }}, {"min", [](double a, double b) { return std::min(a, b); }},
      {"pow", [](double a, double b) { return std::pow(a, b); }},
  };
  for (DType dt : {DType::F32, DType::F64, DType::BF16})
    for (const auto& c : cases) {
      // (2 1 4) with (3 1): rank extension and literal-1 stretching both ways.
      std::string src = "(module b (func f (dims N) (params (a (tensor " + ty(dt) + " (2 1 N) host)) (b " + tt(dt, {3, 1}) +
                        ")) (returns (tensor " + ty(dt) + " (2 3 N) host)) (return (" + c.op + " a b))))";
      bool is_pow = std::string(c.op) == "pow";
      Tensor a = random(dt, {2, 1, 4}, is_pow ? 0.1 : -4, 4, 1);
      Tensor b = random(dt, {3, 1}, is_pow ? -2 : 0.5, 3, 2);
      auto out = run(src, "f", {{"N", 4}}, {a, b});
      ASSERT_EQ(out.size(), 1u) << c.op;
      Tensor want = map_ref({a, b}, dt, [&](auto& v) {
        double r = c.f(v[0], v[1]);
        if (dt == DType::F32) return static_cast<double>(static_cast<float>(r));
        if (dt == DType::BF16) return static_cast<double>(to_bf16(static_cast<float>(r)));
        return r;
      });
      expect_close(out[0], want, dt == DType::F32 ? 4e-7 : -1, -1, std::string(c.op) + " " + ty(dt));
    }
}

TEST(Elementwise, IntegerBinary) {
  for (DType dt : {DType::I32, DType::I64}) {
    double mn = dt == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
    std::string src = "(module b (func f (params (a " + tt(dt, {8}) + ") (b " + tt(dt, {8}) + ")) (returns";
    for (int i = 0; i < 6; ++i) src += " " + tt(dt, {8});
    src += ") (return (add a b) (sub a b) (mul a b) (div a b) (max a b) (min a b))))";
    Tensor a = values(dt, {8}, {7, -7, 7, -7, 0, 5, mn, 12345});
    Tensor b = values(dt, {8}, {2, 2, -2, -2, 3, 0, -1, 1000});
    auto out = run(src, "f", {}, {a, b});
    ASSERT_EQ(out.size(), 6u);
    // Two's complement wrapping for add/sub/mul.
    auto wrap = [&](auto op) {
      return [&, op](auto& v) {
        uint64_t r = op(static_cast<uint64_t>(static_cast<int64_t>(v[0])), static_cast<uint64_t>(static_cast<int64_t>(v[1])));
        return dt == DType::I32 ? static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(r))) : static_cast<double>(static_cast<int64_t>(r));
      };
    };
    expect_close(out[0], map_ref({a, b}, dt, wrap([](uint64_t x, uint64_t y) { return x + y; })), 0, 0, "add");
    expect_close(out[1], map_ref({a, b}, dt, wrap([](uint64_t x, uint64_t y) { return x - y; })), 0, 0, "sub");
    expect_close(out[2], map_ref({a, b}, dt, wrap([](uint64_t x, uint64_t y) { return x * y; })), 0, 0, "mul");
    // Truncating division; x/0 = 0; MIN/-1 = MIN (wrapping).
    expect_close(out[3], map_ref({a, b}, dt, [&](auto& v) {
                   if (v[1] == 0) return 0.0;
                   if (v[0] == mn && v[1] == -1) return mn;
                   return std::trunc(v[0] / v[1]);
                 }),
                 0, 0, "div");
    expect_close(out[4], map_ref({a, b}, dt, [](auto& v) { return std::max(v[0], v[1]); }), 0, 0, "max");
    expect_close(out[5], map_ref({a, b}, dt, [](auto& v) { return std::min(v[0], v[1]); }), 0, 0, "min");
  }
}

TEST(Elementwise, LiteralOperands) {
  std::string src = R"((module l (func f (dims N) (params (x (tensor f32 (N) host)) (k (tensor i32 (N) host)))
    (returns (tensor f32 (N) host) (tensor i32 (N) host) (tensor f32 (N) host))
    (return (add (mul 2 x) 1.5) (sub 10 k) (div x (const 4 f32))))))";
  Tensor x = random(DType::F32, {5}, -2, 2, 3);
  Tensor k = values(DType::I32, {5}, {1, 2, 3, -4, 100});
  auto out = run(src, "f", {{"N", 5}}, {x, k});
  ASSERT_EQ(out.size(), 3u);
  expect_close(out[0], map_ref({x}, DType::F32, [](auto& v) { return static_cast<float>(2 * v[0] + 1.5); }));
  expect_close(out[1], map_ref({k}, DType::I32, [](auto& v) { return 10 - v[0]; }), 0, 0);
  expect_close(out[2], map_ref({x}, DType::F32, [](auto& v) { return v[0] / 4; }));
}

TEST(Elementwise, CompareAndSelect) {
  const char* ops[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  std::function<bool(double, double)> fs[] = {
      [](double a, double b) { return a == b; }, [](double a, double b) { return a != b; }, [](double a, double b) { return a < b; },
      [](double a, double b) { return a <= b; }, [](double a, double b) { return a > b; },  [](double a, double b) { return a >= b; },
  };
  double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64, DType::Bool}) {
    std::string src = "(module c (func f (params (a " + tt(dt, {2, 4}) + ") (b " + tt(dt, {4}) + ")) (returns";
    for (int i = 0; i < 6; ++i) src += " " + tt(DType::Bool, {2, 4});
    src += ") (return (eq a b) (ne a b) (lt a b) (le a b) (gt a b) (ge a b))))";
    Tensor a, b;
    if (dt == DType::Bool) {
      a = values(dt, {2, 4}, {0, 0, 1, 1, 1, 0, 1, 0});
      b = values(dt, {4}, {0, 1, 0, 1});
    } else {
      bool fl = dt == DType::F32 || dt == DType::F64 || dt == DType::BF16;
      a = values(dt, {2, 4}, {1, 2, 3, 4, fl ? nan : 5, -1, 3, 0});
      b = values(dt, {4}, {1, 3, 2, fl ? nan : 4});
    }
    auto out = run(src, "f", {}, {a, b});
    ASSERT_EQ(out.size(), 6u) << ty(dt);
    for (int i = 0; i < 6; ++i)
      expect_close(out[i], map_ref({a, b}, DType::Bool, [&](auto& v) { return fs[i](v[0], v[1]) ? 1.0 : 0.0; }), 0, 0,
                   std::string(ops[i]) + " " + ty(dt));
  }
  // select broadcasts all three operands; a literal branch.
  std::string src = R"((module s (func f (params (c (tensor bool (3 1) host)) (a (tensor f32 (4) host)) (b (tensor f32 (3 4) host)))
    (returns (tensor f32 (3 4) host) (tensor f32 (3 4) host))
    (return (select c a b) (select (gt b 0) b 0.0)))))";
  Tensor c = values(DType::Bool, {3, 1}, {1, 0, 1});
  Tensor a = random(DType::F32, {4}, -1, 1, 5), b = random(DType::F32, {3, 4}, -1, 1, 6);
  auto out = run(src, "f", {}, {c, a, b});
  ASSERT_EQ(out.size(), 2u);
  expect_close(out[0], map_ref({c, a, b}, DType::F32, [](auto& v) { return v[0] != 0 ? v[1] : v[2]; }), 0, 0);
  expect_close(out[1], map_ref({b}, DType::F32, [](auto& v) { return v[0] > 0 ? v[0] : 0.0; }), 0, 0);
}

// Reference semantics of cast (docs/design/cpu-codegen.md).
double cast_ref(double x, DType from, DType to) {
  switch (to) {
    case DType::Bool: return (x != 0 || std::isnan(x)) ? 1 : 0;
    case DType::F32: return static_cast<float>(x);
    case DType::F64: return x;
    case DType::BF16: return to_bf16(static_cast<float>(x));
    case DType::Var: return x;
    case DType::I32:
    case DType::I64: {
      if (from == DType::I32 || from == DType::I64 || from == DType::Bool) {
        // Integer narrowing wraps (two's complement), widening sign-extends.
        int64_t i = static_cast<int64_t>(x);
        return to == DType::I32 ? static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(i))) : static_cast<double>(i);
      }
      // Float to integer truncates toward zero and saturates; NaN is 0.
      double lim = to == DType::I32 ? 2147483648.0 : 9223372036854775808.0;
      if (std::isnan(x)) return 0;
      if (x >= lim) return to == DType::I32 ? 2147483647.0 : 9223372036854775807.0;
      if (x < -lim) return -lim;
      return std::trunc(x);
    }
  }
  return 0;
}

TEST(Elementwise, CastEveryPair) {
  DType all[] = {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64, DType::Bool};
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (DType from : all)
    for (DType to : all) {
      std::vector<double> vs;
      switch (from) {
        case DType::Bool: vs = {0, 1, 1, 0}; break;
        case DType::I32: vs = {0, 1, -1, 7, -2147483648.0, 2147483647, 255, 16777217}; break;
        case DType::I64: vs = {0, 1, -1, 7, -9e15, 1ll << 40, 255, 16777217}; break;
        default: vs = {0, 1, -1.5, 2.75, 1e10, -1e10, nan, inf, -inf, 0.1, -0.0, 3e38}; break;
      }
      if (from == DType::BF16)
        for (auto& v : vs) v = to_bf16(static_cast<float>(v));
      if (from == DType::F32)
        for (auto& v : vs) v = static_cast<float>(v);
      int64_t n = static_cast<int64_t>(vs.size());
      std::string src = "(module c (func f (params (x " + tt(from, {n}) + ")) (returns " + tt(to, {n}) + ") (return (cast x " + ty(to) + "))))";
      Tensor x = values(from, {n}, vs);
      auto out = run(src, "f", {}, {x});
      ASSERT_EQ(out.size(), 1u) << ty(from) << " -> " << ty(to);
      Tensor want = map_ref({x}, to, [&](auto& v) { return cast_ref(v[0], from, to); });
      // f64 -> bf16 rounds through f32 (documented): equal here.
      expect_close(out[0], want, 0, 0, ty(from) + " -> " + ty(to));
    }
}

// ---- constants ------------------------------------------------------------------

TEST(Constants, ConstFillIota) {
  std::string src = R"((module k (func f (dims N M)
    (params (x (tensor f32 (N M) host)))
    (returns (tensor f32 (N M) host) (tensor i64 (N M) host) (tensor bool () host) (tensor bf16 (N) host)
             (tensor f32 (N M) host) (tensor i32 (M) host) (tensor f64 () host))
    (let c (const -2.5e3 f32))
    (let z (fill 0.1 (tensor f32 (N M) host)))
    (let rows (iota (tensor i64 (N M) host) :axis 0))
    (let cols (iota (tensor i64 (N M) host) :axis 1))
    (return (add (mul x c) z) (add (mul rows 100) cols) (const 1 bool) (fill 3.14159 (tensor bf16 (N) host))
            (iota (tensor f32 (N M) host) :axis 1) (iota (tensor i32 (M) host)) nan))))";
  Tensor x = random(DType::F32, {3, 5}, -1, 1, 9);
  auto out = run(src, "f", {{"N", 3}, {"M", 5}}, {x});
  ASSERT_EQ(out.size(), 7u);
  expect_close(out[0], map_ref({x}, DType::F32, [](auto& v) { return static_cast<float>(static_cast<float>(v[0] * -2500.0) + 0.1f); }), 1e-6);
  Tensor rc{DType::I64, {3, 5}, {}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) rc.v.push_back(i * 100 + j);
  expect_close(out[1], rc, 0, 0, "iota");
  expect_close(out[2], values(DType::Bool, {}, {1}), 0, 0, "const bool");
  expect_close(out[3], values(DType::BF16, {3}, {3.140625, 3.140625, 3.140625}), 0, 0, "bf16 fill");
  Tensor ic{DType::F32, {3, 5}, {}};
  for (int i = 0; i < 15; ++i) ic.v.push_back(i % 5);
  expect_close(out[4], ic, 0, 0, "iota f32");
  expect_close(out[5], values(DType::I32, {5}, {0, 1, 2, 3, 4}), 0, 0, "iota i32");
  EXPECT_TRUE(std::isnan(out[6].v[0]));
}

// ---- matmul ---------------------------------------------------------------------

Tensor matmul_ref(const Tensor& a, const Tensor& b, DType out) {
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t M = a.shape[ra - 2], K = a.shape[ra - 1], N = b.shape[rb - 1];
  int64_t batch = numel(a.shape) / (M * K);
  std::vector<int64_t> os(a.shape.begin(), a.shape.end() - 1);
  os.push_back(N);
  Tensor o{out, os, std::vector<double>(static_cast<size_t>(batch * M * N))};
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += a.v[(p * M + i) * K + k] * b.v[(rb == 2 ? 0 : p * K * N) + k * N + j];
        o.v[(p * M + i) * N + j] = s;
      }
  return o;
}

void check_matmul(DType dt, std::vector<int64_t> as, std::vector<int64_t> bs, cpu::CpuJit& j, const std::string& what) {
  std::vector<int64_t> os(as.begin(), as.end() - 1);
  os.push_back(bs.back());
  std::string src = "(module m (func f (params (a " + tt(dt, as) + ") (b " + tt(dt, bs) + ")) (returns " + tt(dt, os) + ") (return (matmul a b))))";
  bool integral = dt == DType::I32 || dt == DType::I64;
  Tensor a = random(dt, as, integral ? -20 : -1, integral ? 20 : 1, 11), b = random(dt, bs, integral ? -20 : -1, integral ? 20 : 1, 12);
  auto out = run(src, "f", {}, {a, b}, j);
  ASSERT_EQ(out.size(), 1u) << what;
  Tensor want = matmul_ref(a, b, dt);
  int64_t K = as.back();
  double rtol = integral ? 0 : dt == DType::F64 ? 1e-12 : dt == DType::BF16 ? 2e-2 : 1e-5;
  double atol = integral ? 0 : rtol * std::sqrt(static_cast<double>(K)) * (dt == DType::BF16 ? 4 : 1);
  expect_close(out[0], want, rtol, atol, what);
}

TEST(Matmul, TwoDimensionalShapes) {
  std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1}, {7, 5, 3}, {4, 16, 8}, {33, 17, 65}, {64, 128, 64}, {96, 160, 130}, {3, 200, 1}};
  for (auto [M, K, N] : shapes)
    for (DType dt : {DType::F32, DType::F64, DType::I32, DType::I64, DType::BF16}) {
      std::string what = ty(dt) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N);
      check_matmul(dt, {M, K}, {K, N}, jit(), what + " tiled");
      check_matmul(dt, {M, K}, {K, N}, naive_jit(), what + " naive");
    }
}

// The large-shape strategies: B-tile packing (rows >= 2 KiB), the 6x16
// register tile (6 | M) and the row split (M >= 256, 6 does not divide M).
TEST(Matmul, PackingAndRowSplitShapes) {
  std::vector<std::array<int64_t, 3>> shapes = {{300, 64, 512}, {512, 32, 1024}, {263, 16, 32}, {258, 8, 48}};
  for (const auto& [M, K, N] : shapes)
    for (DType dt : {DType::F32, DType::F64, DType::I32, DType::I64, DType::BF16})
      check_matmul(dt, {M, K}, {K, N}, jit(), std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + " " + ty(dt));
  check_matmul(DType::F32, {2, 300, 64}, {64, 512}, jit(), "shared weight with packing");
}

TEST(Matmul, SharedWeightAndBatched) {
  for (DType dt : {DType::F32, DType::BF16, DType::I32}) {
    check_matmul(dt, {2, 3, 8, 16}, {16, 24}, jit(), "shared weight rank 4 " + ty(dt));
    check_matmul(dt, {5, 6, 7}, {7, 9}, jit(), "shared weight rank 3 " + ty(dt));
    check_matmul(dt, {3, 8, 16}, {3, 16, 32}, jit(), "batched rank 3 " + ty(dt));
    check_matmul(dt, {2, 3, 5, 7}, {2, 3, 7, 4}, jit(), "batched rank 4 " + ty(dt));
    check_matmul(dt, {2, 3, 5, 7}, {2, 3, 7, 4}, naive_jit(), "batched rank 4 naive " + ty(dt));
  }
}

// ---- layout -----------------------------------------------------------------------

Tensor permute_ref(const Tensor& x, const std::vector<int64_t>& p) {
  std::vector<int64_t> os;
  for (int64_t i : p) os.push_back(x.shape[i]);
  Tensor o{x.dt, os, {}};
  for (int64_t k = 0; k < numel(os); ++k) {
    auto idx = unflatten(k, os);
    std::vector<int64_t> in(x.shape.size());
    for (size_t i = 0; i < p.size(); ++i) in[p[i]] = idx[i];
    int64_t f = 0;
    for (size_t j = 0; j < in.size(); ++j) f = f * x.shape[j] + in[j];
    o.v.push_back(x.v[f]);
  }
  return o;
}

TEST(Layout, TransposePermute) {
  std::string src = R"((module t (func f (dims A B C D)
    (params (x (tensor f32 (A B C) host)) (y (tensor i64 (A B C D) host)))
    (returns (tensor f32 (A C B) host) (tensor i64 (C A D B) host) (tensor f32 (A B C) host))
    (return (transpose x) (permute y (2 0 3 1)) (permute x (0 1 2))))))";
  Tensor x = random(DType::F32, {2, 3, 4}, -1, 1, 1), y = random(DType::I64, {2, 3, 4, 5}, -100, 100, 2);
  auto out = run(src, "f", {{"A", 2}, {"B", 3}, {"C", 4}, {"D", 5}}, {x, y});
  ASSERT_EQ(out.size(), 3u);
  expect_close(out[0], permute_ref(x, {0, 2, 1}), 0, 0, "transpose");
  expect_close(out[1], permute_ref(y, {2, 0, 3, 1}), 0, 0, "permute");
  expect_close(out[2], x, 0, 0, "identity permute");
}

TEST(Layout, ReshapeBroadcastConcatSlice) {
  std::string src = R"((module r (func f (dims N D)
    (where (>= D 4))
    (params (x (tensor f32 (2 N D) host)) (s (tensor f32 (1 1) host)) (v (tensor f32 (N 1) host)) (w (tensor bf16 (D) host)))
    (returns (tensor f32 ((* 2 N) D) host) (tensor f32 ((* 2 N D)) host) (tensor f32 (D 1 2 N) host) (tensor f32 () host)
             (tensor f32 (3 N D) host) (tensor bf16 (N D) host)
             (tensor f32 (2 N (+ D 1 D)) host) (tensor f32 (2 N (- D 2)) host) (tensor f32 (1 N D) host))
    (return (reshape x ((* 2 N) D)) (reshape x ((* 2 N D))) (reshape x (D 1 2 N)) (reshape s ())
            (broadcast_to v (3 N D)) (broadcast_to w (N D))
            (concat x (broadcast_to v (2 N 1)) x :axis -1) (slice x :axis 2 :start 1 :size (- D 2)) (slice x :axis 0 :start 1 :size 1)))))";
  int64_t N = 3, D = 5;
  Tensor x = random(DType::F32, {2, N, D}, -1, 1, 1), s = values(DType::F32, {1, 1}, {4.5}), v = random(DType::F32, {N, 1}, -1, 1, 2),
         w = random(DType::BF16, {D}, -1, 1, 3);
  auto out = run(src, "f", {{"N", N}, {"D", D}}, {x, s, v, w});
  ASSERT_EQ(out.size(), 9u);
  expect_close(out[0], Tensor{DType::F32, {2 * N, D}, x.v}, 0, 0, "reshape 2d");
  expect_close(out[1], Tensor{DType::F32, {2 * N * D}, x.v}, 0, 0, "reshape 1d");
  expect_close(out[2], Tensor{DType::F32, {D, 1, 2, N}, x.v}, 0, 0, "reshape 4d");
  expect_close(out[3], Tensor{DType::F32, {}, {4.5}}, 0, 0, "reshape to rank 0");
  Tensor zeros3{DType::F32, {3, N, D}, std::vector<double>(static_cast<size_t>(3 * N * D), 0)};
  expect_close(out[4], map_ref({v, zeros3}, DType::F32, [](auto& a) { return a[0]; }), 0, 0, "broadcast_to");
  Tensor zeros2{DType::BF16, {N, D}, std::vector<double>(static_cast<size_t>(N * D), 0)};
  expect_close(out[5], map_ref({w, zeros2}, DType::BF16, [](auto& a) { return a[0]; }), 0, 0, "broadcast_to bf16");
  Tensor cat{DType::F32, {2, N, 2 * D + 1}, {}};
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t k = 0; k < D; ++k) cat.v.push_back(x.v[(i * N + j) * D + k]);
      cat.v.push_back(v.v[j]);
      for (int64_t k = 0; k < D; ++k) cat.v.push_back(x.v[(i * N + j) * D + k]);
    }
  expect_close(out[6], cat, 0, 0, "concat");
  Tensor sl{DType::F32, {2, N, D - 2}, {}};
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 1; k < D - 1; ++k) sl.v.push_back(x.v[(i * N + j) * D + k]);
  expect_close(out[7], sl, 0, 0, "slice");
  expect_close(out[8], Tensor{DType::F32, {1, N, D}, std::vector<double>(x.v.begin() + N * D, x.v.end())}, 0, 0, "slice axis 0");
}

TEST(Layout, RankZeroAndOnes) {
  std::string src = R"((module z (func f (params (x (tensor f32 () host)) (y (tensor i32 (1 1 1) host)))
    (returns (tensor f32 (1 1) host) (tensor i32 () host) (tensor i32 (1) host) (tensor f32 (2 2) host))
    (return (reshape x (1 1)) (reshape y ()) (reshape y (1)) (broadcast_to x (2 2))))))";
  auto out = run(src, "f", {}, {values(DType::F32, {}, {2.5}), values(DType::I32, {1, 1, 1}, {-7})});
  ASSERT_EQ(out.size(), 4u);
  expect_close(out[0], values(DType::F32, {1, 1}, {2.5}), 0, 0);
  expect_close(out[1], values(DType::I32, {}, {-7}), 0, 0);
  expect_close(out[2], values(DType::I32, {1}, {-7}), 0, 0);
  expect_close(out[3], values(DType::F32, {2, 2}, {2.5, 2.5, 2.5, 2.5}), 0, 0);
}

// ---- reductions -------------------------------------------------------------------

Tensor reduce_ref(const Tensor& x, std::vector<int64_t> axes, bool keep, const std::string& kind, DType out) {
  std::vector<bool> red(x.shape.size(), false);
  for (auto a : axes) red[a < 0 ? a + static_cast<int64_t>(x.shape.size()) : a] = true;
  std::vector<int64_t> os;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (!red[i]) os.push_back(x.shape[i]);
    else if (keep) os.push_back(1);
  std::vector<int64_t> kept;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (!red[i]) kept.push_back(x.shape[i]);
  std::vector<double> acc(static_cast<size_t>(numel(kept)), kind == "max" ? -std::numeric_limits<double>::infinity() : 0.0);
  int64_t count = numel(x.shape) / std::max<int64_t>(1, numel(kept));
  for (int64_t k = 0; k < numel(x.shape); ++k) {
    auto idx = unflatten(k, x.shape);
    int64_t f = 0;
    for (size_t i = 0; i < idx.size(); ++i)
      if (!red[i]) f = f * x.shape[i] + idx[i];
    acc[f] = kind == "max" ? std::max(acc[f], x.v[k]) : acc[f] + x.v[k];
  }
  if (kind == "mean")
    for (auto& a : acc) a /= static_cast<double>(count);
  return Tensor{out, os, acc};
}

TEST(Reduce, SumMaxMean) {
  struct Case {
    std::string axes;
    std::vector<int64_t> ax;
    bool keep;
  };
  std::vector<Case> cases = {{"", {0, 1, 2}, false}, {":axes (1)", {1}, false}, {":axes (0 2)", {0, 2}, true},
                             {":axes (-1) :keepdims true", {2}, true}, {":axes (1 2) :keepdims true", {1, 2}, true}, {":axes ()", {}, false},
                             {":keepdims true", {0, 1, 2}, true}};
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64})
    for (const std::string kind : {"sum", "max", "mean"}) {
      bool integral = dt == DType::I32 || dt == DType::I64;
      if (integral && kind == "mean") continue;
      for (const auto& c : cases) {
        std::string axes = c.axes + (c.keep && c.axes.find(":keepdims") == std::string::npos ? " :keepdims true" : "");
        Tensor x = random(dt, {3, 4, 5}, integral ? -50 : -2, integral ? 50 : 2, 7);
        Tensor want = reduce_ref(x, c.ax, c.keep, kind, dt);
        std::string src = "(module r (func f (params (x " + tt(dt, {3, 4, 5}) + ")) (returns " + tt(dt, want.shape) + ") (return (reduce_" + kind +
                          " x " + axes + "))))";
        auto out = run(src, "f", {}, {x});
        ASSERT_EQ(out.size(), 1u) << src;
        if (dt == DType::F32)
          for (auto& v : want.v) v = static_cast<float>(v);
        if (dt == DType::BF16)
          for (auto& v : want.v) v = to_bf16(static_cast<float>(v));
        expect_close(out[0], want, dt == DType::F32 ? 1e-5 : -1, dt == DType::F32 ? 1e-5 : -1, "reduce_" + kind + " " + ty(dt) + " " + axes);
      }
    }
}

// ---- calls, aliases, devices ---------------------------------------------------------

TEST(Reduce, VectorizedRowsKeepIeeeMaxAndExactSums) {
  // Float reductions are vectorized (lane-wise partial results; max/min as
  // llvm.maximum/minimum): a NaN anywhere in a row still gives NaN, -0 < +0
  // as IEEE 754-2019's maximum/minimum say (and PyTorch's amax/amin give),
  // an all -inf row gives -inf, and long f32 sums stay within the final
  // rounding of float64 (docs/design/cpu-codegen.md).
  const int64_t R = 6, N = 1000;  // rows long enough for the vector loop and its remainder
  Tensor x = random(DType::F32, {R, N}, -3, 3, 11);
  x.v[0 * N + 777] = std::nan("");                               // row 0: one NaN late in the row
  for (int64_t j = 0; j < N; ++j) x.v[1 * N + j] = j % 2 ? -0.0 : 0.0;  // row 1: zeros of both signs
  for (int64_t j = 0; j < N; ++j) x.v[2 * N + j] = -0.0;              // row 2: only -0
  for (int64_t j = 0; j < N; ++j) x.v[3 * N + j] = -INFINITY;         // row 3: only -inf
  x.v[4 * N + 3] = INFINITY;                                        // row 4: +inf
  for (const std::string kind : {"max", "min", "sum"}) {
    std::string src = "(module r (func f (params (x " + tt(DType::F32, {R, N}) + ")) (returns " + tt(DType::F32, {R}) + ") (return (reduce_" + kind +
                      " x :axes (-1)))))";
    auto out = run(src, "f", {}, {x});
    ASSERT_EQ(out.size(), 1u) << src;
    for (int64_t r = 0; r < R; ++r) {
      double want = kind == "max" ? -INFINITY : kind == "min" ? INFINITY : 0.0;
      bool nan = false;
      for (int64_t j = 0; j < N; ++j) {
        double v = x.v[r * N + j];
        nan = nan || std::isnan(v);
        if (kind == "sum") want += v;
        else if (kind == "max") want = (v > want || (v == 0 && want == 0 && !std::signbit(v))) ? v : want;
        else want = (v < want || (v == 0 && want == 0 && std::signbit(v))) ? v : want;
      }
      const double got = out[0].v[static_cast<size_t>(r)];
      if (nan) {
        EXPECT_TRUE(std::isnan(got)) << kind << " row " << r;
      } else if (kind == "sum" && std::isfinite(want)) {
        EXPECT_EQ(static_cast<float>(got), static_cast<float>(want)) << kind << " row " << r;  // f64 partial sums, one rounding
      } else {
        EXPECT_EQ(got, want) << kind << " row " << r;
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << kind << " row " << r << ": the sign of zero";
      }
    }
  }
}

TEST(Program, CallsAreInlinedAtTheirShapes) {
  std::string src = R"((module c
  (func norm (dims N D)
    (params (x (tensor f32 (N D) host)))
    (returns (tensor f32 (N D) host) (tensor f32 (N 1) host))
    (let m (reduce_mean x :axes (1) :keepdims true))
    (return (sub x m) m))
  (func twice (dims K) (params (v (tensor f32 (K) host))) (returns (tensor f32 ((* 2 K)) host)) (return (concat v v :axis 0)))
  (func main (dims A B)
    (params (x (tensor f32 (A B) host)) (y (tensor f32 (B A) host)))
    (returns (tensor f32 (A B) host) (tensor f32 (B 1) host) (tensor f32 ((* 2 A)) host) (tensor f32 (A B) host) (tensor f32 (A B) host))
    (let (cx mx) (call norm x))
    (let (cy my) (call norm y))
    (let alias x)
    (return cx my (call twice (reshape mx (A))) alias x))))";
  Tensor x = random(DType::F32, {3, 4}, -1, 1, 1), y = random(DType::F32, {4, 3}, -1, 1, 2);
  auto out = run(src, "main", {{"A", 3}, {"B", 4}}, {x, y});
  ASSERT_EQ(out.size(), 5u);
  Tensor mx = reduce_ref(x, {1}, true, "mean", DType::F32), my = reduce_ref(y, {1}, true, "mean", DType::F32);
  expect_close(out[0], map_ref({x, mx}, DType::F32, [](auto& v) { return v[0] - v[1]; }), 1e-5, 1e-6);
  expect_close(out[1], my, 1e-6, 1e-6);
  Tensor tw{DType::F32, {6}, {}};
  for (int r = 0; r < 2; ++r)
    for (double v : mx.v) tw.v.push_back(v);
  expect_close(out[2], tw, 1e-6, 1e-6);
  expect_close(out[3], x, 0, 0, "alias");
  expect_close(out[4], x, 0, 0, "returned parameter");
}

TEST(Program, ResultsThatShareWork) {
  // A result that is also an operand of later results, one returned twice,
  // a slice of a parameter, and a splat returned directly: every output
  // buffer is written, none aliases another.
  std::string src = R"((module s (func f (dims N)
    (params (x (tensor f32 (N 4) host)))
    (returns (tensor f32 (N 4) host) (tensor f32 (N 4) host) (tensor f32 (N 4) host) (tensor f32 (N 2) host) (tensor f32 (N 4) host)
             (tensor f32 (4 N) host))
    (let h (exp x))
    (let g (mul h 2))
    (return h (add g h) h (slice x :axis 1 :start 1 :size 2) (fill 7 (tensor f32 (N 4) host)) (transpose g)))))";
  Tensor x = random(DType::F32, {3, 4}, -1, 1, 4);
  auto out = run(src, "f", {{"N", 3}}, {x});
  ASSERT_EQ(out.size(), 6u);
  Tensor h = map_ref({x}, DType::F32, [](auto& v) { return static_cast<float>(std::exp(v[0])); });
  expect_close(out[0], h, 4e-7, 0, "h");
  expect_close(out[1], map_ref({h}, DType::F32, [](auto& v) { return static_cast<float>(3 * v[0]); }), 4e-7, 0, "g + h");
  expect_close(out[2], h, 4e-7, 0, "h again");
  Tensor sl{DType::F32, {3, 2}, {}};
  for (int i = 0; i < 3; ++i)
    for (int j = 1; j < 3; ++j) sl.v.push_back(x.v[i * 4 + j]);
  expect_close(out[3], sl, 0, 0, "slice");
  expect_close(out[4], Tensor{DType::F32, {3, 4}, std::vector<double>(12, 7.0)}, 0, 0, "fill");
  expect_close(out[5], permute_ref(map_ref({h}, DType::F32, [](auto& v) { return static_cast<float>(2 * v[0]); }), {1, 0}), 4e-7, 0, "transpose");
}

TEST(Program, InPlaceUpdatesRespectLiveness) {
  // Elementwise ops may compute into an operand that dies there; views of
  // parameters must not be written, and values used later must survive.
  std::string src = R"((module p (func f (params (x (tensor f32 (2 3 4) host)) (w (tensor f32 (4 4) host)))
    (returns (tensor f32 (6 4) host) (tensor f32 (2 12) host) (tensor f32 (6 4) host) (tensor f32 (6 4) host) (tensor f32 (6 4) host))
    (let m (matmul (reshape x (6 4)) w))
    (let a (exp m))
    (let b (neg m))
    (let t (transpose (transpose (reshape x (6 4)))))
    (return (exp (reshape x (6 4))) (neg (reshape x (2 12))) (add a b) (tanh t) m))))";
  Tensor x = random(DType::F32, {2, 3, 4}, -1, 1, 1), w = random(DType::F32, {4, 4}, -1, 1, 2);
  auto out = run(src, "f", {}, {x, w});
  ASSERT_EQ(out.size(), 5u);
  Tensor x64{DType::F32, {6, 4}, x.v}, x212{DType::F32, {2, 12}, x.v};
  expect_close(out[0], map_ref({x64}, DType::F32, [](auto& v) { return static_cast<float>(std::exp(v[0])); }), 4e-7, 0, "exp of a view");
  expect_close(out[1], map_ref({x212}, DType::F32, [](auto& v) { return -v[0]; }), 0, 0, "neg of a view");
  Tensor m = matmul_ref(x64, w, DType::F32);
  expect_close(out[2], map_ref({m}, DType::F32, [](auto& v) { return std::exp(v[0]) - v[0]; }), 1e-5, 1e-6, "exp(m) + neg(m)");
  expect_close(out[3], map_ref({x64}, DType::F32, [](auto& v) { return static_cast<float>(std::tanh(v[0])); }), 4e-6, 1e-6, "tanh");
  expect_close(out[4], m, 1e-5, 1e-6, "m itself");
}

TEST(Program, MlpMatchesReference) {
  std::string src = R"((module mlp
  (func mlp (dims B S D F)
    (where (= (mod D 64) 0))
    (params (x (tensor f32 (B S D) host)) (w1 (tensor f32 (D F) host)) (w2 (tensor f32 (F D) host)))
    (returns (tensor f32 (B S D) host))
    (let h (gelu (matmul x w1)))
    (let y (matmul h w2))
    (return y))))";
  int64_t B = 2, S = 16, D = 64, F = 96;
  Tensor x = random(DType::F32, {B, S, D}, -1, 1, 1), w1 = random(DType::F32, {D, F}, -0.2, 0.2, 2), w2 = random(DType::F32, {F, D}, -0.2, 0.2, 3);
  auto out = run(src, "mlp", {{"B", B}, {"S", S}, {"D", D}, {"F", F}}, {x, w1, w2});
  ASSERT_EQ(out.size(), 1u);
  Tensor h = matmul_ref(x, w1, DType::F32);
  for (auto& v : h.v) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  Tensor y = matmul_ref(h, w2, DType::F32);
  // RMSE-vs-fp64 gate, as torch.compile's accuracy check.
  double se = 0, ref = 0;
  for (size_t i = 0; i < y.v.size(); ++i) {
    se += (out[0].v[i] - y.v[i]) * (out[0].v[i] - y.v[i]);
    ref += y.v[i] * y.v[i];
  }
  EXPECT_LT(std::sqrt(se / ref), 1e-5);
}

TEST(Program, ConcurrentCompileAndRun) {
  // compile() is serialized internally; generated code is reentrant (no
  // global state), so one function runs on several threads at once.
  std::string src = R"((module c (func f (dims N) (params (x (tensor f32 (N 64) host)) (w (tensor f32 (64 64) host)))
    (returns (tensor f32 (N 64) host)) (return (tanh (matmul x w))))))";
  auto r = check(src);
  ASSERT_TRUE(r->ok());
  cpu::CpuJit j;
  std::vector<shapeml::common::CompiledEntryFn> fns(4);
  std::vector<std::string> errs(4);
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) ts.emplace_back([&, t] { fns[t] = j.compile(*r->module, "f", {{"N", 8 * (t + 1)}}, errs[t]); });
    for (auto& t : ts) t.join();
  }
  for (int t = 0; t < 4; ++t) ASSERT_NE(fns[t], nullptr) << errs[t];
  Tensor w = random(DType::F32, {64, 64}, -0.2, 0.2, 2);
  std::vector<std::thread> ts;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      int64_t n = 8 * (t + 1);
      Tensor x = random(DType::F32, {n, 64}, -1, 1, 10 + t);
      Tensor want = matmul_ref(x, w, DType::F32);
      for (auto& v : want.v) v = std::tanh(v);
      Buffer xb = alloc(DType::F32, n * 64), wb = alloc(DType::F32, 64 * 64), yb = alloc(DType::F32, n * 64);
      for (int64_t i = 0; i < n * 64; ++i) store(xb.get(), DType::F32, i, x.v[i]);
      for (int64_t i = 0; i < 64 * 64; ++i) store(wb.get(), DType::F32, i, w.v[i]);
      void* bufs[] = {xb.get(), wb.get(), yb.get()};
      for (int rep = 0; rep < 50; ++rep) {
        fns[t](bufs);
        for (int64_t i = 0; i < n * 64; ++i)
          if (std::fabs(load(yb.get(), DType::F32, i) - want.v[i]) > 1e-5) ++bad[t];
      }
    });
  for (auto& t : ts) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

TEST(Program, SplitCompileGivesTheSameBitsAsOneModule) {
  // The JIT optimizes and emits a specialization in partitions on several
  // threads (CompileOptions::compile_threads, lower/cpu/split_module.h):
  // the code, and so every output bit, is the same as from one module.
  std::string src = R"((module s
  (func f (dims N D F)
    (params (x (tensor f32 (N D) host)) (w1 (tensor f32 (D F) host)) (w2 (tensor f32 (F D) host)))
    (returns (tensor f32 (N D) host) (tensor f32 (N F) host))
    (let h (gelu (matmul x w1)))
    (let p (softmax h :axis -1))
    (let y (add (matmul h w2) x))
    (return (mul y (rsqrt (add (reduce_mean (mul y y) :axes (-1) :keepdims true) 1e-5))) p))))";
  auto r = check(src);
  ASSERT_TRUE(r->ok());
  const int64_t N = 256, D = 128, F = 384;
  std::map<std::string, int64_t> b{{"N", N}, {"D", D}, {"F", F}};
  Tensor x = random(DType::F32, {N, D}, -1, 1, 1), w1 = random(DType::F32, {D, F}, -0.2, 0.2, 2), w2 = random(DType::F32, {F, D}, -0.2, 0.2, 3);
  std::vector<std::vector<float>> outs;
  for (unsigned threads : {1u, 2u, 3u}) {
    cpu::CompileOptions o;
    o.compile_threads = threads;
    cpu::CpuJit j(cpu::CpuTarget{}, o);
    std::string err;
    auto fn = j.compile(*r->module, "f", b, err);
    ASSERT_NE(fn, nullptr) << err;
    if (threads == 1) EXPECT_EQ(j.last_partitions(), 1u);
    else EXPECT_GE(j.last_partitions(), 2u) << "compile_threads " << threads << " did not split the module";
    std::vector<float> xv(x.v.begin(), x.v.end()), w1v(w1.v.begin(), w1.v.end()), w2v(w2.v.begin(), w2.v.end());
    std::vector<float> y(N * D), p(N * F);
    void* bufs[] = {xv.data(), w1v.data(), w2v.data(), y.data(), p.data()};
    fn(bufs);
    y.insert(y.end(), p.begin(), p.end());
    outs.push_back(std::move(y));
  }
  for (size_t i = 1; i < outs.size(); ++i) EXPECT_EQ(std::memcmp(outs[0].data(), outs[i].data(), outs[0].size() * 4), 0) << "partitioned compile " << i;
  // And the code is right: the first output against float64.
  Tensor h = matmul_ref(x, w1, DType::F32);
  for (auto& v : h.v) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  Tensor y = matmul_ref(h, w2, DType::F32);
  double worst = 0;
  for (int64_t n = 0; n < N; ++n) {
    double ms = 0;
    for (int64_t d = 0; d < D; ++d) ms += std::pow(y.v[n * D + d] + x.v[n * D + d], 2) / D;
    for (int64_t d = 0; d < D; ++d) worst = std::max(worst, std::fabs(outs[0][n * D + d] - (y.v[n * D + d] + x.v[n * D + d]) / std::sqrt(ms + 1e-5)));
  }
  EXPECT_LT(worst, 1e-4);
}

TEST(Program, AwkwardMatmulShapesStillVectorize) {
  // Prime and tiny dimensions: the tiles are divisors, so the strategy
  // applies (no fallback note) and the result is exact enough.
  for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{{13, 17, 19}, {1, 64, 1}, {97, 3, 101}, {2, 1, 2}})
    check_matmul(DType::F32, {M, K}, {K, N}, jit(), "awkward " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N));
}

TEST(Errors, BindingsAreChecked) {
  std::string src = "(module e (func f (dims N D) (where (= (mod D 4) 0)) (params (x (tensor f32 (N D) host))) (returns (tensor f32 (N D) host)) (return x)))";
  EXPECT_NE(compile_error(src, "f", {{"N", 2}}).find("`D`"), std::string::npos);
  EXPECT_NE(compile_error(src, "f", {{"N", 2}, {"D", 6}}).find("(= (mod D 4) 0)"), std::string::npos);
  EXPECT_NE(compile_error(src, "f", {{"N", 0}, {"D", 4}}).find(">= 1"), std::string::npos);
  EXPECT_NE(compile_error(src, "f", {{"N", 2}, {"D", 4}, {"Q", 1}}).find("`Q`"), std::string::npos);
  EXPECT_NE(compile_error(src, "g", {}).find("no function"), std::string::npos);
}

TEST(Errors, DeviceProgramsAreNotCpuPrograms) {
  std::string a = "(module d (func f (params (x (tensor f32 (4) host))) (returns (tensor f32 (4) host)) (return (copy_to_host (copy_to_device x (cuda 0))))))";
  EXPECT_NE(compile_error(a, "f", {}).find("not a CPU program"), std::string::npos);
  std::string b = "(module d (func f (params (x (tensor f32 (4) (cuda 0)))) (returns (tensor f32 (4) host)) (return (copy_to_host x))))";
  EXPECT_NE(compile_error(b, "f", {}).find("not a CPU program"), std::string::npos);
  // copy_to_host of a host value is the identity.
  std::string c = "(module d (func f (params (x (tensor f32 (4) host))) (returns (tensor f32 (4) host)) (return (copy_to_host x))))";
  Tensor x = random(DType::F32, {4}, -1, 1, 1);
  auto out = run(c, "f", {}, {x});
  ASSERT_EQ(out.size(), 1u);
  expect_close(out[0], x, 0, 0);
}

TEST(Text, MlirShowsTheMatmulStrategy) {
  auto r = check(
      "(module m (func f (dims M) (params (a (tensor f32 (M 256) host)) (b (tensor f32 (256 512) host))) (returns (tensor f32 (M 512) host)) "
      "(return (matmul a b))))");
  ASSERT_TRUE(r->ok());
  std::string err;
  std::string t = cpu::emit_mlir(*r->module, "f", {{"M", 128}}, {}, &err);
  EXPECT_NE(t.find("linalg.matmul {shapeml.strategy = \"tile [64, 128, 64] then [4, 16, 1] + vectorize"), std::string::npos) << t;
  cpu::EmitOptions naive;
  naive.matmul = cpu::MatmulStrategy::Naive;
  t = cpu::emit_mlir(*r->module, "f", {{"M", 128}}, naive, &err);
  EXPECT_NE(t.find("naive loops"), std::string::npos) << t;
  std::string ll = cpu::emit_llvm(*r->module, "f", {{"M", 128}}, {}, err);
  EXPECT_NE(ll.find("define void @shapeml_f(ptr"), std::string::npos) << err;
}

// ---- AOT ---------------------------------------------------------------------------

// The code side of the index checks (docs/design/index-checks.md), without
// the runtime: the error record holds {site, index, bound, coordinates} of the
// first bad index (sites in program order, calls inlined; row-major within
// one), zeros when all are in range; a bad index is clamped, never read out
// of bounds; an entry without index operations has no record.
TEST(IndexChecks, ErrorRecordAndClampedReads) {
  const std::string src = R"((module ix
  (func pick (dims B V) (params (x (tensor f64 (B V) host)) (i (tensor i32 (B) host))) (returns (tensor f64 (B) host))
    (return (take_along_axis x i)))
  (func two (dims V D N) (params (t (tensor f64 (V D) host)) (i (tensor i64 (N) host)) (j (tensor i32 (D) host)))
    (returns (tensor f64 (N D) host) (tensor f64 (D) host))
    (return (gather t i) (call pick (transpose t) j)))
  (func plain (dims N) (params (x (tensor f64 (N) host))) (returns (tensor f64 (N) host)) (return (neg x)))))";
  std::vector<int64_t> rec;
  Tensor x{DType::F64, {2, 3}, {10, 11, 12, 20, 21, 22}};
  auto ok = run(src, "pick", {{"B", 2}, {"V", 3}}, {x, {DType::I32, {2}, {2, 0}}}, jit(), &rec);
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].v, (std::vector<double>{12, 20}));
  EXPECT_EQ(rec, (std::vector<int64_t>{0, 0, 0, 0}));
  // Index 3 of [0, 3) at i[1]: clamped to 2 (reads x[1, 2]), recorded.
  auto bad = run(src, "pick", {{"B", 2}, {"V", 3}}, {x, {DType::I32, {2}, {1, 3}}}, jit(), &rec);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].v, (std::vector<double>{11, 22}));
  EXPECT_EQ(rec, (std::vector<int64_t>{1, 3, 3, 1}));
  // -1 is not wrapped: clamped to 0, recorded.
  run(src, "pick", {{"B", 2}, {"V", 3}}, {x, {DType::I32, {2}, {-1, 0}}}, jit(), &rec);
  EXPECT_EQ(rec, (std::vector<int64_t>{1, -1, 3, 0}));
  // Two sites: the gather (site 1) and the inlined take_along_axis (site 2).
  Tensor t{DType::F64, {3, 2}, {0, 1, 2, 3, 4, 5}};
  auto two = run(src, "two", {{"V", 3}, {"D", 2}, {"N", 2}}, {t, {DType::I64, {2}, {2, 1}}, {DType::I32, {2}, {0, 7}}}, jit(), &rec);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].v, (std::vector<double>{4, 5, 2, 3}));
  EXPECT_EQ(rec, (std::vector<int64_t>{2, 7, 3, 1}));  // only site 2 is bad: index 7 of [0, 3) at j[1]
  run(src, "two", {{"V", 3}, {"D", 2}, {"N", 2}}, {t, {DType::I64, {2}, {9, 5}}, {DType::I32, {2}, {0, 7}}}, jit(), &rec);
  EXPECT_EQ(rec, (std::vector<int64_t>{1, 9, 3, 0}));  // both bad: the first site, its first position
  // Zero cost: no record for an entry without index operations.
  std::string err;
  cpu::ConcreteSignature sig;
  auto r = check(src);
  ASSERT_TRUE(cpu::specialize_signature(*r->module, "plain", {{"N", 4}}, sig, err)) << err;
  EXPECT_EQ(sig.error_record, 0u);
  EXPECT_EQ(cpu::emit_mlir(*r->module, "plain", {{"N", 4}}).find("error_record"), std::string::npos);
}

TEST(Aot, SharedObjectWithManifest) {
  std::string src = R"((module aot
  (func scale (dims N) (params (x (tensor f32 (N) host)) (k (tensor f32 () host))) (returns (tensor f32 (N) host) (tensor bool (N) host))
    (let y (mul x k))
    (return y (gt y 0)))
  (func mm (dims M) (params (a (tensor f32 (M 8) host)) (b (tensor f32 (8 4) host))) (returns (tensor f32 (M 4) host)) (return (matmul a b)))))";
  auto r = check(src);
  ASSERT_TRUE(r->ok());
  auto dir = std::filesystem::temp_directory_path() / ("shapeml-aot-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string so = (dir / "libaot.so").string();
  std::string err;
  std::vector<cpu::Specialization> specs = {{"scale", {{"N", 3}}}, {"scale", {{"N", 5}}}, {"mm", {{"M", 2}}}};
  cpu::CpuTarget portable;
  portable.native = false;
  ASSERT_TRUE(cpu::build_shared_object(*r->module, specs, portable, so, err)) << err;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto abi = reinterpret_cast<uint32_t (*)()>(dlsym(h, "shapeml_module_abi_version"));
  auto manifest = reinterpret_cast<const char* (*)()>(dlsym(h, "shapeml_module_manifest"));
  ASSERT_NE(abi, nullptr);
  ASSERT_NE(manifest, nullptr);
  EXPECT_EQ(abi(), shapeml::common::kCompiledEntryAbiVersion);
  std::string mf = manifest();
  EXPECT_EQ(mf, shapeml::artifact::manifest_text(*r->module, specs, "x86-64"));
  EXPECT_NE(mf.find("(shapeml-module (abi 2) (name aot) (target \"x86-64\")"), std::string::npos) << mf;
  EXPECT_NE(mf.find("(entry scale (dims N) (where)"), std::string::npos) << mf;
  EXPECT_NE(mf.find("(params (x (tensor f32 (N) host)) (k (tensor f32 () host)))"), std::string::npos) << mf;
  EXPECT_NE(mf.find("(specialization (bind (N 5)) (symbol shapeml_scale_1))"), std::string::npos) << mf;
  EXPECT_NE(mf.find("(specialization (bind (M 2)) (symbol shapeml_mm_2))"), std::string::npos) << mf;
  auto scale5 = reinterpret_cast<shapeml::common::CompiledEntryFn>(dlsym(h, "shapeml_scale_1"));
  ASSERT_NE(scale5, nullptr);
  alignas(64) float x[16] = {1, -2, 3, -4, 0.5f};
  alignas(64) float k[16] = {-2};
  alignas(64) float y[16] = {};
  alignas(64) uint8_t pos[64] = {};
  void* bufs[] = {x, k, y, pos};
  scale5(bufs);
  float want[] = {-2, 4, -6, 8, -1};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(y[i], want[i]);
    EXPECT_EQ(pos[i], want[i] > 0 ? 1 : 0);
  }
  EXPECT_EQ(dlsym(h, "shapeml_scale_0_body"), nullptr) << "internal functions must not be exported";
  dlclose(h);
  // Only libc and libm are needed.
  std::string cmd = "readelf -d " + so + " 2>/dev/null | grep NEEDED";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[512];
  int needed = 0;
  while (fgets(line, sizeof line, p)) {
    std::string l = line;
    ++needed;
    EXPECT_TRUE(l.find("libc.so") != std::string::npos || l.find("libm.so") != std::string::npos) << l;
  }
  pclose(p);
  EXPECT_LE(needed, 2);  // none at all when nothing calls malloc or libm
  std::filesystem::remove_all(dir);
}

TEST(Aot, ErrorsAreReported) {
  auto r = check("(module a (func f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return x)))");
  ASSERT_TRUE(r->ok());
  std::string err;
  EXPECT_FALSE(cpu::build_shared_object(*r->module, {}, {}, "/tmp/never.so", err));
  EXPECT_NE(err.find("no specializations"), std::string::npos);
  EXPECT_FALSE(cpu::build_shared_object(*r->module, {{"f", {}}}, {}, "/tmp/never.so", err));
  EXPECT_NE(err.find("`N`"), std::string::npos) << err;
  EXPECT_FALSE(cpu::build_shared_object(*r->module, {{"f", {{"N", 2}}}}, {}, "/nonexistent-dir/x.so", err));
  EXPECT_FALSE(err.empty());
}

// Files in `dir` (names only), to check that a build leaves no temporaries.
std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> r;
  for (const auto& e : std::filesystem::directory_iterator(dir)) r.push_back(e.path().filename().string());
  std::sort(r.begin(), r.end());
  return r;
}

// Sets an environment variable for one scope (nullptr: unset), restoring it after.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* o = std::getenv(n)) old = o;
    if (value) ::setenv(n, value, 1);
    else ::unsetenv(n);
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

// Section 4 of issue 7: an AOT build needs no system C compiler. With PATH
// pointing at an empty directory (no cc, ld, as) and SHAPEML_CC unset, the
// .so is linked in process (LLD), loads with dlopen and computes the right
// values: f64 exp/log (libm calls), f32 tanh (inline), a matmul (malloc'ed
// intermediates), checked against float64 loops here.
TEST(Aot, BuildsWithoutASystemCompiler) {
  std::string src = R"((module nocc
  (func f (dims N) (params (x (tensor f64 (N) host)) (y (tensor f32 (N) host)) (a (tensor f32 (N N) host)))
    (returns (tensor f64 (N) host) (tensor f32 (N) host) (tensor f32 (N N) host))
    (return (add (exp x) (log x)) (tanh y) (matmul (matmul a a) a)))))";
  auto r = check(src);
  ASSERT_TRUE(r->ok());
  auto dir = std::filesystem::temp_directory_path() / ("shapeml-nocc-" + std::to_string(::getpid()));
  auto empty = dir / "empty-path";
  std::filesystem::create_directories(empty);
  std::string so = (dir / "libnocc.so").string();
  std::string err;
  {
    ScopedEnv path("PATH", empty.c_str());
    ScopedEnv cc("SHAPEML_CC", nullptr);
    ASSERT_TRUE(cpu::build_shared_object(*r->module, {{"f", {{"N", 6}}}}, {}, so, err)) << err;
  }
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"empty-path", "libnocc.so"})) << "temporary files left behind";
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<shapeml::common::CompiledEntryFn>(dlsym(h, "shapeml_f_0"));
  ASSERT_NE(fn, nullptr);
  alignas(64) double x[6] = {0.25, 1, 2.5, 7, 1e-3, 30};
  alignas(64) float y[6] = {-3, -0.5f, 0, 0.125f, 1, 9};
  alignas(64) float a[36];
  for (int i = 0; i < 36; ++i) a[i] = static_cast<float>((i * 7 % 11) - 5) / 4;
  alignas(64) double ox[6] = {};
  alignas(64) float oy[6] = {}, oa[36] = {};
  void* bufs[] = {x, y, a, ox, oy, oa};
  fn(bufs);
  for (int i = 0; i < 6; ++i) {
    double want = std::exp(x[i]) + std::log(x[i]);
    EXPECT_NEAR(ox[i], want, 4e-16 * std::fabs(want)) << i;
    EXPECT_NEAR(oy[i], std::tanh(static_cast<double>(y[i])), 5e-7) << i;
  }
  std::vector<double> a2(36, 0.0), a3(36, 0.0);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 6; ++k) a2[i * 6 + j] += static_cast<double>(a[i * 6 + k]) * a[k * 6 + j];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 6; ++k) a3[i * 6 + j] += a2[i * 6 + k] * a[k * 6 + j];
  for (int i = 0; i < 36; ++i) EXPECT_NEAR(oa[i], a3[i], 1e-5 * (1 + std::fabs(a3[i]))) << i;
  dlclose(h);
  // DT_NEEDED: libm (exp/log f64) and libc (malloc/free), nothing else.
  std::string cmd = "readelf -d " + so + " 2>/dev/null | grep NEEDED";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[512];
  std::string needed;
  while (fgets(line, sizeof line, p)) needed += line;
  pclose(p);
  EXPECT_NE(needed.find("[libm.so.6]"), std::string::npos) << needed;
  EXPECT_NE(needed.find("[libc.so.6]"), std::string::npos) << needed;
  EXPECT_EQ(std::count(needed.begin(), needed.end(), '\n'), 2) << needed;
  std::filesystem::remove_all(dir);
}

// The output appears atomically: a failed build leaves an existing file as it
// was and no temporaries; a successful one replaces it.
TEST(Aot, OutputIsReplacedAtomically) {
  auto r = check("(module a (func f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (neg x))))");
  ASSERT_TRUE(r->ok());
  auto dir = std::filesystem::temp_directory_path() / ("shapeml-atomic-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string so = (dir / "liba.so").string();
  { std::ofstream(so) << "keep me"; }
  auto content = [&] {
    std::ifstream in(so);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string err;
  // Fails while compiling (unbound N): nothing written.
  EXPECT_FALSE(cpu::build_shared_object(*r->module, {{"f", {}}}, {}, so, err));
  EXPECT_EQ(content(), "keep me");
  // Fails while linking (an external driver that does not exist): same.
  EXPECT_FALSE(cpu::build_shared_object(*r->module, {{"f", {{"N", 4}}}}, {}, so, err, {}, (dir / "no-such-cc").string()));
  EXPECT_NE(err.find("no-such-cc"), std::string::npos) << err;
  EXPECT_EQ(content(), "keep me");
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"liba.so"});
  // Succeeds: replaced by a loadable .so.
  ASSERT_TRUE(cpu::build_shared_object(*r->module, {{"f", {{"N", 4}}}}, {}, so, err)) << err;
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"liba.so"});
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_NE(dlsym(h, "shapeml_f_0"), nullptr);
  dlclose(h);
  // A directory that does not exist: an error naming it.
  EXPECT_FALSE(cpu::build_shared_object(*r->module, {{"f", {{"N", 4}}}}, {}, (dir / "nope" / "x.so").string(), err));
  EXPECT_NE(err.find("nope"), std::string::npos) << err;
  std::filesystem::remove_all(dir);
}

// LLD is not reentrant: concurrent builds are serialized inside, and each
// produces its own correct .so.
TEST(Aot, ConcurrentBuildsAreSerialized) {
  auto r = check("(module a (func f (dims N) (params (x (tensor f64 (N) host))) (returns (tensor f64 (N) host)) (return (exp x))))");
  ASSERT_TRUE(r->ok());
  auto dir = std::filesystem::temp_directory_path() / ("shapeml-conc-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  constexpr int kThreads = 4;
  std::vector<std::string> errs(kThreads);
  std::vector<int> oks(kThreads, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::string so = (dir / ("lib" + std::to_string(t) + ".so")).string();
      oks[t] = cpu::build_shared_object(*r->module, {{"f", {{"N", t + 1}}}}, {}, so, errs[t]);
    });
  for (auto& t : ts) t.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(oks[t]) << errs[t];
    std::string so = (dir / ("lib" + std::to_string(t) + ".so")).string();
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto fn = reinterpret_cast<shapeml::common::CompiledEntryFn>(dlsym(h, "shapeml_f_0"));
    ASSERT_NE(fn, nullptr);
    alignas(64) double x[8] = {0.5, -1, 2, 3}, y[8] = {};
    void* bufs[] = {x, y};
    fn(bufs);
    for (int i = 0; i <= t; ++i) EXPECT_NEAR(y[i], std::exp(x[i]), 4e-16 * std::exp(x[i])) << t << " " << i;
    for (int i = t + 1; i < 8; ++i) EXPECT_EQ(y[i], 0.0) << "wrote past N";
    dlclose(h);
  }
  std::filesystem::remove_all(dir);
}

// LLD's errors become an error string: never output on stdout, never an
// exit. A file that is not an object makes LLD fail; the process goes on and
// the linker can be used again.
TEST(Aot, LinkerErrorsAreReturned) {
  // A fresh directory each run (the death test below re-runs this body in a
  // child, whose own directory must not collide with a stale one either).
  std::string tmpl = (std::filesystem::temp_directory_path() / "shapeml-lld-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  std::filesystem::path dir = tmpl;
  std::string bogus = (dir / "bogus.o").string(), out = (dir / "out.so").string();
  { std::ofstream(bogus) << "this is not an ELF object\n"; }
  std::string err;
  ::testing::internal::CaptureStdout();
  bool ok = cpu::detail::link_shared_object(bogus, out, "out.so", err);
  std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(ok);
  EXPECT_EQ(printed, "");
  EXPECT_NE(err.find("LLD"), std::string::npos) << err;
  EXPECT_NE(err.find("bogus.o"), std::string::npos) << err;
  EXPECT_NE(err.find("error"), std::string::npos) << err;
  // LLD also ends a fatal error (here: a truncated ELF object) by "exiting":
  // that must come back as an error too, and the linker must still work
  // afterwards (link_elf.cpp cleans up LLD's context). In a child process (a
  // death test that must exit normally with 0), in case it does not.
  {
    auto r0 = check("(module a (func f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (neg x))))");
    ASSERT_TRUE(r0->ok());
    std::string obj = (dir / "full.o").string(), cut = (dir / "cut.o").string();
    ASSERT_TRUE(cpu::build_object(*r0->module, {{"f", {{"N", 4}}}}, {}, obj, err)) << err;
    std::filesystem::copy_file(obj, cut);
    std::filesystem::resize_file(cut, 100);  // valid ELF magic, truncated headers
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    auto child = [&] {
      std::string e1, e2, e3, e4;
      bool ok1 = cpu::detail::link_shared_object(cut, out, "out.so", e1);
      bool ok2 = cpu::detail::link_shared_object(obj, out, "out.so", e2);
      bool ok3 = cpu::detail::link_shared_object(cut, out, "out.so", e3);
      bool ok4 = cpu::detail::link_shared_object(obj, out, "out.so", e4);
      std::fprintf(stderr, "first: %s\nsecond: %s\nfourth: %s\n", e1.c_str(), e2.c_str(), e4.c_str());
      void* h = ok4 ? dlopen(out.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
      auto fn = h ? reinterpret_cast<shapeml::common::CompiledEntryFn>(dlsym(h, "shapeml_f_0")) : nullptr;
      alignas(64) float x[4] = {1, -2, 3, -4}, y[4] = {};
      void* bufs[] = {x, y};
      if (fn) fn(bufs);
      bool fine = !ok1 && !ok3 && e1.find("cut.o") != std::string::npos && e1 == e3 && ok2 && ok4 && fn && y[0] == -1 &&
                  y[1] == 2 && y[2] == -3 && y[3] == 4;
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);  // the child's own directory (it re-ran the body): _Exit skips the cleanup below
      std::_Exit(fine ? 0 : 1);
    };
    EXPECT_EXIT(child(),
        ::testing::ExitedWithCode(0), "first: linking out.so with the in-process linker");
  }
  // Undefined symbols that libc/libm do not define are link errors (-z defs),
  // not a .so that fails later in dlopen.
  auto r = check("(module a (func f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return (neg x))))");
  ASSERT_TRUE(r->ok());
  std::string obj = (dir / "a.o").string();
  ASSERT_TRUE(cpu::build_object(*r->module, {{"f", {{"N", 4}}}}, {}, obj, err)) << err;
  EXPECT_TRUE(cpu::detail::link_shared_object(obj, out, "out.so", err)) << err;
  std::filesystem::remove_all(dir);
}

}  // namespace

// LLVM's report_fatal_error / bad-alloc inside code generation become errors
// (docs/design/llvm-fatal-errors.md); the process survives, and it works
// again afterwards.
TEST(LlvmFatalErrors, BecomeErrorsInsideCodeGeneration) {
  for (int round = 0; round < 2; ++round) {
    std::string error;
    bool ok = shapeml::lower::cpu::detail::run_as_codegen_for_testing(
        [] { shapeml::lower::cpu::detail::llvm_report_fatal_error_for_testing("shapeml test: a fatal error inside LLVM"); }, error);
    EXPECT_FALSE(ok);
    EXPECT_NE(error.find("LLVM reported a fatal error: shapeml test: a fatal error inside LLVM"), std::string::npos) << error;
  }
  std::string error;
  EXPECT_THROW(shapeml::lower::cpu::detail::run_as_codegen_for_testing([] { shapeml::lower::cpu::detail::llvm_report_bad_alloc_for_testing(); }, error),
               std::bad_alloc);
  EXPECT_TRUE(shapeml::lower::cpu::detail::run_as_codegen_for_testing([] {}, error));
}
