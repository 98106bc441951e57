// libFuzzer target: any bytes as a .npy file. Invariants: a status (never
// INTERNAL, message UTF-8) or a tensor whose byte size fits in the input.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "runtime/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shapeml;
  auto src = runtime::view_source("fuzz.npy", data, size);
  auto t = runtime::read_npy(*src);
  if (!t) {
    fuzz::check_status(t.status());
    return 0;
  }
  // Nothing may be allocated that the file does not hold.
  fuzz::require((*t)->nbytes() <= size);
  auto bytes = runtime::encode_npy(**t);
  fuzz::require(bytes.ok());
  // Round trip: what was read writes and reads back to the same bytes.
  auto src2 = runtime::view_source("again.npy", bytes->data(), bytes->size());
  auto t2 = runtime::read_npy(*src2);
  fuzz::require(t2.ok() && (*t2)->nbytes() == (*t)->nbytes());
  return 0;
}
