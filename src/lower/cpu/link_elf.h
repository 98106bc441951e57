// In-process link of a relocatable object into an ELF shared object with
// LLD (liblld-19-dev), so that an AOT build needs no system C compiler,
// linker, crt files or libc6-dev. Decision and details:
// docs/design/aot-linking.md.
//
// Errors are returned (false plus a message that names what failed and, for
// a missing file, how to provide it); LLD's own diagnostics are captured into
// that message. Nothing here prints, throws, aborts or exits.
#pragma once
#include <string>

namespace shapeml::lower::cpu::detail {

/// Links `object` (a PIC ELF relocatable object for the host) into the
/// shared object `out` (a path the caller owns; LLD replaces it):
/// `ld.lld -shared -z defs --as-needed <libm.so.6> <libc.so.6>`, where libm and
/// libc are the ones loaded in this process, so the result records DT_NEEDED
/// on the libc/libm it actually uses and nothing else, and an undefined
/// symbol that neither provides is a link error. `display_name` names the
/// output in messages. Thread-safe: LLD is not reentrant, so calls are
/// serialized by a process-wide mutex.
bool link_shared_object(const std::string& object, const std::string& out, const std::string& display_name, std::string& error);

}  // namespace shapeml::lower::cpu::detail
