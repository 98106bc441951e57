#include "jit/jit_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "obs/log.h"
#include "runtime/file_io.h"

namespace shapeml::jit {
namespace {

constexpr const char* kMagic = "shapeml-jit-cache 1 ";  // then the key and a newline, then the entry

// mkdir -p with mode 0700 for the directories it creates.
bool make_dirs(const std::string& dir) {
  if (dir.empty()) return false;
  struct stat st{};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash))) return false;
  return ::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST;
}

class DiskCache final : public lower::cpu::ObjectCache {
 public:
  DiskCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  std::optional<std::string> load(const std::string& key) override {
    std::string path = file_of(key);
    auto f = runtime::open_regular_file(path, "JIT cache entry");
    if (!f.ok()) return std::nullopt;
    std::string bytes(f.value().size, '\0');
    size_t got = 0;
    while (got < bytes.size()) {
      ssize_t n = ::read(f.value().fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(f.value().fd);
    std::string head = std::string(kMagic) + key + "\n";
    if (got != bytes.size() || bytes.compare(0, head.size(), head) != 0) {
      SHAPEML_LOG_AT(Codegen, Debug, "JIT cache entry ignored (truncated or foreign)", {"path", path});
      return std::nullopt;
    }
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recently used: evicted last
    SHAPEML_LOG_AT(Codegen, Debug, "JIT cache hit", {"path", path});
    return bytes.substr(head.size());
  }

  void store(const std::string& key, std::string_view entry) override {
    std::string bytes = std::string(kMagic) + key + "\n";
    bytes.append(entry.data(), entry.size());
    if (bytes.size() > max_bytes_) return;
    std::lock_guard<std::mutex> l(mu_);
    runtime::Status s = runtime::write_file_atomic(file_of(key), bytes.data(), bytes.size());
    if (!s.ok()) {
      SHAPEML_LOG_AT(Codegen, Debug, "JIT cache store failed", {"error", s.message()});
      return;
    }
    evict();
  }

 private:
  std::string file_of(const std::string& key) const { return dir_ + "/" + key + ".jit"; }

  // Past the bound, the least recently used entries (by modification time,
  // which a hit refreshes) go until 3/4 of it is left.
  void evict() {
    DIR* d = ::opendir(dir_.c_str());
    if (!d) return;
    struct Entry {
      std::string path;
      int64_t mtime;
      uint64_t size;
    };
    std::vector<Entry> entries;
    uint64_t total = 0;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.size() < 5 || name.compare(name.size() - 4, 4, ".jit") != 0) continue;
      std::string path = dir_ + "/" + name;
      struct stat st{};
      if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      entries.push_back({path, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, static_cast<uint64_t>(st.st_size)});
      total += static_cast<uint64_t>(st.st_size);
    }
    ::closedir(d);
    if (total <= max_bytes_) return;
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
    for (const Entry& e : entries) {
      if (total <= max_bytes_ / 4 * 3) break;
      if (::unlink(e.path.c_str()) == 0) total -= e.size;
    }
  }

  std::string dir_;
  uint64_t max_bytes_;
  std::mutex mu_;
};

}  // namespace

std::shared_ptr<lower::cpu::ObjectCache> make_disk_cache(const std::string& dir, uint64_t max_bytes) {
  if (!make_dirs(dir) || ::access(dir.c_str(), W_OK | X_OK) != 0) {
    SHAPEML_LOG_AT(Codegen, Debug, "JIT cache off: the directory cannot be created or written", {"dir", dir});
    return nullptr;
  }
  return std::make_shared<DiskCache>(dir, max_bytes);
}

std::shared_ptr<lower::cpu::ObjectCache> jit_cache_from_environment() {
  const char* off = std::getenv("SHAPEML_JIT_CACHE");
  if (off && (std::strcmp(off, "off") == 0 || std::strcmp(off, "0") == 0)) return nullptr;
  std::string dir;
  if (const char* d = std::getenv("SHAPEML_JIT_CACHE_DIR"); d && *d) {
    dir = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') {
    dir = std::string(x) + "/shapeml/jit";
  } else if (const char* h = std::getenv("HOME"); h && *h == '/') {
    dir = std::string(h) + "/.cache/shapeml/jit";
  } else {
    return nullptr;
  }
  double max_mb = 1024;
  if (const char* m = std::getenv("SHAPEML_JIT_CACHE_MAX_MB"); m && *m) {
    char* end = nullptr;
    double v = std::strtod(m, &end);
    if (end && *end == '\0' && v > 0 && v < 1e9) max_mb = v;
  }
  return make_disk_cache(dir, static_cast<uint64_t>(max_mb * (1 << 20)));
}

}  // namespace shapeml::jit
