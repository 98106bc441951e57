#include "lower/gpu/generate_kernels.h"

#include <cinttypes>
#include <cstdio>

#include "lower/gpu/nvrtc_compiler.h"
#include "plan/fused_program.h"
#include "plan/geometry.h"
#include "plan/limits.h"

namespace shapeml::lower::gpu {
namespace {

namespace F = plan::fused;
using plan::GpuDType;
using plan::Shape;

// The headers a generated kernel includes, as the plugin's kernels are built
// from them (CMake embeds their text: kernel_headers.inc).
const std::vector<std::pair<std::string, std::string>>& kernel_headers() {
  static const std::vector<std::pair<std::string, std::string>> h = {
#include "kernel_headers.inc"
  };
  return h;
}

const char* ctype(GpuDType d) {
  switch (d) {
    case GpuDType::F32: return "float";
    case GpuDType::F64: return "double";
    case GpuDType::I32: return "int32_t";
    case GpuDType::I64: return "int64_t";
    case GpuDType::Bool: return "uint8_t";
    case GpuDType::BF16: break;  // never a node type (fused::check)
  }
  return "void";
}

// An immediate of dtype d, written as its exact bits (what the interpreter
// gets from gpu_scalar_bits).
std::string literal(double v, GpuDType d) {
  uint64_t b = plan::gpu_scalar_bits(v, d);
  char buf[64];
  switch (d) {
    case GpuDType::F32: std::snprintf(buf, sizeof buf, "__int_as_float(0x%08" PRIx32 ")", static_cast<uint32_t>(b)); break;
    case GpuDType::F64: std::snprintf(buf, sizeof buf, "__longlong_as_double(0x%016" PRIx64 "LL)", b); break;
    case GpuDType::I32: std::snprintf(buf, sizeof buf, "static_cast<int32_t>(0x%08" PRIx32 "u)", static_cast<uint32_t>(b)); break;
    case GpuDType::I64: std::snprintf(buf, sizeof buf, "static_cast<int64_t>(0x%016" PRIx64 "ull)", b); break;
    default: std::snprintf(buf, sizeof buf, "static_cast<uint8_t>(%" PRIu64 ")", b); break;
  }
  return buf;
}

}  // namespace

std::string fused_kernel_source(const plan::GpuPlan& p, const plan::GpuLaunch& l, const std::string& name) {
  std::vector<F::Node> nodes;
  F::decode(l.ints, nodes);
  const plan::GpuSlot& out = p.slots[static_cast<size_t>(l.outputs[0])];
  // The operands as the plugin's interpreter indexes them, coalesced.
  std::vector<Shape> shapes;
  for (int32_t s : l.inputs) shapes.push_back(p.slots[static_cast<size_t>(s)].shape);
  F::Operands ops;
  F::operands(nodes, shapes, out.shape, ops);  // a verified launch: every input broadcasts
  const std::vector<size_t>& iota_operand = ops.iota_operand;
  Shape sh;
  std::vector<Shape> cst;
  plan::coalesce_dims(out.shape, ops.strides, sh, cst);
  const int64_t n = plan::numel(out.shape);
  // 32-bit index math when every offset fits (as the interpreter chooses).
  const bool narrow = n < (int64_t{1} << 31);
  const std::string I = narrow ? "uint32_t" : "uint64_t";
  const std::string suffix = narrow ? "u" : "ull";
  const Shape dense = plan::dense_strides(sh);

  std::string s;
  s += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(";
  for (size_t i = 0; i < l.inputs.size(); ++i) s += "const void* in" + std::to_string(i) + "_, ";
  s += "void* out_) {\n";
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    const char* t = ctype(p.slots[static_cast<size_t>(l.inputs[i])].dtype);
    s += "  const " + std::string(t) + "* in" + std::to_string(i) + " = static_cast<const " + t + "*>(in" + std::to_string(i) + "_);\n";
  }
  s += "  " + std::string(ctype(out.dtype)) + "* out = static_cast<" + ctype(out.dtype) + "*>(out_);\n";
  s += "  const " + I + " n = " + std::to_string(n) + suffix + ";\n";
  s += "  const " + I + " step = static_cast<" + I + ">(gridDim.x) * blockDim.x;\n";
  s += "  for (" + I + " i = static_cast<" + I + ">(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {\n";
  // Coordinates in the coalesced space, innermost first; the outermost needs
  // no division. Only computed when some operand is not dense.
  bool need_coords = false;
  for (const Shape& st : cst) need_coords |= st != dense;
  const size_t rank = sh.size();
  if (need_coords) {
    s += "    " + I + " rem = i;\n";
    for (size_t d = rank; d-- > 0;) {
      if (d == 0) {
        s += "    const " + I + " c0 = rem;\n";
      } else {
        std::string len = std::to_string(sh[d]) + suffix;
        s += "    const " + I + " c" + std::to_string(d) + " = rem % " + len + ";\n";
        s += "    rem /= " + len + ";\n";
      }
    }
  }
  auto offset = [&](size_t op) {
    const Shape& st = cst[op];
    if (st == dense) return std::string("i");
    std::string e;
    for (size_t d = 0; d < rank; ++d) {
      if (st[d] == 0) continue;
      e += (e.empty() ? "" : " + ") + std::string("c") + std::to_string(d) + (st[d] == 1 ? "" : " * " + std::to_string(st[d]) + suffix);
    }
    return e.empty() ? std::string("0") : e;
  };
  for (size_t k = 0; k < nodes.size(); ++k) {
    const F::Node& nd = nodes[k];
    const std::string r = "r" + std::to_string(k), t = ctype(nd.dtype);
    auto ref = [](int64_t i) { return "r" + std::to_string(i); };
    std::string v;
    switch (nd.kind) {
      case F::kLoad: v = "in" + std::to_string(nd.a) + "[" + offset(static_cast<size_t>(nd.a)) + "]"; break;
      case F::kConst: v = literal(F::bits_double(nd.a), nd.dtype); break;
      case F::kIota: v = "cast_value<int64_t, " + t + ">(static_cast<int64_t>(" + offset(iota_operand[k]) + "))"; break;
      case F::kUnary:
        v = nd.dtype == GpuDType::Bool ? "static_cast<uint8_t>(" + ref(nd.a) + " ^ 1)" : "unary_op<" + t + ">(" + std::to_string(nd.op) + ", " + ref(nd.a) + ")";
        break;
      case F::kBinary:
        if (nd.dtype == GpuDType::Bool) {
          v = "static_cast<uint8_t>(" + ref(nd.a) + (nd.op == F::kBinaryAnd ? " & " : " | ") + ref(nd.b) + ")";
        } else if ((nd.dtype == GpuDType::F32 || nd.dtype == GpuDType::F64) && nd.op >= 0 && nd.op <= 2) {
          // add, sub, mul with the rounding spelled out (add.rn, ...): ptxas may
          // contract a plain mul.f32 and add.f32 into one fma across nodes,
          // which the unfused plan's stores never allow; .rn ones it never does.
          static const char* const f32[] = {"__fadd_rn", "__fsub_rn", "__fmul_rn"};
          static const char* const f64[] = {"__dadd_rn", "__dsub_rn", "__dmul_rn"};
          v = std::string(nd.dtype == GpuDType::F32 ? f32[nd.op] : f64[nd.op]) + "(" + ref(nd.a) + ", " + ref(nd.b) + ")";
        } else {
          v = "binary_op<" + t + ">(" + std::to_string(nd.op) + ", " + ref(nd.a) + ", " + ref(nd.b) + ")";
        }
        break;
      case F::kCompare:
        v = "compare_op<" + std::string(ctype(nodes[static_cast<size_t>(nd.a)].dtype)) + ">(" + std::to_string(nd.op) + ", " + ref(nd.a) + ", " +
            ref(nd.b) + ")";
        break;
      case F::kSelect: v = ref(nd.a) + " ? " + ref(nd.b) + " : " + ref(nd.c); break;
      case F::kCast: {
        GpuDType from = nodes[static_cast<size_t>(nd.a)].dtype;
        v = from == nd.dtype ? ref(nd.a) : "cast_value<" + std::string(ctype(from)) + ", " + t + ">(" + ref(nd.a) + ")";
        break;
      }
      default: break;
    }
    s += "    " + t + " " + r + " = " + v + ";\n";
    // The barrier: the unfused plan stores every value, so NVVM must not
    // contract or fold across nodes either (ptxas: the .rn ops above).
    if (nd.dtype == GpuDType::F32) s += "    asm(\"\" : \"+f\"(" + r + "));\n";
    if (nd.dtype == GpuDType::F64) s += "    asm(\"\" : \"+d\"(" + r + "));\n";
  }
  s += "    out[i] = r" + std::to_string(nodes.size() - 1) + ";\n  }\n}\n";
  return s;
}

namespace {
std::string kernel_name(size_t launch) { return "shapeml_fused_" + std::to_string(launch); }
}  // namespace

std::string generated_source(const plan::GpuPlan& p) {
  std::string source;
  for (size_t i = 0; i < p.launches.size(); ++i) {
    if (p.launches[i].kind != plan::LaunchKind::Fused) continue;
    if (source.empty())
      source =
          "// Generated by shapeml's compiler (lower/gpu/generate_kernels.cpp): one kernel per fused launch.\n"
          "#include \"cuda/executor/numerics.cuh\"\n"
          "using namespace shapeml::cuda::kern;\n";
    source += "\n// launch " + std::to_string(i) + "\n" + fused_kernel_source(p, p.launches[i], kernel_name(i));
  }
  return source;
}

int generate_fused_kernels(plan::GpuPlan& p) {
  std::vector<size_t> fused;
  for (size_t i = 0; i < p.launches.size(); ++i)
    if (p.launches[i].kind == plan::LaunchKind::Fused) fused.push_back(i);
  if (fused.empty()) return 0;
  CompiledCode code;
  std::string why = nvrtc_compile(generated_source(p), kernel_headers(), kGeneratedArch, code);
  if (!why.empty()) {
    // One line of plan text: the log's first lines, joined.
    for (char& c : why)
      if (c == '\n' || c == '\r') c = ' ';
    if (why.size() > 300) why = why.substr(0, 300) + "...";
    for (size_t i : fused) p.launches[i].why += "; interpreted: " + why;
    return 0;
  }
  p.code_arch = kGeneratedArch;
  p.code_cubin = std::move(code.cubin);
  p.code_ptx = std::move(code.ptx);
  for (size_t i : fused) {
    p.launches[i].op = kernel_name(i);
    p.launches[i].why += "; generated kernel";
  }
  return static_cast<int>(fused.size());
}

}  // namespace shapeml::lower::gpu
