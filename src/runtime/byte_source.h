// Random-access bytes with a name for messages: a file read with pread, a
// memory buffer, or a window of another source (an entry of a zip archive).
// The .npy and .npz readers work on these, so that a stored .npz entry is
// read straight from the file into the tensor, without an extra copy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace shapeml::runtime {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Used in every message: a path, or "path: entry 'x.npy'".
  const std::string& name() const { return name_; }
  virtual uint64_t size() const = 0;
  /// Reads exactly `n` bytes at `offset`. Callers check bounds against
  /// size() first to say what is missing; a short read here is an I/O error.
  virtual Status read(uint64_t offset, size_t n, void* dst) const = 0;

 protected:
  explicit ByteSource(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

/// Opens `path` for reading without blocking (a FIFO is refused, not waited on;
/// runtime/file_io.h). NOT_FOUND when it does not exist, IO_ERROR when it
/// cannot be opened or is not a regular file.
Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path);
/// Owns `bytes`.
std::unique_ptr<ByteSource> memory_source(std::string name, std::vector<uint8_t> bytes);
/// Borrows `size` bytes of `data` (which must outlive the source).
std::unique_ptr<ByteSource> view_source(std::string name, const void* data, size_t size);
/// The window [offset, offset + size) of `parent` (which must outlive it).
std::unique_ptr<ByteSource> window_source(std::string name, const ByteSource& parent, uint64_t offset, uint64_t size);

}  // namespace shapeml::runtime
