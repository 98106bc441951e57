// Where an atomic write goes (docs/design/atomic-writes.md), shared by the
// runtime's save_npy/trace files and the compiler's AOT .so: the file a
// write to PATH replaces (symbolic links followed, dangling ones too, so
// the link stays), a temporary name beside it that fits NAME_MAX however
// long the file's name, and the temporaries of writers that were killed.
#pragma once
#include <sys/types.h>

#include <string>

namespace shapeml::fs {

/// What a file of mode `m` is, for messages: "a directory", "a character
/// device", "a FIFO (named pipe)", ... ("not a regular file" otherwise).
const char* file_kind(mode_t m);

/// The file a write replaces: `path` after its symbolic links, split.
struct OutputTarget {
  std::string path;  // the file itself (it need not exist)
  std::string dir;   // its directory ("." for a bare name)
  std::string base;  // its name
};

/// Follows the links of `path` (at most 40; a dangling link's target is
/// where the file goes). False with `error` ("is a symbolic link loop", "is a
/// character device; refusing to write over it") when the destination is
/// not, or cannot be, a regular file; `path` is then left untouched.
bool resolve_output(const std::string& path, OutputTarget& out, std::string& error);

/// The prefix of this process's temporaries for `t` in its directory:
/// ".NAME.tmp.PID." (NAME shortened, with a hash of it, when the temporary
/// would not fit in 255 bytes with 16 to spare); a random suffix of 6
/// characters follows.
std::string temporary_prefix(const OutputTarget& t);

/// Removes the temporaries of `t` whose writer process no longer runs (a
/// killed save or build): only files named by temporary_prefix() for a PID
/// that does not exist.
void remove_stale_temporaries(const OutputTarget& t);

}  // namespace shapeml::fs
