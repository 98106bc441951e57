// The per-call CUDA graph decision (runtime::use_graph): the call option
// against what the plan says. Runs without a GPU.
#include <gtest/gtest.h>

#include "runtime/module.h"

using shapeml::runtime::GraphOption;
using shapeml::runtime::StatusCode;
using shapeml::runtime::use_graph;

TEST(GraphOption, DefaultFollowsThePlan) {
  EXPECT_TRUE(*use_graph(GraphOption::Default, 1, "device slots only", "entry `f`"));
  EXPECT_FALSE(*use_graph(GraphOption::Default, 0, "turned off by the compile option", "entry `f`"));
  EXPECT_FALSE(*use_graph(GraphOption::Default, -1, "slot 0 is a host_input", "entry `f`"));
}

TEST(GraphOption, OffNeverReplays) {
  for (int32_t plan : {1, 0, -1}) EXPECT_FALSE(*use_graph(GraphOption::Off, plan, "", "entry `f`"));
}

TEST(GraphOption, OnOverridesAChoiceButNotABlocker) {
  EXPECT_TRUE(*use_graph(GraphOption::On, 1, "", "entry `f`"));
  EXPECT_TRUE(*use_graph(GraphOption::On, 0, "turned off by the compile option", "entry `f`"));
  auto r = use_graph(GraphOption::On, -1, "slot 0 is a host_input", "entry `f`");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::FailedPrecondition);
  EXPECT_NE(r.status().message().find("entry `f`"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("slot 0 is a host_input"), std::string::npos) << r.status().message();
}
