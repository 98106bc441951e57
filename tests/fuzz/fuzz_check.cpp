// libFuzzer target: any bytes through the reader, parser and checker.
// Invariants (each traps when violated):
//   - a check that succeeded has a typed module, and the IR verifier run on
//     it again on its own reports nothing;
//   - a check that failed has at least one error and no module;
//   - every diagnostic's span (and every label's) lies inside the source;
//   - no more than kMaxErrorsPerFile errors are kept;
//   - the text and JSON renderings of every diagnostic are valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/utf8.h"
#include "driver/frontend.h"

namespace {
void require(bool c) {
  if (!c) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shapeml::check::CheckOptions opts;
  opts.obligation_timeout_ms = 200;  // keep each input fast; unknown is still an error
  auto r = shapeml::driver::check_source("fuzz.sml", std::string(reinterpret_cast<const char*>(data), size), opts);
  if (r.ok()) {
    require(r.module.has_value());
    require(shapeml::check::verify_module(*r.module, opts).empty());
  } else {
    require(r.diags.error_count() > 0);
    require(!r.module.has_value());
  }
  require(r.diags.error_count() <= shapeml::syntax::kMaxErrorsPerFile);
  const uint32_t n = static_cast<uint32_t>(r.source->text().size());
  for (const auto& d : r.diags.all()) {
    require(d.span.begin <= d.span.end && d.span.end <= n);
    for (const auto& l : d.labels) require(l.span.begin <= l.span.end && l.span.end <= n);
    require(shapeml::common::is_valid_utf8(shapeml::syntax::render_text(d, *r.source)));
    require(shapeml::common::is_valid_utf8(shapeml::syntax::render_json(d, *r.source)));
  }
  return 0;
}
