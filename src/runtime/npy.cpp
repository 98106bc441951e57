#include "runtime/npy.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "runtime/file_io.h"
#include "runtime/zip_reader.h"

namespace shapeml::runtime {

static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr uint32_t kMaxHeaderLen = 1u << 20;  // numpy itself refuses > 10000 by default

// Entry names come from the file: keep them printable in messages.
std::string printable_name(const std::string& n) {
  std::string r;
  for (char c : n.substr(0, 200)) r += (static_cast<unsigned char>(c) >= 32 && c != 127) ? c : '?';
  return n.size() > 200 ? r + "..." : r;
}

Status malformed(const std::string& name, const std::string& what) {
  return invalid_argument(name + ": malformed .npy: " + what);
}

// ---------------------------------------------------------------------------
// The header is a Python dict literal:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  Status parse(NpyHeader& out) {
    std::set<std::string> seen;
    skip_ws();
    if (!eat('{')) return err("the header does not start with `{`");
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      if (peek() != '\'' && peek() != '"') return err("expected a quoted key or `}`");
      if (Status s = string(key); !s.ok()) return s;
      skip_ws();
      if (!eat(':')) return err("expected `:` after '" + key + "'");
      skip_ws();
      if (!seen.insert(key).second) return err("key '" + key + "' appears twice");
      if (key == "descr") {
        if (peek() == '[' || peek() == '{')
          return {StatusCode::Unimplemented, name_ + ": structured (record) dtypes are not supported; shapeml reads plain "
                                                     "f32 f64 i32 i64 bool arrays"};
        if (Status s = string(out.descr); !s.ok()) return s;
      } else if (key == "fortran_order") {
        if (match("True")) out.fortran_order = true;
        else if (match("False")) out.fortran_order = false;
        else return err("fortran_order must be True or False");
      } else if (key == "shape") {
        if (Status s = tuple(out.shape); !s.ok()) return s;
      } else {
        return err("unexpected key '" + key + "' (a .npy header has exactly 'descr', 'fortran_order' and 'shape')");
      }
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat('}')) break;
      return err("expected `,` or `}` after the value of '" + key + "'");
    }
    skip_ws();
    if (pos_ != s_.size()) return err("unexpected text after the closing `}`");
    for (const char* k : {"descr", "fortran_order", "shape"})
      if (!seen.count(k)) return err(std::string("the header has no '") + k + "' key");
    return {};
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool match(const char* w) {
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  Status err(const std::string& m) const { return malformed(name_, "header: " + m + " (header text: " + excerpt() + ")"); }
  std::string excerpt() const {
    std::string t = s_;
    while (!t.empty() && (t.back() == ' ' || t.back() == '\n')) t.pop_back();
    std::string e;
    for (char c : t.substr(0, 120)) e += (c >= 32 && c < 127) ? c : '?';
    return e + (t.size() > 120 ? "..." : "");
  }
  Status string(std::string& out) {
    char q = peek();
    if (q != '\'' && q != '"') return err("expected a quoted string");
    ++pos_;
    out.clear();
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (!eat(q)) return err("unterminated string");
    return {};
  }
  Status tuple(std::vector<int64_t>& out) {
    if (!eat('(')) return err("shape must be a tuple");
    out.clear();
    for (;;) {
      skip_ws();
      if (eat(')')) return {};
      size_t b = pos_;
      int64_t v = 0;
      bool any = false;
      while (peek() >= '0' && peek() <= '9') {
        any = true;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v))
          return err("a shape dimension does not fit in 64 bits");
        ++pos_;
      }
      if (!any) return err(pos_ < s_.size() && s_[b] == '-' ? "a shape dimension is negative" : "shape must hold non-negative integers");
      eat('L');  // Python 2's long literals
      out.push_back(v);
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat(')')) return {};
      return err("expected `,` or `)` in the shape");
    }
  }

  const std::string& s_;
  const std::string& name_;
  size_t pos_ = 0;
};

// descr -> dtype. Errors say what the descr means in NumPy's words.
Result<types::DType> dtype_of_descr(const std::string& d, const std::string& name) {
  if (d.size() >= 2) {
    char order = d[0];
    std::string code = d.substr(1);
    bool one_byte = code == "b1" || code == "i1" || code == "u1";
    if (order == '>' && !one_byte)
      return unimplemented(name + ": dtype '" + d + "' is big-endian; only little-endian arrays are read "
                                  "(use arr.astype(arr.dtype.newbyteorder('<')))");
    if (order == '<' || order == '=' || order == '|' || (order == '>' && one_byte)) {
      if (code == "f4") return types::DType::F32;
      if (code == "f8") return types::DType::F64;
      if (code == "i4") return types::DType::I32;
      if (code == "i8") return types::DType::I64;
      if (code == "b1") return types::DType::Bool;
      std::string hint;
      if (code == "f2") hint = " (float16)";
      else if (code == "V2") hint = " (raw 2-byte void: bfloat16 from ml_dtypes?)";
      else if (code[0] == 'u' || code[0] == 'i') hint = " (integer of another width)";
      else if (code[0] == 'c') hint = " (complex)";
      else if (code[0] == 'U' || code[0] == 'S') hint = " (strings)";
      else if (code[0] == 'O') hint = " (Python objects)";
      return unimplemented(name + ": dtype '" + d + "'" + hint +
                           " is not supported; shapeml reads '<f4' '<f8' '<i4' '<i8' '|b1' (f32 f64 i32 i64 bool)");
    }
  }
  return malformed(name, "descr '" + d + "' is not a NumPy dtype string");
}

const char* descr_of(types::DType d) {
  switch (d) {
    case types::DType::F32: return "<f4";
    case types::DType::F64: return "<f8";
    case types::DType::I32: return "<i4";
    case types::DType::I64: return "<i8";
    case types::DType::Bool: return "|b1";
    case types::DType::BF16: return nullptr;
    case types::DType::Var: return nullptr;
  }
  return nullptr;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

Result<TensorRef> read_npy(const ByteSource& src, const MemoryResourcePtr& mr) {
  return guarded("read_npy", [&]() -> Result<TensorRef> {
    const std::string& name = src.name();
    uint64_t size = src.size();
    uint8_t pre[12];
    if (size < 10) return malformed(name, "the file is " + std::to_string(size) + " bytes, too short for a .npy header (truncated?)");
    if (Status s = src.read(0, 10, pre); !s.ok()) return s;
    if (std::memcmp(pre, kMagic, kMagicLen) != 0) return malformed(name, "missing the \\x93NUMPY magic (not a .npy file)");
    uint8_t major = pre[6], minor = pre[7];
    uint64_t header_len, header_start;
    if (major == 1) {
      header_len = pre[8] | (pre[9] << 8);
      header_start = 10;
    } else if (major == 2 || major == 3) {
      if (size < 12) return malformed(name, "truncated in the preamble");
      if (Status s = src.read(10, 2, pre + 10); !s.ok()) return s;
      header_len = static_cast<uint64_t>(pre[8]) | (static_cast<uint64_t>(pre[9]) << 8) | (static_cast<uint64_t>(pre[10]) << 16) |
                   (static_cast<uint64_t>(pre[11]) << 24);
      header_start = 12;
    } else {
      return unimplemented(name + ": .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                           " is not supported (1.0, 2.0 and 3.0 are)");
    }
    if (header_len > kMaxHeaderLen) return malformed(name, "header length " + std::to_string(header_len) + " is implausibly large");
    if (header_start + header_len > size)
      return malformed(name, "truncated: the header is " + std::to_string(header_len) + " bytes but the file ends after " +
                                 std::to_string(size - header_start));
    std::string text(header_len, '\0');
    if (Status s = src.read(header_start, header_len, text.data()); !s.ok()) return s;
    NpyHeader h;
    if (Status s = HeaderParser(text, name).parse(h); !s.ok()) return s;
    auto dt = dtype_of_descr(h.descr, name);
    if (!dt) return dt.status();
    if (h.fortran_order)
      return unimplemented(name + ": the array is stored in Fortran order (fortran_order: True); shapeml reads C order only "
                                  "(save np.ascontiguousarray(a))");
    if (h.shape.size() > static_cast<size_t>(kMaxRank))
      return malformed(name, "shape " + shape_text(h.shape) + " has rank " + std::to_string(h.shape.size()) + ", above the maximum " +
                                 std::to_string(kMaxRank));
    // The data must be in the file before anything is allocated for it: a
    // 128-byte file may claim an 8 GiB array.
    uint64_t data_start = header_start + header_len, need = dtype_size(*dt);
    bool empty = false;
    for (int64_t d : h.shape) {
      empty |= d == 0;
      if (__builtin_mul_overflow(need, static_cast<uint64_t>(d > 0 ? d : 1), &need))
        return malformed(name, "shape " + shape_text(h.shape) + " has too many elements (its size overflows 64 bits)");
    }
    if (empty) need = 0;
    if (size - data_start < need)
      return malformed(name, "truncated: shape " + shape_text(h.shape) + " of '" + h.descr + "' needs " + std::to_string(need) +
                                 " data bytes, the file has " + std::to_string(size - data_start));
    auto t = Tensor::create(*dt, h.shape, mr, /*zero=*/false);
    if (!t) return Status(t.status().code(), name + ": " + t.status().message());
    if ((*t)->nbytes() != need) return internal_error(name + ": byte size disagrees with the tensor's");
    // Trailing bytes are ignored, as numpy does (several arrays may be saved
    // back to back into one file).
    if (need)
      if (Status s = src.read(data_start, need, (*t)->data()); !s.ok()) return s;
    if (*dt == types::DType::Bool) {
      // NumPy treats any non-zero byte as True; shapeml's bools are 0 or 1.
      uint8_t* b = (*t)->data_as<uint8_t>();
      for (uint64_t i = 0; i < need; ++i) b[i] = b[i] != 0;
    }
    return t;
  });
}

Result<TensorRef> read_npy(const std::string& path, const MemoryResourcePtr& mr) {
  auto src = open_file_source(path);
  if (!src) return src.status();
  return read_npy(**src, mr);
}

Result<std::vector<uint8_t>> encode_npy(const Tensor& t) {
  return guarded("encode_npy", [&]() -> Result<std::vector<uint8_t>> {
    const char* descr = descr_of(t.dtype());
    if (!descr)
      return invalid_argument("encode_npy: " + t.type_str() + ": bf16 has no NumPy dtype; cast the tensor to f32 first");
    if (t.device().kind != types::Device::Kind::Host)
      return invalid_argument("encode_npy: " + t.type_str() + " is not on the host");
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
    // Pad with spaces and end with '\n' so that the data starts on a multiple
    // of 64 bytes, as numpy does.
    size_t pre = 10;
    size_t total = pre + header.size() + 1;
    if (total % 64) header.append(64 - total % 64, ' ');
    header += '\n';
    uint8_t major = 1;
    if (header.size() > 0xffff) {
      major = 2;
      pre = 12;
      header.pop_back();
      while (!header.empty() && header.back() == ' ') header.pop_back();
      total = pre + header.size() + 1;
      if (total % 64) header.append(64 - total % 64, ' ');
      header += '\n';
    }
    std::vector<uint8_t> out;
    out.reserve(pre + header.size() + t.nbytes());
    out.insert(out.end(), kMagic, kMagic + kMagicLen);
    out.push_back(major);
    out.push_back(0);
    uint64_t hl = header.size();
    for (size_t i = 0; i < pre - 8; ++i) out.push_back(static_cast<uint8_t>(hl >> (8 * i)));
    out.insert(out.end(), header.begin(), header.end());
    if (t.is_contiguous()) {
      const uint8_t* d = static_cast<const uint8_t*>(t.data());
      if (t.nbytes()) out.insert(out.end(), d, d + t.nbytes());
    } else {
      auto c = t.contiguous_copy();
      if (!c) return c.status();
      const uint8_t* d = static_cast<const uint8_t*>((*c)->data());
      out.insert(out.end(), d, d + (*c)->nbytes());
    }
    return out;
  });
}

Status write_npy(const std::string& path, const Tensor& t) {
  auto bytes = encode_npy(t);
  if (!bytes) return Status(bytes.status().code(), path + ": " + bytes.status().message());
  return guarded("write_npy", [&]() { return write_file_atomic(path, bytes->data(), bytes->size()); });
}

Result<std::vector<NpzEntry>> read_npz(const std::string& path, const MemoryResourcePtr& mr) {
  auto src = open_file_source(path);
  if (!src) return src.status();
  return read_npz(**src, mr);
}

Result<std::vector<NpzEntry>> read_npz(const ByteSource& archive, const MemoryResourcePtr& mr) {
  return guarded("read_npz", [&]() -> Result<std::vector<NpzEntry>> {
    const std::string& path = archive.name();
    const ByteSource* src = &archive;
    auto entries = list_zip_entries(*src);
    if (!entries) return entries.status();
    std::vector<NpzEntry> out;
    std::set<std::string> names;
    // The bytes that deflated entries expand to, all together, checked
    // before anything is inflated: a small file must not be able to make
    // this call allocate without bound.
    uint64_t inflated = 0;
    for (const ZipEntry& e : *entries) {
      if (e.method == 0) continue;
      if (__builtin_add_overflow(inflated, e.uncompressed_size, &inflated) || inflated > kMaxNpzInflatedBytes)
        return resource_exhausted(path + ": the compressed entries claim to expand to more than " +
                                  std::to_string(kMaxNpzInflatedBytes >> 30) + " GiB together (at entry '" + printable_name(e.name) +
                                  "'); refusing to inflate them. Save large arrays uncompressed (np.savez) instead");
    }
    for (const ZipEntry& e : *entries) {
      if (e.name.find('\0') != std::string::npos)
        return invalid_argument(path + ": entry name '" + printable_name(e.name) +
                                "' contains a NUL byte (names that differ after it would be indistinguishable)");
      if (e.name.size() < 4 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
        return invalid_argument(path + ": entry '" + printable_name(e.name) +
                                "' is not a .npy array (np.savez writes only NAME.npy entries)");
      std::string key = e.name.substr(0, e.name.size() - 4);
      if (key.empty()) return invalid_argument(path + ": entry '.npy' has an empty array name");
      if (!names.insert(key).second) return invalid_argument(path + ": entry '" + printable_name(e.name) + "' appears twice");
      auto entry = open_zip_entry(*src, e);
      if (!entry) return entry.status();
      auto t = read_npy(**entry, mr);
      if (!t) return t.status();
      out.push_back({std::move(key), std::move(t).value()});
    }
    return out;
  });
}

Status write_npz(const std::string& path, const std::vector<NpzEntry>& entries) {
  return guarded("write_npz", [&]() -> Status {
    std::vector<ZipWriteEntry> files;
    std::set<std::string> names;
    for (const NpzEntry& e : entries) {
      if (!e.tensor) return invalid_argument(path + ": entry '" + e.name + "' has no tensor");
      if (e.name.empty() || !names.insert(e.name).second)
        return invalid_argument(path + ": entry name '" + e.name + "' is empty or appears twice");
      auto bytes = encode_npy(*e.tensor);
      if (!bytes) return Status(bytes.status().code(), path + ": entry '" + e.name + "': " + bytes.status().message());
      files.push_back({e.name + ".npy", std::move(bytes).value()});
    }
    return write_zip_stored(path, files);
  });
}

}  // namespace shapeml::runtime
