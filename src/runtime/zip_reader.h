// Just enough of the ZIP format for .npz files: the central directory (with
// ZIP64), stored and deflated entries (zlib), CRC-32 checks. Multi-disk,
// encrypted, and other compression methods are rejected with a message.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/byte_source.h"
#include "runtime/status.h"

namespace shapeml::runtime {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
  /// Where this entry's bytes must end (the next entry's local header or the
  /// central directory; 0: unchecked). A local header whose name and extra
  /// field push the data past it is refused: entries never share bytes.
  uint64_t data_limit = 0;
};

/// The entries of the archive `src`, in central-directory order.
Result<std::vector<ZipEntry>> list_zip_entries(const ByteSource& src);

/// The uncompressed bytes of `e` as a source named "<archive>: entry 'NAME'".
/// A stored entry is a window on `src` (no copy; `src` must outlive it); a
/// deflated one is inflated into memory. The CRC-32 is checked either way.
Result<std::unique_ptr<ByteSource>> open_zip_entry(const ByteSource& src, const ZipEntry& e);

/// Writes a ZIP archive of stored (uncompressed) entries, as np.savez does.
/// Archives past 4 GiB (needing ZIP64) are not written (UNIMPLEMENTED).
struct ZipWriteEntry {
  std::string name;
  std::vector<uint8_t> data;
};
Status write_zip_stored(const std::string& path, const std::vector<ZipWriteEntry>& entries);

}  // namespace shapeml::runtime
