#include "runtime/file_io.h"

#include "fs/output_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace shapeml::runtime {
namespace {

// Only the calling thread's umask matters, and reading it means setting it;
// umask is process-wide, so read it once (the race is benign: the value is
// restored immediately).
mode_t process_umask() {
  static const mode_t m = [] {
    mode_t u = ::umask(022);
    ::umask(u);
    return u;
  }();
  return m;
}

}  // namespace

Result<RegularFile> open_regular_file(const std::string& path, const char* what) {
  return guarded("open_regular_file", [&]() -> Result<RegularFile> {
    // O_NONBLOCK: opening a FIFO for reading blocks until a writer appears;
    // with O_NONBLOCK it returns at once and fstat below refuses it.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
      int e = errno;
      std::string m = path + ": cannot open " + what + ": " + std::strerror(e);
      return e == ENOENT ? not_found(m) : io_error(m);
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int e = errno;
      ::close(fd);
      return io_error(path + ": cannot stat " + what + ": " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return io_error(path + ": is " + fs::file_kind(st.st_mode) + ", not a regular file; a " + what + " must be a regular file");
    }
    int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return RegularFile{fd, static_cast<uint64_t>(st.st_size)};
  });
}

Status write_file_atomic(const std::string& path_in, const void* data, size_t size) {
  return guarded("write_file_atomic", [&]() -> Status {
    if (path_in.empty()) return invalid_argument("the output path is empty");
    // The file the write replaces: links followed, dangling ones too (the
    // link stays and its target is created), a loop or a device refused.
    fs::OutputTarget target;
    std::string why;
    if (!fs::resolve_output(path_in, target, why))
      return why.rfind("names a directory", 0) == 0 ? invalid_argument(path_in + ": " + why) : io_error(path_in + ": " + why);
    const std::string& path = target.path;
    const std::string& dir = target.dir;
    mode_t mode = 0666 & ~process_umask();
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
    // Temporaries of writers that were killed go first; ours carry our PID.
    fs::remove_stale_temporaries(target);
    std::string tmpl = (dir == "/" ? "/" : dir + "/") + fs::temporary_prefix(target) + "XXXXXX";
    int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      return io_error(path_in + ": cannot create a temporary file in " + dir + " (" + std::strerror(e) +
                      "); the destination was left untouched");
    }
    // From here on, only the temporary (which this call created) is ever removed.
    auto fail = [&](const char* step, int e) {
      ::close(fd);
      ::unlink(tmpl.c_str());
      return io_error(path_in + ": " + step + " failed: " + std::strerror(e) + "; the destination was left untouched");
    };
    const char* p = static_cast<const char*>(data);
    size_t left = size;
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail("write", errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (::fchmod(fd, mode) != 0) return fail("chmod", errno);
    if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) return fail("fsync", errno);
    if (::close(fd) != 0) {
      int e = errno;
      ::unlink(tmpl.c_str());
      return io_error(path_in + ": close failed: " + std::strerror(e) + "; the destination was left untouched");
    }
    if (::rename(tmpl.c_str(), path.c_str()) != 0) {
      int e = errno;
      ::unlink(tmpl.c_str());
      return e == EISDIR ? io_error(path_in + ": is a directory; refusing to write over it (left untouched)")
                         : io_error(path_in + ": cannot rename the temporary file into place: " + std::strerror(e) +
                                    "; the destination was left untouched");
    }
    return Status();
  });
}

}  // namespace shapeml::runtime
