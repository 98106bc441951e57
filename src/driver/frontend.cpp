#include "driver/frontend.h"

#include <chrono>
#include <exception>

#include "obs/log.h"
#include "obs/trace.h"
#include "syntax/bundles.h"
#include "syntax/parser.h"
#include "syntax/sexpr.h"
#include "transform/reverse_mode.h"

namespace shapeml::driver {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// parse: text -> S-expressions -> bundles expanded (syntax/bundles.h) -> AST. Returns the offsets of lexical errors
// (functions that hold one are not elaborated: their literals did not read).
std::vector<uint32_t> parse(check::CheckResult& r) {
  syntax::SExprFile sx = syntax::read_sexprs(*r.source, r.diags);
  bool lexical_errors = r.diags.error_count() != 0;
  if (!lexical_errors || !sx.items.empty()) {
    // A function with a bundle error (E0107) is not elaborated either: its
    // expansion is incomplete, and every name it lost would be reported again.
    sx = syntax::expand_bundles(sx, r.diags);
    lexical_errors |= r.diags.error_count() != 0;
    r.ast = syntax::parse_module(sx, r.diags);
  }
  std::vector<uint32_t> offsets;
  if (lexical_errors)
    for (const auto& d : r.diags.all()) offsets.push_back(d.span.begin);
  return offsets;
}

// verify: the typed IR must re-check on its own (spec §7); a failure here is
// a bug in an earlier stage (E0900).
void verify(check::CheckResult& r, const check::CheckOptions& opts) {
  if (!r.module) return;
  for (auto& d : check::verify_module(*r.module, opts, &r.stats.verify_solver)) r.diags.all().push_back(d);
  r.stats.solver += r.stats.verify_solver;
  if (r.diags.error_count()) r.module.reset();
}

}  // namespace

check::CheckResult check_source(std::string name, std::string text, const check::CheckOptions& opts_in, FrontendStage stop_after) {
  check::CheckResult r;
  check::CheckOptions opts = opts_in;
  if (opts.obligation_timeout_ms == 0) opts.obligation_timeout_ms = check::CheckOptions{}.obligation_timeout_ms;
  if (text.size() >= (size_t{1} << 32) - 1) {
    // Spans are 32-bit byte offsets. The C ABI refuses such a source before
    // copying it; this catches every other caller.
    size_t n = text.size();
    r.source = std::make_shared<syntax::SourceFile>(std::move(name), std::string());
    r.diags.report("E0003", {0, 0}, "the source is " + std::to_string(n) + " bytes; sources must be smaller than 4 GiB");
    return r;
  }
  r.source = std::make_shared<syntax::SourceFile>(std::move(name), std::move(text));
  // The module ID: the same for every compile of this source (obs/trace.h).
  r.module_id = obs::module_id_for(r.source->name(), r.source->text());
  obs::ModuleScope scope(&r.module_id, &r.source->name());
  obs::Span check_span("compiler", "check_source");
  if (check_span) check_span.arg("source", r.source->name()).arg("bytes", static_cast<int64_t>(r.source->text().size()));
  try {
    SHAPEML_LOG_AT(Driver, Debug, "check_source", {"source", r.source->name()}, {"module", r.module_id});
    auto t0 = Clock::now();
    std::vector<uint32_t> lexical;
    {
      obs::Span s("compiler", "parse");
      lexical = parse(r);
    }
    r.stats.parse_seconds = seconds_since(t0);
    if (stop_after == FrontendStage::Parse || !r.ast) return r;

    t0 = Clock::now();
    {
      obs::Span s("compiler", "elaborate");
      check::elaborate(*r.ast, opts, std::move(lexical), r);
      if (s) s.arg("diagnostics", static_cast<int64_t>(r.diags.all().size()));
    }
    if (r.module) r.module->id = r.module_id;
    r.stats.check_seconds = seconds_since(t0);
    if (stop_after == FrontendStage::Elaborate) return r;

    // differentiate: the bodies of `(grad NAME OF)` (an IR pass; verify re-checks them)
    if (r.module) {
      obs::Span s("compiler", "differentiate");
      transform::reverse_mode(*r.module, r.diags, opts.obligation_timeout_ms);
      if (r.diags.error_count()) r.module.reset();
    }

    auto t1 = Clock::now();
    {
      obs::Span s("compiler", "verify");
      verify(r, opts);
    }
    r.stats.verify_seconds = seconds_since(t1);
    r.stats.check_seconds = seconds_since(t0);  // elaborate + verify, as --stats reports it
    SHAPEML_LOG_AT(Check, Debug, r.ok() ? "checked" : "check found errors", {"source", r.source->name()},
                   {"errors", std::to_string(r.diags.error_count())}, {"z3_queries", std::to_string(r.stats.solver.z3_queries)});
  } catch (const std::exception& e) {
    r.diags.report("E0900", {0, 0}, std::string("internal compiler error: ") + e.what());
    r.module.reset();
  }
  return r;
}

}  // namespace shapeml::driver
