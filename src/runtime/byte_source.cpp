#include "runtime/byte_source.h"

#include "runtime/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shapeml::runtime {
namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(std::string path, int fd, uint64_t size) : ByteSource(std::move(path)), fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, size_t n, void* dst) const override {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        return io_error(name() + ": read failed: " + std::strerror(errno));
      }
      if (got == 0) return io_error(name() + ": unexpected end of file (was it truncated while being read?)");
      p += got;
      n -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
    return {};
  }

 private:
  int fd_;
  uint64_t size_;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string name, std::vector<uint8_t> owned, const void* data, size_t size)
      : ByteSource(std::move(name)), owned_(std::move(owned)),
        data_(owned_.empty() ? static_cast<const uint8_t*>(data) : owned_.data()),
        size_(owned_.empty() ? size : owned_.size()) {}
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, size_t n, void* dst) const override {
    if (offset > size_ || n > size_ - offset) return io_error(name() + ": read past the end");
    if (n) std::memcpy(dst, data_ + offset, n);
    return {};
  }

 private:
  std::vector<uint8_t> owned_;
  const uint8_t* data_;
  size_t size_;
};

class WindowSource final : public ByteSource {
 public:
  WindowSource(std::string name, const ByteSource& parent, uint64_t offset, uint64_t size)
      : ByteSource(std::move(name)), parent_(parent), offset_(offset), size_(size) {}
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, size_t n, void* dst) const override {
    if (offset > size_ || n > size_ - offset) return io_error(name() + ": read past the end");
    return parent_.read(offset_ + offset, n, dst);
  }

 private:
  const ByteSource& parent_;
  uint64_t offset_, size_;
};

}  // namespace

Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path) {
  return guarded("open_file_source", [&]() -> Result<std::unique_ptr<ByteSource>> {
    auto f = open_regular_file(path, "input file");
    if (!f) return f.status();
    int fd = f->fd;
    try {
      return std::unique_ptr<ByteSource>(new FileSource(path, fd, f->size));
    } catch (...) {
      ::close(fd);
      throw;
    }
  });
}

std::unique_ptr<ByteSource> memory_source(std::string name, std::vector<uint8_t> bytes) {
  if (bytes.empty()) return std::make_unique<MemorySource>(std::move(name), std::vector<uint8_t>{}, nullptr, 0);
  return std::make_unique<MemorySource>(std::move(name), std::move(bytes), nullptr, 0);
}

std::unique_ptr<ByteSource> view_source(std::string name, const void* data, size_t size) {
  return std::make_unique<MemorySource>(std::move(name), std::vector<uint8_t>{}, data, size);
}

std::unique_ptr<ByteSource> window_source(std::string name, const ByteSource& parent, uint64_t offset, uint64_t size) {
  return std::make_unique<WindowSource>(std::move(name), parent, offset, size);
}

}  // namespace shapeml::runtime
