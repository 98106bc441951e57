#include "runtime/cuda_plugin_loader.h"
#include "obs/log.h"
#include "obs/trace.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>

namespace shapeml::runtime {
namespace {

constexpr const char* kPluginFile = "libshapeml_cuda.so";
constexpr size_t kErrSize = 512;

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

// The directory of the binary that holds this function (libshapeml.so,
// libshapeml_runtime.so or an executable that links the runtime statically).
std::string runtime_directory() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&runtime_directory), &info) || !info.dli_fname) return {};
  std::string f = info.dli_fname;
  size_t slash = f.rfind('/');
  return slash == std::string::npos ? std::string() : f.substr(0, slash);
}

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The plugin's spans go into this library's trace (plugin_api.h: set_observer).
uint32_t observer_flags() { return obs::flags(); }
void observer_span(const char* category, const char* name, uint64_t begin_ns, uint64_t duration_ns, const char* args, uint32_t thread) {
  // The plugin's categories are literals of a library that is never unloaded once initialized.
  obs::record_complete(category ? category : "", name ? name : "", begin_ns, duration_ns, args ? args : "", thread);
}
const shapeml_cuda_observer kObserver = {observer_flags, observer_span};

// dlopens the plugin at `path`, checks its symbol and ABI and initializes it.
Result<std::unique_ptr<CudaPlugin>> open_plugin(const std::string& path, void* handle) {
  dlerror();
  auto get = reinterpret_cast<shapeml_cuda_plugin_get_fn>(dlsym(handle, "shapeml_cuda_plugin_get"));
  if (!get) {
    std::string why = dl_error();
    dlclose(handle);
    return unavailable("the CUDA plugin " + path + " is not a shapeml CUDA plugin: it has no shapeml_cuda_plugin_get (" + why + ")");
  }
  const shapeml_cuda_plugin* api = get(SHAPEML_CUDA_PLUGIN_ABI);
  if (!api || api->abi_version != SHAPEML_CUDA_PLUGIN_ABI) {
    dlclose(handle);
    return unavailable("the CUDA plugin " + path + " does not speak plugin ABI " + std::to_string(SHAPEML_CUDA_PLUGIN_ABI) +
                       " (it was built from another shapeml version)");
  }
  char err[kErrSize] = "";
  int32_t count = 0;
  int32_t rc = api->init(&count, err, sizeof err);
  if (rc != 0 || count <= 0) {
    // Not closed: init() has started the (static) CUDA runtime, which keeps
    // allocations and exit handlers in the library; unloading it then is
    // unsafe. An initialized plugin stays loaded for the process's lifetime.
    // No driver, no GPU, a driver too old for the plugin: all UNAVAILABLE.
    return unavailable("the CUDA plugin " + path + " loaded, but CUDA is unavailable: " + (err[0] ? err : "no CUDA device"));
  }
  if (api->set_observer) api->set_observer(&kObserver);
  SHAPEML_LOG_AT(Cuda, Info, "CUDA plugin loaded", {"path", path}, {"devices", std::to_string(count)});
  return std::make_unique<CudaPlugin>(api, path, count, handle);
}

}  // namespace

CudaPlugin::CudaPlugin(const shapeml_cuda_plugin* api, std::string path, int32_t device_count, void* handle)
    : api_(api), path_(std::move(path)), device_count_(device_count), handle_(handle),
      streams_(static_cast<size_t>(device_count), nullptr), names_(static_cast<size_t>(device_count)) {}

CudaPlugin::~CudaPlugin() {
  // Only plugins loaded by tests are destroyed (the process's one lives
  // forever). Their streams go; the library stays loaded (see open_plugin:
  // the CUDA runtime inside it must not be unloaded once started).
  char err[kErrSize];
  for (void* s : streams_)
    if (s) api_->stream_destroy(s, err, sizeof err);
}

Status CudaPlugin::check_device(int32_t device, const char* op) const {
  if (device < 0 || device >= device_count_)
    return invalid_argument(std::string(op) + ": device cuda:" + std::to_string(device) + " does not exist (" +
                            std::to_string(device_count_) + " CUDA device" + (device_count_ == 1 ? "" : "s") + ")");
  return {};
}

Result<void*> CudaPlugin::default_stream(int32_t device) const {
  if (Status s = check_device(device, "default_stream"); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  void*& s = streams_[static_cast<size_t>(device)];
  if (!s) {
    char err[kErrSize] = "";
    if (int32_t rc = api_->stream_create(device, &s, err, sizeof err)) {
      s = nullptr;
      return plugin_status(rc, err, "default_stream");
    }
  }
  return s;
}

Result<void*> CudaPlugin::resolve_stream(int32_t device, void* stream) const {
  if (stream) return stream;
  return default_stream(device);
}

Result<const char*> CudaPlugin::device_name(int32_t device) const {
  if (Status s = check_device(device, "device_name"); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  std::string& n = names_[static_cast<size_t>(device)];
  if (n.empty()) {
    char name[256] = "", err[kErrSize] = "";
    if (int32_t rc = api_->device_name(device, name, sizeof name, err, sizeof err)) return plugin_status(rc, err, "device_name");
    n = name[0] ? name : "unnamed CUDA device";
  }
  return n.c_str();
}

Status plugin_status(int32_t code, const char* err, const std::string& op) {
  if (code == 0) return {};
  StatusCode c = code > 0 && code < kStatusCodeCount ? static_cast<StatusCode>(code) : StatusCode::Internal;
  return {c, op + ": " + (err && err[0] ? err : "the CUDA plugin failed without a message")};
}

Result<std::unique_ptr<CudaPlugin>> load_cuda_plugin(const char* env_override) {
  return guarded("load_cuda_plugin", [&]() -> Result<std::unique_ptr<CudaPlugin>> {
    if (env_override && env_override[0]) {
      std::string path = env_override;
      dlerror();
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) return unavailable("cannot load the CUDA plugin " + path + " named by SHAPEML_CUDA_PLUGIN: " + dl_error());
      return open_plugin(path, h);
    }
    std::string tried;
    std::string dir = runtime_directory();
    // Next to the library (the build tree), then in the installed layout's
    // private plugin directory, <libdir>/shapeml/ (docs/design/packaging.md).
    for (const char* sub : {"/", "/shapeml/"}) {
      if (dir.empty()) break;
      std::string path = dir + sub + kPluginFile;
      if (file_exists(path)) {
        dlerror();
        void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        // A plugin that is there but cannot load (missing cuBLAS, ...) is
        // the answer: do not hide it behind a search-path failure.
        if (!h) return unavailable("cannot load the CUDA plugin " + path + ": " + dl_error());
        return open_plugin(path, h);
      }
      tried += path + " (no such file), then ";
    }
    dlerror();
    void* h = dlopen(kPluginFile, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      return unavailable("the CUDA plugin was not found: tried " + tried + kPluginFile +
                         " on the loader's search path (" + dl_error() +
                         "); build shapeml with a CUDA toolkit, or set SHAPEML_CUDA_PLUGIN to the plugin's path");
    return open_plugin(kPluginFile, h);
  });
}

namespace {
std::atomic<bool> g_loaded{false};
}

Result<const CudaPlugin*> cuda_plugin() {
  // Loaded once; both the plugin and a failure are kept for the process.
  static Result<const CudaPlugin*> loaded = []() -> Result<const CudaPlugin*> {
    auto r = load_cuda_plugin(std::getenv("SHAPEML_CUDA_PLUGIN"));
    if (!r) return r.status();
    g_loaded.store(true, std::memory_order_release);
    return static_cast<const CudaPlugin*>(std::move(r).value().release());
  }();
  return loaded;
}

bool cuda_plugin_loaded() { return g_loaded.load(std::memory_order_acquire); }

}  // namespace shapeml::runtime
