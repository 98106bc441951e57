#include "runtime/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "common/cpu_count.h"

namespace shapeml::runtime {
namespace {

thread_local int32_t t_call_threads = 0;  // 0: default_num_threads()
thread_local bool t_in_loop = false;      // inside a parallel loop: nested loops run serially

std::atomic<HostParallelFor> g_host_fn{nullptr};
std::atomic<void*> g_host_user{nullptr};

// A persistent pool of default_num_threads() - 1 workers; the calling thread
// is the last one. One loop at a time: a second host thread that finds the
// pool busy runs its loop itself rather than wait.
class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    published_.fetch_add(1, std::memory_order_release);
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int size() const { return static_cast<int>(threads_.size()) + 1; }

  // False when the pool is busy with another loop.
  bool run(int64_t count, int threads, ParallelTask task, void* closure) {
    std::unique_lock<std::mutex> busy(run_mu_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    const int helpers = std::min(threads, size()) - 1;
    // A few chunks a thread, taken as threads come free: a worker that wakes
    // late costs a chunk, not a share.
    const int64_t chunks = std::min<int64_t>(count, static_cast<int64_t>(helpers + 1) * 4);
    {
      std::lock_guard<std::mutex> l(mu_);
      task_ = task, closure_ = closure, count_ = count, chunks_ = chunks, helpers_ = helpers;
      joined_ = 0, open_ = true;
      next_.store(0, std::memory_order_relaxed);
      done_.store(0, std::memory_order_relaxed);
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    cv_.notify_all();
    drain();
    while (done_.load(std::memory_order_acquire) < chunks) std::this_thread::yield();
    // No helper joins once the loop is closed, and every one that did has
    // left drain() before the next loop writes the fields it reads.
    {
      std::lock_guard<std::mutex> l(mu_);
      open_ = false;
    }
    while (inside_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    return true;
  }

 private:
  void drain() {
    for (;;) {
      const int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks_) return;
      task_(closure_, count_ * c / chunks_, count_ * (c + 1) / chunks_);
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  void work() {
    t_in_loop = true;
    uint64_t seen = 0;
    for (;;) {
      // Spin a little before sleeping: the loops of one call come a few
      // microseconds apart, and a futex wake-up can cost more than a loop.
      for (int i = 0; i < kSpins && published_.load(std::memory_order_acquire) == seen; ++i) pause();
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!open_ || joined_ >= helpers_) continue;  // done already, or it asked for fewer threads
      ++joined_;
      inside_.fetch_add(1, std::memory_order_acq_rel);
      l.unlock();
      drain();
      inside_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  static constexpr int kSpins = 1 << 14;
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }

  std::vector<std::thread> threads_;
  std::mutex run_mu_;  // held by the host thread whose loop runs
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, for the spinning workers
  bool open_ = false;  // helpers may still join the loop
  int joined_ = 0;     // helpers that did
  // The loop now running (written under mu_ before the generation changes).
  ParallelTask task_ = nullptr;
  void* closure_ = nullptr;
  int64_t count_ = 0, chunks_ = 0;
  int helpers_ = 0;
  std::atomic<int64_t> next_{0}, done_{0};
  std::atomic<int> inside_{0};
};

Pool& pool() {
  // Started on the first parallel loop; joined when the library unloads.
  static Pool p(std::max(1, default_num_threads()) - 1);
  return p;
}

// What generated code calls through its hook table.
void hooked_parallel_for(int64_t count, ParallelTask task, void* closure) { parallel_for(count, task, closure); }

}  // namespace

int32_t default_num_threads() {
  static const int32_t n = [] {
    if (const char* s = std::getenv("SHAPEML_NUM_THREADS")) {
      char* end = nullptr;
      const long v = std::strtol(s, &end, 10);
      if (end != s && *end == '\0' && v > 0) return static_cast<int32_t>(std::min<long>(v, 1024));
    }
    return static_cast<int32_t>(common::cpus_available());
  }();
  return n;
}

void install_parallel_hooks(void* table) {
  // As install_temp_hooks: atomic, and only when different.
  void** t = static_cast<void**>(table);
  void* want = reinterpret_cast<void*>(&hooked_parallel_for);
  if (__atomic_load_n(&t[0], __ATOMIC_ACQUIRE) != want) __atomic_store_n(&t[0], want, __ATOMIC_RELEASE);
}

void set_host_parallel_for(HostParallelFor fn, void* user) {
  g_host_user.store(user, std::memory_order_relaxed);
  g_host_fn.store(fn, std::memory_order_release);
}

CallThreads::CallThreads(int32_t threads) : outer_(t_call_threads) { t_call_threads = threads; }
CallThreads::~CallThreads() { t_call_threads = outer_; }

void parallel_for(int64_t count, ParallelTask task, void* closure) {
  if (count <= 0) return;
  const int32_t threads = t_call_threads > 0 ? t_call_threads : default_num_threads();
  if (threads <= 1 || count == 1 || t_in_loop) {
    task(closure, 0, count);
    return;
  }
  struct InLoop {
    InLoop() { t_in_loop = true; }
    ~InLoop() { t_in_loop = false; }
  } in_loop;
  if (HostParallelFor host = g_host_fn.load(std::memory_order_acquire)) {
    host(g_host_user.load(std::memory_order_relaxed), count, threads, task, closure);
    return;
  }
  if (!pool().run(count, threads, task, closure)) task(closure, 0, count);
}

}  // namespace shapeml::runtime
