// In-process ELF link with LLD (see link_elf.h and docs/design/aot-linking.md).
// LLVM/LLD headers only; no MLIR.
#include "lower/cpu/link_elf.h"

#include <link.h>
#include <unistd.h>

#include <lld/Common/CommonLinkerContext.h>
#include <lld/Common/Driver.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <cstring>
#include <mutex>
#include <vector>

LLD_HAS_DRIVER(elf)

namespace shapeml::lower::cpu::detail {

namespace {

struct LoadedLibs {
  std::string libc, libm;
};

// The libc and libm this process runs with (libshapeml links both), found
// through the dynamic loader: linking against exactly these records the
// versioned symbols (e.g. expf@GLIBC_2.27) of the C library the program will
// be loaded next to, and needs no libc6-dev (its libc.so/libm.so linker
// scripts and crt files).
LoadedLibs loaded_libs() {
  LoadedLibs r;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        auto* out = static_cast<LoadedLibs*>(data);
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        std::string path = info->dlpi_name;
        std::string base = llvm::sys::path::filename(path).str();
        if (out->libc.empty() && base.rfind("libc.so.", 0) == 0) out->libc = path;
        if (out->libm.empty() && base.rfind("libm.so.", 0) == 0) out->libm = path;
        return 0;
      },
      &r);
  return r;
}

std::string find_lib(const std::string& loaded, const char* soname) {
  if (!loaded.empty() && llvm::sys::fs::exists(loaded)) return loaded;
  for (const char* dir : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                          "/lib64", "/usr/lib64", "/lib", "/usr/lib"}) {
    std::string p = std::string(dir) + "/" + soname;
    if (llvm::sys::fs::exists(p)) return p;
  }
  return "";
}

std::mutex& lld_mutex() {
  static std::mutex mu;
  return mu;
}
// Set once LLD recovered from a crash (a signal), after which its memory may
// be corrupt: later links are refused rather than run on it.
bool lld_unusable = false;

}  // namespace

bool link_shared_object(const std::string& object, const std::string& out, const std::string& display_name, std::string& error) {
  LoadedLibs libs = loaded_libs();
  std::string libm = find_lib(libs.libm, "libm.so.6");
  std::string libc = find_lib(libs.libc, "libc.so.6");
  if (libc.empty() || libm.empty()) {
    error = "linking " + display_name + ": cannot find the C library to link against (" + (libc.empty() ? "libc.so.6" : "") +
            (libc.empty() && libm.empty() ? ", " : "") + (libm.empty() ? "libm.so.6" : "") +
            "; looked at the libraries loaded in this process and the standard library directories). Install the C "
            "runtime (Debian: libc6), or link with an external compiler driver by setting SHAPEML_CC (e.g. SHAPEML_CC=cc).";
    return false;
  }

  std::vector<const char*> args = {
      "ld.lld", "-shared", "-o", out.c_str(), "--threads=1", "--no-color-diagnostics",  //
      "-z", "defs", "-z", "noexecstack", "-z", "relro", "-z", "now",                     //
      "--eh-frame-hdr", "--build-id=sha1", "--hash-style=both",                          //
      object.c_str(), "--as-needed", libm.c_str(), libc.c_str()};
  std::string out_text, err_text;
  bool ok = false;
  {
    std::lock_guard<std::mutex> lock(lld_mutex());
    if (lld_unusable) {
      error = "linking " + display_name +
              ": the in-process linker (LLD) crashed earlier in this process (a signal) and cannot run again; restart the process, or "
              "link with an external compiler driver by setting SHAPEML_CC (e.g. SHAPEML_CC=cc)";
      return false;
    }
    llvm::raw_string_ostream out_os(out_text), err_os(err_text);
    // LLD reports fatal errors by "exiting", which inside a crash recovery
    // context unwinds back here (longjmp) instead of ending the process. The
    // recovery context installs signal handlers, so it is enabled only for
    // the duration of the link (and restored afterwards).
    llvm::CrashRecoveryContext::Enable();
    lld::Result r = lld::lldMain(args, out_os, err_os, {{lld::Gnu, &lld::elf::link}});
    out_os.flush();
    err_os.flush();
    if (!r.canRunAgain) {
      // lldMain does not clean up after an unwind. A fatal() ("exit" code 1,
      // e.g. a bad input or a failed write of the output) unwound through
      // the driver's frames and left the linker context behind: destroy it
      // here, as lldMain does after a normal run (this runs LLD's reset of
      // its globals), and keep the linker usable. A signal (code 128 + N)
      // may have corrupted memory: then LLD is not run again.
      bool fatal_error = r.retCode > 0 && r.retCode < 128;
      if (fatal_error) {
        llvm::CrashRecoveryContext crc;
        fatal_error = crc.RunSafely([] { lld::CommonLinkerContext::destroy(); });
      }
      if (!fatal_error) lld_unusable = true;
    }
    llvm::CrashRecoveryContext::Disable();
    ok = r.retCode == 0;
  }
  if (ok) return true;
  std::string diag = err_text + out_text;
  while (!diag.empty() && (diag.back() == '\n' || diag.back() == ' ')) diag.pop_back();
  error = "linking " + display_name + " with the in-process linker (LLD) failed" + (diag.empty() ? std::string(".") : ":\n" + diag);
  return false;
}

}  // namespace shapeml::lower::cpu::detail
