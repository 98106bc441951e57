// Front-end speed: parse + check + discharge, warm (one process, repeated).
// Reports per-program time, obligations, how many reached Z3 and Z3's share.
// Target (issue: foundation): the transformer block under 50 ms warm; no
// obligation near the 2 s budget.
//   build/default/bench/frontend_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "driver/frontend.h"

namespace {

std::string load(const std::string& rel) {
  std::ifstream in(std::string(SHAPEML_SOURCE_DIR) + "/" + rel);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void check_program(benchmark::State& state, const std::string& rel) {
  std::string text = load(rel);
  if (text.empty()) {
    state.SkipWithError(("cannot read " + rel).c_str());
    return;
  }
  shapeml::check::CheckStats last;
  bool ok = true;
  for (auto _ : state) {
    auto r = shapeml::driver::check_source(rel, text);
    ok = r.ok();
    last = r.stats;
    benchmark::DoNotOptimize(r);
  }
  if (!ok) state.SkipWithError((rel + " does not check").c_str());
  state.counters["bindings"] = static_cast<double>(last.bindings);
  state.counters["obligations"] = static_cast<double>(last.solver.obligations);
  state.counters["by_normalization"] = static_cast<double>(last.solver.syntactic);
  state.counters["z3_queries"] = static_cast<double>(last.solver.z3_queries);
  state.counters["z3_ms"] = last.solver.z3_seconds * 1e3;
  state.counters["max_query_ms"] = last.solver.max_query_seconds * 1e3;
  state.counters["elaborate_ms"] = (last.parse_seconds + last.check_seconds) * 1e3;
}

}  // namespace

BENCHMARK_CAPTURE(check_program, mlp, std::string("examples/mlp.sml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(check_program, transformer_block, std::string("examples/transformer_block.sml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(check_program, largest_generated, std::string("tests/generated/largest.sml"))->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
