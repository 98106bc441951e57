// libFuzzer target: any bytes as a .npz (zip) archive. Invariants: a status
// (never INTERNAL, message UTF-8) or entries with distinct, non-empty names
// without NUL bytes.
#include <cstddef>
#include <cstdint>
#include <set>

#include "fuzz_util.h"
#include "runtime/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shapeml;
  auto src = runtime::view_source("fuzz.npz", data, size);
  auto r = runtime::read_npz(*src);
  if (!r) {
    fuzz::check_status(r.status());
    return 0;
  }
  std::set<std::string> names;
  for (const auto& e : *r) {
    fuzz::require(!e.name.empty() && e.name.find('\0') == std::string::npos);
    fuzz::require(names.insert(e.name).second);
    fuzz::require(static_cast<bool>(e.tensor));
  }
  return 0;
}
