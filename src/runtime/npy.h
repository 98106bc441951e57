// NumPy .npy and .npz files.
//
// Read: .npy format versions 1.0, 2.0 and 3.0; dtypes '<f4' '<f8' '<i4' '<i8'
// '|b1' (also '=' for the native little-endian order); C order only.
// .npz: stored (np.savez) and deflated (np.savez_compressed) entries.
// Write: .npy version 1.0 (2.0 when the header needs it), and .npz with stored
// entries. bf16 has no NumPy dtype and is rejected on write.
//
// Errors name the file (and the .npz entry) and the problem:
//   NOT_FOUND        the file does not exist
//   IO_ERROR         it cannot be opened, read or written
//   INVALID_ARGUMENT malformed or truncated content, a tensor that cannot
//                    be written (bf16, not on the host)
//   UNIMPLEMENTED    valid NumPy files this runtime does not read: Fortran
//                    order, big-endian, other dtypes, other zip compressions
//   RESOURCE_EXHAUSTED a .npz whose deflated entries expand to more than
//                    kMaxNpzInflatedBytes together (a zip bomb)
//
// Hostile files: the file size is checked before anything is allocated for
// the data; a FIFO or device is refused without blocking (file_io.h); .npz
// entries that overlap, names with NUL bytes and empty names are refused.
#pragma once
#include <string>
#include <vector>

#include "runtime/byte_source.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace shapeml::runtime {

/// The most bytes the deflated entries of one .npz may inflate to, together.
/// Stored entries (np.savez) are not counted: their bytes are in the file.
inline constexpr uint64_t kMaxNpzInflatedBytes = uint64_t{4} << 30;

/// Reads one .npy file into a new tensor from `mr` (NULL: host).
Result<TensorRef> read_npy(const std::string& path, const MemoryResourcePtr& mr = nullptr);
/// Reads a .npy image held in `src` (whose name is used in messages).
Result<TensorRef> read_npy(const ByteSource& src, const MemoryResourcePtr& mr = nullptr);

/// The .npy image of `t` (host, any strides: written in C order).
Result<std::vector<uint8_t>> encode_npy(const Tensor& t);
/// Writes `t` to `path` atomically (a temporary file beside it, renamed into
/// place): on failure the destination is untouched and nothing the call did
/// not create is removed. An existing non-regular `path` is refused.
Status write_npy(const std::string& path, const Tensor& t);

struct NpzEntry {
  std::string name;  // as np.load's keys: the entry name without ".npy"
  TensorRef tensor;
};

/// Every array of a .npz, in archive order. Entries whose names do not end
/// in ".npy" are rejected (np.savez writes none).
Result<std::vector<NpzEntry>> read_npz(const std::string& path, const MemoryResourcePtr& mr = nullptr);
/// The same for an archive held in `src` (whose name is used in messages).
Result<std::vector<NpzEntry>> read_npz(const ByteSource& src, const MemoryResourcePtr& mr = nullptr);
/// Writes a .npz with stored entries ("NAME.npy"), like np.savez.
Status write_npz(const std::string& path, const std::vector<NpzEntry>& entries);

}  // namespace shapeml::runtime
