// GPU tests skip, visibly, where there is no GPU: they print
// "skipped: no GPU (<why>)" and GTEST_SKIP, so that CI without a GPU passes
// and says so. On the GPU machine they run.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#define SHAPEML_SKIP_WITHOUT_GPU(why_if_missing)                           \
  do {                                                                     \
    std::string why_ = (why_if_missing);                                   \
    if (!why_.empty()) {                                                   \
      std::printf("skipped: no GPU (%s)\n", why_.c_str());                 \
      GTEST_SKIP() << "skipped: no GPU (" << why_ << ")";                 \
    }                                                                      \
  } while (0)
