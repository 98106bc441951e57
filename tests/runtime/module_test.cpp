// Module: loading hand-written AOT modules (add_module.c, bad_modules.c)
// through the dlopen provider, and calling them.
#include <dlfcn.h>
#include <chrono>
#include <gtest/gtest.h>
#include <link.h>

#include <array>
#include <atomic>
#include <cstring>
#include <thread>

#include "runtime/dlpack.h"
#include "runtime/dlopen_provider.h"
#include "runtime/cuda_plugin_loader.h"
#include "runtime/module.h"
#include "runtime/pool_resource.h"

using namespace shapeml::runtime;
using shapeml::types::Device;
using shapeml::types::DType;

namespace {

std::vector<int64_t> v(std::initializer_list<int64_t> x) { return x; }

std::shared_ptr<Module> load_add(MemoryResourcePtr mr = nullptr) {
  auto m = Module::load(SHAPEML_TEST_ADD_MODULE, std::move(mr));
  EXPECT_TRUE(m.ok()) << m.status().str();
  return m.ok() ? *m : nullptr;
}

TensorRef f32(std::vector<int64_t> shape, float start = 0) {
  auto t = Tensor::create(DType::F32, shape);
  EXPECT_TRUE(t.ok());
  for (int64_t i = 0; i < (*t)->numel(); ++i) (*t)->data_as<float>()[i] = start + static_cast<float>(i);
  return *t;
}

void expect_call_error(Module& m, const std::string& entry, std::vector<TensorRef> in, StatusCode code, const std::string& text) {
  std::vector<TensorRef> out{f32({1})};  // must be left alone on failure
  Tensor* before = out[0].get();
  Status s = m.call(entry, in, out);
  ASSERT_FALSE(s.ok()) << entry;
  EXPECT_EQ(s.code(), code) << s.str();
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].get(), before);
}

std::string libm_path() {
  void* h = dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libm.so.6", RTLD_NOW);
  struct link_map* lm = nullptr;
  if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0) return "";
  return lm->l_name;
}

}  // namespace

TEST(ModuleLoad, ReadsTheManifestAndResolvesEverySymbol) {
  auto m = load_add();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->manifest().name, "test_module");
  EXPECT_EQ(m->manifest().target, "x86-64-v3");
  EXPECT_EQ(m->manifest().entries.size(), 4u);
  EXPECT_EQ(m->specialization_count("add"), 2u);
  EXPECT_EQ(m->specialization_count("rowsum"), 2u);
  EXPECT_EQ(m->origin(), SHAPEML_TEST_ADD_MODULE);
}

TEST(ModuleCall, AddsTwoVectors) {
  auto stats = make_statistics_adaptor(host_memory_resource());
  auto m = load_add(stats);
  ASSERT_TRUE(m);
  std::vector<TensorRef> out;
  Status s = m->call("add", {f32({4}, 1), f32({4}, 10)}, out);
  ASSERT_TRUE(s.ok()) << s.str();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->type_str(), "(tensor f32 (4) host)");
  EXPECT_EQ(std::vector<float>(out[0]->data_as<float>(), out[0]->data_as<float>() + 4), (std::vector<float>{11, 13, 15, 17}));
  shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
  ASSERT_TRUE(stats->statistics(&st));
  EXPECT_EQ(st.bytes_in_use, 16u) << "outputs come from the module's memory resource";
  s = m->call("add", {f32({8}), f32({8})}, out);
  ASSERT_TRUE(s.ok()) << s.str();
  EXPECT_EQ(out[0]->data_as<float>()[7], 14.0f);
}

TEST(ModuleCall, TwoDimensionalWithWhereAndSeveralResults) {
  auto m = load_add();
  ASSERT_TRUE(m);
  std::vector<TensorRef> out;
  Status s = m->call("rowsum", {f32({3, 4})}, out);
  ASSERT_TRUE(s.ok()) << s.str();
  EXPECT_EQ(out[0]->type_str(), "(tensor f32 (3) host)");
  EXPECT_EQ(out[0]->data_as<float>()[2], 8.0f + 9 + 10 + 11);

  auto x = Tensor::create(DType::I64, v({6}));
  auto flags = Tensor::create(DType::Bool, v({4}));
  ASSERT_TRUE(x.ok() && flags.ok());
  for (int i = 0; i < 6; ++i) (*x)->data_as<int64_t>()[i] = i * 10;
  (*flags)->data_as<uint8_t>()[0] = (*flags)->data_as<uint8_t>()[3] = 1;
  s = m->call("pairs", {*x, *flags}, out);
  ASSERT_TRUE(s.ok()) << s.str();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->type_str(), "(tensor i64 (3) host)");
  EXPECT_EQ(out[0]->data_as<int64_t>()[2], 40 + 50);
  EXPECT_EQ(out[1]->data_as<int64_t>()[0], 2);
}

TEST(ModuleCall, ClearErrorsForBadInputs) {
  auto m = load_add();
  ASSERT_TRUE(m);
  expect_call_error(*m, "sub", {f32({4}), f32({4})}, StatusCode::NotFound, "no entry `sub` (entries: add, rowsum, pairs, on_gpu)");
  expect_call_error(*m, "add", {f32({4})}, StatusCode::InvalidArgument, "entry `add` takes 2 inputs, got 1");
  expect_call_error(*m, "add", {f32({4}), f32({4}), f32({4})}, StatusCode::InvalidArgument, "takes 2 inputs, got 3");
  expect_call_error(*m, "add", {f32({4}), nullptr}, StatusCode::InvalidArgument, "input 1 (`y`) is NULL");
  auto i32 = Tensor::create(DType::I32, v({4}));
  ASSERT_TRUE(i32.ok());
  expect_call_error(*m, "add", {f32({4}), *i32}, StatusCode::InvalidArgument,
                    "input 1 (`y`) has dtype i32, expected f32 (type (tensor f32 (N) host))");
  expect_call_error(*m, "add", {f32({2, 2}), f32({4})}, StatusCode::InvalidArgument,
                    "input 0 (`x`) has rank 2 (shape (tensor f32 (2 2) host)), expected rank 1");
  expect_call_error(*m, "add", {f32({4}), f32({5})}, StatusCode::InvalidArgument,
                    "input `y` dimension 0 is 5, expected 4 for type (tensor f32 (N) host): N = 4 (from input `x` dimension 0)");
  // A shape that checks but was not compiled ahead of time.
  expect_call_error(*m, "add", {f32({5}), f32({5})}, StatusCode::NotFound,
                    "entry `add` has no specialization for N=5 (compiled ahead of time: N=4; N=8)");
  expect_call_error(*m, "rowsum", {f32({2, 6})}, StatusCode::InvalidArgument,
                    "where constraint (= (mod D 4) 0) does not hold for D = 6 (from input `x` dimension 1)");
  expect_call_error(*m, "rowsum", {f32({65, 4})}, StatusCode::InvalidArgument, "where constraint (<= B 64) does not hold for B = 65");
  auto x7 = Tensor::create(DType::I64, v({7}));
  auto fl = Tensor::create(DType::Bool, v({4}));
  ASSERT_TRUE(x7.ok() && fl.ok());
  expect_call_error(*m, "pairs", {*x7, *fl}, StatusCode::InvalidArgument, "requires (* 2 N), which is 7 for no integer N");
  auto x6 = Tensor::create(DType::I64, v({6}));
  auto fl5 = Tensor::create(DType::Bool, v({5}));
  ASSERT_TRUE(x6.ok() && fl5.ok());
  expect_call_error(*m, "pairs", {*x6, *fl5}, StatusCode::InvalidArgument,
                    "input `flags` dimension 0 is 5, expected 4 for type (tensor bool ((+ N 1)) host): (+ N 1) = 4 with N = 3 "
                    "(from input `x` dimension 0)");
  // A device entry: UNAVAILABLE without a usable GPU; with one, a host input
  // is refused (it must be copied to the device first).
  if (shapeml::runtime::cuda_plugin().ok())
    expect_call_error(*m, "on_gpu", {f32({4})}, StatusCode::InvalidArgument, "expected (cuda 0)");
  else
    expect_call_error(*m, "on_gpu", {f32({4})}, StatusCode::Unavailable, "CUDA");
  // Non-contiguous and device inputs.
  alignas(64) float buf[8] = {};
  auto strided = Tensor::borrow(DType::F32, v({4}), v({2}), buf, Device::host(), {});
  ASSERT_TRUE(strided.ok());
  expect_call_error(*m, "add", {f32({4}), *strided}, StatusCode::InvalidArgument, "input 1 (`y`) is not contiguous");
  auto dev = Tensor::borrow(DType::F32, v({4}), {}, buf, Device::cuda(0), {});
  ASSERT_TRUE(dev.ok());
  expect_call_error(*m, "add", {*dev, f32({4})}, StatusCode::InvalidArgument, "input 0 (`x`) is on device cuda:0, expected host");
}

TEST(ModuleCall, CopiesMisalignedInputsWithoutTouchingThem) {
  auto m = load_add();
  ASSERT_TRUE(m);
  alignas(64) float buf[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  // Starts at buf[1]: 4-byte aligned only, as a NumPy slice may be.
  auto x = Tensor::borrow(DType::F32, v({4}), {}, buf + 1, Device::host(), {});
  ASSERT_TRUE(x.ok());
  std::vector<TensorRef> out;
  Status s = m->call("add", {*x, f32({4}, 100)}, out);
  ASSERT_TRUE(s.ok()) << s.str();
  EXPECT_EQ(out[0]->data_as<float>()[0], 101.0f);
  EXPECT_EQ(out[0]->data_as<float>()[3], 107.0f);
}

TEST(ModuleCall, AcceptsDlpackImportsAndReadOnlyInputs) {
  auto m = load_add();
  ASSERT_TRUE(m);
  auto exported = to_dlpack_versioned(f32({4}, 2), /*read_only=*/true);
  ASSERT_TRUE(exported.ok());
  auto x = from_dlpack_versioned(*exported);
  ASSERT_TRUE(x.ok());
  std::vector<TensorRef> out;
  Tensor* raw[] = {x->get(), x->get()};
  Status s = m->call("add", std::span<Tensor* const>(raw), out);
  ASSERT_TRUE(s.ok()) << s.str();
  EXPECT_EQ(out[0]->data_as<float>()[3], 10.0f);
}

TEST(ModuleCall, ConcurrentCalls) {
  auto m = load_add(make_pool_resource(nullptr));
  ASSERT_TRUE(m);
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        std::vector<TensorRef> out;
        int64_t n = (i + t) % 2 ? 4 : 8;
        if (!m->call("add", {f32({n}, 1), f32({n}, 1)}, out).ok() || out[0]->data_as<float>()[n - 1] != 2.0f * n) ++failures;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ModuleLoad, ClearErrorsForBadModules) {
  auto check = [](const std::string& path, StatusCode code, const std::string& text) {
    auto m = Module::load(path);
    ASSERT_FALSE(m.ok()) << path;
    EXPECT_EQ(m.status().code(), code) << m.status().str();
    EXPECT_NE(m.status().message().find(text), std::string::npos) << m.status().message();
  };
  check("/nonexistent/libnothing.so", StatusCode::NotFound, "/nonexistent/libnothing.so: cannot load module: No such file");
  check(SHAPEML_TEST_BAD_ABI_MODULE, StatusCode::IncompatibleModule, "was built for module ABI version 3; this runtime loads versions 1 to 2");
  check(SHAPEML_TEST_MISSING_SYMBOL_MODULE, StatusCode::InvalidArgument,
        "the manifest names symbol `shapeml_f_2` for entry `f` (N=2), but the module does not export it");
  check(SHAPEML_TEST_BAD_MANIFEST_MODULE, StatusCode::InvalidArgument, ":2:45: manifest: unknown shape variable `M` [E0104]");
  check(SHAPEML_TEST_NO_MANIFEST_MODULE, StatusCode::InvalidArgument, "is not a shapeml module: it does not export shapeml_module_manifest");
  // Issue 24, item 12: both were loaded.
  check(SHAPEML_TEST_ABI_MISMATCH_MODULE, StatusCode::IncompatibleModule, "its code exports module ABI version 1 but its manifest declares (abi 2)");
  check(SHAPEML_TEST_RANK65_MODULE, StatusCode::InvalidArgument, "manifest: a type of rank 65; the runtime's limit is 64");
  std::string libm = libm_path();
  ASSERT_FALSE(libm.empty());
  check(libm, StatusCode::InvalidArgument, "is not a shapeml module: it exports neither shapeml_module_abi_version nor shapeml_module_manifest");
  // Not a shared object at all.
  check(SHAPEML_TEST_NPY_DESCRIBE, StatusCode::InvalidArgument, "cannot load module");
}

namespace {
// A stand-in for the JIT: specializes `add` for any N <= 16 by handing out
// one of a family of functions, and counts how often it is asked.
template <int N>
void add_n(void** b) {
  for (int i = 0; i < N; ++i) static_cast<float*>(b[2])[i] = static_cast<float*>(b[0])[i] + static_cast<float*>(b[1])[i];
}
template <int... Ns>
constexpr std::array<shapeml::common::CompiledEntryFn, sizeof...(Ns)> table(std::integer_sequence<int, Ns...>) {
  return {&add_n<Ns>...};
}
constexpr auto kAdd = table(std::make_integer_sequence<int, 17>());

struct FakeJit : CodeProvider {
  int* specialize_calls;
  std::vector<std::string>* released = nullptr;
  // When set, compiling N == block_n waits until *gate opens.
  int64_t block_n = -1;
  std::atomic<bool>* gate = nullptr;
  std::atomic<bool>* compiling = nullptr;
  explicit FakeJit(int* calls) : specialize_calls(calls) {}
  void* lookup(const std::string& symbol) override {
    if (symbol.rfind("jit_add_", 0) != 0) return nullptr;
    std::string n = symbol.substr(8);  // exactly a number: not `jit_add_4_temp_hooks`, which this fake has not
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return nullptr;
    return reinterpret_cast<void*>(kAdd[std::stoi(n)]);
  }
  bool can_specialize() const override { return true; }
  Status specialize(const std::string& entry, const std::map<std::string, int64_t>& b, std::string& symbol) override {
    ++*specialize_calls;
    int64_t n = b.at("N");
    if (n == block_n) {
      compiling->store(true);
      while (!gate->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (n > 16) return resource_exhausted("N=" + std::to_string(n) + " is too large for this fake JIT");
    symbol = "jit_add_" + std::to_string(n);
    return {};
  }
  void release(const std::string& symbol) override {
    if (released) released->push_back(symbol);
  }
};
constexpr const char* kJitManifest =
    "(shapeml-module (abi 1) (name jit)\n"
    "  (entry add (dims N) (where (<= N 100)) (params (x (tensor f32 (N) host)) (y (tensor f32 (N) host))) (returns (tensor f32 (N) host))))";
}  // namespace

TEST(ModuleCall, AsksTheProviderToSpecializeAndCaches) {
  int calls = 0;
  auto m = Module::create(
      "(shapeml-module (abi 1) (name jit)\n"
      "  (entry add (dims N) (params (x (tensor f32 (N) host)) (y (tensor f32 (N) host))) (returns (tensor f32 (N) host))))",
      std::make_unique<FakeJit>(&calls), "<jit>");
  ASSERT_TRUE(m.ok()) << m.status().str();
  std::vector<TensorRef> out;
  for (int k = 0; k < 3; ++k) {
    Status s = (*m)->call("add", {f32({5}, 1), f32({5}, 2)}, out);
    ASSERT_TRUE(s.ok()) << s.str();
    EXPECT_EQ(out[0]->data_as<float>()[4], 5.0f + 6.0f);
  }
  EXPECT_EQ(calls, 1) << "one specialization per binding";
  ASSERT_TRUE((*m)->call("add", {f32({7}), f32({7})}, out).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ((*m)->specialization_count("add"), 2u);
  Status s = (*m)->call("add", {f32({20}), f32({20})}, out);
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted) << "the provider's code is kept, not turned into NOT_FOUND";
  EXPECT_NE(s.message().find("could not be specialized for N=20: N=20 is too large for this fake JIT"), std::string::npos)
      << s.message();
  EXPECT_EQ((*m)->specialization_count("add"), 2u) << "a failed binding is not cached";
}

TEST(ModuleCall, BoundedCacheEvictsLeastRecentlyUsed) {
  int calls = 0;
  std::vector<std::string> released;
  auto jit = std::make_unique<FakeJit>(&calls);
  jit->released = &released;
  auto m = Module::create(kJitManifest, std::move(jit), "<jit>", nullptr, /*cache_capacity=*/2);
  ASSERT_TRUE(m.ok()) << m.status().str();
  std::vector<TensorRef> out;
  for (int n : {3, 4, 3, 5}) ASSERT_TRUE((*m)->call("add", {f32({n}), f32({n})}, out).ok());
  EXPECT_EQ(calls, 3);
  EXPECT_EQ((*m)->specialization_count("add"), 2u);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0], "jit_add_4") << "N=4 was the least recently used";
  ASSERT_TRUE((*m)->call("add", {f32({4}), f32({4})}, out).ok());
  EXPECT_EQ(calls, 4) << "an evicted binding is compiled again";
}

TEST(ModuleCall, ExplicitSpecializeChecksTheBinding) {
  int calls = 0;
  auto m = Module::create(kJitManifest, std::make_unique<FakeJit>(&calls), "<jit>");
  ASSERT_TRUE(m.ok());
  const EntrySig& e = (*m)->manifest().entries[0];
  EXPECT_TRUE((*m)->specialize(e, {{"N", 6}}).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE((*m)->specialize(e, {{"N", 6}}).ok());
  EXPECT_EQ(calls, 1) << "already there";
  EXPECT_EQ((*m)->specialize(e, {{"N", 0}}).code(), StatusCode::InvalidArgument);
  EXPECT_EQ((*m)->specialize(e, {{"M", 3}}).code(), StatusCode::InvalidArgument);
  EXPECT_EQ((*m)->specialize(e, {}).code(), StatusCode::InvalidArgument);
  Status w = (*m)->specialize(e, {{"N", 101}});
  EXPECT_EQ(w.code(), StatusCode::InvalidArgument);
  EXPECT_NE(w.message().find("(<= N 100)"), std::string::npos) << w.message();
  EXPECT_EQ(calls, 1) << "bad bindings never reach the provider";
}

TEST(ModuleCall, CompilingANewBindingDoesNotBlockCompiledOnes) {
  int calls = 0;
  std::atomic<bool> gate{false}, compiling{false};
  auto jit = std::make_unique<FakeJit>(&calls);
  jit->block_n = 9;
  jit->gate = &gate;
  jit->compiling = &compiling;
  auto m = Module::create(kJitManifest, std::move(jit), "<jit>");
  ASSERT_TRUE(m.ok());
  std::vector<TensorRef> out;
  ASSERT_TRUE((*m)->call("add", {f32({3}, 1), f32({3}, 2)}, out).ok());
  std::thread slow([&] {
    std::vector<TensorRef> o;
    EXPECT_TRUE((*m)->call("add", {f32({9}), f32({9})}, o).ok());
  });
  while (!compiling.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // N=9 is being compiled (and blocked): N=3 still runs, many times.
  for (int k = 0; k < 100; ++k) {
    ASSERT_TRUE((*m)->call("add", {f32({3}, 1), f32({3}, 2)}, out).ok());
    EXPECT_EQ(out[0]->data_as<float>()[2], 3.0f + 4.0f);
  }
  EXPECT_FALSE(gate.load());
  gate.store(true);
  slow.join();
  EXPECT_EQ((*m)->specialization_count("add"), 2u);
}

TEST(ModuleCall, CallerProvidedOutputs) {
  auto m = Module::load(SHAPEML_TEST_ADD_MODULE);
  ASSERT_TRUE(m.ok()) << m.status().str();
  const EntrySig& add = *(*m)->manifest().find("add");
  TensorRef x = f32({4}, 1), y = f32({4}, 10);
  TensorRef o = f32({4});
  std::vector<Tensor*> in = {x.get(), y.get()}, outs = {o.get()};
  std::vector<TensorRef> result;
  CallOptions opts;
  opts.outputs = outs;
  Status s = (*m)->call(add, in, result, opts);
  ASSERT_TRUE(s.ok()) << s.str();
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0].get(), o.get()) << "the result is the provided tensor";
  EXPECT_EQ(o->data_as<float>()[3], 4.0f + 13.0f);
  TensorRef wrong = f32({5});
  std::vector<Tensor*> bad = {wrong.get()};
  opts.outputs = bad;
  s = (*m)->call(add, in, result, opts);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("expected (tensor f32 (4) host)"), std::string::npos) << s.message();
  std::vector<Tensor*> alias = {x.get()};
  opts.outputs = alias;
  EXPECT_EQ((*m)->call(add, in, result, opts).code(), StatusCode::InvalidArgument);
  o->set_read_only(true);
  opts.outputs = outs;
  EXPECT_EQ((*m)->call(add, in, result, opts).code(), StatusCode::FailedPrecondition);
}

TEST(DlopenProvider, OnlySymbolsOfTheObjectItself) {
  auto p = DlopenCodeProvider::open(SHAPEML_TEST_ADD_MODULE);
  ASSERT_TRUE(p.ok()) << p.status().str();
  EXPECT_NE((*p)->lookup("shapeml_add_4"), nullptr);
  EXPECT_EQ((*p)->lookup("shapeml_add_5"), nullptr);
  EXPECT_EQ((*p)->lookup("malloc"), nullptr) << "a libc symbol is not the module's";
  std::string text;
  EXPECT_FALSE((*p)->can_specialize()) << "AOT modules do not specialize";
  EXPECT_FALSE((*p)->specialize("add", {{"N", 5}}, text).ok());
}
