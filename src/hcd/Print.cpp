// Writing an Hcd back out: TOML text the loader accepts (to_toml) and the one-line
// summary `unitile devices` prints.
#include "hcd/Hcd.h"
#include "hcd/Schema.h"
#include "hcd/Size.h"
#include "ir/Diagnostic.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace unitile::hcd {
namespace {

using schema::Field;
using schema::Kind;
using schema::Value;

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

bool is_bare_key(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::string key_text(std::string_view k) { return is_bare_key(k) ? std::string(k) : quoted(k); }

// Shortest text that reads back as the same double, always in TOML float syntax.
std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

template <class Items, class Format>
std::string list(const Items& items, Format format, std::string_view open = "[",
                 std::string_view close = "]") {
  std::string out(open);
  bool first = true;
  for (const auto& item : items) {
    out += first ? "" : ", ";
    if (open == "{" && first) out += " ";
    out += format(item);
    first = false;
  }
  if (open == "{" && !first) out += " ";
  return out + std::string(close);
}

std::string format_value(Kind kind, const Value& v) {
  switch (kind) {
  case Kind::Text:
  case Kind::Name:
  case Kind::Choice: return quoted(std::get<std::string>(v));
  case Kind::Count: return std::to_string(std::get<int64_t>(v));
  case Kind::Size:
  case Kind::PositiveSize: return size_literal(std::get<int64_t>(v));
  case Kind::Rate: return number(std::get<double>(v));
  case Kind::Texts: return list(std::get<std::vector<std::string>>(v), quoted);
  case Kind::Extents:
    return list(std::get<std::vector<int64_t>>(v), [](int64_t x) { return std::to_string(x); });
  case Kind::DTypes:
    return list(std::get<std::vector<DType>>(v), [](DType t) { return quoted(dtype_name(t)); });
  case Kind::OneDType: return quoted(dtype_name(std::get<DType>(v)));
  case Kind::LanesTable:
    return list(std::get<std::map<DType, int>>(v), [](const auto& e) {
      return std::string(dtype_name(e.first)) + " = " + std::to_string(e.second);
    }, "{", "}");
  case Kind::RateTable:
    return list(std::get<std::map<DType, double>>(v), [](const auto& e) {
      return std::string(dtype_name(e.first)) + " = " + number(e.second);
    }, "{", "}");
  case Kind::MatrixUnits: break; // written as [[compute.matrix_units]] tables
  }
  internal_fail(__FILE__, __LINE__, "no inline TOML form for this schema kind");
}

template <class Record>
void write_fields(std::ostringstream& os, const Record& r, std::span<const Field<Record>> fields) {
  for (const auto& f : fields)
    if (f.kind != Kind::MatrixUnits) os << f.key << " = " << format_value(f.kind, f.get(r)) << "\n";
}

// The widest vector extension wins the summary's one ISA slot.
std::string headline_isa(const Hcd& h) {
  static constexpr std::string_view ranking[] = {"avx512f", "avx2", "avx",  "sse4.2",
                                                 "sve2",    "sve",  "neon", "rvv"};
  for (std::string_view name : ranking)
    for (const auto& feature : h.isa)
      if (feature == name) return feature;
  return h.isa.empty() ? std::string() : h.isa.front();
}

} // namespace

std::string to_toml(const Hcd& h) {
  std::ostringstream os;
  if (!h.source.empty()) os << "# Hardware capability description; source: " << h.source << "\n";
  bool first = true;
  for (const auto& section : schema::sections()) {
    os << (first ? "" : "\n") << "[" << section.name << "]\n";
    first = false;
    write_fields<Hcd>(os, h, section.fields);
    for (const auto& f : section.fields) {
      if (f.kind != Kind::MatrixUnits) continue;
      Value units = f.get(h); // keep the temporary alive through the loop
      for (const auto& unit : std::get<std::vector<MatrixUnit>>(units)) {
        os << "\n[[" << section.name << "." << f.key << "]]\n";
        write_fields<MatrixUnit>(os, unit, schema::matrix_unit_fields());
      }
    }
  }
  for (const auto& level : h.memory) {
    os << "\n[[" << schema::kMemorySection << "]]\n";
    write_fields<MemoryLevel>(os, level, schema::memory_fields());
  }
  if (!h.ext.empty()) {
    os << "\n[" << schema::kExtSection << "]\n";
    for (const auto& [key, text] : h.ext) os << key_text(key) << " = " << text << "\n";
  }
  return os.str();
}

std::string summary(const Hcd& h) {
  std::ostringstream os;
  os << h.name << ": " << schema::device_kind_name(h.kind) << ", " << h.units
     << (h.units == 1 ? " unit" : " units");
  if (auto isa = headline_isa(h); !isa.empty()) os << ", " << isa;
  os << ", " << h.vector_bits << "-bit vectors (" << h.lanes_for(DType::F32) << " x f32)";
  // The matrix units, shape and what they take: "matrix 16x8x16 f16/bf16, 16x8x8 tf32".
  for (size_t u = 0; u < h.matrix_units.size(); ++u) {
    const MatrixUnit& m = h.matrix_units[u];
    os << (u == 0 ? ", matrix " : ", ") << m.m << "x" << m.n << "x" << m.k << " ";
    if (m.precision == "tf32") {
      os << "tf32";
      continue;
    }
    for (size_t d = 0; d < m.input_dtypes.size(); ++d) os << (d ? "/" : "") << dtype_name(m.input_dtypes[d]);
  }
  if (h.warp_size > 1) os << ", warp " << h.warp_size;
  // The outermost level is main memory; the summary is about what sits in front of it.
  size_t shown = h.memory.size() > 1 ? h.memory.size() - 1 : h.memory.size();
  for (size_t i = 0; i < shown; ++i)
    os << ", " << h.memory[i].name << " " << human_size(h.memory[i].size_bytes);
  os << ", dialect " << h.dialect;
  return os.str();
}

} // namespace unitile::hcd
