// .npy/.npz against files NumPy made (make_npy_golden.py, run as a CTest
// fixture) and files this runtime writes, read back by NumPy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "runtime/npy.h"

using namespace shapeml::runtime;
using shapeml::types::Device;
using shapeml::types::DType;

namespace {

std::vector<int64_t> v(std::initializer_list<int64_t> x) { return x; }

// Skips the test when the fixture did not run (the binary started by hand).
#define GOLDEN_DIR()                                                                   \
  const char* golden_dir = std::getenv("SHAPEML_NPY_GOLDEN_DIR");                      \
  if (!golden_dir) GTEST_SKIP() << "SHAPEML_NPY_GOLDEN_DIR is not set (run via ctest)"; \
  auto golden = [&](const char* n) { return std::string(golden_dir) + "/" + n; }

std::string scratch_dir() {
  std::string d = testing::TempDir() + "shapeml_npy_" + std::to_string(getpid());
  std::filesystem::create_directories(d);
  return d;
}

// What NumPy reads from `paths` (npy_describe.py), or "" without Python.
std::string numpy_describe(const std::vector<std::string>& paths) {
  const char* py = std::getenv("SHAPEML_PYTHON");
  if (!py) return "";
  std::string cmd = std::string(py) + " " + SHAPEML_TEST_NPY_DESCRIBE;
  for (const std::string& p : paths) cmd += " '" + p + "'";
  cmd += " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return "popen failed";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  return out;
}

template <class T>
std::vector<T> values(const TensorRef& t) {
  return std::vector<T>(t->data_as<T>(), t->data_as<T>() + t->numel());
}
std::vector<int64_t> shape_of(const TensorRef& t) { return {t->shape().begin(), t->shape().end()}; }

void expect_error(const Result<TensorRef>& r, StatusCode code, const std::string& file, const std::string& text) {
  ASSERT_FALSE(r.ok()) << file;
  EXPECT_EQ(r.status().code(), code) << r.status().str();
  EXPECT_NE(r.status().message().find(file), std::string::npos) << "the message names the file: " << r.status().message();
  EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().message();
}

}  // namespace

TEST(NpyRead, EveryDtypeNumpyWrites) {
  GOLDEN_DIR();
  auto f32 = read_npy(golden("f32.npy"));
  ASSERT_TRUE(f32.ok()) << f32.status().str();
  EXPECT_EQ((*f32)->dtype(), DType::F32);
  EXPECT_EQ(shape_of(*f32), v({2, 3}));
  EXPECT_EQ(values<float>(*f32), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*f32)->data()) % 64, 0u);

  auto f64 = read_npy(golden("f64.npy"));
  ASSERT_TRUE(f64.ok()) << f64.status().str();
  EXPECT_EQ(values<double>(*f64), (std::vector<double>{1.5, -2.25, 3.0, 1e300}));

  auto i32 = read_npy(golden("i32.npy"));
  ASSERT_TRUE(i32.ok()) << i32.status().str();
  EXPECT_EQ(shape_of(*i32), v({2, 2, 2}));
  EXPECT_EQ(values<int32_t>(*i32), (std::vector<int32_t>{-3, -2, -1, 0, 1, 2, 3, 4}));

  auto i64 = read_npy(golden("i64.npy"));
  ASSERT_TRUE(i64.ok()) << i64.status().str();
  EXPECT_EQ(values<int64_t>(*i64), v({int64_t{1} << 40, -1, 7}));

  auto b = read_npy(golden("bool.npy"));
  ASSERT_TRUE(b.ok()) << b.status().str();
  EXPECT_EQ((*b)->dtype(), DType::Bool);
  EXPECT_EQ(values<uint8_t>(*b), (std::vector<uint8_t>{1, 0, 1, 1}));
}

TEST(NpyRead, ScalarsEmptyArraysAndFormatVersions) {
  GOLDEN_DIR();
  auto s = read_npy(golden("scalar.npy"));
  ASSERT_TRUE(s.ok()) << s.status().str();
  EXPECT_EQ((*s)->ndim(), 0);
  EXPECT_EQ(values<float>(*s), std::vector<float>{3.5f});
  auto e = read_npy(golden("empty.npy"));
  ASSERT_TRUE(e.ok()) << e.status().str();
  EXPECT_EQ(shape_of(*e), v({0, 3}));
  auto v2 = read_npy(golden("v2.npy"));
  ASSERT_TRUE(v2.ok()) << v2.status().str();
  EXPECT_EQ(values<float>(*v2), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
  auto v3 = read_npy(golden("v3.npy"));
  ASSERT_TRUE(v3.ok()) << v3.status().str();
  EXPECT_EQ(values<int64_t>(*v3), v({int64_t{1} << 40, -1, 7}));
  auto big = read_npy(golden("big.npy"));
  ASSERT_TRUE(big.ok()) << big.status().str();
  EXPECT_EQ(shape_of(*big), v({100, 1000}));
  EXPECT_EQ((*big)->data_as<double>()[99999], 99999.0);
}

TEST(NpyRead, AllocatesFromTheGivenResource) {
  GOLDEN_DIR();
  auto stats = make_statistics_adaptor(host_memory_resource());
  auto t = read_npy(golden("f32.npy"), stats);
  ASSERT_TRUE(t.ok());
  shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
  ASSERT_TRUE(stats->statistics(&s));
  EXPECT_EQ(s.bytes_in_use, 24u);
}

TEST(NpyRead, UnsupportedButValidFilesSayWhy) {
  GOLDEN_DIR();
  expect_error(read_npy(golden("fortran.npy")), StatusCode::Unimplemented, "fortran.npy", "Fortran order");
  expect_error(read_npy(golden("bigendian.npy")), StatusCode::Unimplemented, "bigendian.npy", "big-endian");
  expect_error(read_npy(golden("f16.npy")), StatusCode::Unimplemented, "f16.npy", "'<f2' (float16) is not supported");
  expect_error(read_npy(golden("u8.npy")), StatusCode::Unimplemented, "u8.npy", "'|u1'");
  expect_error(read_npy(golden("structured.npy")), StatusCode::Unimplemented, "structured.npy", "structured");
}

TEST(NpyRead, MalformedAndTruncatedFilesSayWhy) {
  GOLDEN_DIR();
  struct Case {
    const char* file;
    const char* text;
  } cases[] = {
      {"truncated_data.npy", "truncated: shape (2, 3) of '<f4' needs 24 data bytes, the file has 19"},
      {"truncated_header.npy", "truncated: the header is 118 bytes but the file ends after 10"},
      {"truncated_preamble.npy", "too short for a .npy header"},
      {"empty_file.npy", "the file is 0 bytes"},
      {"bad_magic.npy", "not a .npy file"},
      {"bad_header.npy", "header: expected a quoted key or `}`"},
      {"bad_shape.npy", "negative"},
      {"missing_key.npy", "no 'fortran_order' key"},
      {"extra_key.npy", "unexpected key 'x'"},
      {"overflow_shape.npy", "overflows"},
      {"huge_header.npy", "implausibly large"},
      {"bad_descr.npy", "descr 'hello' is not a NumPy dtype string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    expect_error(read_npy(golden(c.file)), StatusCode::InvalidArgument, c.file, c.text);
  }
  expect_error(read_npy(golden("bad_version.npy")), StatusCode::Unimplemented, "bad_version.npy", "format version 9.0");
  expect_error(read_npy(golden("does_not_exist.npy")), StatusCode::NotFound, "does_not_exist.npy", "No such file");
  expect_error(read_npy(std::string(golden_dir)), StatusCode::IoError, golden_dir, "not a regular file");
}

TEST(NpzRead, SavezAndSavezCompressed) {
  GOLDEN_DIR();
  for (const char* f : {"savez.npz", "savez_compressed.npz"}) {
    SCOPED_TRACE(f);
    auto r = read_npz(golden(f));
    ASSERT_TRUE(r.ok()) << r.status().str();
    ASSERT_EQ(r->size(), 4u);
    EXPECT_EQ((*r)[0].name, "a");
    EXPECT_EQ(values<float>((*r)[0].tensor), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
    EXPECT_EQ((*r)[1].name, "b");
    EXPECT_EQ(values<int64_t>((*r)[1].tensor), v({int64_t{1} << 40, -1, 7}));
    EXPECT_EQ((*r)[2].name, "c");
    EXPECT_EQ((*r)[2].tensor->dtype(), DType::Bool);
    EXPECT_EQ((*r)[3].name, "big");
    EXPECT_EQ((*r)[3].tensor->data_as<double>()[12345], 12345.0);
  }
  auto pos = read_npz(golden("positional.npz"));
  ASSERT_TRUE(pos.ok()) << pos.status().str();
  EXPECT_EQ((*pos)[0].name, "arr_0");
  EXPECT_EQ((*pos)[1].tensor->dtype(), DType::I32);
}

TEST(NpzRead, MalformedArchivesSayWhy) {
  GOLDEN_DIR();
  auto check = [&](const char* file, StatusCode code, const char* text) {
    SCOPED_TRACE(file);
    auto r = read_npz(golden(file));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().str();
    EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().message();
  };
  check("truncated.npz", StatusCode::InvalidArgument, "no end-of-central-directory record");
  check("truncated_tail.npz", StatusCode::InvalidArgument, "no end-of-central-directory record");
  check("not_a_zip.npz", StatusCode::InvalidArgument, "not a valid .npz");
  check("bad_crc.npz", StatusCode::InvalidArgument, "entry 'a.npy': CRC-32 mismatch");
  check("non_npy_entry.npz", StatusCode::InvalidArgument, "entry 'readme.txt' is not a .npy array");
  check("bad_entry.npz", StatusCode::InvalidArgument, "entry 'a.npy': malformed .npy: truncated");
  check("bzip2.npz", StatusCode::Unimplemented, "compression method 12 is not supported");
  check("missing.npz", StatusCode::NotFound, "No such file");
}

TEST(NpyWrite, NumpyReadsWhatWeWrite) {
  std::string dir = scratch_dir();
  auto f32 = Tensor::create(DType::F32, v({2, 3}));
  ASSERT_TRUE(f32.ok());
  for (int i = 0; i < 6; ++i) (*f32)->data_as<float>()[i] = static_cast<float>(i) - 1.25f;
  auto i64 = Tensor::create(DType::I64, v({3}));
  ASSERT_TRUE(i64.ok());
  (*i64)->data_as<int64_t>()[0] = int64_t{1} << 50;
  (*i64)->data_as<int64_t>()[2] = -9;
  auto b = Tensor::create(DType::Bool, v({2, 1}));
  ASSERT_TRUE(b.ok());
  (*b)->data_as<uint8_t>()[1] = 1;
  auto scalar = Tensor::create(DType::F64, {});
  ASSERT_TRUE(scalar.ok());
  (*scalar)->data_as<double>()[0] = 0.1;
  auto i32 = Tensor::create(DType::I32, v({0, 4}));
  ASSERT_TRUE(i32.ok());
  // A transposed (strided) view is written in C order.
  alignas(64) int32_t buf[6] = {0, 1, 2, 3, 4, 5};
  auto view = Tensor::borrow(DType::I32, v({3, 2}), v({1, 3}), buf, Device::host(), {});
  ASSERT_TRUE(view.ok());

  std::vector<std::pair<std::string, TensorRef>> files = {{"f32", *f32}, {"i64", *i64},     {"bool", *b},
                                                          {"scalar", *scalar}, {"empty", *i32}, {"view", *view}};
  std::vector<std::string> paths;
  for (auto& [n, t] : files) {
    paths.push_back(dir + "/" + n + ".npy");
    Status s = write_npy(paths.back(), *t);
    ASSERT_TRUE(s.ok()) << s.str();
    // Our reader agrees with our writer.
    auto back = read_npy(paths.back());
    ASSERT_TRUE(back.ok()) << back.status().str();
    EXPECT_EQ(shape_of(*back), shape_of(t));
    EXPECT_EQ((*back)->dtype(), t->dtype());
  }
  std::string npz = dir + "/all.npz";
  std::vector<NpzEntry> entries;
  for (auto& [n, t] : files) entries.push_back({n, t});
  Status s = write_npz(npz, entries);
  ASSERT_TRUE(s.ok()) << s.str();
  auto back = read_npz(npz);
  ASSERT_TRUE(back.ok()) << back.status().str();
  EXPECT_EQ(back->size(), files.size());
  EXPECT_EQ(values<int32_t>((*back)[5].tensor), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));

  if (!std::getenv("SHAPEML_PYTHON")) GTEST_SKIP() << "SHAPEML_PYTHON is not set (run via ctest)";
  paths.push_back(npz);
  std::string expected =
      "- <f4 [2, 3] [[-1.25, -0.25, 0.75], [1.75, 2.75, 3.75]]\n"
      "- <i8 [3] [1125899906842624, 0, -9]\n"
      "- |b1 [2, 1] [[False], [True]]\n"
      "- <f8 [] 0.1\n"
      "- <i4 [0, 4] []\n"
      "- <i4 [3, 2] [[0, 3], [1, 4], [2, 5]]\n"
      "f32 <f4 [2, 3] [[-1.25, -0.25, 0.75], [1.75, 2.75, 3.75]]\n"
      "i64 <i8 [3] [1125899906842624, 0, -9]\n"
      "bool |b1 [2, 1] [[False], [True]]\n"
      "scalar <f8 [] 0.1\n"
      "empty <i4 [0, 4] []\n"
      "view <i4 [3, 2] [[0, 3], [1, 4], [2, 5]]\n";
  EXPECT_EQ(numpy_describe(paths), expected);
}

TEST(NpyWrite, RejectsBf16AndReportsUnwritablePaths) {
  auto bf = Tensor::create(DType::BF16, v({2}));
  ASSERT_TRUE(bf.ok());
  Status s = write_npy(scratch_dir() + "/bf16.npy", **bf);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("bf16 has no NumPy dtype"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(scratch_dir() + "/bf16.npy"));
  auto f = Tensor::create(DType::F32, v({2}));
  ASSERT_TRUE(f.ok());
  s = write_npy("/nonexistent-dir/x.npy", **f);
  EXPECT_EQ(s.code(), StatusCode::IoError);
  EXPECT_NE(s.message().find("/nonexistent-dir/x.npy"), std::string::npos) << s.message();
  s = write_npz(scratch_dir() + "/bad.npz", {{"a", *bf}});
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("entry 'a'"), std::string::npos) << s.message();
}

TEST(NpyRead, FromMemory) {
  auto t = Tensor::create(DType::I32, v({2}));
  ASSERT_TRUE(t.ok());
  (*t)->data_as<int32_t>()[1] = 42;
  auto bytes = encode_npy(**t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size() % 64, 8u) << "data starts on a 64-byte boundary";
  auto src = view_source("<memory>", bytes->data(), bytes->size());
  auto back = read_npy(*src);
  ASSERT_TRUE(back.ok()) << back.status().str();
  EXPECT_EQ(values<int32_t>(*back), (std::vector<int32_t>{0, 42}));
  // Every truncation of a valid image is an error, never a crash.
  for (size_t n = 0; n < bytes->size(); ++n) {
    auto cut = view_source("<cut>", bytes->data(), n);
    EXPECT_FALSE(read_npy(*cut).ok()) << n;
  }
}
