// Reading an HCD file: TOML syntax through toml++, then every section and key checked
// against the schema table, with FILE:LINE:COL diagnostics. The only file that sees
// toml++, which is heavy to compile.
#include "hcd/Hcd.h"
#include "hcd/NearMiss.h"
#include "hcd/Schema.h"
#include "hcd/Size.h"
#include "ir/Diagnostic.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace unitile::hcd {
namespace {

using schema::Field;
using schema::Kind;
using schema::Value;

std::string_view type_description(toml::node_type t) {
  switch (t) {
  case toml::node_type::string: return "a string";
  case toml::node_type::integer: return "an integer";
  case toml::node_type::floating_point: return "a float";
  case toml::node_type::boolean: return "a boolean";
  case toml::node_type::table: return "a table";
  case toml::node_type::array: return "an array";
  case toml::node_type::date: return "a date";
  case toml::node_type::time: return "a time";
  case toml::node_type::date_time: return "a date-time";
  case toml::node_type::none: break;
  }
  return "nothing";
}

std::string join(std::span<const std::string_view> names, std::string_view sep = ", ") {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += sep;
    out += n;
  }
  return out;
}

constexpr std::string_view kDTypeNames[] = {"f16", "bf16", "f32", "f64", "i8",
                                             "i16", "i32",  "i64", "u8",  "bool"};

// Mark every table inside `n` inline, so an [ext] value prints as one TOML value.
void make_inline(toml::node& n) {
  if (auto* t = n.as_table()) {
    t->is_inline(true);
    for (auto&& [k, v] : *t) make_inline(v);
  } else if (auto* a = n.as_array()) {
    for (auto& v : *a) make_inline(v);
  }
}

// The TOML text of one value, as [ext] keeps it.
std::string value_text(const toml::node& n) {
  std::ostringstream os;
  if (const auto* t = n.as_table()) {
    toml::table copy = *t;
    make_inline(copy);
    os << copy;
  } else if (const auto* a = n.as_array()) {
    toml::array copy = *a;
    make_inline(copy);
    os << copy;
  } else {
    n.visit([&](const auto& v) { os << v; });
  }
  return os.str();
}

// A table's entries in the order they appear in the file (toml++ iterates sorted by
// key), so the first error reported is the first one in the text.
std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order(const toml::table& t) {
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (auto&& [k, v] : t) entries.emplace_back(&k, &v);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const auto& pa = a.first->source().begin;
    const auto& pb = b.first->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return entries;
}

class Loader {
public:
  Loader(std::string text, std::string name) : src_{std::move(name), std::move(text)} {}

  Hcd load() {
    toml::table root;
    try {
      root = toml::parse(std::string_view(src_.text), std::string_view(src_.name));
    } catch (const toml::parse_error& e) {
      fail(e.source(), "invalid TOML: " + std::string(e.description()));
    }
    Hcd h;
    h.source = src_.name;
    read_root(h, root);
    check_memory_names(h);
    return h;
  }

private:
  SourceFile src_;
  // Where each validated value sat, by dotted path, for checks across keys.
  std::map<std::string, toml::source_region> where_;

  [[noreturn]] void fail(const toml::source_region& at, std::string message,
                         std::string hint = {}, int caret_len = 0) {
    SourceLoc loc{static_cast<int>(at.begin.line), static_cast<int>(at.begin.column)};
    if (caret_len <= 0)
      caret_len = at.end.line == at.begin.line && at.end.column > at.begin.column
                      ? static_cast<int>(at.end.column - at.begin.column)
                      : 1;
    throw UserError(make_diagnostic(src_, loc, std::move(message), std::move(hint), caret_len));
  }

  [[noreturn]] void fail_at_start(std::string message, std::string hint) {
    throw UserError(make_diagnostic(src_, SourceLoc{1, 1}, std::move(message), std::move(hint)));
  }

  [[noreturn]] void wrong_type(const toml::node& n, const std::string& path,
                               std::string_view expected) {
    fail(n.source(), path + ": expected " + std::string(expected) + ", got " +
                         std::string(type_description(n.type())));
  }

  void read_root(Hcd& h, const toml::table& root) {
    std::vector<std::string_view> top;
    for (const auto& s : schema::sections()) top.push_back(s.name);
    top.push_back(schema::kMemorySection);
    top.push_back(schema::kExtSection);

    std::set<std::string> seen;
    for (auto [key, node] : in_file_order(root)) {
      std::string name(key->str());
      seen.insert(name);
      if (name == schema::kMemorySection) {
        read_memory(h, *node);
        continue;
      }
      if (name == schema::kExtSection) {
        read_ext(h, *node);
        continue;
      }
      auto section = std::find_if(schema::sections().begin(), schema::sections().end(),
                                  [&](const auto& s) { return s.name == name; });
      if (section == schema::sections().end()) {
        auto near = closest_name(name, top);
        std::string hint = near ? "did you mean [" + *near + "]?"
                                : "sections are [" + join(top, "], [") + "]";
        fail(key->source(), node->is_table() ? "unknown section [" + name + "]"
                                             : "unknown top-level key '" + name + "'",
             hint, static_cast<int>(name.size()));
      }
      const auto* table = node->as_table();
      if (!table) wrong_type(*node, name, "a table");
      read_fields<Hcd>(h, section->fields, *table, name, "[" + name + "]");
    }
    for (const auto& s : schema::sections())
      if (s.required && !seen.count(std::string(s.name)))
        fail_at_start("missing required section [" + std::string(s.name) + "]",
                      "every HCD file needs [" + join(required_sections(), "], [") + "]");
    if (h.memory.empty())
      fail_at_start("missing required section [[memory]]",
                    "describe at least one memory level: [[memory]] name, scope, size");
  }

  static std::vector<std::string_view> required_sections() {
    std::vector<std::string_view> names;
    for (const auto& s : schema::sections())
      if (s.required) names.push_back(s.name);
    names.push_back("[memory]");
    return names;
  }

  // Check and store every key of `table` against `fields`. `path` prefixes value paths
  // ("codegen", "memory[1]"); `where` names the table in messages ("[codegen]").
  template <class Record>
  void read_fields(Record& record, std::span<const Field<Record>> fields,
                   const toml::table& table, const std::string& path, const std::string& where) {
    std::vector<std::string_view> names;
    for (const auto& f : fields) names.push_back(f.key);
    std::set<std::string_view> seen;
    for (auto [key, node] : in_file_order(table)) {
      std::string_view key_name = key->str(); // a lambda may not capture a binding in clang < 16
      auto field = std::find_if(fields.begin(), fields.end(),
                                [&](const auto& f) { return f.key == key_name; });
      if (field == fields.end()) {
        auto near = closest_name(key->str(), names);
        std::string hint =
            near ? "did you mean '" + *near + "'?" : "valid keys: " + join(names);
        fail(key->source(), "unknown key '" + std::string(key->str()) + "' in " + where, hint,
             static_cast<int>(key->str().size()));
      }
      seen.insert(field->key);
      std::string value_path = path + "." + std::string(field->key);
      where_[value_path] = node->source();
      field->set(record, convert(*field, *node, value_path));
    }
    for (const auto& f : fields)
      if (f.required && !seen.count(f.key))
        fail(table.source(), "missing required key '" + std::string(f.key) + "' in " + where,
             {}, 1);
  }

  template <class Record>
  Value convert(const Field<Record>& field, const toml::node& node, const std::string& path) {
    switch (field.kind) {
    case Kind::Text:
    case Kind::Name:
    case Kind::Choice: return read_text(field.kind, field.choices, node, path);
    case Kind::Count: return read_count(node, path);
    case Kind::Size:
    case Kind::PositiveSize: return read_size(node, path, field.kind == Kind::PositiveSize);
    case Kind::Rate: return read_rate(node, path, /*positive=*/false);
    case Kind::Texts: return read_texts(node, path);
    case Kind::Extents: return read_extents(node, path);
    case Kind::DTypes: return read_dtypes(node, path);
    case Kind::OneDType: return read_dtype(node, path);
    case Kind::LanesTable: return read_lanes(node, path);
    case Kind::RateTable: return read_rates(node, path);
    case Kind::MatrixUnits: return read_matrix_units(node, path);
    }
    internal_fail(__FILE__, __LINE__, "unhandled schema kind for " + path);
  }

  std::string read_text(Kind kind, std::span<const std::string_view> choices,
                        const toml::node& node, const std::string& path) {
    const auto* s = node.as_string();
    if (!s) wrong_type(node, path, "a string");
    const std::string& text = s->get();
    if (kind == Kind::Name && text.empty()) fail(node.source(), path + ": must not be empty");
    if (kind == Kind::Choice &&
        std::find(choices.begin(), choices.end(), text) == choices.end()) {
      auto near = closest_name(text, choices);
      std::string hint = (near ? "did you mean '" + *near + "'? " : std::string()) +
                         "expected one of: " + join(choices);
      fail(node.source(), path + ": invalid value '" + text + "'", hint);
    }
    return text;
  }

  int64_t read_count(const toml::node& node, const std::string& path) {
    const auto* i = node.as_integer();
    if (!i) wrong_type(node, path, "an integer");
    int64_t v = i->get();
    if (v < 1) fail(node.source(), path + ": must be at least 1, got " + std::to_string(v));
    if (v > INT_MAX)
      fail(node.source(), path + ": " + std::to_string(v) + " is too large (at most " +
                              std::to_string(INT_MAX) + ")");
    return v;
  }

  int64_t read_size(const toml::node& node, const std::string& path, bool positive) {
    int64_t bytes = 0;
    if (const auto* i = node.as_integer()) {
      bytes = i->get();
    } else if (const auto* s = node.as_string()) {
      auto parsed = parse_size(s->get());
      if (!parsed)
        fail(node.source(), path + ": invalid size '" + s->get() + "'",
             "write bytes as an integer or with a binary unit: \"512B\", \"32KiB\", \"1MiB\", "
             "\"2GiB\"");
      bytes = *parsed;
    } else {
      wrong_type(node, path, schema::expected_description(Kind::Size));
    }
    if (positive && bytes <= 0)
      fail(node.source(), path + ": size must be positive, got " + std::to_string(bytes));
    if (bytes < 0)
      fail(node.source(), path + ": size must not be negative, got " + std::to_string(bytes));
    return bytes;
  }

  double read_rate(const toml::node& node, const std::string& path, bool positive) {
    double v = 0;
    if (const auto* i = node.as_integer())
      v = static_cast<double>(i->get());
    else if (const auto* f = node.as_floating_point())
      v = f->get();
    else
      wrong_type(node, path, "a number");
    if (!std::isfinite(v) || v < 0 || (positive && v == 0))
      fail(node.source(), path + ": must be a finite number " +
                              std::string(positive ? "> 0" : ">= 0") + ", got " +
                              value_text(node));
    return v;
  }

  const toml::array& read_array(const toml::node& node, const std::string& path,
                                std::string_view expected) {
    const auto* a = node.as_array();
    if (!a) wrong_type(node, path, expected);
    return *a;
  }

  std::vector<std::string> read_texts(const toml::node& node, const std::string& path) {
    std::vector<std::string> out;
    const auto& array = read_array(node, path, "an array of strings");
    for (size_t i = 0; i < array.size(); ++i) {
      const auto* s = array[i].as_string();
      if (!s) wrong_type(array[i], path + "[" + std::to_string(i) + "]", "a string");
      out.push_back(s->get());
    }
    return out;
  }

  std::vector<int64_t> read_extents(const toml::node& node, const std::string& path) {
    const auto& array = read_array(node, path, "an array of integers");
    if (array.empty() || array.size() > 3)
      fail(node.source(), path + ": expected 1 to 3 extents, got " +
                              std::to_string(array.size()));
    std::vector<int64_t> out;
    for (size_t i = 0; i < array.size(); ++i) {
      std::string element = path + "[" + std::to_string(i) + "]";
      const auto* v = array[i].as_integer();
      if (!v) wrong_type(array[i], element, "an integer");
      if (v->get() < 1)
        fail(array[i].source(), element + ": must be at least 1, got " + std::to_string(v->get()));
      out.push_back(v->get());
    }
    return out;
  }

  DType dtype_of(std::string_view name, const toml::source_region& at, const std::string& path) {
    if (auto t = parse_dtype(name)) return *t;
    auto near = closest_name(name, kDTypeNames);
    fail(at, path + ": unknown dtype '" + std::string(name) + "'",
         (near ? "did you mean '" + *near + "'? " : std::string()) + "dtypes are " +
             join(kDTypeNames));
  }

  DType read_dtype(const toml::node& node, const std::string& path) {
    const auto* s = node.as_string();
    if (!s) wrong_type(node, path, "a dtype name");
    return dtype_of(s->get(), node.source(), path);
  }

  std::vector<DType> read_dtypes(const toml::node& node, const std::string& path) {
    const auto& array = read_array(node, path, "an array of dtype names");
    if (array.empty()) fail(node.source(), path + ": must name at least one dtype");
    std::vector<DType> out;
    for (size_t i = 0; i < array.size(); ++i)
      out.push_back(read_dtype(array[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  // A table keyed by dtype name; `read` checks each value.
  template <class T, class ReadValue>
  std::map<DType, T> read_dtype_table(const toml::node& node, const std::string& path,
                                      ReadValue read) {
    const auto* table = node.as_table();
    if (!table) wrong_type(node, path, "a table of dtype names");
    std::map<DType, T> out;
    for (auto [key, value] : in_file_order(*table)) {
      DType t = dtype_of(key->str(), key->source(), path);
      std::string element = path + "." + std::string(key->str());
      if (out.count(t))
        fail(key->source(), element + ": dtype " + std::string(dtype_name(t)) + " given twice");
      out[t] = read(*value, element);
    }
    return out;
  }

  std::map<DType, int> read_lanes(const toml::node& node, const std::string& path) {
    return read_dtype_table<int>(node, path, [&](const toml::node& v, const std::string& p) {
      return static_cast<int>(read_count(v, p));
    });
  }

  std::map<DType, double> read_rates(const toml::node& node, const std::string& path) {
    return read_dtype_table<double>(node, path, [&](const toml::node& v, const std::string& p) {
      return read_rate(v, p, /*positive=*/true);
    });
  }

  std::vector<MatrixUnit> read_matrix_units(const toml::node& node, const std::string& path) {
    const auto& array = read_array(node, path, "an array of tables");
    std::vector<MatrixUnit> out;
    for (size_t i = 0; i < array.size(); ++i) {
      std::string entry = path + "[" + std::to_string(i) + "]";
      const auto* table = array[i].as_table();
      if (!table) wrong_type(array[i], entry, "a table");
      MatrixUnit unit;
      read_fields<MatrixUnit>(unit, schema::matrix_unit_fields(), *table, entry, entry);
      out.push_back(std::move(unit));
    }
    return out;
  }

  void read_memory(Hcd& h, const toml::node& node) {
    const auto* array = node.as_array();
    if (!array) wrong_type(node, "memory", "an array of tables ([[memory]])");
    for (size_t i = 0; i < array->size(); ++i) {
      std::string entry = "memory[" + std::to_string(i) + "]";
      const auto* table = (*array)[i].as_table();
      if (!table) wrong_type((*array)[i], entry, "a table");
      MemoryLevel level;
      read_fields<MemoryLevel>(level, schema::memory_fields(), *table, entry, entry);
      h.memory.push_back(std::move(level));
    }
  }

  void read_ext(Hcd& h, const toml::node& node) {
    const auto* table = node.as_table();
    if (!table) wrong_type(node, "ext", "a table");
    for (auto [key, value] : in_file_order(*table)) h.ext[std::string(key->str())] = value_text(*value);
  }

  // Levels are looked up by name (Hcd::level), so a name may appear once.
  void check_memory_names(const Hcd& h) {
    std::set<std::string> names;
    for (size_t i = 0; i < h.memory.size(); ++i) {
      if (names.insert(h.memory[i].name).second) continue;
      std::string path = "memory[" + std::to_string(i) + "].name";
      fail(where_[path], path + ": duplicate memory level '" + h.memory[i].name + "'",
           "give each [[memory]] level its own name");
    }
  }
};

} // namespace

Hcd load_string(const std::string& toml_text, const std::string& name) {
  return Loader(toml_text, name).load();
}

Hcd load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Diagnostic d;
    d.file = path;
    d.message = "cannot read HCD file: " + std::string(std::strerror(errno));
    d.hint = "give the path of a TOML device description, or a built-in name "
             "(`unitile devices` lists them)";
    throw UserError(std::move(d));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_string(text.str(), path);
}

} // namespace unitile::hcd
