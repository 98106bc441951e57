// Files from and to the outside, opened the one safe way.
//
// Reading: open_regular_file opens with O_NONBLOCK (a FIFO or a device
// would otherwise block the caller forever in open() or read()), then
// requires a regular file with fstat. Every reader of outside files (.npy,
// .npz, module .so) goes through it.
//
// Writing: write_file_atomic writes the bytes to a new temporary file beside
// the destination and renames it into place, so a failed write never leaves a
// half-written destination behind and never removes a file the call did not
// create (it only ever unlinks its own temporary). A destination that exists
// and is not a regular file (a directory, a device node, a FIFO, a socket) is
// refused untouched. See docs/design/atomic-writes.md.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace shapeml::runtime {

/// An open file descriptor of a regular file and its size. NOT_FOUND when
/// `path` does not exist, IO_ERROR when it is not a regular file (a
/// directory, FIFO, device: the message says which) or cannot be opened. The descriptor is blocking again
/// (O_NONBLOCK cleared) and close-on-exec; the caller closes it.
struct RegularFile {
  int fd = -1;
  uint64_t size = 0;
};
Result<RegularFile> open_regular_file(const std::string& path, const char* what);

/// Writes `size` bytes at `data` to `path` atomically (temp file + rename).
/// IO_ERROR when the directory is not writable, the write fails, or `path`
/// names an existing non-regular file (left untouched). The
/// file gets mode 0666 & ~umask, or the mode of the file it replaces.
Status write_file_atomic(const std::string& path, const void* data, size_t size);

}  // namespace shapeml::runtime
