// Kernel generation (src/lower/gpu/generate_kernels.h,
// docs/design/gpu-generated-kernels.md) without a GPU: the code object's
// text form, the verifier's rules for launches that name a kernel, the
// generated source's specialization (constants as exact bits, dense operands
// indexed directly, broadcast ones through constant strides, a barrier after
// every float node) and, where NVRTC is installed, the compiled code object
// the plan ships. tests/cuda/fusion_test.cpp runs the kernels on a GPU
// against the unfused plans, byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "common/base64.h"
#include "driver/frontend.h"
#include "lower/gpu/generate_kernels.h"
#include "lower/gpu/nvrtc_compiler.h"
#include "lower/gpu/plan_gpu.h"
#include "plan/plan.h"
#include "plan/verify.h"
#include "concrete_block.h"

namespace {

using shapeml::plan::GpuPlan;
using shapeml::plan::LaunchKind;

// The small transformer block on the GPU, planned with the planner's own
// launches (pattern fusion off), elementwise fusion as `fuse` says, its
// kernels generated or interpreted as `generate` says.
GpuPlan block_plan(bool generate, bool fuse = true) {
  auto r = concrete_block("f32");
  EXPECT_TRUE(r.module);
  shapeml::lower::gpu::PlanOptions o;
  o.fuse_patterns = false;
  o.fuse = fuse;
  o.generate_kernels = generate;
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "block", {{"B", 4}, {"S", 128}, {"D", 256}, {"H", 4}, {"Dh", 64}, {"F", 704}}, err, o);
  EXPECT_TRUE(p) << err;
  return p ? *p : GpuPlan{};
}

bool nvrtc_here() { return shapeml::lower::gpu::nvrtc_available(); }

TEST(Base64, RoundTripsEveryByteAndLength) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= 7; ++n) {
    std::string in = all.substr(100, n), out;
    std::string text = shapeml::common::base64_encode(in);
    EXPECT_EQ(text.size() % 4, 0u);
    ASSERT_TRUE(shapeml::common::base64_decode(text, out)) << text;
    EXPECT_EQ(out, in);
  }
  std::string out;
  ASSERT_TRUE(shapeml::common::base64_decode(shapeml::common::base64_encode(all), out));
  EXPECT_EQ(out, all);
  EXPECT_EQ(shapeml::common::base64_encode("Man"), "TWFu");  // RFC 4648's alphabet
  EXPECT_EQ(shapeml::common::base64_encode("Ma"), "TWE=");
  for (const char* bad : {"TWF", "TW=u", "T!Fu", "TWFu=", "===="}) EXPECT_FALSE(shapeml::common::base64_decode(bad, out)) << bad;
}

// A fused launch that names a kernel needs a code object whose PTX defines
// it; the interpreter's fused launches (op "-") need none.
TEST(GeneratedKernels, VerifierRefusesAKernelTheCodeObjectLacks) {
  GpuPlan p = block_plan(false);
  size_t fused = p.launches.size();
  for (size_t i = 0; i < p.launches.size(); ++i)
    if (p.launches[i].kind == LaunchKind::Fused && fused == p.launches.size()) fused = i;
  ASSERT_LT(fused, p.launches.size()) << p.to_text();
  EXPECT_EQ(shapeml::plan::verify_message(p), "");
  p.launches[fused].op = "shapeml_fused_1";
  EXPECT_NE(shapeml::plan::verify_message(p).find("has no code object"), std::string::npos) << shapeml::plan::verify_message(p);
  p.code_arch = "sm_90";
  p.code_cubin = "\x7f" "ELF";
  p.code_ptx = ".visible .entry shapeml_fused_10(\n)";  // a longer name is not the one asked for
  EXPECT_NE(shapeml::plan::verify_message(p).find("does not define"), std::string::npos) << shapeml::plan::verify_message(p);
  p.code_ptx += "\n.visible .entry shapeml_fused_1(\n)";
  EXPECT_EQ(shapeml::plan::verify_message(p), "");
  p.launches[fused].op = "1bad";
  EXPECT_NE(shapeml::plan::verify_message(p).find("is not a kernel name"), std::string::npos);
  // The code line round-trips, binary bytes and all.
  p.launches[fused].op = "shapeml_fused_1";
  p.code_cubin = std::string("\x7f" "ELF\0\x01\xff ; x\n", 12);
  std::string err;
  auto back = GpuPlan::parse(p.to_text(), err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(back->code_arch, "sm_90");
  EXPECT_EQ(back->code_cubin, p.code_cubin);
  EXPECT_EQ(back->code_ptx, p.code_ptx);
  EXPECT_EQ(back->to_text(), p.to_text());
  std::string text = p.to_text();
  text.replace(text.find(" cubin ") + 7, 4, "!!!!");
  EXPECT_FALSE(GpuPlan::parse(text, err));
  EXPECT_NE(err.find("not base64"), std::string::npos) << err;
}

// What the source specializes: the rmsnorm tail's eps as the bits of
// float(1e-5), the [B S D] operand read at i, the [B S 1] mean through the
// coalesced coordinates, and no two float nodes without a barrier between.
TEST(GeneratedKernels, SourceIsSpecializedToTheProgramAndTheShapes) {
  GpuPlan p = block_plan(false);
  std::string rms;
  for (size_t i = 0; i < p.launches.size(); ++i) {
    const auto& l = p.launches[i];
    if (l.kind == LaunchKind::Fused && l.why.find("rsqrt") != std::string::npos && rms.empty())
      rms = shapeml::lower::gpu::fused_kernel_source(p, l, "k" + std::to_string(i));
  }
  ASSERT_FALSE(rms.empty()) << p.to_text();
  float eps = 1e-5f;
  uint32_t bits;
  std::memcpy(&bits, &eps, 4);
  char hex[32];
  std::snprintf(hex, sizeof hex, "__int_as_float(0x%08x)", bits);
  EXPECT_NE(rms.find(hex), std::string::npos) << rms;
  EXPECT_NE(rms.find("const uint32_t n = 131072u;"), std::string::npos) << rms;  // 4*128*256 elements, 32-bit index math
  EXPECT_NE(rms.find("[i]"), std::string::npos) << rms;                           // x: dense
  EXPECT_NE(rms.find("% 256u"), std::string::npos) << rms;                        // the D axis: g [D] broadcast along rows
  EXPECT_NE(rms.find("unary_op<float>(5, "), std::string::npos) << rms;           // rsqrt, numerics.cuh's
  EXPECT_NE(rms.find("__fadd_rn("), std::string::npos) << rms;                    // ms + eps, never contracted by ptxas
  EXPECT_NE(rms.find("__fmul_rn("), std::string::npos) << rms;
  EXPECT_EQ(rms.find("binary_op<float>(0,"), std::string::npos) << rms;
  size_t floats = 0, barriers = 0;
  for (size_t at = rms.find("    float r"); at != std::string::npos; at = rms.find("    float r", at + 1)) ++floats;
  for (size_t at = rms.find("asm(\"\" : \"+f\"("); at != std::string::npos; at = rms.find("asm(\"\" : \"+f\"(", at + 1)) ++barriers;
  EXPECT_GE(floats, 4u);
  EXPECT_EQ(barriers, floats) << rms;
}

// Where NVRTC is installed, the plan carries one sm_90 code object defining
// every fused launch's kernel and each launch names its own; elsewhere the
// plan stays interpreted and says why. Either way it verifies.
TEST(GeneratedKernels, PlanShipsTheCodeObjectOrSaysWhyNot) {
  GpuPlan p = block_plan(true);
  int fused = 0;
  for (const auto& l : p.launches) fused += l.kind == LaunchKind::Fused;
  EXPECT_EQ(shapeml::plan::verify_message(p), "");
  if (!nvrtc_here()) {
    // No kernel can be generated: the unfused launches (faster than the
    // interpreter), the same plan as with fusion off.
    EXPECT_EQ(fused, 0) << p.to_text();
    EXPECT_TRUE(p.code_arch.empty());
    EXPECT_EQ(p.to_text(), block_plan(true, false).to_text());
    // The generator itself says why, on the launches it could not compile.
    GpuPlan interpreted = block_plan(false);
    EXPECT_EQ(shapeml::lower::gpu::generate_fused_kernels(interpreted), 0);
    for (const auto& l : interpreted.launches)
      if (l.kind == LaunchKind::Fused) {
        EXPECT_TRUE(l.op.empty());
        EXPECT_NE(l.why.find("interpreted: NVRTC"), std::string::npos) << l.why;
      }
    GTEST_SKIP() << "no NVRTC here (" << shapeml::lower::gpu::nvrtc_describe() << "): the unfused fallback was checked";
  }
  ASSERT_EQ(fused, 4) << p.to_text();
  EXPECT_EQ(p.code_arch, "sm_90");
  ASSERT_GE(p.code_cubin.size(), 4u);
  EXPECT_EQ(p.code_cubin.substr(0, 4), "\x7f" "ELF");
  EXPECT_NE(p.code_ptx.find(".target sm_90"), std::string::npos);
  std::vector<std::string> names;
  for (const auto& l : p.launches)
    if (l.kind == LaunchKind::Fused) {
      EXPECT_NE(l.why.find("generated kernel"), std::string::npos) << l.why;
      EXPECT_NE(p.code_ptx.find(".entry " + l.op + "("), std::string::npos) << l.op;
      names.push_back(l.op);
    }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
  // Deterministic: the same program and binding give the same plan text.
  EXPECT_EQ(block_plan(true).to_text(), p.to_text());
  // Apart from the code object and the names, the plan is the interpreter's.
  GpuPlan interpreted = block_plan(false);
  ASSERT_EQ(interpreted.launches.size(), p.launches.size());
  for (size_t i = 0; i < p.launches.size(); ++i) EXPECT_EQ(interpreted.launches[i].ints, p.launches[i].ints);
}

}  // namespace
