#include "lower/gpu/nvrtc_compiler.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace shapeml::lower::gpu {
namespace {

// nvrtc.h's C API (stable since CUDA 11), declared here so that the compiler
// builds without the toolkit's headers.
using Program = struct NvrtcProgram*;
using Result = int;  // nvrtcResult; 0 = NVRTC_SUCCESS

struct Nvrtc {
  const char* (*get_error_string)(Result) = nullptr;
  Result (*version)(int*, int*) = nullptr;
  Result (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  Result (*destroy)(Program*) = nullptr;
  Result (*compile)(Program, int, const char* const*) = nullptr;
  Result (*ptx_size)(Program, size_t*) = nullptr;
  Result (*ptx)(Program, char*) = nullptr;
  Result (*cubin_size)(Program, size_t*) = nullptr;
  Result (*cubin)(Program, char*) = nullptr;
  Result (*log_size)(Program, size_t*) = nullptr;
  Result (*log)(Program, char*) = nullptr;
  std::string error;  // why it did not load; "" when loaded
  std::string name;   // "NVRTC 13.0"
};

template <class F> bool bind(void* lib, const char* sym, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, sym));
  return f != nullptr;
}

const Nvrtc& nvrtc() {
  static Nvrtc n;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> tried;
    const char* env = std::getenv("SHAPEML_NVRTC");
    if (env && std::string(env) == "none") {
      n.error = "NVRTC turned off (SHAPEML_NVRTC=none)";
      return;
    }
    if (env && *env) tried.push_back(env);
#ifdef SHAPEML_NVRTC_LIBRARY
    tried.push_back(SHAPEML_NVRTC_LIBRARY);  // the toolkit this compiler was built against
#endif
    for (const char* s : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) tried.push_back(s);
    void* lib = nullptr;
    std::string where;
    for (const std::string& t : tried) {
      lib = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      where += (where.empty() ? "" : ", ") + t;
    }
    if (!lib) {
      n.error = "NVRTC (the CUDA toolkit's runtime compiler) was not found (tried " + where + "; SHAPEML_NVRTC names it)";
      return;
    }
    if (!bind(lib, "nvrtcGetErrorString", n.get_error_string) || !bind(lib, "nvrtcVersion", n.version) ||
        !bind(lib, "nvrtcCreateProgram", n.create) || !bind(lib, "nvrtcDestroyProgram", n.destroy) ||
        !bind(lib, "nvrtcCompileProgram", n.compile) || !bind(lib, "nvrtcGetPTXSize", n.ptx_size) || !bind(lib, "nvrtcGetPTX", n.ptx) ||
        !bind(lib, "nvrtcGetCUBINSize", n.cubin_size) || !bind(lib, "nvrtcGetCUBIN", n.cubin) ||
        !bind(lib, "nvrtcGetProgramLogSize", n.log_size) || !bind(lib, "nvrtcGetProgramLog", n.log)) {
      n.error = "the NVRTC library found lacks the functions of NVRTC 11 or later";
      return;
    }
    int major = 0, minor = 0;
    n.version(&major, &minor);
    n.name = "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
  });
  return n;
}

}  // namespace

bool nvrtc_available() { return nvrtc().error.empty(); }

std::string nvrtc_describe() {
  const Nvrtc& n = nvrtc();
  return n.error.empty() ? n.name : n.error;
}

std::string nvrtc_compile(const std::string& source, const std::vector<std::pair<std::string, std::string>>& headers, const std::string& arch,
                          CompiledCode& out) {
  const Nvrtc& n = nvrtc();
  if (!n.error.empty()) return n.error;
  std::vector<const char*> texts, names;
  for (const auto& [name, text] : headers) {
    names.push_back(name.c_str());
    texts.push_back(text.c_str());
  }
  Program prog = nullptr;
  if (Result r = n.create(&prog, source.c_str(), "shapeml_generated.cu", static_cast<int>(headers.size()), texts.data(), names.data()); r != 0)
    return std::string("NVRTC could not create the program: ") + n.get_error_string(r);
  // The same numerics as the plugin's own kernels (nvcc's defaults: no fast
  // math, FMA contraction within an op as nvcc contracts it there; the
  // generated code keeps ops apart itself).
  const std::string gpu = "--gpu-architecture=" + arch;
  const char* options[] = {gpu.c_str(), "-std=c++17"};
  Result r = n.compile(prog, 2, options);
  std::string why;
  if (r != 0) {
    size_t size = 0;
    n.log_size(prog, &size);
    std::string log(size, '\0');
    if (size > 0) n.log(prog, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    why = n.name + " failed (" + n.get_error_string(r) + "): " + log;
  } else {
    size_t cubin = 0, ptx = 0;
    if (n.cubin_size(prog, &cubin) != 0 || n.ptx_size(prog, &ptx) != 0 || cubin == 0 || ptx == 0) {
      why = n.name + " returned no code";
    } else {
      out.cubin.assign(cubin, '\0');
      out.ptx.assign(ptx, '\0');
      n.cubin(prog, out.cubin.data());
      n.ptx(prog, out.ptx.data());
      while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
    }
  }
  n.destroy(&prog);
  return why;
}

}  // namespace shapeml::lower::gpu
