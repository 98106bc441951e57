#include "lower/cpu/scalar_math.h"

#include <cmath>
#include <cstdint>

#include "lower/cpu/mlir_text.h"

namespace shapeml::lower::cpu {

using syntax::OpKind;
using types::DType;

std::string Region::op(const std::string& rhs, const std::string& hint) {
  std::string n = e.fresh(hint);
  text += "      " + n + " = " + rhs + "\n";
  return n;
}


// bf16 bits (i16) -> f32: the bits are the high half of the f32.
std::string bf16_to_f32(Region& r, const std::string& x) {
  std::string w = r.op("arith.extui " + x + " : i16 to i32", "w");
  std::string s = r.op("arith.shli " + w + ", " + r.cst("16 : i32") + " : i32", "w");
  return r.op("arith.bitcast " + s + " : i32 to f32", "x");
}
// f32 -> bf16 bits, rounding to nearest even; NaN stays a quiet NaN.
std::string f32_to_bf16(Region& r, const std::string& x) {
  std::string u = r.op("arith.bitcast " + x + " : f32 to i32", "u");
  std::string sh = r.op("arith.shrui " + u + ", " + r.cst("16 : i32") + " : i32", "u");
  std::string lsb = r.op("arith.andi " + sh + ", " + r.cst("1 : i32") + " : i32", "u");
  std::string bias = r.op("arith.addi " + lsb + ", " + r.cst("32767 : i32") + " : i32", "u");
  std::string sum = r.op("arith.addi " + u + ", " + bias + " : i32", "u");
  std::string hi = r.op("arith.shrui " + sum + ", " + r.cst("16 : i32") + " : i32", "u");
  std::string h16 = r.op("arith.trunci " + hi + " : i32 to i16", "h");
  std::string nan = r.op("arith.cmpf uno, " + x + ", " + x + " : f32", "nan");
  return r.op("arith.select " + nan + ", " + r.cst("32704 : i16") + ", " + h16 + " : i16", "bf");
}

std::string load_compute(Region& r, const std::string& x, DType d) {
  if (d == DType::BF16) return bf16_to_f32(r, x);
  if (d == DType::Bool) return r.op("arith.cmpi ne, " + x + ", " + r.cst("0 : i8") + " : i8", "b");
  return x;
}

std::string store_compute(Region& r, const std::string& v, DType d) {
  if (d == DType::BF16) return f32_to_bf16(r, v);
  if (d == DType::Bool) return r.op("arith.extui " + v + " : i1 to i8", "byte");
  return v;
}

static std::string fty(DType cd) { return elem_ty(cd); }

std::string fconst(Region& r, double v, DType cd) { return r.cst(float_attr(v, cd) + " : " + fty(cd)); }

// ---- transcendental functions near the subnormal range ----
// docs/design/subnormals.md. f32 math.exp/math.log become MLIR's polynomial
// approximations (pipeline.cpp), which clamp at FLT_MIN: exp flushes results
// below 2^-126 to zero and log treats a subnormal input as FLT_MIN. The
// helpers below rescale by exact amounts around them; f64 goes to libm.

// exp(a) = small ? scaled * exp(-40) : scaled, with `scaled` computed by one
// math.exp whose result is normal. For a < T (T = -87 for f32, -700 for f64,
// where exp(T) is still normal) it evaluates exp(a + 40): a + 40 is exact
// there (a and 40 are multiples of ulp(a), and |a + 40| < |a|), so the only
// rounding is the final product by the constant exp(-40) (itself within
// half an ulp), one rounding into the subnormal range as in libm.
namespace {
struct ExpParts {
  std::string scaled, small;
};
}  // namespace
static ExpParts exp_parts(Region& r, const std::string& a, DType cd) {
  std::string t = fty(cd);
  ExpParts p;
  p.small = r.op("arith.cmpf olt, " + a + ", " + fconst(r, cd == DType::F64 ? -700.0 : -87.0, cd) + " : " + t, "small");
  std::string shifted = r.op("arith.addf " + a + ", " + fconst(r, 40.0, cd) + " : " + t);
  std::string arg = r.op("arith.select " + p.small + ", " + shifted + ", " + a + " : " + t);
  p.scaled = r.op("math.exp " + arg + " : " + t);
  return p;
}
static std::string exp_scale(Region& r, DType cd) { return fconst(r, 4.24835425529158899533e-18, cd); }  // exp(-40)
static std::string exp_value(Region& r, const ExpParts& p, DType cd) {
  std::string t = fty(cd);
  std::string tiny = r.op("arith.mulf " + p.scaled + ", " + exp_scale(r, cd) + " : " + t);
  return r.op("arith.select " + p.small + ", " + tiny + ", " + p.scaled + " : " + t);
}

std::string exp_op(Region& r, const std::string& x, DType cd) {
  if (cd == DType::F64) return r.op("math.exp " + x + " : f64");  // libm: subnormal results already
  return exp_value(r, exp_parts(r, x, cd), cd);
}

// log(x) = log(x * 2^23) - 23 ln 2 for x < FLT_MIN (the scaling is exact
// for subnormals; it leaves 0, negatives and NaN to math.log's own cases).
std::string log_op(Region& r, const std::string& x, DType cd) {
  std::string t = fty(cd);
  if (cd == DType::F64) return r.op("math.log " + x + " : f64");  // libm
  std::string sub = r.op("arith.cmpf olt, " + x + ", " + fconst(r, 1.17549435082228750797e-38, cd) + " : " + t, "sub");
  std::string big = r.op("arith.mulf " + x + ", " + fconst(r, 8388608.0, cd) + " : " + t);
  std::string arg = r.op("arith.select " + sub + ", " + big + ", " + x + " : " + t);
  std::string l = r.op("math.log " + arg + " : " + t);
  std::string corr = r.op("arith.select " + sub + ", " + fconst(r, 15.9423851528787421, cd) + ", " + fconst(r, 0.0, cd) + " : " + t);
  return r.op("arith.subf " + l + ", " + corr + " : " + t);
}

// sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, with
// e = exp(-|x|) <= 1: no overflow, and subnormal results for x < -87 (f32)
// instead of 1/(1 + inf) = 0. silu(x) = x * sigmoid(x), with the x < -87
// case computed as (x * scaled) * exp(-40) so that it is rounded once.
static std::string sigmoid_or_silu(Region& r, const std::string& x, DType cd, bool silu) {
  std::string t = fty(cd);
  std::string ax = r.op("math.absf " + x + " : " + t);
  std::string na = r.op("arith.negf " + ax + " : " + t);
  ExpParts p = exp_parts(r, na, cd);
  std::string e = exp_value(r, p, cd);
  std::string one = fconst(r, 1.0, cd);
  std::string d = r.op("arith.addf " + one + ", " + e + " : " + t);
  std::string inv = r.op("arith.divf " + one + ", " + d + " : " + t);
  std::string nonneg = r.op("arith.cmpf oge, " + x + ", " + fconst(r, 0.0, cd) + " : " + t, "nonneg");
  if (!silu) {
    std::string neg = r.op("arith.mulf " + e + ", " + inv + " : " + t);
    return r.op("arith.select " + nonneg + ", " + inv + ", " + neg + " : " + t);
  }
  std::string pos = r.op("arith.mulf " + x + ", " + inv + " : " + t);
  std::string xe = r.op("arith.mulf " + x + ", " + e + " : " + t);
  std::string neg = r.op("arith.mulf " + xe + ", " + inv + " : " + t);
  std::string xs = r.op("arith.mulf " + x + ", " + p.scaled + " : " + t);
  std::string tiny = r.op("arith.mulf " + xs + ", " + exp_scale(r, cd) + " : " + t);
  std::string negv = r.op("arith.select " + p.small + ", " + tiny + ", " + neg + " : " + t);
  return r.op("arith.select " + nonneg + ", " + pos + ", " + negv + " : " + t);
}

// sin and cos: f64 is the C library's (glibc: < 1 ulp, exact argument
// reduction); f32 is computed in f64 by the same functions and rounded
// once, so it is within 0.5 ulp plus one f64 ulp over the whole f32 range.
// MLIR's f32 polynomial approximation (pipeline.cpp) is not used: its
// argument reduction x - k*pi/2 is done in f32, so the absolute error
// grows with |x| (measured: 4e-7 below 10, 7e-4 at 1e3..1e4, 6e-2 at
// 1e5..1e6) and near the zeros of sin it is thousands of ulp even for
// small x, where PyTorch's sinf/cosf are within 1 ulp.
static std::string sin_or_cos(Region& r, bool sin, const std::string& x, DType cd) {
  const char* fn = sin ? "math.sin " : "math.cos ";
  if (cd == DType::F64) return r.op(fn + x + " : f64");
  std::string w = r.op("arith.extf " + x + " : f32 to f64", "w");
  std::string y = r.op(fn + w + " : f64");
  return r.op("arith.truncf " + y + " : f64 to f32");
}

std::string unary(Region& r, OpKind op, const std::string& x, DType cd) {
  std::string t = elem_ty(cd);
  if (is_float(cd)) {
    switch (op) {
      case OpKind::Neg: return r.op("arith.negf " + x + " : " + t);
      case OpKind::Abs: return r.op("math.absf " + x + " : " + t);
      case OpKind::Exp: return exp_op(r, x, cd);
      case OpKind::Log: return log_op(r, x, cd);
      case OpKind::Sqrt: return r.op("math.sqrt " + x + " : " + t);
      case OpKind::Rsqrt: return r.op("math.rsqrt " + x + " : " + t);
      case OpKind::Tanh: return r.op("math.tanh " + x + " : " + t);
      case OpKind::Sigmoid: return sigmoid_or_silu(r, x, cd, false);
      case OpKind::Relu: return r.op("arith.maximumf " + x + ", " + fconst(r, 0.0, cd) + " : " + t);
      case OpKind::Gelu: {  // 0.5 * x * (1 + erf(x / sqrt 2))
        std::string s = r.op("arith.mulf " + x + ", " + fconst(r, 0.70710678118654752440, cd) + " : " + t);
        std::string e = r.op("math.erf " + s + " : " + t);
        std::string p = r.op("arith.addf " + e + ", " + fconst(r, 1.0, cd) + " : " + t);
        std::string h = r.op("arith.mulf " + x + ", " + fconst(r, 0.5, cd) + " : " + t);
        return r.op("arith.mulf " + h + ", " + p + " : " + t);
      }
      case OpKind::Silu: return sigmoid_or_silu(r, x, cd, true);
      case OpKind::Sin:
      case OpKind::Cos: return sin_or_cos(r, op == OpKind::Sin, x, cd);
      case OpKind::Erf: return r.op("math.erf " + x + " : " + t);
      default: break;
    }
  } else if (cd == DType::Bool) {
    if (op == OpKind::Not) return r.op("arith.xori " + x + ", " + r.cst("true") + " : i1", "not");
  } else if (is_int(cd)) {
    std::string z = r.cst("0 : " + t);
    switch (op) {
      case OpKind::Neg: return r.op("arith.subi " + z + ", " + x + " : " + t);
      case OpKind::Abs: return r.op("math.absi " + x + " : " + t);
      case OpKind::Relu: return r.op("arith.maxsi " + x + ", " + z + " : " + t);
      default: break;
    }
  }
  fail("`" + std::string(syntax::op_name(op)) + "` is not defined on " + elem_ty(cd));
}

std::string binary(Region& r, OpKind op, const std::string& a, const std::string& b, DType cd) {
  std::string t = elem_ty(cd);
  if (is_float(cd)) {
    switch (op) {
      case OpKind::Add: return r.op("arith.addf " + a + ", " + b + " : " + t);
      case OpKind::Sub: return r.op("arith.subf " + a + ", " + b + " : " + t);
      case OpKind::Mul: return r.op("arith.mulf " + a + ", " + b + " : " + t);
      case OpKind::Div: return r.op("arith.divf " + a + ", " + b + " : " + t);
      case OpKind::Max: return r.op("arith.maximumf " + a + ", " + b + " : " + t);
      case OpKind::Min: return r.op("arith.minimumf " + a + ", " + b + " : " + t);
      case OpKind::Pow: return r.op("math.powf " + a + ", " + b + " : " + t);
      default: break;
    }
  } else if (is_int(cd)) {
    switch (op) {
      case OpKind::Add: return r.op("arith.addi " + a + ", " + b + " : " + t);
      case OpKind::Sub: return r.op("arith.subi " + a + ", " + b + " : " + t);
      case OpKind::Mul: return r.op("arith.muli " + a + ", " + b + " : " + t);
      case OpKind::Max: return r.op("arith.maxsi " + a + ", " + b + " : " + t);
      case OpKind::Min: return r.op("arith.minsi " + a + ", " + b + " : " + t);
      case OpKind::Div:
      case OpKind::FloorDiv:
      case OpKind::Mod: {
        // Integer division made total: x / 0 = 0 (as NumPy's floor_divide
        // and remainder give), and MIN / -1 = MIN (wrapping), MIN mod -1
        // = 0, so no input traps (docs/design/cpu-codegen.md). The
        // divisor that would trap is replaced by 1.
        std::string z = r.cst("0 : " + t), one = r.cst("1 : " + t), m1 = r.cst("-1 : " + t);
        std::string mn = r.cst(std::to_string(int_bits(cd) == 32 ? int64_t{INT32_MIN} : INT64_MIN) + " : " + t);
        std::string bz = r.op("arith.cmpi eq, " + b + ", " + z + " : " + t, "bz");
        std::string am = r.op("arith.cmpi eq, " + a + ", " + mn + " : " + t, "am");
        std::string bm = r.op("arith.cmpi eq, " + b + ", " + m1 + " : " + t, "bm");
        std::string ov = r.op("arith.andi " + am + ", " + bm + " : i1", "ov");
        std::string bad = r.op("arith.ori " + bz + ", " + ov + " : i1", "bad");
        std::string sb = r.op("arith.select " + bad + ", " + one + ", " + b + " : " + t, "sb");
        std::string q;
        if (op == OpKind::Mod) {
          // The remainder with the divisor's sign (floor semantics, as
          // Python and NumPy): the truncating one, moved by the divisor
          // when it is nonzero and of the other sign.
          std::string rem = r.op("arith.remsi " + a + ", " + sb + " : " + t, "rem");
          std::string rn = r.op("arith.cmpi ne, " + rem + ", " + z + " : " + t, "rn");
          std::string rneg = r.op("arith.cmpi slt, " + rem + ", " + z + " : " + t, "rneg");
          std::string bneg = r.op("arith.cmpi slt, " + sb + ", " + z + " : " + t, "bneg");
          std::string diff = r.op("arith.xori " + rneg + ", " + bneg + " : i1", "diff");
          std::string fix = r.op("arith.andi " + rn + ", " + diff + " : i1", "fix");
          std::string moved = r.op("arith.addi " + rem + ", " + sb + " : " + t, "moved");
          q = r.op("arith.select " + fix + ", " + moved + ", " + rem + " : " + t, "m");
        } else {
          q = r.op(std::string(op == OpKind::FloorDiv ? "arith.floordivsi " : "arith.divsi ") + a + ", " + sb + " : " + t, "q");
        }
        return r.op("arith.select " + bz + ", " + z + ", " + q + " : " + t);
      }
      default: break;
    }
  } else if (cd == DType::Bool) {
    if (op == OpKind::And) return r.op("arith.andi " + a + ", " + b + " : i1", "and");
    if (op == OpKind::Or) return r.op("arith.ori " + a + ", " + b + " : i1", "or");
  }
  fail("`" + std::string(syntax::op_name(op)) + "` is not defined on " + elem_ty(cd));
}

std::string compare(Region& r, OpKind op, const std::string& a, const std::string& b, DType cd) {
  std::string t = elem_ty(cd);
  const char* fp = "";
  const char* ip = "";
  const char* bp = "";
  switch (op) {
    case OpKind::Eq: fp = "oeq"; ip = "eq"; bp = "eq"; break;
    case OpKind::Ne: fp = "une"; ip = "ne"; bp = "ne"; break;
    case OpKind::Lt: fp = "olt"; ip = "slt"; bp = "ult"; break;
    case OpKind::Le: fp = "ole"; ip = "sle"; bp = "ule"; break;
    case OpKind::Gt: fp = "ogt"; ip = "sgt"; bp = "ugt"; break;
    case OpKind::Ge: fp = "oge"; ip = "sge"; bp = "uge"; break;
    default: fail("internal: not a comparison");
  }
  if (is_float(cd)) return r.op(std::string("arith.cmpf ") + fp + ", " + a + ", " + b + " : " + t, "cmp");
  return r.op(std::string("arith.cmpi ") + (cd == DType::Bool ? bp : ip) + ", " + a + ", " + b + " : " + t, "cmp");
}

// x (compute type of `from`) -> compute type of `to`.
std::string cast(Region& r, const std::string& x, DType from, DType to) {
  DType cf = compute_dt(from), ct = compute_dt(to);
  std::string sf = elem_ty(cf), st = elem_ty(ct);
  if (to == DType::Bool) {
    if (cf == DType::Bool) return x;
    if (is_float(cf)) return r.op("arith.cmpf une, " + x + ", " + fconst(r, 0.0, cf) + " : " + sf, "nz");
    return r.op("arith.cmpi ne, " + x + ", " + r.cst("0 : " + sf) + " : " + sf, "nz");
  }
  if (cf == ct) return x;
  if (is_float(cf) && is_float(ct)) {
    if (cf == DType::F64) return r.op("arith.truncf " + x + " : f64 to f32", "cv");
    return r.op("arith.extf " + x + " : f32 to f64", "cv");
  }
  if (cf == DType::Bool) {
    if (is_float(ct)) return r.op("arith.uitofp " + x + " : i1 to " + st, "cv");
    return r.op("arith.extui " + x + " : i1 to " + st, "cv");
  }
  if (is_int(cf) && is_float(ct)) return r.op("arith.sitofp " + x + " : " + sf + " to " + st, "cv");
  if (is_int(cf) && is_int(ct)) {
    if (int_bits(cf) < int_bits(ct)) return r.op("arith.extsi " + x + " : " + sf + " to " + st, "cv");
    return r.op("arith.trunci " + x + " : " + sf + " to " + st, "cv");
  }
  // float -> int, saturating; NaN -> 0 (docs/design/cpu-codegen.md).
  int bits = int_bits(ct);
  double lim = std::ldexp(1.0, bits - 1);
  std::string v = r.op("arith.fptosi " + x + " : " + sf + " to " + st, "cv");
  std::string hi = r.op("arith.cmpf oge, " + x + ", " + fconst(r, lim, cf) + " : " + sf, "hi");
  std::string lo = r.op("arith.cmpf olt, " + x + ", " + fconst(r, -lim, cf) + " : " + sf, "lo");
  std::string nan = r.op("arith.cmpf uno, " + x + ", " + x + " : " + sf, "nan");
  std::string mx = r.cst(std::to_string(bits == 32 ? int64_t{INT32_MAX} : INT64_MAX) + " : " + st);
  std::string mn = r.cst(std::to_string(bits == 32 ? int64_t{INT32_MIN} : INT64_MIN) + " : " + st);
  std::string z = r.cst("0 : " + st);
  v = r.op("arith.select " + hi + ", " + mx + ", " + v + " : " + st, "cv");
  v = r.op("arith.select " + lo + ", " + mn + ", " + v + " : " + st, "cv");
  return r.op("arith.select " + nan + ", " + z + ", " + v + " : " + st, "cv");
}


}  // namespace shapeml::lower::cpu
