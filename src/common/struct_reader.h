// The one reader of the C ABI's `struct_size`-versioned structs (options
// structs, the memory-resource vtable, output structs).
//
// A caller compiled against header version V passes sizeof(T) of version V.
// The library accepts exactly:
//   - a size that ends at a field boundary of T (the end of some field) or
//     equals sizeof T of a published version (the end of its last field plus
//     tail padding: listed explicitly by the caller of this reader), or
//   - any size >= sizeof(T) (a newer caller: the fields the library does not
//     know are ignored).
// Anything else — 0, a size inside the first field, or a size that ends
// inside a field (12 for a struct whose second field is a pointer: half a
// pointer) — is rejected, so the library never copies part of a field and
// then calls or dereferences it (issue 8). Fields the caller did not pass keep
// the defaults the library put into `out` before reading.
//
// Header-only and dependency-free: used by src/runtime (the memory-resource
// vtable, statistics) and src/capi (every options struct).
#pragma once
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <string>

namespace shapeml::common {

/// The end offset of field `f` of struct `T`: offsetof + sizeof.
#define SHAPEML_FIELD_END(T, f) (offsetof(T, f) + sizeof(((T*)nullptr)->f))

/// Whether `size` is a size the library accepts for a struct whose field end
/// offsets (and published version sizes) are `field_ends` (any order) and whose current size is `known`.
inline bool acceptable_struct_size(size_t size, size_t known, std::initializer_list<size_t> field_ends) {
  if (size >= known) return true;
  for (size_t e : field_ends)
    if (size == e) return true;
  return false;
}

/// "12 (accepted: 8, 16, 20, 24 or more)" for messages.
inline std::string accepted_sizes_text(size_t size, size_t known, std::initializer_list<size_t> field_ends) {
  std::string s = std::to_string(size) + " (accepted: ";
  bool first = true;
  for (size_t e : field_ends) {
    if (e >= known) continue;
    s += (first ? "" : ", ") + std::to_string(e);
    first = false;
  }
  return s + (first ? "" : " or ") + std::to_string(known) + " or more; set it to sizeof the struct)";
}

/// Copies min(in.struct_size, sizeof(T)) bytes of `in` over `out` (which
/// holds the defaults) when the size is acceptable; returns false (and leaves
/// `out` alone) otherwise. `field_ends` must list the end of every field of T and sizeof of
/// every published version of T.
/// `out.struct_size` is set to sizeof(T) afterwards.
template <class T>
bool read_versioned(const T& in, T& out, std::initializer_list<size_t> field_ends) {
  size_t n = in.struct_size;
  if (!acceptable_struct_size(n, sizeof(T), field_ends) || n < sizeof(size_t)) return false;
  std::memcpy(static_cast<void*>(&out), &in, n < sizeof(T) ? n : sizeof(T));
  out.struct_size = sizeof(T);
  return true;
}

/// Writes min(out->struct_size, sizeof(T)) bytes of `full` into `*out`,
/// keeping the caller's struct_size, when that size is acceptable.
template <class T>
bool write_versioned(const T& full, T* out, std::initializer_list<size_t> field_ends) {
  size_t n = out->struct_size;
  if (!acceptable_struct_size(n, sizeof(T), field_ends) || n < sizeof(size_t)) return false;
  size_t m = n < sizeof(T) ? n : sizeof(T);
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t), reinterpret_cast<const char*>(&full) + sizeof(size_t), m - sizeof(size_t));
  return true;
}

}  // namespace shapeml::common
