// C ABI helpers for the GPU tests: a status as "CODE_NAME: message" (empty
// for success), freeing it, and an assertion that a call succeeded.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "shapeml.h"

inline std::string take(shapeml_status* s) {
  std::string m = s ? std::string(shapeml_status_code_name(shapeml_status_get_code(s))) + ": " + shapeml_status_get_message(s) : "";
  shapeml_status_free(s);
  return m;
}
#define OK(call) ASSERT_EQ(take(call), "")
