#include "runtime/dlopen_provider.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/compiled_entry.h"
#include "runtime/file_io.h"

namespace shapeml::runtime {

CodeProvider::~CodeProvider() = default;

namespace {
std::string last_dlerror() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}
#if defined(__x86_64__)
constexpr uint16_t kNativeMachine = EM_X86_64;
constexpr const char* kNativeMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr uint16_t kNativeMachine = EM_AARCH64;
constexpr const char* kNativeMachineName = "AArch64";
#else
#error "add this architecture's ELF machine code"
#endif

Status read_exact(int fd, uint64_t off, void* dst, size_t n, const std::string& path) {
  char* p = static_cast<char*>(dst);
  while (n) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(off));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return io_error(path + ": cannot read the module file: " + (got < 0 ? std::strerror(errno) : "unexpected end of file"));
    p += got;
    n -= static_cast<size_t>(got);
    off += static_cast<uint64_t>(got);
  }
  return {};
}

bool range_ok(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

}  // namespace

Status validate_elf_file(const std::string& path) {
  return guarded("validate_elf_file", [&]() -> Status {
    auto f = open_regular_file(path, "module");
    if (!f) {
      std::string m = f.status().message();
      size_t at = m.find("cannot open module");
      if (at != std::string::npos) m.replace(at, 18, "cannot load module");
      return Status(f.status().code(), m);
    }
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{f->fd};
    uint64_t size = f->size;
    auto bad = [&](const std::string& what) {
      return invalid_argument(path + ": cannot load module: " + what);
    };
    if (size < sizeof(Elf64_Ehdr))
      return bad("the file is " + std::to_string(size) + " bytes, too short for an ELF header (truncated?)");
    Elf64_Ehdr eh;
    if (Status s = read_exact(f->fd, 0, &eh, sizeof eh, path); !s.ok()) return s;
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return bad("no ELF magic (not a shared object)");
    if (eh.e_ident[EI_CLASS] != ELFCLASS64) return bad("not a 64-bit ELF file");
    if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return bad("not a little-endian ELF file");
    if (eh.e_type != ET_DYN) return bad("ELF type " + std::to_string(eh.e_type) + " is not a shared object (ET_DYN)");
    if (eh.e_machine != kNativeMachine)
      return bad("built for ELF machine " + std::to_string(eh.e_machine) + ", this process is " + kNativeMachineName);
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum == PN_XNUM)
      return bad("bad program header table (entry size " + std::to_string(eh.e_phentsize) + ", " + std::to_string(eh.e_phnum) +
                 " entries)");
    uint64_t ph_bytes = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
    if (!range_ok(eh.e_phoff, ph_bytes, size))
      return bad("the program header table (offset " + std::to_string(eh.e_phoff) + ", " + std::to_string(ph_bytes) +
                 " bytes) lies past the end of the file (" + std::to_string(size) + " bytes; truncated?)");
    if (eh.e_shnum && !range_ok(eh.e_shoff, uint64_t{eh.e_shnum} * eh.e_shentsize, size))
      return bad("the section header table lies past the end of the file (" + std::to_string(size) + " bytes; truncated?)");
    std::vector<Elf64_Phdr> ph(eh.e_phnum);
    if (Status s = read_exact(f->fd, eh.e_phoff, ph.data(), ph_bytes, path); !s.ok()) return s;
    bool any_load = false;
    for (size_t i = 0; i < ph.size(); ++i) {
      const Elf64_Phdr& p = ph[i];
      if (p.p_type == PT_LOAD) any_load = true;
      // The loader maps these from the file: a range past the end would be
      // mapped and then fault (SIGBUS) on first touch.
      if ((p.p_type == PT_LOAD || p.p_type == PT_DYNAMIC || p.p_type == PT_INTERP || p.p_type == PT_NOTE ||
           p.p_type == PT_GNU_EH_FRAME || p.p_type == PT_TLS) &&
          !range_ok(p.p_offset, p.p_filesz, size))
        return bad("program header " + std::to_string(i) + " (type " + std::to_string(p.p_type) + ") covers bytes [" +
                   std::to_string(p.p_offset) + ", +" + std::to_string(p.p_filesz) + ") past the end of the file (" +
                   std::to_string(size) + " bytes; truncated?)");
      if (p.p_type == PT_LOAD && p.p_filesz > p.p_memsz) return bad("program header " + std::to_string(i) + " has p_filesz > p_memsz");
    }
    if (!any_load) return bad("no loadable segment");
    return Status();
  });
}

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
    // Trust model (docs/design/module-trust.md): loading a module runs its
    // code, so only trusted paths may be loaded. What is checked here is
    // that the file is a complete shared object for this machine, so that a
    // truncated or foreign file is a status rather than a SIGBUS in dlopen.
    if (Status s = validate_elf_file(p); !s.ok()) return s;
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
    if (v < common::kOldestCompiledEntryAbiVersion || v > common::kCompiledEntryAbiVersion)
      return incompatible_module(path + " was built for module ABI version " + std::to_string(v) + "; this runtime loads versions " +
                                 std::to_string(common::kOldestCompiledEntryAbiVersion) + " to " + std::to_string(common::kCompiledEntryAbiVersion) +
                                 " (rebuild it with a matching shapemlc)");
    const char* text = manifest();
    if (!text) return invalid_argument(path + ": shapeml_module_manifest() returned NULL");
    prov->manifest_ = text;
    prov->code_abi_ = v;
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
