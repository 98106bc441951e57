// The transformer block example (generic in its dtype T and device Dv, spec
// §3.5) made concrete for the GPU plan tests: checked as written, then the
// entries `block` and `block_gqa` specialized at T = `dtype`, Dv = (cuda 0)
// by the specializer the planner itself runs (transform/specialize_types.h),
// in one module. `module` is empty (with a test failure) if any step fails.
#pragma once
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "driver/frontend.h"
#include "transform/specialize_types.h"

struct ConcreteBlock {
  std::optional<shapeml::ir::Module> module;
};

inline ConcreteBlock concrete_block(const std::string& dtype) {
  std::ifstream f(std::string(SHAPEML_SOURCE_DIR) + "/examples/transformer_block.sml");
  std::stringstream ss;
  ss << f.rdbuf();
  auto r = shapeml::driver::check_source("transformer_block.sml", ss.str());
  EXPECT_TRUE(r.ok());
  ConcreteBlock out;
  if (!r.module) return out;
  shapeml::types::TypeBinding b;
  b.dtypes["T"] = shapeml::types::DTypeValue::concrete(*shapeml::types::parse_dtype(dtype));
  b.devices["Dv"] = shapeml::types::Device::cuda(0);
  shapeml::ir::Module m;
  m.name = r.module->name;
  std::set<std::string> have;
  for (const char* entry : {"block", "block_gqa"}) {
    std::string err;
    auto s = shapeml::transform::specialize_types(*r.module, entry, b, err);
    EXPECT_TRUE(s) << err;
    if (!s) return out;
    for (auto& fn : s->functions)
      if (have.insert(fn.name).second) m.functions.push_back(std::move(fn));
  }
  out.module = std::move(m);
  return out;
}
