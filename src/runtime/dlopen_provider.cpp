#include "runtime/dlopen_provider.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "abi/compiled_entry.h"

namespace shapeml::runtime {

CodeProvider::~CodeProvider() = default;

namespace {
std::string last_dlerror() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}
}  // namespace

void* DlopenCodeProvider::symbol_in_object(const char* name) const {
  dlerror();
  void* p = dlsym(handle_, name);
  if (!p) return nullptr;
  // dlsym also searches the object's dependencies; insist on the object.
  struct link_map* self = nullptr;
  struct link_map* owner = nullptr;
  Dl_info info;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &self) != 0 ||
      dladdr1(p, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) == 0 || owner != self)
    return nullptr;
  return p;
}

Result<std::unique_ptr<DlopenCodeProvider>> DlopenCodeProvider::open(const std::string& path) {
  return guarded("DlopenCodeProvider::open", [&]() -> Result<std::unique_ptr<DlopenCodeProvider>> {
    // dlopen searches the library path for a name without '/': a module is
    // named by its path, so make a relative name explicit.
    std::string p = path.find('/') == std::string::npos ? "./" + path : path;
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) {
      int e = errno;
      std::string m = path + ": cannot load module: " + std::strerror(e);
      return e == ENOENT ? not_found(m) : io_error(m);
    }
    dlerror();
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return invalid_argument(path + ": cannot load module: " + last_dlerror());
    std::unique_ptr<DlopenCodeProvider> prov(new DlopenCodeProvider(h, path));
    auto* version = reinterpret_cast<uint32_t (*)()>(prov->symbol_in_object("shapeml_module_abi_version"));
    auto* manifest = reinterpret_cast<const char* (*)()>(prov->symbol_in_object("shapeml_module_manifest"));
    if (!version && !manifest)
      return invalid_argument(path + " is not a shapeml module: it exports neither shapeml_module_abi_version nor "
                                     "shapeml_module_manifest");
    if (!version) return invalid_argument(path + " is not a shapeml module: it does not export shapeml_module_abi_version");
    if (!manifest) return invalid_argument(path + " is not a shapeml module: it does not export shapeml_module_manifest");
    uint32_t v = version();
    if (v != abi::kCompiledEntryAbiVersion)
      return incompatible_module(path + " was built for module ABI version " + std::to_string(v) + "; this runtime loads version " +
                           std::to_string(abi::kCompiledEntryAbiVersion) + " (rebuild it with a matching shapemlc)");
    const char* text = manifest();
    if (!text) return invalid_argument(path + ": shapeml_module_manifest() returned NULL");
    prov->manifest_ = text;
    return prov;
  });
}

DlopenCodeProvider::~DlopenCodeProvider() {
  if (handle_) dlclose(handle_);
}

void* DlopenCodeProvider::lookup(const std::string& symbol) { return symbol_in_object(symbol.c_str()); }

Result<std::string> DlopenCodeProvider::plan_text(const std::string& symbol) {
  void* f = symbol_in_object(symbol.c_str());
  if (!f) return not_found(path_ + ": no dispatch plan `" + symbol + "` in the object");
  const char* text = reinterpret_cast<const char* (*)()>(f)();
  if (!text) return invalid_argument(path_ + ": dispatch plan `" + symbol + "` is NULL");
  return std::string(text);
}

}  // namespace shapeml::runtime
