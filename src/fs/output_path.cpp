#include "fs/output_path.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace shapeml::fs {
namespace {

constexpr size_t kNameMax = 255;
constexpr size_t kRandom = 6;  // mkostemp's XXXXXX, LLVM's %%%%%%

void split(const std::string& path, OutputTarget& t) {
  size_t slash = path.rfind('/');
  t.path = path;
  t.dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  t.base = slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string stem_of(const std::string& base) {
  // "." + base + ".tmp." + pid (up to 10 digits) + "." + 6 random, and room
  // for a writer's own temporary of the temporary (LLD appends
  // ".tmp%%%%%%%" to its output's name)
  const size_t fixed = 1 + 5 + 10 + 1 + kRandom + 16;
  if (base.size() + fixed <= kNameMax) return "." + base;
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the whole name
  for (unsigned char c : base) h = (h ^ c) * 1099511628211ull;
  char hex[20];
  std::snprintf(hex, sizeof hex, "~%016llx", static_cast<unsigned long long>(h));
  return "." + base.substr(0, kNameMax - fixed - 17) + hex;
}

}  // namespace

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

bool resolve_output(const std::string& path, OutputTarget& out, std::string& error) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
    if (hops == 40) {
      error = "is a symbolic link loop (more than 40 links); refusing to write through it (left untouched)";
      return false;
    }
    std::vector<char> buf(static_cast<size_t>(st.st_size > 0 ? st.st_size : 255) + 1);
    ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n < 0 || static_cast<size_t>(n) >= buf.size()) break;
    std::string target(buf.data(), static_cast<size_t>(n));
    if (target.empty()) break;
    if (target[0] != '/') {
      size_t slash = p.rfind('/');
      if (slash != std::string::npos) target = p.substr(0, slash + 1) + target;
    }
    p = target;
  }
  split(p, out);
  if (out.base.empty() || out.base == "." || out.base == "..") {
    error = "names a directory, not a file";
    return false;
  }
  struct stat st;
  if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    error = std::string("is ") + file_kind(st.st_mode) + (p == path ? "" : " (through a symbolic link)") + "; refusing to write over it (left untouched)";
    return false;
  }
  return true;
}

std::string temporary_prefix(const OutputTarget& t) { return stem_of(t.base) + ".tmp." + std::to_string(::getpid()) + "."; }

void remove_stale_temporaries(const OutputTarget& t) {
  const std::string stem = stem_of(t.base) + ".tmp.";
  DIR* d = ::opendir(t.dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= stem.size() + 1 + kRandom || name.compare(0, stem.size(), stem) != 0) continue;
    // stem PID "." RANDOM
    const std::string rest = name.substr(stem.size());
    size_t dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || rest.size() - dot - 1 != kRandom) continue;
    long pid = 0;
    bool digits = true;
    for (size_t i = 0; i < dot; ++i) {
      if (rest[i] < '0' || rest[i] > '9' || pid > 1000000000L) digits = false;
      else pid = pid * 10 + (rest[i] - '0');
    }
    if (!digits || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : stale) {
    std::string p = (t.dir == "/" ? "/" : t.dir + "/") + name;
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(p.c_str());
  }
}

}  // namespace shapeml::fs
