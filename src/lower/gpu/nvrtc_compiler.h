// NVRTC, the CUDA toolkit's runtime compiler, as the compiler uses it to turn
// generated CUDA C into a code object where the module is built
// (docs/design/gpu-generated-kernels.md). Loaded with dlopen on first use:
// the compiler links no CUDA library (only the plugin does), and a machine
// without the toolkit still compiles every program; its plans then run the
// fused interpreter instead, and say so.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace shapeml::lower::gpu {

struct CompiledCode {
  std::string cubin;  // machine code for the architecture asked for
  std::string ptx;    // the same compilation's PTX
};

/// Compiles `source` (with `headers`: include name -> text, the only headers
/// it may include) for `arch` ("sm_90"). "" on success; else why not: NVRTC
/// is not found (naming where it looked), or the compile log.
/// Thread-safe. SHAPEML_NVRTC, when set, is the library's path, or `none`:
/// no NVRTC (modules are then built as where the toolkit is missing).
std::string nvrtc_compile(const std::string& source, const std::vector<std::pair<std::string, std::string>>& headers, const std::string& arch,
                          CompiledCode& out);

/// "NVRTC 13.0" when the library loads, else why it does not.
std::string nvrtc_describe();
/// Whether the library loads (nvrtc_compile can run).
bool nvrtc_available();

}  // namespace shapeml::lower::gpu
