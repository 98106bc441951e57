#include <gtest/gtest.h>

#include "runtime/status.h"
#include "shapeml.h"

using namespace shapeml::runtime;

// The runtime's codes are the C ABI's numbers, so src/capi maps them 1:1.
static_assert(static_cast<int32_t>(StatusCode::Ok) == SHAPEML_STATUS_OK);
static_assert(static_cast<int32_t>(StatusCode::InvalidArgument) == SHAPEML_STATUS_INVALID_ARGUMENT);
static_assert(static_cast<int32_t>(StatusCode::OutOfMemory) == SHAPEML_STATUS_OUT_OF_MEMORY);
static_assert(static_cast<int32_t>(StatusCode::NotFound) == SHAPEML_STATUS_NOT_FOUND);
static_assert(static_cast<int32_t>(StatusCode::IoError) == SHAPEML_STATUS_IO_ERROR);
static_assert(static_cast<int32_t>(StatusCode::CheckFailed) == SHAPEML_STATUS_CHECK_FAILED);
static_assert(static_cast<int32_t>(StatusCode::Unimplemented) == SHAPEML_STATUS_UNIMPLEMENTED);
static_assert(static_cast<int32_t>(StatusCode::Unavailable) == SHAPEML_STATUS_UNAVAILABLE);
static_assert(static_cast<int32_t>(StatusCode::Internal) == SHAPEML_STATUS_INTERNAL);
static_assert(static_cast<int32_t>(StatusCode::ResourceExhausted) == SHAPEML_STATUS_RESOURCE_EXHAUSTED);
static_assert(static_cast<int32_t>(StatusCode::FailedPrecondition) == SHAPEML_STATUS_FAILED_PRECONDITION);
static_assert(static_cast<int32_t>(StatusCode::IncompatibleModule) == SHAPEML_STATUS_INCOMPATIBLE_MODULE);
static_assert(SHAPEML_STATUS_OUT_OF_MEMORY == SHAPEML_STATUS_RESOURCE_EXHAUSTED);
static_assert(static_cast<int32_t>(StatusCode::OutOfRange) == SHAPEML_STATUS_OUT_OF_RANGE);
static_assert(kStatusCodeCount == SHAPEML_STATUS_OUT_OF_RANGE + 1);

TEST(Status, ValuesAndNames) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.str(), "OK");
  Status e = not_found("no entry `f`");
  EXPECT_EQ(e.str(), "NOT_FOUND: no entry `f`");
  EXPECT_STREQ(status_code_name(StatusCode::Unimplemented), "UNIMPLEMENTED");
  EXPECT_STREQ(status_code_name(StatusCode::OutOfMemory), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(status_code_name(StatusCode::IncompatibleModule), "INCOMPATIBLE_MODULE");
  EXPECT_STREQ(status_code_name(StatusCode::OutOfRange), "OUT_OF_RANGE");
  EXPECT_STREQ(status_code_name(-1), "UNKNOWN");
  EXPECT_STREQ(status_code_name(kStatusCodeCount), "UNKNOWN");
  Result<int> r = 5;
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(*r, 5);
  Result<int> bad = e;
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::NotFound);
  Result<int> misuse = Status();  // an OK status without a value is a bug, reported as one
  EXPECT_FALSE(misuse.ok());
  EXPECT_EQ(misuse.status().code(), StatusCode::Internal);
}

TEST(Status, GuardedMapsExceptions) {
  Status s = guarded("f", []() -> Status { throw std::bad_alloc(); });
  EXPECT_EQ(s.code(), StatusCode::OutOfMemory);
  EXPECT_EQ(s.message(), "f: out of memory");
  Result<int> r = guarded("g", []() -> Result<int> { throw std::runtime_error("boom"); });
  EXPECT_EQ(r.status().code(), StatusCode::Internal);
  EXPECT_EQ(r.status().message(), "g: internal error: boom");
}
