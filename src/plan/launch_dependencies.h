// Which launches of a plan must wait for which, from the bytes they touch
// (docs/design/cuda-graphs.md, "Branches"). A CUDA graph runs nodes with no
// path between them side by side; the graph replay of a plan gives each
// launch exactly the edges this computes, so launches that share no bytes
// (RMSNorm and the weight concatenation, the gate and up projections) overlap.
//
// The analysis works on the addresses of one call (the graph is captured per
// set of buffer addresses), so caller buffers that alias, views into other
// slots and workspace temporaries that reuse each other's bytes are all seen
// as they are: launch j depends on an earlier launch i when i writes bytes j
// reads or writes (read after write, write after write), or reads bytes j
// writes (write after read). The edges are then reduced transitively: an
// edge i -> j is dropped when j already depends on some k that depends on i,
// so the graph has no redundant edges.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace shapeml::plan {

/// Bytes [begin, end) of one address space (device pointers as integers).
struct ByteRange {
  uintptr_t begin = 0, end = 0;
};

/// What one launch reads and writes.
struct LaunchAccess {
  std::vector<ByteRange> reads, writes;
};

/// For every launch, the earlier launches it waits for directly (ascending,
/// transitively reduced). Empty ranges touch nothing.
std::vector<std::vector<size_t>> launch_dependencies(const std::vector<LaunchAccess>& launches);

}  // namespace shapeml::plan
