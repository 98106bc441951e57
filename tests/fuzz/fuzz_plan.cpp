// libFuzzer target: any text as a GPU dispatch plan (what the CUDA plugin's
// plan_create reads from a module; plan/plan.h, with its base64 `code`
// line). Invariants: a refusal names its line or defect; an accepted plan
// passes the verifier and its text round-trips exactly.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "plan/plan.h"
#include "plan/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shapeml;
  std::string text(reinterpret_cast<const char*>(data), size), error;
  auto p = plan::GpuPlan::parse(text, error);
  if (!p) {
    fuzz::require(error.rfind("gpu plan", 0) == 0);
    return 0;
  }
  fuzz::require(plan::verify_message(*p).empty());
  std::string again;
  auto q = plan::GpuPlan::parse(p->to_text(), again);
  fuzz::require(q.has_value());
  fuzz::require(q->to_text() == p->to_text());
  fuzz::require(q->code_cubin == p->code_cubin && q->code_ptx == p->code_ptx);
  return 0;
}
