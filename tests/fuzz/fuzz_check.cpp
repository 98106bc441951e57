// libFuzzer target: any bytes through the reader, parser and checker must
// yield diagnostics or a typed module, never a crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "driver/frontend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shapeml::check::CheckOptions opts;
  opts.obligation_timeout_ms = 200;  // keep each input fast; unknown is still an error
  auto r = shapeml::driver::check_source("fuzz.sml", std::string(reinterpret_cast<const char*>(data), size), opts);
  // Invariant: a result is either ok with a module, or carries an error.
  if (!r.ok() && r.diags.error_count() == 0 && r.module) __builtin_trap();
  for (const auto& d : r.diags.all()) (void)shapeml::syntax::render_text(d, *r.source);
  return 0;
}
