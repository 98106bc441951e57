// libFuzzer target: any text as a module manifest (what shapeml_module_load
// reads from a .so). Invariants: a status (never INTERNAL, message UTF-8)
// or a manifest whose entries have names.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "runtime/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shapeml;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto m = runtime::parse_manifest(text, "fuzz.so");
  if (!m) {
    fuzz::check_status(m.status());
    return 0;
  }
  for (const auto& e : m->entries) fuzz::require(!e.name.empty());
  return 0;
}
