// The parallel loops of generated CPU code (docs/design/cpu-threads.md).
//
// The CPU back end outlines the outermost parallel loop of each large enough
// loop nest into a task over a range of its iterations and calls it through
// a one-entry table every specialization exports as `SYMBOL_parallel_hooks`
// (common/compiled_entry.h): empty, the code runs the whole range itself;
// filled by the runtime when it resolves the symbol, the code hands the loop
// to parallel_for() below, which splits it over the runtime's thread pool,
// or over the host's own parallel-for when one is installed
// (shapeml_set_parallel_for()).
//
// Iterations of one loop write disjoint elements and nothing is reduced
// across them, so a result does not depend on the thread count or on how the
// range was split: it is bitwise the same on 1 thread and on 64.
#pragma once
#include <cstdint>

namespace shapeml::runtime {

/// Iterations [begin, end) of an outlined loop.
using ParallelTask = void (*)(void* closure, int64_t begin, int64_t end);

/// A host's parallel-for: runs `task` over disjoint ranges that cover
/// [0, count), on at most `max_threads` threads, and returns when every range
/// is done (shapeml.h, shapeml_parallel_for_fn).
using HostParallelFor = void (*)(void* user, int64_t count, int32_t max_threads, ParallelTask task, void* closure);

/// Writes the runtime's parallel_for into a specialization's hook table.
void install_parallel_hooks(void* table);

/// The thread count of a call that names none: SHAPEML_NUM_THREADS when it is
/// set to a positive number, else the CPUs this process may run on.
int32_t default_num_threads();

/// Replaces the runtime's pool by `fn` for every later parallel loop of this
/// process (NULL: the pool again). Loops already running finish where they
/// started.
void set_host_parallel_for(HostParallelFor fn, void* user);

/// The threads the parallel loops of calls on this thread may use, while it
/// lives (0: default_num_threads()). Nested scopes restore the outer count.
class CallThreads {
 public:
  explicit CallThreads(int32_t threads);
  ~CallThreads();
  CallThreads(const CallThreads&) = delete;
  CallThreads& operator=(const CallThreads&) = delete;

 private:
  int32_t outer_;
};

/// Runs `task` over [0, count) with the threads of this thread's call: on the
/// calling thread alone when that is 1, when called from inside a parallel
/// loop (a worker, or a host thread whose loop is running), or when the pool
/// is busy with another host thread's loop.
void parallel_for(int64_t count, ParallelTask task, void* closure);

}  // namespace shapeml::runtime
