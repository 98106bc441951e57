#include "runtime/zip_reader.h"

#include <zlib.h>

#include "runtime/file_io.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace shapeml::runtime {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr size_t kEocdSize = 22, kCentralSize = 46, kLocalSize = 30, kZip64LocatorSize = 20, kZip64EocdSize = 56;

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t u32(const uint8_t* p) { return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                                        (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24); }
uint64_t u64(const uint8_t* p) { return static_cast<uint64_t>(u32(p)) | (static_cast<uint64_t>(u32(p + 4)) << 32); }
void put16(std::vector<uint8_t>& v, uint16_t x) { v.push_back(x & 0xff); v.push_back(x >> 8); }
void put32(std::vector<uint8_t>& v, uint32_t x) { for (int i = 0; i < 4; ++i) v.push_back((x >> (8 * i)) & 0xff); }

Status malformed(const ByteSource& s, const std::string& what) {
  return invalid_argument(s.name() + ": not a valid .npz (zip) archive: " + what);
}

Status read_at(const ByteSource& s, uint64_t off, size_t n, void* dst, const char* what) {
  if (off > s.size() || n > s.size() - off)
    return malformed(s, std::string(what) + " at offset " + std::to_string(off) + " runs past the end of the file (" +
                            std::to_string(s.size()) + " bytes; truncated?)");
  return s.read(off, n, dst);
}

// Fills 0xFFFFFFFF fields from a ZIP64 extended-information extra field.
Status apply_zip64(const ByteSource& s, const std::string& entry, const std::vector<uint8_t>& extra, bool need_usize,
                   bool need_csize, bool need_offset, ZipEntry& e) {
  size_t i = 0;
  while (i + 4 <= extra.size()) {
    uint16_t id = u16(&extra[i]), len = u16(&extra[i + 2]);
    if (i + 4 + len > extra.size()) break;
    if (id == 0x0001) {
      const uint8_t* p = &extra[i + 4];
      size_t avail = len;
      auto take = [&](uint64_t& field) -> bool {
        if (avail < 8) return false;
        field = u64(p);
        p += 8;
        avail -= 8;
        return true;
      };
      if ((need_usize && !take(e.uncompressed_size)) || (need_csize && !take(e.compressed_size)) ||
          (need_offset && !take(e.local_header_offset)))
        return malformed(s, "entry '" + entry + "': ZIP64 extra field is too short");
      return {};
    }
    i += 4 + len;
  }
  return malformed(s, "entry '" + entry + "': sizes are marked ZIP64 but there is no ZIP64 extra field");
}

}  // namespace

Result<std::vector<ZipEntry>> list_zip_entries(const ByteSource& src) {
  return guarded("list_zip_entries", [&]() -> Result<std::vector<ZipEntry>> {
    uint64_t size = src.size();
    if (size < kEocdSize) return malformed(src, "the file is " + std::to_string(size) + " bytes, too short for a zip archive");
    // The end-of-central-directory record is in the last 22 + 65535 bytes.
    uint64_t tail_len = std::min<uint64_t>(size, kEocdSize + 0xffff);
    std::vector<uint8_t> tail(tail_len);
    if (Status s = src.read(size - tail_len, tail_len, tail.data()); !s.ok()) return s;
    size_t eocd = SIZE_MAX;
    for (size_t i = tail_len - kEocdSize + 1; i-- > 0;)
      if (u32(&tail[i]) == kEocdSig && i + kEocdSize + u16(&tail[i + 20]) <= tail_len) {
        eocd = i;
        break;
      }
    if (eocd == SIZE_MAX)
      return malformed(src, "no end-of-central-directory record (not a zip file, or truncated)");
    const uint8_t* r = &tail[eocd];
    uint64_t eocd_pos = size - tail_len + eocd;
    uint64_t count = u16(r + 10), cd_size = u32(r + 12), cd_offset = u32(r + 16);
    if (u16(r + 4) != 0 || u16(r + 6) != 0) return unimplemented(src.name() + ": multi-disk zip archives are not supported");
    if (count == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff) {
      // ZIP64: the locator sits right before the classic record.
      uint8_t loc[kZip64LocatorSize];
      if (eocd_pos < kZip64LocatorSize) return malformed(src, "ZIP64 locator missing");
      if (Status s = read_at(src, eocd_pos - kZip64LocatorSize, sizeof loc, loc, "ZIP64 locator"); !s.ok()) return s;
      if (u32(loc) != kZip64LocatorSig) return malformed(src, "ZIP64 locator missing");
      uint8_t z[kZip64EocdSize];
      if (Status s = read_at(src, u64(loc + 8), sizeof z, z, "ZIP64 end-of-central-directory record"); !s.ok()) return s;
      if (u32(z) != kZip64EocdSig) return malformed(src, "bad ZIP64 end-of-central-directory signature");
      count = u64(z + 32);
      cd_size = u64(z + 40);
      cd_offset = u64(z + 48);
    }
    if (cd_offset > size || cd_size > size - cd_offset)
      return malformed(src, "central directory (offset " + std::to_string(cd_offset) + ", " + std::to_string(cd_size) +
                                " bytes) lies outside the file (" + std::to_string(size) + " bytes; truncated?)");
    if (count > cd_size / kCentralSize) return malformed(src, "central directory is too small for " + std::to_string(count) + " entries");
    std::vector<uint8_t> cd(cd_size);
    if (Status s = src.read(cd_offset, cd_size, cd.data()); !s.ok()) return s;
    std::vector<ZipEntry> out;
    size_t pos = 0;
    for (uint64_t k = 0; k < count; ++k) {
      if (pos + kCentralSize > cd.size() || u32(&cd[pos]) != kCentralSig)
        return malformed(src, "central directory entry " + std::to_string(k) + " is damaged");
      const uint8_t* h = &cd[pos];
      ZipEntry e;
      e.flags = u16(h + 8);
      e.method = u16(h + 10);
      e.crc32 = u32(h + 16);
      e.compressed_size = u32(h + 20);
      e.uncompressed_size = u32(h + 24);
      size_t name_len = u16(h + 28), extra_len = u16(h + 30), comment_len = u16(h + 32);
      e.local_header_offset = u32(h + 42);
      if (pos + kCentralSize + name_len + extra_len + comment_len > cd.size())
        return malformed(src, "central directory entry " + std::to_string(k) + " runs past the directory");
      e.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name_len);
      std::vector<uint8_t> extra(h + kCentralSize + name_len, h + kCentralSize + name_len + extra_len);
      bool nu = e.uncompressed_size == 0xffffffff, nc = e.compressed_size == 0xffffffff, no = e.local_header_offset == 0xffffffff;
      if (nu || nc || no)
        if (Status s = apply_zip64(src, e.name, extra, nu, nc, no, e); !s.ok()) return s;
      out.push_back(std::move(e));
      pos += kCentralSize + name_len + extra_len + comment_len;
    }
    // Every entry's bytes (local header + data) must lie before the central
    // directory and apart from every other entry's: records that share bytes
    // let a small archive expand into a huge one (a "zip bomb" of fifty
    // records pointing at one deflated entry), and no writer makes them.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) of local header + data
    for (const ZipEntry& e : out) {
      uint64_t end;
      if (__builtin_add_overflow(e.local_header_offset, kLocalSize + e.name.size(), &end) ||
          __builtin_add_overflow(end, e.compressed_size, &end) || end > cd_offset)
        return malformed(src, "entry '" + e.name + "' (offset " + std::to_string(e.local_header_offset) + ", " +
                                  std::to_string(e.compressed_size) + " bytes) runs into the central directory or past the file");
      ranges.push_back({e.local_header_offset, end});
    }
    std::vector<size_t> order(out.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a].first < ranges[b].first; });
    for (size_t k = 1; k < order.size(); ++k)
      if (ranges[order[k]].first < ranges[order[k - 1]].second)
        return malformed(src, "entries '" + out[order[k - 1]].name + "' and '" + out[order[k]].name +
                                  "' overlap (their data share bytes of the file)");
    // Where each entry's bytes must end: the next entry's local header, or
    // the central directory (checked against the local header's real
    // lengths in open_zip_entry).
    for (size_t k = 0; k < order.size(); ++k)
      out[order[k]].data_limit = k + 1 < order.size() ? ranges[order[k + 1]].first : cd_offset;
    return out;
  });
}

Result<std::unique_ptr<ByteSource>> open_zip_entry(const ByteSource& src, const ZipEntry& e) {
  return guarded("open_zip_entry", [&]() -> Result<std::unique_ptr<ByteSource>> {
    std::string ename = src.name() + ": entry '" + e.name + "'";
    if (e.flags & 0x1) return unimplemented(ename + ": encrypted zip entries are not supported");
    if (e.method != 0 && e.method != 8)
      return unimplemented(ename + ": compression method " + std::to_string(e.method) +
                           " is not supported (stored and deflate are; np.savez and np.savez_compressed write those)");
    uint8_t lh[kLocalSize];
    if (Status s = read_at(src, e.local_header_offset, sizeof lh, lh, ("local header of '" + e.name + "'").c_str()); !s.ok()) return s;
    if (u32(lh) != kLocalSig) return malformed(src, "entry '" + e.name + "': bad local header signature");
    uint64_t data = e.local_header_offset + kLocalSize + u16(lh + 26) + u16(lh + 28);
    if (e.data_limit && (data > e.data_limit || e.compressed_size > e.data_limit - data))
      return malformed(src, "entry '" + e.name + "': its data (after a " + std::to_string(u16(lh + 26) + u16(lh + 28)) +
                                "-byte local name and extra field) runs into the next entry or the central directory (overlapping entries)");
    if (data > src.size() || e.compressed_size > src.size() - data)
      return malformed(src, "entry '" + e.name + "': its " + std::to_string(e.compressed_size) + " data bytes run past the end of the file (truncated?)");

    std::unique_ptr<ByteSource> out;
    if (e.method == 0) {
      if (e.compressed_size != e.uncompressed_size)
        return malformed(src, "entry '" + e.name + "': stored entry with different compressed and uncompressed sizes");
      out = window_source(ename, src, data, e.compressed_size);
      // CRC over the stored bytes, streamed.
      uLong crc = crc32(0, nullptr, 0);
      std::vector<uint8_t> buf(std::min<uint64_t>(e.compressed_size, uint64_t{1} << 20));
      for (uint64_t off = 0; off < e.compressed_size;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), e.compressed_size - off));
        if (Status s = src.read(data + off, n, buf.data()); !s.ok()) return s;
        crc = crc32(crc, buf.data(), static_cast<uInt>(n));
        off += n;
      }
      if (static_cast<uint32_t>(crc) != e.crc32) return malformed(src, "entry '" + e.name + "': CRC-32 mismatch (the data is corrupt)");
      return out;
    }
    // Deflate can expand at most ~1032:1; a larger claim is a lie that would
    // make us allocate absurd amounts.
    if (e.uncompressed_size / 1032 > e.compressed_size + 1)
      return malformed(src, "entry '" + e.name + "': claims " + std::to_string(e.uncompressed_size) + " bytes from " +
                                std::to_string(e.compressed_size) + " compressed bytes");
    std::vector<uint8_t> in(e.compressed_size);
    if (Status s = src.read(data, in.size(), in.data()); !s.ok()) return s;
    // One spare byte: output never points at NULL, and a stream that
    // inflates to more than it claims is caught. The buffer grows with what
    // the stream actually produces (doubling, up to the claim), so a small
    // entry that lies about its size allocates what it inflates to, not
    // what it claims.
    const uint64_t cap = e.uncompressed_size + 1;
    std::vector<uint8_t> outbuf(static_cast<size_t>(std::min<uint64_t>(cap, uint64_t{1} << 20)));
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return internal_error(ename + ": inflateInit2 failed");
    zs.next_in = in.data();
    zs.next_out = outbuf.data();
    uint64_t in_left = in.size();
    int rc = Z_OK;
    while (rc == Z_OK) {
      // zlib counts in uInt: feed at most 1 GiB at a time.
      if (zs.avail_in == 0) { zs.avail_in = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30)); in_left -= zs.avail_in; }
      if (zs.avail_out == 0) {
        uint64_t produced = zs.total_out;
        if (produced >= outbuf.size()) {
          if (outbuf.size() >= cap) break;  // more output than the claim: reported below
          outbuf.resize(static_cast<size_t>(std::min<uint64_t>(cap, uint64_t{outbuf.size()} * 2)));
        }
        zs.next_out = outbuf.data() + produced;
        zs.avail_out = static_cast<uInt>(std::min<uint64_t>(outbuf.size() - produced, 1u << 30));
      }
      uInt before_in = zs.avail_in, before_out = zs.avail_out;
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_BUF_ERROR && before_in == zs.avail_in && before_out == zs.avail_out) break;  // no progress possible
      if (rc == Z_BUF_ERROR) rc = Z_OK;
    }
    uint64_t produced = zs.total_out;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END)
      return malformed(src, "entry '" + e.name + "': deflate data is corrupt or truncated" + (zs.msg ? std::string(" (") + zs.msg + ")" : ""));
    if (produced != e.uncompressed_size)
      return malformed(src, "entry '" + e.name + "': inflated to " + std::to_string(produced) + " bytes, the directory says " +
                                std::to_string(e.uncompressed_size));
    outbuf.resize(e.uncompressed_size);
    uLong crc = crc32(0, nullptr, 0);
    for (uint64_t off = 0; off < outbuf.size();) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(outbuf.size() - off, 1u << 30));
      crc = crc32(crc, outbuf.data() + off, static_cast<uInt>(n));
      off += n;
    }
    if (static_cast<uint32_t>(crc) != e.crc32) return malformed(src, "entry '" + e.name + "': CRC-32 mismatch (the data is corrupt)");
    return memory_source(ename, std::move(outbuf));
  });
}

Status write_zip_stored(const std::string& path, const std::vector<ZipWriteEntry>& entries) {
  return guarded("write_zip_stored", [&]() -> Status {
    std::vector<uint8_t> central;
    uint64_t offset = 0;
    // The archive is assembled in memory and written atomically (temp file +
    // rename): a failure never leaves a partial archive nor removes a file
    // this call did not create.
    std::vector<uint8_t> file;
    auto fail = [](Status s) { return s; };
    auto write = [&](const void* p, size_t n) {
      file.insert(file.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
      return true;
    };
    for (const ZipWriteEntry& e : entries) {
      if (e.data.size() >= 0xffffffffu || offset >= 0xffffffffu || e.name.size() > 0xffff)
        return fail(unimplemented(path + ": archives past 4 GiB (ZIP64) are not written by this runtime"));
      uint32_t crc = static_cast<uint32_t>(crc32(crc32(0, nullptr, 0), e.data.data(), static_cast<uInt>(e.data.size())));
      auto header = [&](std::vector<uint8_t>& h, bool central_dir) {
        put32(h, central_dir ? kCentralSig : kLocalSig);
        if (central_dir) put16(h, 20);  // version made by
        put16(h, 20);                   // version needed
        put16(h, 0);                    // flags
        put16(h, 0);                    // stored
        put16(h, 0);                    // time 00:00
        put16(h, (0 << 9) | (1 << 5) | 1);  // date 1980-01-01: reproducible files
        put32(h, crc);
        put32(h, static_cast<uint32_t>(e.data.size()));
        put32(h, static_cast<uint32_t>(e.data.size()));
        put16(h, static_cast<uint16_t>(e.name.size()));
        put16(h, 0);  // extra
        if (central_dir) {
          put16(h, 0);  // comment
          put16(h, 0);  // disk
          put16(h, 0);  // internal attributes
          put32(h, 0);  // external attributes
          put32(h, static_cast<uint32_t>(offset));
        }
        h.insert(h.end(), e.name.begin(), e.name.end());
      };
      std::vector<uint8_t> local;
      header(local, false);
      header(central, true);
      if (!write(local.data(), local.size()) || !write(e.data.data(), e.data.size()))
        return fail(io_error(path + ": write failed: " + std::strerror(errno)));
      offset += local.size() + e.data.size();
    }
    if (offset >= 0xffffffffu || entries.size() >= 0xffff)
      return fail(unimplemented(path + ": archives past 4 GiB or 65535 entries (ZIP64) are not written by this runtime"));
    std::vector<uint8_t> end;
    put32(end, kEocdSig);
    put16(end, 0);
    put16(end, 0);
    put16(end, static_cast<uint16_t>(entries.size()));
    put16(end, static_cast<uint16_t>(entries.size()));
    put32(end, static_cast<uint32_t>(central.size()));
    put32(end, static_cast<uint32_t>(offset));
    put16(end, 0);
    if (!write(central.data(), central.size()) || !write(end.data(), end.size()))
      return fail(io_error(path + ": write failed: " + std::strerror(errno)));
    return write_file_atomic(path, file.data(), file.size());
  });
}

}  // namespace shapeml::runtime
