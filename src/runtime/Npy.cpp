// The .npy reader and writer: magic, version, header length, the header dict (parsed
// strictly as the tiny Python-literal subset NumPy writes), then the raw elements.
#include "runtime/Npy.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace unitile {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct DescrName {
  std::string_view descr;
  DType dtype;
};
// bf16 is absent: it has no descr of its own (see npy_descr).
constexpr DescrName kDescrs[] = {
    {"<f2", DType::F16}, {"<f4", DType::F32}, {"<f8", DType::F64}, {"|i1", DType::I8},
    {"<i2", DType::I16}, {"<i4", DType::I32}, {"<i8", DType::I64}, {"|u1", DType::U8},
    {"|b1", DType::Bool},
};

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw UserError(fmt::format("{}: error: not a valid .npy file: {}", name, what));
}

// A cursor over the header dict text: `{'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), }` followed by space padding and a newline.
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* what) {
    if (!eat(c)) fail(fmt::format("expected {} in the header", what));
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      fail("expected a quoted string in the header");
    const char quote = s_[pos_++];
    const size_t end = s_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string in the header");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}}) {
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("expected True or False for 'fortran_order'");
  }
  std::vector<int64_t> shape_tuple() {
    expect('(', "'(' opening the shape tuple");
    std::vector<int64_t> dims;
    while (!eat(')')) {
      skip_space();
      const size_t start = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        const int digit = s_[pos_] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("shape extent too large");
        v = v * 10 + digit;
        ++pos_;
      }
      if (pos_ == start) fail("expected a non-negative integer in the shape tuple");
      dims.push_back(v);
      if (eat(',')) continue;
      expect(')', "')' closing the shape tuple");
      // A one-element tuple must be written `(n,)` in Python.
      if (dims.size() == 1) fail("a one-dimensional shape must be written (n,)");
      break;
    }
    return dims;
  }
  bool at_end() {
    skip_space();
    return pos_ == s_.size();
  }
  [[noreturn]] void fail(const std::string& what) const {
    bad(name_, fmt::format("{} (at offset {} of the header dict)", what, pos_));
  }

private:
  std::string_view s_;
  size_t pos_ = 0;
  const std::string& name_;
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

Header parse_header(std::string_view text, const std::string& name) {
  // NumPy ends the dict with '\n' after space padding.
  if (text.empty() || text.back() != '\n') bad(name, "the header does not end with a newline");
  text.remove_suffix(1);
  HeaderParser p(text, name);
  Header h;
  bool seen_descr = false, seen_order = false, seen_shape = false;
  p.expect('{', "'{' opening the header dict");
  while (!p.eat('}')) {
    const std::string key = p.string_literal();
    p.expect(':', "':' after a header key");
    if (key == "descr" && !seen_descr) {
      h.descr = p.string_literal();
      seen_descr = true;
    } else if (key == "fortran_order" && !seen_order) {
      h.fortran_order = p.boolean();
      seen_order = true;
    } else if (key == "shape" && !seen_shape) {
      h.shape = p.shape_tuple();
      seen_shape = true;
    } else if (key == "descr" || key == "fortran_order" || key == "shape") {
      p.fail(fmt::format("key '{}' appears twice", key));
    } else {
      p.fail(fmt::format("unexpected key '{}' (allowed: descr, fortran_order, shape)", key));
    }
    if (p.eat(',')) continue;
    p.expect('}', "',' or '}' in the header dict");
    break;
  }
  if (!p.at_end()) p.fail("unexpected text after the header dict");
  if (!seen_descr || !seen_order || !seen_shape)
    bad(name, "the header must give 'descr', 'fortran_order' and 'shape'");
  if (h.fortran_order)
    bad(name, "fortran_order is True; only C-order arrays are supported "
              "(save with np.ascontiguousarray)");
  return h;
}

uint32_t read_le(std::string_view b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

} // namespace

std::string_view npy_descr(DType t) {
  if (t == DType::BF16) return "<u2";
  for (const auto& d : kDescrs)
    if (d.dtype == t) return d.descr;
  UT_INTERNAL_ASSERT(false, "dtype without a .npy descr");
}

std::string encode_npy(const Tensor& t) {
  UT_INTERNAL_ASSERT(t.data.size() == t.numel() * static_cast<size_t>(dtype_bytes(t.dtype)),
                     "tensor byte size does not match its shape");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += fmt::format("{}, ", t.shape[i]);
  if (!t.shape.empty()) shape.resize(shape.size() - (t.shape.size() == 1 ? 1 : 2));
  shape += ")";
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(t.dtype), shape);
  // Pad with spaces so the data starts at a multiple of 64 bytes, as NumPy does.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const size_t prefix = kMagic.size() + 2 + (v2 ? 4 : 2);
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const auto len = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < (v2 ? 4 : 2); ++i) out += static_cast<char>((len >> (8 * i)) & 0xffu);
  out += dict;
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

Tensor decode_npy(std::string_view bytes, const std::string& name, std::optional<DType> as) {
  if (bytes.size() < kMagic.size() + 4 || bytes.substr(0, kMagic.size()) != kMagic)
    bad(name, "missing the \\x93NUMPY magic");
  const int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  if ((major != 1 && major != 2) || minor != 0)
    bad(name, fmt::format("format version {}.{} (supported: 1.0, 2.0)", major, minor));
  const int len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + static_cast<size_t>(len_bytes)) bad(name, "truncated header");
  const size_t header_len = read_le(bytes, 8, len_bytes);
  const size_t data_at = 8 + len_bytes + header_len;
  if (bytes.size() < data_at) bad(name, "truncated header");
  const Header h = parse_header(bytes.substr(8 + len_bytes, header_len), name);

  Tensor t;
  if (h.descr == "<u2" && as == DType::BF16) {
    t.dtype = DType::BF16;
  } else {
    bool found = false;
    for (const auto& d : kDescrs) {
      if (d.descr == h.descr) {
        t.dtype = d.dtype;
        found = true;
      }
    }
    if (!found) {
      std::string hint = h.descr == "<u2"
                             ? " (<u2 is read only as the raw bits of a bf16 tensor)"
                         : !h.descr.empty() && h.descr[0] == '>'
                             ? " (big-endian data: convert with arr.astype(arr.dtype.newbyteorder('<')))"
                             : "";
      bad(name, fmt::format("unsupported dtype descr '{}'{}; supported: <f2 <f4 <f8 |i1 <i2 <i4 "
                            "<i8 |u1 |b1, and <u2 for bf16",
                            h.descr, hint));
    }
  }
  t.shape = h.shape;
  size_t numel = 1;
  for (int64_t d : t.shape) {
    if (d != 0 && numel > std::numeric_limits<size_t>::max() / static_cast<size_t>(d))
      bad(name, "shape too large");
    numel *= static_cast<size_t>(d);
  }
  const size_t want = numel * static_cast<size_t>(dtype_bytes(t.dtype));
  const size_t have = bytes.size() - data_at;
  if (have != want)
    bad(name, fmt::format("shape {} of '{}' needs {} data bytes, the file has {}",
                          shape_string(t.shape), h.descr, want, have));
  t.data.assign(reinterpret_cast<const uint8_t*>(bytes.data() + data_at),
                reinterpret_cast<const uint8_t*>(bytes.data() + bytes.size()));
  return t;
}

Tensor read_npy(const std::string& path, std::optional<DType> as) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: error: cannot open file: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return decode_npy(ss.str(), path, as);
}

void write_npy(const std::string& path, const Tensor& t) {
  const std::string bytes = encode_npy(t);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(fmt::format("{}: error: cannot write file: {}", path, std::strerror(errno)));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw UserError(fmt::format("{}: error: writing failed", path));
}

} // namespace unitile
