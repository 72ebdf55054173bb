// The HCD schema as data: every section and key an HCD file may hold, the type each
// key's value must have, whether it is required, and where it lands in the Hcd struct.
//
// The loader (Load.cpp) and the writer (Print.cpp) both walk these tables, so a key
// added here is read, validated and written back without touching either of them.
// Only this file's .cpp knows the mapping onto Hcd fields; only Load.cpp knows TOML.
//
// Required keys: [device] name, kind, plugin; [codegen] dialect; [compute] units; and
// at least one [[memory]] level with name, scope and size. Everything else has the
// default the Hcd struct gives it. See Schema.cpp for the full list.
//
// Sizes (memory size, shared_memory_per_block) are bytes, written either as an integer
// or as a string with a binary unit: "512B", "32KiB", "1MiB", "2GiB", "1TiB". Decimal
// units ("32KB") are rejected, since a cache of "32KB" almost always means 32 KiB.
//
// [[memory]] levels are listed innermost first. A level's numbers describe one instance
// of it: `size` and `bandwidth_gbps` are that instance's (its sharers draw the bandwidth
// together, as the built-in files give DRAM and HBM), `shared_by` says how many units
// share that instance. `scope` is the Loop IR memory scope a buffer placed at that
// level would get: "register"; "local" for storage private to one unit (a CPU core's
// L1/L2, an NPU core's scratchpad); "shared" for storage several units or a block's
// threads share (a shared L3, GPU shared memory); "global" for device memory.
// bandwidth_gbps and latency_ns may be 0, meaning unknown.
#pragma once

#include "hcd/Hcd.h"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace unitile::hcd::schema {

/// What a key's value must be. The loader checks the TOML type and the range.
enum class Kind : uint8_t {
  Text,         // any string, may be empty
  Name,         // non-empty string
  Choice,       // one of Field::choices
  Count,        // integer >= 1 that fits an int
  Size,         // bytes >= 0: integer or "32KiB"
  PositiveSize, // bytes >= 1
  Rate,         // number (integer or float) >= 0, finite
  Texts,        // array of strings
  Extents,      // array of 1 to 3 integers >= 1
  DTypes,       // non-empty array of dtype names
  OneDType,     // one dtype name
  LanesTable,   // table: dtype name -> Count
  RateTable,    // table: dtype name -> number > 0
  MatrixUnits,  // array of tables, each checked against matrix_unit_fields()
};

/// A validated value, independent of TOML; what Field::set takes and Field::get gives.
using Value = std::variant<std::string, int64_t, double, std::vector<std::string>,
                           std::vector<int64_t>, DType, std::vector<DType>,
                           std::map<DType, int>, std::map<DType, double>,
                           std::vector<MatrixUnit>>;

template <class Record>
struct Field {
  std::string_view key;
  Kind kind;
  bool required;
  std::span<const std::string_view> choices; // only for Kind::Choice
  void (*set)(Record&, const Value&);
  Value (*get)(const Record&);
};

/// One top-level table of the file ([device], [codegen], ...), mapped onto Hcd.
struct Section {
  std::string_view name;
  bool required;
  std::span<const Field<Hcd>> fields;
};

/// The single tables, in the order the writer emits them.
std::span<const Section> sections();
/// The keys of each [[compute.matrix_units]] entry.
std::span<const Field<MatrixUnit>> matrix_unit_fields();
/// The keys of each [[memory]] entry.
std::span<const Field<MemoryLevel>> memory_fields();

/// The array-of-tables section of memory levels and the free-form extension table.
inline constexpr std::string_view kMemorySection = "memory";
inline constexpr std::string_view kExtSection = "ext";

/// How a kind is named in "expected X, got Y" messages: "an integer", "a string", ...
std::string_view expected_description(Kind k);

std::string_view device_kind_name(DeviceKind k); // "cpu", "gpu", "npu"
std::optional<DeviceKind> parse_device_kind(std::string_view s);

} // namespace unitile::hcd::schema
