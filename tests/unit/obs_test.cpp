// Tracing and logging core (src/obs): spans, the trace JSON, module scopes,
// log levels and the sink (docs/design/observability.md).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "obs/log.h"
#include "obs/trace.h"

namespace obs = shapeml::obs;

namespace {

struct TraceOn {
  TraceOn() {
    obs::take_json(true);
    obs::start(obs::kTraceOn);
  }
  ~TraceOn() {
    obs::stop();
    obs::take_json(true);
  }
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Trace, OffRecordsNothing) {
  obs::stop();
  obs::take_json(true);
  {
    obs::Span s("test", "quiet");
    EXPECT_FALSE(static_cast<bool>(s));
    s.arg("k", "v");
  }
  EXPECT_EQ(obs::event_count(), 0u);
}

TEST(Trace, SpansNestAndCarryArgs) {
  TraceOn on;
  {
    obs::Span outer("test", "outer");
    ASSERT_TRUE(static_cast<bool>(outer));
    outer.arg("n", int64_t{3}).arg("text", "a\"b\\c\n");
    obs::Span inner("test", "inner");
  }
  ASSERT_EQ(obs::event_count(), 2u);
  std::string j = obs::take_json(true);
  EXPECT_NE(j.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(j.find("\"name\":\"outer\""), std::string::npos);
  EXPECT_NE(j.find("\"name\":\"inner\""), std::string::npos);
  EXPECT_NE(j.find("\"n\":3"), std::string::npos);
  EXPECT_NE(j.find("\"text\":\"a\\\"b\\\\c\\n\""), std::string::npos) << j;
  EXPECT_EQ(count(j, "\"ph\":\"X\""), 2u);
  // Inner ends first, so it is recorded first; outer starts at ts 0.
  EXPECT_LT(j.find("\"name\":\"inner\""), j.find("\"name\":\"outer\""));
  EXPECT_EQ(obs::event_count(), 0u);
}

TEST(Trace, ModuleScopeTagsSpans) {
  TraceOn on;
  std::string id = obs::module_id_for("a.sml", "(module a)"), name = "a", entry = "f";
  {
    obs::ModuleScope scope(&id, &name, &entry);
    obs::Span s("test", "work");
  }
  { obs::Span s("test", "outside"); }
  std::string j = obs::take_json(true);
  size_t work = j.find("\"name\":\"work\""), outside = j.find("\"name\":\"outside\"");
  ASSERT_NE(work, std::string::npos);
  ASSERT_NE(outside, std::string::npos);
  std::string work_line = j.substr(work, j.find('\n', work) - work);
  std::string outside_line = j.substr(outside, j.find('\n', outside) - outside);
  EXPECT_NE(work_line.find("\"module\":\"" + id + "\""), std::string::npos) << work_line;
  EXPECT_NE(work_line.find("\"entry\":\"f\""), std::string::npos) << work_line;
  EXPECT_EQ(outside_line.find("\"module\""), std::string::npos) << outside_line;
}

TEST(Trace, ModuleIdsAreDeterministicAndDistinct) {
  std::string a = obs::module_id_for("a.sml", "(module a)");
  EXPECT_EQ(a, obs::module_id_for("a.sml", "(module a)"));
  EXPECT_NE(a, obs::module_id_for("b.sml", "(module a)"));
  EXPECT_NE(obs::module_id_for("ab", "c"), obs::module_id_for("a", "bc"));
  // Directories do not matter: the same file built from another checkout.
  EXPECT_EQ(a, obs::module_id_for("/work/x/a.sml", "(module a)"));
  EXPECT_EQ(a, obs::module_id_for("../../a.sml", "(module a)"));
  ASSERT_EQ(a.size(), 18u);
  EXPECT_EQ(a.substr(0, 2), "m-");
}

TEST(Trace, ThreadsGetTheirOwnTid) {
  TraceOn on;
  std::thread t([] { obs::Span s("test", "other thread"); });
  t.join();
  { obs::Span s("test", "main thread"); }
  std::string j = obs::take_json(true);
  auto tid_of = [&](const std::string& name) {
    size_t p = j.find("\"name\":\"" + name + "\"");
    size_t t = j.find("\"tid\":", p);
    return j.substr(t, j.find(',', t) - t);
  };
  EXPECT_NE(tid_of("other thread"), tid_of("main thread"));
}

struct Captured {
  obs::Level level;
  std::string component, message, fields, module;
};

void capture(void* u, const obs::Record& r) {
  Captured c{r.level, obs::component_name(r.component), std::string(r.message), "", r.context.module_id ? *r.context.module_id : ""};
  for (const auto& f : r.fields) c.fields += f.key + "=" + f.value + ";";
  static_cast<std::vector<Captured>*>(u)->push_back(c);
}

// Issue 24, item 12: empty specifications and items were accepted as "no change".
TEST(Log, EmptySpecificationsAndItemsAreRefusedAndChangeNothing) {
  ASSERT_TRUE(obs::set_levels("warn"));
  for (const char* bad : {"", " ", ",", "info,", ",info", "warn,,smt=debug"}) {
    std::string err;
    EXPECT_FALSE(obs::set_levels(bad, &err)) << "`" << bad << "`";
    EXPECT_NE(err.find("empty"), std::string::npos) << err;
    EXPECT_EQ(obs::level_of(obs::Component::Smt), obs::Level::Warn) << "`" << bad << "` changed the levels";
  }
  ASSERT_TRUE(obs::set_levels("info"));
  ASSERT_TRUE(obs::set_levels("warn"));
}

TEST(Log, LevelsFilterPerComponent) {
  std::vector<Captured> got;
  ASSERT_TRUE(obs::set_levels("warn,smt=debug"));
  obs::set_sink(capture, &got);
  SHAPEML_LOG_AT(Smt, Debug, "z3 query", {"answer", "unsat"});
  SHAPEML_LOG_AT(Runtime, Info, "dropped: runtime is at warn");
  SHAPEML_LOG_AT(Runtime, Warn, "kept");
  SHAPEML_LOG_AT(Smt, Trace, "dropped: below debug");
  obs::set_sink(nullptr, nullptr);
  SHAPEML_LOG_AT(Runtime, Error, "dropped: no sink");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].component, "smt");
  EXPECT_EQ(got[0].level, obs::Level::Debug);
  EXPECT_EQ(got[0].message, "z3 query");
  EXPECT_EQ(got[0].fields, "answer=unsat;");
  EXPECT_EQ(got[1].component, "runtime");
  EXPECT_EQ(got[1].level, obs::Level::Warn);
  ASSERT_TRUE(obs::set_levels("warn"));
}

TEST(Log, RecordsCarryTheModuleOfTheThread) {
  std::vector<Captured> got;
  ASSERT_TRUE(obs::set_levels("info"));
  obs::set_sink(capture, &got);
  std::string id = "m-0000000000000001", name = "x";
  {
    obs::ModuleScope scope(&id, &name);
    SHAPEML_LOG_AT(Runtime, Info, "inside");
  }
  obs::set_sink(nullptr, nullptr);
  ASSERT_TRUE(obs::set_levels("warn"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].module, id);
}

TEST(Log, BadSpecsChangeNothing) {
  ASSERT_TRUE(obs::set_levels("warn"));
  std::string err;
  EXPECT_FALSE(obs::set_levels("debug,nosuch=info", &err));
  EXPECT_NE(err.find("nosuch"), std::string::npos);
  EXPECT_EQ(obs::level_of(obs::Component::Smt), obs::Level::Warn);  // the `debug` before the error is not applied
  EXPECT_FALSE(obs::set_levels("loud", &err));
  EXPECT_NE(err.find("loud"), std::string::npos);
  EXPECT_FALSE(obs::set_levels("smt=loud", &err));
  EXPECT_TRUE(obs::set_levels(" info , smt = trace "));  // spaces around items are fine; an empty item is not (issue 24)
  EXPECT_EQ(obs::level_of(obs::Component::Smt), obs::Level::Trace);
  EXPECT_EQ(obs::level_of(obs::Component::Runtime), obs::Level::Info);
  ASSERT_TRUE(obs::set_levels("warn"));
}

}  // namespace
