// Every kernel of the plan executor on a real GPU, against float64 reference
// loops computed here (never shapeml's CPU path). Plans are built by hand,
// go through their text form and the four executor functions; outputs and
// workspace are poisoned (0xFF bytes) before each run so that unwritten
// elements show. Without a GPU every test prints "skipped: no GPU".
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace shapeml::cuda::test {
namespace {

const GpuDType kAll[] = {GpuDType::F32, GpuDType::F64, GpuDType::BF16, GpuDType::I32, GpuDType::I64, GpuDType::Bool};
const double kNaN = std::nan("");

bool is_float(GpuDType d) { return d == GpuDType::F32 || d == GpuDType::F64 || d == GpuDType::BF16; }
bool is_int(GpuDType d) { return d == GpuDType::I32 || d == GpuDType::I64; }

// A value of dtype d: the rounding a store of x into d does (for the references).
double as_dtype(double x, GpuDType d) {
  switch (d) {
    case GpuDType::F32: return static_cast<float>(x);
    case GpuDType::F64: return x;
    case GpuDType::BF16: return bf16_round(static_cast<float>(x));
    case GpuDType::I32: return static_cast<int32_t>(static_cast<int64_t>(x));
    case GpuDType::I64: return static_cast<double>(static_cast<int64_t>(x));
    case GpuDType::Bool: return x != 0;
  }
  return x;
}

std::mt19937_64& rng() {
  static std::mt19937_64 g(std::random_device{}());
  return g;
}

// Random values of dtype d (floats in [lo, hi], ints in [-50, 50], bools 0/1).
Tensor random(GpuDType d, Shape s, double lo = -3, double hi = 3) {
  Tensor t{d, std::move(s), {}};
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<int> k(-50, 50), b(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.v.push_back(is_float(d) ? as_dtype(u(rng()), d) : is_int(d) ? k(rng()) : b(rng()));
  return t;
}

// Element-by-element comparison: |got - want| <= atol + rtol*|want|; NaN
// only where want is NaN.
void expect_near(const Tensor& got, const std::vector<double>& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.v.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 8; ++i) {
    double g = got.v[i], w = want[i];
    bool ok = std::isnan(w) ? std::isnan(g) : (g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w));
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w;
    }
  }
}

// Index of `out` element i within a tensor of shape `in` broadcast to `out`.
int64_t bcast_index(const Shape& in, const Shape& out, int64_t i) {
  int64_t idx = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t c = i % out[d];
    i /= out[d];
    size_t lead = out.size() - in.size();
    if (d >= lead) {
      int64_t n = in[d - lead];
      if (n != 1) idx += c * stride;
      stride *= n;
    }
  }
  return idx;
}

// ---- unary ---------------------------------------------------------------

double unary_ref(const std::string& op, double x) {
  if (op == "neg") return -x;
  if (op == "abs") return std::fabs(x);
  if (op == "exp") return std::exp(x);
  if (op == "log") return std::log(x);
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return 1 / std::sqrt(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "sigmoid") return 1 / (1 + std::exp(-x));
  if (op == "relu") return std::isnan(x) ? x : (x > 0 ? x : 0);
  if (op == "gelu") return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
  if (op == "silu") return x / (1 + std::exp(-x));
  return kNaN;
}

TEST(Kernels, UnaryFloatAllOpsAllFloatDtypes) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16})
    for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu"}) {
      std::string o = op;
      bool positive = o == "log" || o == "sqrt" || o == "rsqrt";
      Tensor x = random(dt, {3, 337}, positive ? 0.01 : -8, 8);  // odd size: vector tail
      x.v[0] = kNaN;
      PlanBuilder b;
      int32_t in = b.input(0, dt, x.shape), out = b.output(0, dt, x.shape);
      b.launch("unary", op, {in}, {out});
      auto r = run(b.p, {x}, {{dt, x.shape}});
      ASSERT_EQ(r.size(), 1u);
      std::vector<double> want;
      for (double v : x.v) want.push_back(as_dtype(unary_ref(o, v), dt));
      // f64 gelu in the far negative tail is x/2 * erfc(-x/sqrt 2), whose
      // relative condition number is about x^2 (erfc'(z)/erfc(z) ~ -2z): an
      // argument rounding of 1 ulp costs ~50 ulp at x = -7 on any machine.
      double rtol = dt == GpuDType::F64 ? (o == "gelu" ? 1e-13 : 1e-14) : dt == GpuDType::F32 ? 2e-6 : 1.0 / 128;
      double atol = dt == GpuDType::F64 ? 1e-300 : dt == GpuDType::F32 ? 1e-6 : 1e-5;
      expect_near(r[0], want, rtol, atol, std::string(op) + " " + plan::gpu_dtype_name(dt));
    }
}

TEST(Kernels, UnarySpecialValues) {
  REQUIRE_GPU();
  Tensor x{GpuDType::F32, {8}, {-INFINITY, INFINITY, 0.0, -0.0, -1.0, 1e-40, -200, 200}};
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "sigmoid", "silu", "gelu", "relu", "tanh", "abs"}) {
    PlanBuilder b;
    int32_t in = b.input(0, GpuDType::F32, {8}), out = b.output(0, GpuDType::F32, {8});
    b.launch("unary", op, {in}, {out});
    auto r = run(b.p, {x}, {{GpuDType::F32, {8}}});
    ASSERT_EQ(r.size(), 1u);
    std::vector<double> want;
    for (double v : x.v) want.push_back(static_cast<float>(unary_ref(op, static_cast<float>(v))));
    expect_near(r[0], want, 4e-6, 1e-44, op);
  }
}

TEST(Kernels, UnaryIntegers) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::I32, GpuDType::I64}) {
    double mn = dt == GpuDType::I32 ? INT32_MIN : static_cast<double>(INT64_MIN);
    Tensor x{dt, {5}, {-7, 0, 9, mn, -1}};
    for (const char* op : {"neg", "abs", "relu"}) {
      PlanBuilder b;
      int32_t in = b.input(0, dt, {5}), out = b.output(0, dt, {5});
      b.launch("unary", op, {in}, {out});
      auto r = run(b.p, {x}, {{dt, {5}}});
      ASSERT_EQ(r.size(), 1u);
      std::string o = op;
      // neg/abs of MIN wrap to MIN.
      std::vector<double> want = o == "neg" ? std::vector<double>{7, 0, -9, mn, 1}
                                 : o == "abs" ? std::vector<double>{7, 0, 9, mn, 1}
                                              : std::vector<double>{0, 0, 9, 0, 0};
      expect_near(r[0], want, 0, 0, o);
    }
  }
}

// ---- binary, compare, select with broadcasting ----------------------------

double binary_ref(const std::string& op, double a, double b, GpuDType dt) {
  bool fl = is_float(dt);
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") {
    if (fl) return a / b;
    if (b == 0) return 0;
    double mn = dt == GpuDType::I32 ? INT32_MIN : static_cast<double>(INT64_MIN);
    if (a == mn && b == -1) return mn;
    return std::trunc(a / b);
  }
  if (op == "max") return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
  if (op == "min") return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
  if (op == "pow") return std::pow(a, b);
  return kNaN;
}

const std::vector<std::pair<Shape, Shape>> kBroadcastCases = {
    {{1001}, {1001}},          // same shape, odd size (vector tail)
    {{3, 1, 5}, {1, 4, 5}},    // size-1 dims on both sides
    {{7}, {2, 3, 7}},          // rank extension
    {{}, {5, 3}},              // rank-0 scalar
    {{5, 1}, {1}},             // both stretched
    {{2, 1, 3, 1}, {2, 4, 1, 5}},
    {{1, 1}, {1}},
};

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape o(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < o.size(); ++i) {
    int64_t x = i < o.size() - a.size() ? 1 : a[i - (o.size() - a.size())];
    int64_t y = i < o.size() - b.size() ? 1 : b[i - (o.size() - b.size())];
    o[i] = x == 1 ? y : x;
  }
  return o;
}

TEST(Kernels, BinaryBroadcastingAllOpsAllDtypes) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16, GpuDType::I32, GpuDType::I64})
    for (const char* op : {"add", "sub", "mul", "div", "max", "min", "pow"}) {
      std::string o = op;
      if (o == "pow" && !is_float(dt)) continue;
      for (const auto& [sa, sb] : kBroadcastCases) {
        Shape so = broadcast_shape(sa, sb);
        Tensor a = random(dt, sa, o == "pow" ? 0.1 : -4, 4), bt = random(dt, sb, -4, 4);
        if (is_float(dt) && a.numel() > 2) a.v[1] = kNaN;
        PlanBuilder b;
        int32_t x = b.input(0, dt, sa), y = b.input(1, dt, sb), out = b.output(0, dt, so);
        b.launch("binary", op, {x, y}, {out});
        auto r = run(b.p, {a, bt}, {{dt, so}});
        ASSERT_EQ(r.size(), 1u);
        std::vector<double> want;
        for (int64_t i = 0; i < numel(so); ++i)
          want.push_back(as_dtype(binary_ref(o, a.v[bcast_index(sa, so, i)], bt.v[bcast_index(sb, so, i)], dt), dt));
        double rtol = dt == GpuDType::F32 ? (o == "pow" ? 4e-6 : 0) : dt == GpuDType::F64 ? 1e-15 : is_float(dt) ? 1.0 / 128 : 0;
        expect_near(r[0], want, rtol, dt == GpuDType::BF16 ? 1e-6 : 0, o + " " + plan::gpu_dtype_name(dt) + " case " + std::to_string(so.size()));
      }
    }
}

TEST(Kernels, UnalignedFastPathFallsBack) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::BF16, GpuDType::F64}) {
    Tensor a = random(dt, {1003}), bt = random(dt, {1003});
    PlanBuilder b;
    int32_t x = b.input(0, dt, {1003}), y = b.input(1, dt, {1003}), out = b.output(0, dt, {1003});
    b.launch("binary", "mul", {x, y}, {out});
    auto r = run(b.p, {a, bt}, {{dt, {1003}}}, RunOptions{plan::gpu_dtype_size(dt)});
    ASSERT_EQ(r.size(), 1u);
    std::vector<double> want;
    for (size_t i = 0; i < a.v.size(); ++i) want.push_back(as_dtype(a.v[i] * bt.v[i], dt));
    expect_near(r[0], want, dt == GpuDType::BF16 ? 1.0 / 128 : 0, 0, "misaligned mul");
  }
}

TEST(Kernels, IntegerDivisionCorners) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::I32, GpuDType::I64}) {
    double mn = dt == GpuDType::I32 ? INT32_MIN : static_cast<double>(INT64_MIN);
    Tensor a{dt, {6}, {7, -7, 5, mn, 3, 0}}, bt{dt, {6}, {2, 2, 0, -1, -1, 0}};
    PlanBuilder b;
    int32_t x = b.input(0, dt, {6}), y = b.input(1, dt, {6}), out = b.output(0, dt, {6});
    b.launch("binary", "div", {x, y}, {out});
    auto r = run(b.p, {a, bt}, {{dt, {6}}});
    ASSERT_EQ(r.size(), 1u);
    expect_near(r[0], {3, -3, 0, mn, -3, 0}, 0, 0, "int div");
  }
}

TEST(Kernels, Bf16RoundsToNearestEvenAfterEveryOp) {
  REQUIRE_GPU();
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7 (odd): to even, 1. (1 + 2^-7) + 2^-8
  // is a tie between 1 + 2^-7 (odd) and 1 + 2^-6 (even): 1 + 2^-6.
  Tensor a{GpuDType::BF16, {3}, {1.0, 1.0078125, 256.0}}, bt{GpuDType::BF16, {3}, {0.00390625, 0.00390625, 1.0}};
  PlanBuilder b;
  int32_t x = b.input(0, GpuDType::BF16, {3}), y = b.input(1, GpuDType::BF16, {3}), out = b.output(0, GpuDType::BF16, {3});
  b.launch("binary", "add", {x, y}, {out});
  auto r = run(b.p, {a, bt}, {{GpuDType::BF16, {3}}});
  ASSERT_EQ(r.size(), 1u);
  expect_near(r[0], {1.0, 1.015625, 256.0}, 0, 0, "bf16 ties");  // 257 is a tie too: to even, 256
}

TEST(Kernels, CompareAllOpsWithNaNAndBool) {
  REQUIRE_GPU();
  for (GpuDType dt : kAll)
    for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      Shape sa{4, 1}, sb{3};
      Tensor a = random(dt, sa, -2, 2), bt = random(dt, sb, -2, 2);
      if (is_float(dt)) {
        a.v[0] = kNaN;
        bt.v[1] = a.v[1];  // some equal pairs
      }
      Shape so{4, 3};
      PlanBuilder b;
      int32_t x = b.input(0, dt, sa), y = b.input(1, dt, sb), out = b.output(0, GpuDType::Bool, so);
      b.launch("compare", op, {x, y}, {out});
      auto r = run(b.p, {a, bt}, {{GpuDType::Bool, so}});
      ASSERT_EQ(r.size(), 1u);
      std::string o = op;
      std::vector<double> want;
      for (int64_t i = 0; i < 12; ++i) {
        double p = a.v[bcast_index(sa, so, i)], q = bt.v[bcast_index(sb, so, i)];
        bool v = o == "eq" ? p == q : o == "ne" ? p != q : o == "lt" ? p < q : o == "le" ? p <= q : o == "gt" ? p > q : p >= q;
        want.push_back(v);
      }
      expect_near(r[0], want, 0, 0, o + " " + plan::gpu_dtype_name(dt));
    }
}

TEST(Kernels, SelectBroadcastsAllThree) {
  REQUIRE_GPU();
  for (GpuDType dt : kAll) {
    Shape sc{3, 1}, sa{1, 4}, sb{}, so{3, 4};
    Tensor c = random(GpuDType::Bool, sc), a = random(dt, sa), bt = random(dt, sb);
    PlanBuilder b;
    int32_t pc = b.input(0, GpuDType::Bool, sc), pa = b.input(1, dt, sa), pb = b.input(2, dt, sb), out = b.output(0, dt, so);
    b.launch("select", "", {pc, pa, pb}, {out});
    auto r = run(b.p, {c, a, bt}, {{dt, so}});
    ASSERT_EQ(r.size(), 1u);
    std::vector<double> want;
    for (int64_t i = 0; i < 12; ++i) want.push_back(c.v[bcast_index(sc, so, i)] ? a.v[bcast_index(sa, so, i)] : bt.v[0]);
    expect_near(r[0], want, 0, 0, std::string("select ") + plan::gpu_dtype_name(dt));
  }
}

// ---- cast ----------------------------------------------------------------

double cast_ref(double x, GpuDType from, GpuDType to) {
  if (to == GpuDType::Bool) return x != 0 || std::isnan(x);
  if (from == GpuDType::Bool) return x;
  if (is_float(from) && is_int(to)) {
    int bits = to == GpuDType::I32 ? 32 : 64;
    double lim = std::ldexp(1.0, bits - 1);
    if (std::isnan(x)) return 0;
    if (x >= lim) return bits == 32 ? INT32_MAX : static_cast<double>(INT64_MAX);
    if (x < -lim) return bits == 32 ? INT32_MIN : static_cast<double>(INT64_MIN);
    return std::trunc(x);
  }
  if (to == GpuDType::BF16 && from == GpuDType::I64) return bf16_round(static_cast<float>(static_cast<int64_t>(x)));
  return as_dtype(x, to);  // f64 -> bf16 goes through f32, as the language does
}

TEST(Kernels, CastAllPairs) {
  REQUIRE_GPU();
  for (GpuDType from : kAll)
    for (GpuDType to : kAll) {
      Tensor x = random(from, {257}, -100, 100);
      if (is_float(from)) {
        x.v[0] = kNaN;
        x.v[1] = 1e30;
        x.v[2] = -1e30;
        x.v[3] = 2.75;
        x.v[4] = -2.75;
        x.v[5] = -0.0;
        x.v[6] = 0.1;  // rounds differently in each float type
        for (int i = 0; i < 7; ++i) x.v[static_cast<size_t>(i)] = as_dtype(x.v[static_cast<size_t>(i)], from);
      }
      PlanBuilder b;
      int32_t in = b.input(0, from, {257}), out = b.output(0, to, {257});
      b.launch("cast", "", {in}, {out});
      auto r = run(b.p, {x}, {{to, {257}}});
      ASSERT_EQ(r.size(), 1u);
      std::vector<double> want;
      for (double v : x.v) want.push_back(cast_ref(v, from, to));
      expect_near(r[0], want, 0, 0, std::string("cast ") + plan::gpu_dtype_name(from) + " -> " + plan::gpu_dtype_name(to));
    }
}

TEST(Kernels, CastIntegerNarrowingWraps) {
  REQUIRE_GPU();
  Tensor x{GpuDType::I64, {4}, {4294967301.0 /* 2^32 + 5 */, -1, 2147483648.0 /* 2^31 */, -2147483649.0}};
  PlanBuilder b;
  int32_t in = b.input(0, GpuDType::I64, {4}), out = b.output(0, GpuDType::I32, {4});
  b.launch("cast", "", {in}, {out});
  auto r = run(b.p, {x}, {{GpuDType::I32, {4}}});
  ASSERT_EQ(r.size(), 1u);
  expect_near(r[0], {5, -1, INT32_MIN, INT32_MAX}, 0, 0, "i64 -> i32");
}

// ---- fill, iota ------------------------------------------------------------

TEST(Kernels, FillEveryDtypeAndRankZero) {
  REQUIRE_GPU();
  for (GpuDType dt : kAll)
    for (Shape s : {Shape{}, Shape{3, 5}, Shape{1001}}) {
      PlanBuilder b;
      int32_t out = b.output(0, dt, s);
      b.launch("fill", "", {}, {out}, {}, 1.0 / 3 + 2);
      auto r = run(b.p, {}, {{dt, s}});
      ASSERT_EQ(r.size(), 1u);
      double v = is_int(dt) ? 2 : dt == GpuDType::Bool ? 1 : as_dtype(1.0 / 3 + 2, dt);
      expect_near(r[0], std::vector<double>(static_cast<size_t>(numel(s)), v), 0, 0, std::string("fill ") + plan::gpu_dtype_name(dt));
    }
}

TEST(Kernels, IotaEveryAxisAndDtype) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16, GpuDType::I32, GpuDType::I64})
    for (int64_t axis : {0, 1, 2}) {
      Shape s{3, 300, 5};
      PlanBuilder b;
      int32_t out = b.output(0, dt, s);
      b.launch("iota", "", {}, {out}, {axis});
      auto r = run(b.p, {}, {{dt, s}});
      ASSERT_EQ(r.size(), 1u);
      std::vector<double> want;
      for (int64_t i = 0; i < numel(s); ++i) {
        int64_t c = axis == 0 ? i / 1500 : axis == 1 ? (i / 5) % 300 : i % 5;
        want.push_back(as_dtype(static_cast<double>(c), dt));
      }
      expect_near(r[0], want, 0, 0, std::string("iota ") + plan::gpu_dtype_name(dt));
    }
}

// ---- data movement ---------------------------------------------------------

std::vector<double> permute_ref(const Tensor& x, const std::vector<int64_t>& perm, Shape& out_shape) {
  size_t r = x.shape.size();
  out_shape.assign(r, 0);
  for (size_t i = 0; i < r; ++i) out_shape[i] = x.shape[static_cast<size_t>(perm[i])];
  Shape in_st(r, 1);
  for (size_t i = r; i-- > 1;) in_st[i - 1] = in_st[i] * x.shape[i];
  std::vector<double> out;
  for (int64_t i = 0; i < numel(out_shape); ++i) {
    int64_t rem = i, off = 0;
    for (size_t d = r; d-- > 0;) {
      off += (rem % out_shape[d]) * in_st[static_cast<size_t>(perm[d])];
      rem /= out_shape[d];
    }
    out.push_back(x.v[static_cast<size_t>(off)]);
  }
  return out;
}

TEST(Kernels, TransposeTiledAndGeneral) {
  REQUIRE_GPU();
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{33, 65}, {1, 0}},          // tiled, ragged tiles
      {{3, 33, 65}, {0, 2, 1}},    // tiled, batched
      {{1, 1}, {1, 0}},
      {{2, 3, 4, 5}, {3, 1, 0, 2}},  // general
      {{4, 5, 6}, {1, 0, 2}},      // general (inner dim kept)
      {{7, 1, 9}, {2, 1, 0}},      // tiled after dropping the size-1 dim
  };
  for (GpuDType dt : {GpuDType::Bool, GpuDType::BF16, GpuDType::F32, GpuDType::I64})
    for (const auto& [shape, perm] : cases) {
      Tensor x = random(dt, shape);
      Shape so;
      std::vector<double> want = permute_ref(x, perm, so);
      PlanBuilder b;
      int32_t in = b.input(0, dt, shape), out = b.output(0, dt, so);
      b.launch("transpose", "", {in}, {out}, perm);
      auto r = run(b.p, {x}, {{dt, so}});
      ASSERT_EQ(r.size(), 1u);
      expect_near(r[0], want, 0, 0, std::string("transpose ") + plan::gpu_dtype_name(dt) + " rank " + std::to_string(shape.size()));
    }
}

TEST(Kernels, BroadcastToSliceConcat) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::Bool, GpuDType::BF16, GpuDType::F32, GpuDType::F64}) {
    {  // broadcast_to [3, 1] -> [2, 3, 4]; [] -> [5]
      for (auto [si, so] : {std::pair{Shape{3, 1}, Shape{2, 3, 4}}, std::pair{Shape{}, Shape{5}}}) {
        Tensor x = random(dt, si);
        PlanBuilder b;
        int32_t in = b.input(0, dt, si), out = b.output(0, dt, so);
        b.launch("broadcast", "", {in}, {out});
        auto r = run(b.p, {x}, {{dt, so}});
        ASSERT_EQ(r.size(), 1u);
        std::vector<double> want;
        for (int64_t i = 0; i < numel(so); ++i) want.push_back(x.v[bcast_index(si, so, i)]);
        expect_near(r[0], want, 0, 0, "broadcast_to");
      }
    }
    {  // slice [5, 7] axis 1 start 2 size 3, and axis 0 start 4 size 1
      Tensor x = random(dt, {5, 7});
      for (auto [axis, start, size] : {std::tuple{1, 2, 3}, std::tuple{0, 4, 1}}) {
        Shape so{5, 7};
        so[static_cast<size_t>(axis)] = size;
        PlanBuilder b;
        int32_t in = b.input(0, dt, {5, 7}), out = b.output(0, dt, so);
        b.launch("slice", "", {in}, {out}, {axis, start});
        auto r = run(b.p, {x}, {{dt, so}});
        ASSERT_EQ(r.size(), 1u);
        std::vector<double> want;
        for (int64_t i = 0; i < so[0]; ++i)
          for (int64_t j = 0; j < so[1]; ++j) want.push_back(x.v[static_cast<size_t>((i + (axis == 0 ? start : 0)) * 7 + j + (axis == 1 ? start : 0))]);
        expect_near(r[0], want, 0, 0, "slice");
      }
    }
    {  // concat [2,3] [2,5] [2,1] along 1; [1,4] [3,4] along 0
      Tensor a = random(dt, {2, 3}), c = random(dt, {2, 5}), d = random(dt, {2, 1});
      PlanBuilder b;
      int32_t pa = b.input(0, dt, {2, 3}), pc = b.input(1, dt, {2, 5}), pd = b.input(2, dt, {2, 1}), out = b.output(0, dt, {2, 9});
      b.launch("concat", "", {pa, pc, pd}, {out}, {1});
      auto r = run(b.p, {a, c, d}, {{dt, {2, 9}}});
      ASSERT_EQ(r.size(), 1u);
      std::vector<double> want;
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 3; ++j) want.push_back(a.v[static_cast<size_t>(i * 3 + j)]);
        for (int j = 0; j < 5; ++j) want.push_back(c.v[static_cast<size_t>(i * 5 + j)]);
        want.push_back(d.v[static_cast<size_t>(i)]);
      }
      expect_near(r[0], want, 0, 0, "concat axis 1");
      Tensor e = random(dt, {1, 4}), f = random(dt, {3, 4});
      PlanBuilder b0;
      int32_t pe = b0.input(0, dt, {1, 4}), pf = b0.input(1, dt, {3, 4}), o0 = b0.output(0, dt, {4, 4});
      b0.launch("concat", "", {pe, pf}, {o0}, {0});
      auto r0 = run(b0.p, {e, f}, {{dt, {4, 4}}});
      ASSERT_EQ(r0.size(), 1u);
      std::vector<double> w0 = e.v;
      w0.insert(w0.end(), f.v.begin(), f.v.end());
      expect_near(r0[0], w0, 0, 0, "concat axis 0");
    }
  }
}

TEST(Kernels, HostCopiesTempsAndViews) {
  REQUIRE_GPU();
  // host_input -> temp (copy), view [6] of it as [2, 3], neg into a temp,
  // copy that to a device output and to a host output.
  PlanBuilder b;
  int32_t hin = b.slot(GpuSlot::Kind::HostInput, 0, GpuDType::F32, {6});
  int32_t t0 = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {6}, 0);
  int32_t v0 = b.slot(GpuSlot::Kind::View, t0, GpuDType::F32, {2, 3});
  int32_t t1 = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {2, 3}, 256);
  int32_t dout = b.output(0, GpuDType::F32, {2, 3});
  int32_t hout = b.slot(GpuSlot::Kind::HostOutput, 1, GpuDType::F32, {2, 3});
  b.launch("copy", "", {hin}, {t0});
  b.launch("unary", "neg", {v0}, {t1});
  b.launch("copy", "", {t1}, {dout});
  b.launch("copy", "", {t1}, {hout});
  std::string text = b.p.to_text();
  shapeml_cuda_plan* plan = nullptr;
  char err[512] = "";
  ASSERT_EQ(plan_create(0, text.c_str(), &plan, err, sizeof err), 0) << err;
  std::vector<float> host_in{1, -2, 3, -4, 5, -6}, host_out(6, 99);
  void* d_out = nullptr;
  void* ws = nullptr;
  CUDA_OK(cudaMalloc(&d_out, 24));
  CUDA_OK(cudaMalloc(&ws, static_cast<size_t>(plan_workspace_bytes(plan))));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  void* bufs[3] = {host_in.data(), d_out, host_out.data()};
  ASSERT_EQ(plan_execute(plan, bufs, ws, s, err, sizeof err), 0) << err;
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<float> dev_out(6);
  CUDA_OK(cudaMemcpy(dev_out.data(), d_out, 24, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(host_out[static_cast<size_t>(i)], -host_in[static_cast<size_t>(i)]);
    EXPECT_EQ(dev_out[static_cast<size_t>(i)], -host_in[static_cast<size_t>(i)]);
  }
  cudaStreamDestroy(s);
  cudaFree(d_out);
  cudaFree(ws);
  plan_destroy(plan);
}

TEST(Kernels, ChainThroughWorkspaceInPlace) {
  REQUIRE_GPU();
  // t = x * y (temp); t = exp(t) in place; out = t + x.
  Tensor x = random(GpuDType::F32, {5, 77}), y = random(GpuDType::F32, {77});
  PlanBuilder b;
  int32_t px = b.input(0, GpuDType::F32, {5, 77}), py = b.input(1, GpuDType::F32, {77});
  int32_t t = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {5, 77}, 512);
  int32_t out = b.output(0, GpuDType::F32, {5, 77});
  b.launch("binary", "mul", {px, py}, {t});
  b.launch("unary", "exp", {t}, {t});
  b.launch("binary", "add", {t, px}, {out});
  auto r = run(b.p, {x, y}, {{GpuDType::F32, {5, 77}}});
  ASSERT_EQ(r.size(), 1u);
  std::vector<double> want;
  for (int64_t i = 0; i < 385; ++i) {
    float m = static_cast<float>(x.v[static_cast<size_t>(i)] * y.v[static_cast<size_t>(i % 77)]);
    want.push_back(static_cast<float>(static_cast<float>(std::exp(static_cast<double>(m))) + x.v[static_cast<size_t>(i)]));
  }
  expect_near(r[0], want, 4e-6, 1e-6, "chain");
}

// ---- reductions ------------------------------------------------------------

TEST(Kernels, ReduceAnyAxesKeepdimsAllDtypes) {
  REQUIRE_GPU();
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{3, 4, 5}, {0}}, {{3, 4, 5}, {1}}, {{3, 4, 5}, {2}}, {{3, 4, 5}, {0, 2}}, {{3, 4, 5}, {0, 1, 2}}, {{3, 4, 5}, {}},
      {{2, 3000}, {1}},       // block per output (innermost)
      {{3000, 3}, {0}},       // thread per output (inner dim kept)
      {{16, 300, 2}, {1}},    // middle axis
      {{8, 70, 9}, {0, 2}},   // non-adjacent reduced dims, block per output
      {{3, 0}, {1}},          // empty reduction
      {{}, {}},               // rank 0
  };
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16, GpuDType::I32, GpuDType::I64})
    for (const char* op : {"sum", "max", "mean"}) {
      std::string o = op;
      if (o == "mean" && !is_float(dt)) continue;
      for (const auto& [shape, axes] : cases)
        for (bool keep : {false, true}) {
          Tensor x = random(dt, shape, -5, 5);
          if (is_int(dt) && o == "max")
            for (double& v : x.v) v = -std::fabs(v) - 100;  // all negative: max starts at the minimum, not 0
          std::vector<bool> red(shape.size(), false);
          for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
          Shape so, kept;
          for (size_t d = 0; d < shape.size(); ++d) {
            if (!red[d]) so.push_back(shape[d]), kept.push_back(shape[d]);
            else if (keep) so.push_back(1);
          }
          std::vector<double> acc(static_cast<size_t>(numel(kept)), o == "max" ? -INFINITY : 0), mag(acc.size(), 0);
          std::vector<int64_t> cnt(acc.size(), 0);
          for (int64_t i = 0; i < x.numel(); ++i) {
            int64_t rem = i, oi = 0, mul = 1;
            for (size_t d = shape.size(); d-- > 0;) {
              int64_t c = rem % shape[d];
              rem /= shape[d];
              if (!red[d]) oi += c * mul, mul *= shape[d];
            }
            double v = x.v[static_cast<size_t>(i)];
            acc[static_cast<size_t>(oi)] = o == "max" ? std::max(acc[static_cast<size_t>(oi)], v) : acc[static_cast<size_t>(oi)] + v;
            mag[static_cast<size_t>(oi)] += std::fabs(v);
            cnt[static_cast<size_t>(oi)]++;
          }
          std::vector<double> want;
          for (size_t k = 0; k < acc.size(); ++k) {
            double w = acc[k];
            if (o == "mean") w = cnt[k] ? w / static_cast<double>(cnt[k]) : kNaN;
            if (o == "max" && cnt[k] == 0 && is_int(dt)) w = dt == GpuDType::I32 ? INT32_MIN : static_cast<double>(INT64_MIN);
            want.push_back(as_dtype(w, dt));
          }
          PlanBuilder b;
          int32_t in = b.input(0, dt, shape), out = b.output(0, dt, so);
          b.launch("reduce", op, {in}, {out}, axes, 0, keep);
          auto r = run(b.p, {x}, {{dt, so}});
          ASSERT_EQ(r.size(), 1u);
          // Tolerance: the summation order differs from the reference's.
          double scale = 0;
          for (double m : mag) scale = std::max(scale, m);
          double atol = dt == GpuDType::F32 ? 1e-6 * scale : dt == GpuDType::F64 ? 1e-14 * scale : dt == GpuDType::BF16 ? 1e-5 * scale : 0;
          expect_near(r[0], want, dt == GpuDType::BF16 ? 1.0 / 128 : 0, atol,
                      o + " " + plan::gpu_dtype_name(dt) + " rank " + std::to_string(shape.size()) + " axes " + std::to_string(axes.size()) +
                          (keep ? " keepdims" : ""));
        }
    }
}

TEST(Kernels, ReduceMaxPropagatesNaN) {
  REQUIRE_GPU();
  Tensor x = random(GpuDType::F32, {4, 600});
  x.v[1 * 600 + 599] = kNaN;
  x.v[3 * 600 + 7] = kNaN;
  PlanBuilder b;
  int32_t in = b.input(0, GpuDType::F32, {4, 600}), out = b.output(0, GpuDType::F32, {4});
  b.launch("reduce", "max", {in}, {out}, {1});
  auto r = run(b.p, {x}, {{GpuDType::F32, {4}}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(std::isnan(r[0].v[0]));
  EXPECT_TRUE(std::isnan(r[0].v[1]));
  EXPECT_FALSE(std::isnan(r[0].v[2]));
  EXPECT_TRUE(std::isnan(r[0].v[3]));
}

// ---- matmul ----------------------------------------------------------------

std::vector<double> matmul_ref(const Tensor& a, const Tensor& w, Shape& so) {
  size_t ra = a.shape.size(), rb = w.shape.size();
  int64_t M = a.shape[ra - 2], K = a.shape[ra - 1], N = w.shape[rb - 1];
  int64_t batch = numel(a.shape) / (M * K);
  so = a.shape;
  so.back() = N;
  std::vector<double> out;
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.v[static_cast<size_t>(bi * M * K + i * K + k)] * w.v[static_cast<size_t>((rb == 2 ? 0 : bi * K * N) + k * N + j)];
        out.push_back(s);
      }
  return out;
}

TEST(Kernels, MatmulSharedAndBatchedAwkwardSizes) {
  REQUIRE_GPU();
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 1}, {1, 1}},        {{7, 33}, {33, 127}},       {{2, 7, 33}, {33, 127}},  // shared weight: one GEMM
      {{3, 7, 33}, {3, 33, 1}}, {{2, 2, 127, 7}, {2, 2, 7, 33}},                      // batched
      {{127, 1}, {1, 33}},     {{4, 128, 256}, {256, 1024}},                         // the MLP's first layer
  };
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16, GpuDType::I32, GpuDType::I64})
    for (int64_t misalign : {int64_t{0}, plan::gpu_dtype_size(dt)})
      for (const auto& [sa, sb] : cases) {
        Tensor a = random(dt, sa, -1, 1), w = random(dt, sb, -1, 1);
        if (is_int(dt)) {
          for (double& v : a.v) v = std::fmod(v, 5);
          for (double& v : w.v) v = std::fmod(v, 5);
        }
        Shape so;
        std::vector<double> want = matmul_ref(a, w, so);
        PlanBuilder b;
        int32_t pa = b.input(0, dt, sa), pb = b.input(1, dt, sb), out = b.output(0, dt, so);
        b.launch("matmul", "", {pa, pb}, {out});
        auto r = run(b.p, {a, w}, {{dt, so}}, RunOptions{misalign});
        ASSERT_EQ(r.size(), 1u);
        std::string what = std::string("matmul ") + plan::gpu_dtype_name(dt) + " " + std::to_string(sa.front()) + "x" + std::to_string(sb.back()) +
                           (misalign ? " misaligned" : "");
        if (is_int(dt)) {
          expect_near(r[0], want, 0, 0, what);
          continue;
        }
        double se = 0, sr = 0;
        bool nan = false;
        for (size_t i = 0; i < want.size(); ++i) {
          nan |= std::isnan(r[0].v[i]);
          se += (r[0].v[i] - want[i]) * (r[0].v[i] - want[i]);
          sr += want[i] * want[i];
        }
        double rel = std::sqrt(se / std::max(sr, 1e-300));
        // full fp32 lands far under 1e-5 (TF32 would be ~1e-4..1e-3); bf16 output rounding ~2^-9.
        double gate = dt == GpuDType::F64 ? 1e-13 : dt == GpuDType::F32 ? 1e-5 : 1e-2;
        EXPECT_FALSE(nan) << what;
        EXPECT_LT(rel, gate) << what;
      }
}

TEST(Kernels, MatmulWithFusedBiasEpilogue) {
  REQUIRE_GPU();
  // C = A W + bias (bias over the last dimension), f32 and f64, shared and
  // batched, against float64 loops.
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{7, 33}, {33, 127}}, {{2, 7, 33}, {33, 127}}, {{3, 7, 33}, {3, 33, 5}}, {{4, 128, 256}, {256, 1024}}};
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64})
    for (const auto& [sa, sb] : cases) {
      Tensor a = random(dt, sa, -1, 1), w = random(dt, sb, -1, 1), bias = random(dt, {sb.back()}, -1, 1);
      Shape so;
      std::vector<double> want = matmul_ref(a, w, so);
      int64_t n = sb.back();
      for (size_t i = 0; i < want.size(); ++i) want[i] += bias.v[i % static_cast<size_t>(n)];
      PlanBuilder b;
      int32_t pa = b.input(0, dt, sa), pb = b.input(1, dt, sb), pc = b.input(2, dt, {n}), out = b.output(0, dt, so);
      b.launch("matmul", "", {pa, pb, pc}, {out});
      auto r = run(b.p, {a, w, bias}, {{dt, so}});
      ASSERT_EQ(r.size(), 1u);
      double se = 0, sr = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        se += (r[0].v[i] - want[i]) * (r[0].v[i] - want[i]);
        sr += want[i] * want[i];
      }
      EXPECT_LT(std::sqrt(se / std::max(sr, 1e-300)), dt == GpuDType::F64 ? 1e-13 : 1e-5)
          << "matmul+bias " << plan::gpu_dtype_name(dt) << " " << sa.size() << "-D x " << sb.size() << "-D";
    }
}

TEST(Kernels, MatmulEmptyInnerDimensionIsZeros) {
  REQUIRE_GPU();
  PlanBuilder b;
  int32_t pa = b.input(0, GpuDType::F32, {3, 0}), pb = b.input(1, GpuDType::F32, {0, 4}), out = b.output(0, GpuDType::F32, {3, 4});
  b.launch("matmul", "", {pa, pb}, {out});
  auto r = run(b.p, {Tensor{GpuDType::F32, {3, 0}, {}}, Tensor{GpuDType::F32, {0, 4}, {}}}, {{GpuDType::F32, {3, 4}}});
  ASSERT_EQ(r.size(), 1u);
  expect_near(r[0], std::vector<double>(12, 0.0), 0, 0, "K = 0");
}

// ---- operations of issue 10 ------------------------------------------------

TEST(Kernels, SinCosAndNot) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64})
    for (const char* op : {"sin", "cos"}) {
      Tensor x = random(dt, {7, 301}, -100, 100);
      x.v[0] = 0, x.v[1] = -0.0, x.v[2] = 1e5, x.v[3] = -3e4, x.v[4] = kNaN, x.v[5] = INFINITY;
      std::vector<double> want;
      for (double v : x.v) want.push_back(std::string(op) == "sin" ? std::sin(v) : std::cos(v));
      PlanBuilder b;
      int32_t in = b.input(0, dt, {7, 301}), out = b.output(0, dt, {7, 301});
      b.launch("unary", op, {in}, {out});
      auto r = run(b.p, {x}, {{dt, {7, 301}}});
      ASSERT_EQ(r.size(), 1u);
      // CUDA's sinf/cosf: 2 ulp over the whole range (results in [-1, 1]).
      expect_near(r[0], want, 0, dt == GpuDType::F32 ? 2.5e-7 : 1e-15, std::string(op) + " " + plan::gpu_dtype_name(dt));
    }
  Tensor x = random(GpuDType::Bool, {1000});
  std::vector<double> want;
  for (double v : x.v) want.push_back(v != 0 ? 0 : 1);
  PlanBuilder b;
  int32_t in = b.input(0, GpuDType::Bool, {1000}), out = b.output(0, GpuDType::Bool, {1000});
  b.launch("unary", "not", {in}, {out});
  auto r = run(b.p, {x}, {{GpuDType::Bool, {1000}}});
  ASSERT_EQ(r.size(), 1u);
  expect_near(r[0], want, 0, 0, "not");
}

TEST(Kernels, AndOrBroadcast) {
  REQUIRE_GPU();
  for (const char* op : {"and", "or"}) {
    Tensor a = random(GpuDType::Bool, {3, 1, 5}), c = random(GpuDType::Bool, {4, 5});
    Shape so = {3, 4, 5};
    std::vector<double> want;
    for (int64_t i = 0; i < numel(so); ++i) {
      bool x = a.v[bcast_index(a.shape, so, i)] != 0, y = c.v[bcast_index(c.shape, so, i)] != 0;
      want.push_back(std::string(op) == "and" ? (x && y) : (x || y));
    }
    PlanBuilder b;
    int32_t pa = b.input(0, GpuDType::Bool, a.shape), pc = b.input(1, GpuDType::Bool, c.shape), out = b.output(0, GpuDType::Bool, so);
    b.launch("binary", op, {pa, pc}, {out});
    auto r = run(b.p, {a, c}, {{GpuDType::Bool, so}});
    ASSERT_EQ(r.size(), 1u);
    expect_near(r[0], want, 0, 0, op);
  }
}

TEST(Kernels, ReduceMinWithNaNAndIntegers) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::I32, GpuDType::I64}) {
    Tensor x = random(dt, {4, 600});
    if (dt == GpuDType::F32) x.v[2 * 600 + 5] = kNaN;
    std::vector<double> want;
    for (int r = 0; r < 4; ++r) {
      double m = INFINITY;
      bool nan = false;
      for (int j = 0; j < 600; ++j) {
        double v = x.v[static_cast<size_t>(r * 600 + j)];
        nan |= std::isnan(v);
        m = std::min(m, v);
      }
      want.push_back(nan ? kNaN : m);
    }
    for (bool rows : {true, false}) {  // innermost reduced (block per output) and outer reduced (thread per output)
      PlanBuilder b;
      Shape shape = rows ? Shape{4, 600} : Shape{600, 4};
      Tensor in_t = x;
      if (!rows) {
        in_t.shape = shape;
        for (int r = 0; r < 4; ++r)
          for (int j = 0; j < 600; ++j) in_t.v[static_cast<size_t>(j * 4 + r)] = x.v[static_cast<size_t>(r * 600 + j)];
      }
      int32_t in = b.input(0, dt, shape), out = b.output(0, dt, {4});
      b.launch("reduce", "min", {in}, {out}, {rows ? 1 : 0});
      auto r = run(b.p, {in_t}, {{dt, {4}}});
      ASSERT_EQ(r.size(), 1u);
      expect_near(r[0], want, 0, 0, std::string("reduce_min ") + plan::gpu_dtype_name(dt));
    }
  }
}

// softmax / log_softmax along `axis` in float64.
std::vector<double> softmax_ref(const Tensor& x, size_t axis, bool log) {
  int64_t outer = 1, n = x.shape[axis], inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  std::vector<double> out(x.v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * n + j) * inner + i); };
      double m = -INFINITY;
      bool nan = false;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, x.v[at(j)]), nan |= std::isnan(x.v[at(j)]);
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(x.v[at(j)] - m);
      for (int64_t j = 0; j < n; ++j) {
        double d = x.v[at(j)] - m;
        out[at(j)] = nan || (std::isinf(m) && m < 0) ? kNaN : log ? d - std::log(sum) : std::exp(d) / sum;
      }
    }
  return out;
}

TEST(Kernels, SoftmaxEveryAxisDtypeAndMaskedRows) {
  REQUIRE_GPU();
  // Last-axis rows of every launch shape (softmax.cu): warp per row with
  // scalar (5, 7, 33, 130) and 16-byte loads (512); block per row with the
  // row in registers (1000, 3000, 4097 for f32; 12000 with 1024 threads);
  // online two-read rows (4097 for f64, 12000 for bf16, 20000 vector, 20001
  // scalar); other axes take the column kernel.
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16})
    for (const Shape& shape : {Shape{3, 5, 7}, Shape{64, 1000}, Shape{2, 33}, Shape{5}, Shape{3, 3000}, Shape{4, 130}, Shape{3, 512},
                               Shape{2, 4097}, Shape{2, 12000}, Shape{2, 20000}, Shape{2, 20001}})
      for (size_t axis = 0; axis < shape.size(); ++axis)
        for (const char* op : {"softmax", "log_softmax"}) {
          Tensor x = random(dt, shape, -20, 20);
          if (numel(shape) > 20) {
            x.v[3] = -INFINITY, x.v[7] = -INFINITY;  // masked entries
            x.v[11] = as_dtype(1e4, dt);             // a large logit
          }
          std::vector<double> want = softmax_ref(x, axis, std::string(op) == "log_softmax");
          PlanBuilder b;
          int32_t in = b.input(0, dt, shape), out = b.output(0, dt, shape);
          b.launch("softmax", op, {in}, {out}, {static_cast<int64_t>(axis) - static_cast<int64_t>(shape.size())});  // negative axis
          auto r = run(b.p, {x}, {{dt, shape}});
          ASSERT_EQ(r.size(), 1u);
          double tol = dt == GpuDType::F64 ? 1e-13 : dt == GpuDType::F32 ? 2e-6 : 1e-2;
          expect_near(r[0], want, tol, tol, std::string(op) + " " + plan::gpu_dtype_name(dt) + " axis " + std::to_string(axis) + " of " +
                                                std::to_string(shape.back()));
        }
}

// Rows with special values, for each last-axis launch shape: a row of -inf
// gives NaN (as PyTorch), a NaN makes its row NaN, a row whose first half is
// -inf (threads of the online kernel that see only -inf) and a row of +inf
// and finite values; the other rows are unaffected.
TEST(Kernels, SoftmaxSpecialRowsEveryLaunchShape) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64})
    for (int64_t n : {40, 1000, 3000, 12000, 20000, 20001})
      for (const char* op : {"softmax", "log_softmax"}) {
        Shape shape = {5, n};
        Tensor x = random(dt, shape);
        auto at = [&](int64_t row, int64_t j) -> double& { return x.v[static_cast<size_t>(row * n + j)]; };
        for (int64_t j = 0; j < n; ++j) at(1, j) = -INFINITY;
        at(2, n / 3) = NAN;
        for (int64_t j = 0; j < n / 2; ++j) at(3, j) = -INFINITY;
        at(4, n - 1) = INFINITY;
        std::vector<double> want = softmax_ref(x, 1, std::string(op) == "log_softmax");  // the +inf row: exp(inf - inf) makes it NaN
        PlanBuilder b;
        int32_t in = b.input(0, dt, shape), out = b.output(0, dt, shape);
        b.launch("softmax", op, {in}, {out}, {1});
        auto r = run(b.p, {x}, {{dt, shape}});
        ASSERT_EQ(r.size(), 1u);
        expect_near(r[0], want, 2e-6, 2e-6, std::string(op) + " special rows of " + std::to_string(n));
      }
}

TEST(Kernels, RepeatInterleaveEveryAxis) {
  REQUIRE_GPU();
  Shape shape = {2, 3, 4};
  for (GpuDType dt : {GpuDType::F32, GpuDType::I64, GpuDType::Bool, GpuDType::BF16})
    for (size_t axis = 0; axis < 3; ++axis)
      for (int64_t reps : {1, 3}) {
        Tensor x = random(dt, shape);
        Shape so = shape;
        so[axis] *= reps;
        std::vector<double> want;
        for (int64_t i = 0; i < numel(so); ++i) {
          int64_t c[3], q = i;
          for (int d = 2; d >= 0; --d) c[d] = q % so[static_cast<size_t>(d)], q /= so[static_cast<size_t>(d)];
          c[axis] /= reps;
          want.push_back(x.v[static_cast<size_t>((c[0] * 3 + c[1]) * 4 + c[2])]);
        }
        PlanBuilder b;
        int32_t in = b.input(0, dt, shape), out = b.output(0, dt, so);
        b.launch("repeat", "", {in}, {out}, {static_cast<int64_t>(axis), reps});
        auto r = run(b.p, {x}, {{dt, so}});
        ASSERT_EQ(r.size(), 1u);
        expect_near(r[0], want, 0, 0, "repeat_interleave axis " + std::to_string(axis));
      }
}

TEST(Kernels, GatherAndItsBoundsCheck) {
  REQUIRE_GPU();
  for (GpuDType it : {GpuDType::I32, GpuDType::I64}) {
    Tensor table = random(GpuDType::F32, {10, 3, 2});
    Tensor idx{it, {2, 5}, {0, 9, 3, 3, 1, 7, 2, 8, 0, 5}};
    Shape so = {2, 5, 3, 2};
    std::vector<double> want;
    for (double v : idx.v)
      for (int j = 0; j < 6; ++j) want.push_back(table.v[static_cast<size_t>(v * 6 + j)]);
    for (int bad = 0; bad < 3; ++bad) {  // in range, too large, negative
      Tensor ix = idx;
      if (bad == 1) ix.v[7] = 12;
      if (bad == 2) ix.v[7] = -1, ix.v[9] = 40;
      PlanBuilder b;
      int32_t pt = b.input(0, GpuDType::F32, {10, 3, 2}), pi = b.input(1, it, {2, 5}), out = b.output(0, GpuDType::F32, so);
      int32_t rec = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::I64, {1}, 0);
      b.launch("gather", "", {pt, pi}, {out, rec});
      std::string msg;
      auto r = run(b.p, {table, ix}, {{GpuDType::F32, so}}, RunOptions{0, bad ? 11 : 0, &msg});
      ASSERT_EQ(r.size(), 1u);
      if (!bad) {
        expect_near(r[0], want, 0, 0, "gather");
        continue;
      }
      // the first bad position (flat 7 = [1, 2]) is reported with its value
      EXPECT_NE(msg.find(bad == 1 ? "index 12 is out of range [0, 10)" : "index -1 is out of range [0, 10)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("at indices[1, 2]"), std::string::npos) << msg;
      for (int j = 0; j < 6; ++j) EXPECT_EQ(r[0].v[static_cast<size_t>(7 * 6 + j)], 0.0) << "a bad index is not read through";
    }
  }
}

TEST(Kernels, TakeAlongAxisAndItsBoundsCheck) {
  REQUIRE_GPU();
  Tensor x = random(GpuDType::F64, {2, 7, 3});
  Tensor idx{GpuDType::I64, {2, 3}, {0, 6, 3, 5, 1, 2}};
  std::vector<double> want;
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 3; ++i) want.push_back(x.v[static_cast<size_t>((o * 7 + static_cast<int>(idx.v[static_cast<size_t>(o * 3 + i)])) * 3 + i)]);
  for (bool bad : {false, true}) {
    Tensor ix = idx;
    if (bad) ix.v[4] = 7;
    PlanBuilder b;
    int32_t px = b.input(0, GpuDType::F64, {2, 7, 3}), pi = b.input(1, GpuDType::I64, {2, 3}), out = b.output(0, GpuDType::F64, {2, 3});
    int32_t rec = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::I64, {1}, 0);
    b.launch("take_along", "", {px, pi}, {out, rec}, {1});
    std::string msg;
    auto r = run(b.p, {x, ix}, {{GpuDType::F64, {2, 3}}}, RunOptions{0, bad ? 11 : 0, &msg});
    ASSERT_EQ(r.size(), 1u);
    if (bad) {
      EXPECT_NE(msg.find("index 7 is out of range [0, 7) at indices[1, 1]"), std::string::npos) << msg;
    } else {
      expect_near(r[0], want, 0, 0, "take_along");
    }
  }
}

// Matmul with NumPy broadcasting of batch dims, in float64 loops.
std::vector<double> matmul_bcast_ref(const Tensor& a, const Tensor& w, Shape& so) {
  size_t ra = a.shape.size(), rb = w.shape.size();
  int64_t M = a.shape[ra - 2], K = a.shape[ra - 1], N = w.shape[rb - 1];
  Shape ba(a.shape.begin(), a.shape.end() - 2), bb(w.shape.begin(), w.shape.end() - 2), bo(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < bo.size(); ++i) {
    int64_t x = i < ba.size() ? ba[ba.size() - 1 - i] : 1, y = i < bb.size() ? bb[bb.size() - 1 - i] : 1;
    bo[bo.size() - 1 - i] = std::max(x, y);
  }
  so = bo;
  so.push_back(M);
  so.push_back(N);
  std::vector<double> out;
  for (int64_t bi = 0; bi < numel(bo); ++bi) {
    int64_t ia = bcast_index(ba, bo, bi), ib = bcast_index(bb, bo, bi);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += a.v[static_cast<size_t>(ia * M * K + i * K + k)] * w.v[static_cast<size_t>(ib * K * N + k * N + j)];
        out.push_back(s);
      }
  }
  return out;
}

TEST(Kernels, MatmulBroadcastsBatchDimensionsAndTf32) {
  REQUIRE_GPU();
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{7, 33}, {3, 33, 5}},            // (M K) x (B K N)
      {{2, 1, 7, 33}, {4, 33, 5}},      // (B 1 M K) x (H K N): two GEMM pieces of 4
      {{1, 7, 33}, {3, 33, 5}},         // literal-1 batch on the left
      {{3, 7, 33}, {1, 33, 5}},         // literal-1 batch on the right: the shared-weight GEMM
      {{2, 3, 7, 33}, {2, 1, 33, 5}},   // broadcast inside
      {{2, 4, 16, 8}, {2, 4, 8, 16}},   // rank-4 attention shapes
  };
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::I32})
    for (const auto& [sa, sb] : cases) {
      Tensor a = random(dt, sa, -1, 1), w = random(dt, sb, -1, 1);
      if (is_int(dt)) {
        for (double& v : a.v) v = std::fmod(v, 5);
        for (double& v : w.v) v = std::fmod(v, 5);
      }
      Shape so;
      std::vector<double> want = matmul_bcast_ref(a, w, so);
      for (const char* op : {"", "tf32"}) {
        if (*op && dt != GpuDType::F32) continue;
        PlanBuilder b;
        int32_t pa = b.input(0, dt, sa), pb = b.input(1, dt, sb), out = b.output(0, dt, so);
        b.launch("matmul", op, {pa, pb}, {out});
        auto r = run(b.p, {a, w}, {{dt, so}});
        ASSERT_EQ(r.size(), 1u);
        std::string what = std::string("matmul ") + op + " " + plan::gpu_dtype_name(dt) + " " + std::to_string(sa.size()) + "-D x " +
                           std::to_string(sb.size()) + "-D";
        if (is_int(dt)) {
          expect_near(r[0], want, 0, 0, what);
          continue;
        }
        double se = 0, sr = 0;
        for (size_t i = 0; i < want.size(); ++i) se += (r[0].v[i] - want[i]) * (r[0].v[i] - want[i]), sr += want[i] * want[i];
        // TF32 keeps 10 mantissa bits of the inputs: ~1e-3 relative.
        double gate = dt == GpuDType::F64 ? 1e-13 : *op ? 5e-3 : 1e-5;
        EXPECT_LT(std::sqrt(se / std::max(sr, 1e-300)), gate) << what;
      }
    }
}

// Swaps the last two dims of a dense tensor (host side, for stored layouts).
Tensor swap_last(const Tensor& t) {
  size_t r = t.shape.size();
  int64_t R = t.shape[r - 2], C = t.shape[r - 1], batch = numel(t.shape) / (R * C);
  Tensor o{t.dt, t.shape, std::vector<double>(t.v.size())};
  std::swap(o.shape[r - 2], o.shape[r - 1]);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) o.v[static_cast<size_t>(b * R * C + j * R + i)] = t.v[static_cast<size_t>(b * R * C + i * C + j)];
  return o;
}

TEST(Kernels, MatmulTransposedOperandsAndFusedResidual) {
  REQUIRE_GPU();
  // ints = {transA, transB}: the operand is stored with its last two dims
  // swapped; flag + a third input of the output's shape: out = A B + C.
  const std::vector<std::pair<Shape, Shape>> cases = {{{7, 33}, {33, 5}}, {{2, 7, 33}, {2, 33, 5}}, {{2, 4, 16, 8}, {2, 4, 8, 16}},
                                                      {{3, 7, 33}, {33, 5}}, {{7, 33}, {3, 33, 5}}};
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64})
    for (const auto& [sa, sb] : cases)
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (bool acc : {false, true}) {
            Tensor a = random(dt, sa, -1, 1), w = random(dt, sb, -1, 1);
            Shape so;
            std::vector<double> want = matmul_bcast_ref(a, w, so);
            Tensor c = random(dt, so, -1, 1);
            if (acc)
              for (size_t i = 0; i < want.size(); ++i) want[i] = 0.5 * want[i] + c.v[i];
            Tensor as = ta ? swap_last(a) : a, ws = tb ? swap_last(w) : w;
            PlanBuilder b;
            int32_t pa = b.input(0, dt, as.shape), pb = b.input(1, dt, ws.shape);
            std::vector<int32_t> ins = {pa, pb};
            std::vector<Tensor> vals = {as, ws};
            if (acc) ins.push_back(b.input(2, dt, so)), vals.push_back(c);
            int32_t out = b.output(0, dt, so);
            // alpha 0.5 on the residual cases (`scalar`; 0 means 1)
            b.launch("matmul", "", ins, {out}, {ta, tb}, acc ? 0.5 : 0, acc);
            auto r = run(b.p, vals, {{dt, so}});
            ASSERT_EQ(r.size(), 1u);
            double se = 0, sr = 0;
            for (size_t i = 0; i < want.size(); ++i) se += (r[0].v[i] - want[i]) * (r[0].v[i] - want[i]), sr += want[i] * want[i];
            EXPECT_LT(std::sqrt(se / std::max(sr, 1e-300)), dt == GpuDType::F64 ? 1e-13 : 1e-5)
                << "matmul " << plan::gpu_dtype_name(dt) << " " << sa.size() << "-D x " << sb.size() << "-D transA " << ta << " transB " << tb
                << " residual " << acc;
          }
}

TEST(Kernels, PermuteWithAContiguousInnerDimMovesWideElements) {
  REQUIRE_GPU();
  // [B, S, H, Dh] -> [B, H, S, Dh] (attention's head split): the innermost
  // dim is contiguous on both sides, so the copy moves 16-byte elements
  // when the pointers allow it; a misaligned input falls back to narrower ones.
  for (GpuDType dt : {GpuDType::F32, GpuDType::BF16, GpuDType::F64, GpuDType::Bool})
    for (int64_t dh : {8, 6, 3})
      for (int64_t misalign : {int64_t{0}, plan::gpu_dtype_size(dt)}) {
        Shape in_shape = {2, 5, 3, dh}, out_shape = {2, 3, 5, dh};
        Tensor x = random(dt, in_shape);
        std::vector<double> want;
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t h = 0; h < 3; ++h)
            for (int64_t t = 0; t < 5; ++t)
              for (int64_t d = 0; d < dh; ++d) want.push_back(x.v[static_cast<size_t>(((b * 5 + t) * 3 + h) * dh + d)]);
        PlanBuilder b;
        int32_t in = b.input(0, dt, in_shape), out = b.output(0, dt, out_shape);
        b.launch("transpose", "", {in}, {out}, {0, 2, 1, 3});
        auto r = run(b.p, {x}, {{dt, out_shape}}, RunOptions{misalign});
        ASSERT_EQ(r.size(), 1u);
        expect_near(r[0], want, 0, 0, std::string("permute ") + plan::gpu_dtype_name(dt) + " Dh " + std::to_string(dh) + (misalign ? " misaligned" : ""));
      }
}

}  // namespace
}  // namespace shapeml::cuda::test
