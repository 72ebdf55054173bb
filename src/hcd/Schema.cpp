// The one table of HCD sections and keys: type, required-ness and Hcd field of each.
#include "hcd/Schema.h"

#include <type_traits>

namespace unitile::hcd::schema {
namespace {

// Generic accessors through a member pointer. Hcd stores small counts as int while
// Value carries every integer as int64_t; the loader has already range-checked them.
template <class Record, auto Member>
void assign(Record& r, const Value& v) {
  auto& dst = r.*Member;
  using T = std::remove_cvref_t<decltype(dst)>;
  if constexpr (std::is_same_v<T, int>)
    dst = static_cast<int>(std::get<int64_t>(v));
  else
    dst = std::get<T>(v);
}

template <class Record, auto Member>
Value read(const Record& r) {
  const auto& src = r.*Member;
  using T = std::remove_cvref_t<decltype(src)>;
  if constexpr (std::is_same_v<T, int>)
    return static_cast<int64_t>(src);
  else
    return src;
}

#define UT_HCD_BIND(Record, member) &assign<Record, &Record::member>, &read<Record, &Record::member>

void set_kind(Hcd& h, const Value& v) { h.kind = *parse_device_kind(std::get<std::string>(v)); }
Value get_kind(const Hcd& h) { return std::string(device_kind_name(h.kind)); }

constexpr std::string_view kKinds[] = {"cpu", "gpu", "npu"};
constexpr std::string_view kDialects[] = {"c", "opencl", "cuda", "loopir"};
constexpr std::string_view kScopes[] = {"register", "local", "shared", "global"};
constexpr std::string_view kPrecisions[] = {"inputs", "tf32"};

const Field<Hcd> kDevice[] = {
    {"name", Kind::Name, true, {}, UT_HCD_BIND(Hcd, name)},
    {"vendor", Kind::Text, false, {}, UT_HCD_BIND(Hcd, vendor)},
    {"kind", Kind::Choice, true, kKinds, &set_kind, &get_kind},
    {"plugin", Kind::Name, true, {}, UT_HCD_BIND(Hcd, plugin)},
};

const Field<Hcd> kCodegen[] = {
    {"dialect", Kind::Choice, true, kDialects, UT_HCD_BIND(Hcd, dialect)},
    {"vector_bits", Kind::Count, false, {}, UT_HCD_BIND(Hcd, vector_bits)},
    {"lanes", Kind::LanesTable, false, {}, UT_HCD_BIND(Hcd, lanes)},
    {"vector_registers", Kind::Count, false, {}, UT_HCD_BIND(Hcd, vector_registers)},
    {"warp_size", Kind::Count, false, {}, UT_HCD_BIND(Hcd, warp_size)},
    {"isa", Kind::Texts, false, {}, UT_HCD_BIND(Hcd, isa)},
};

const Field<Hcd> kCompute[] = {
    {"units", Kind::Count, true, {}, UT_HCD_BIND(Hcd, units)},
    {"max_threads_per_block", Kind::Count, false, {}, UT_HCD_BIND(Hcd, max_threads_per_block)},
    {"peak_gflops", Kind::RateTable, false, {}, UT_HCD_BIND(Hcd, peak_gflops)},
    {"matrix_units", Kind::MatrixUnits, false, {}, UT_HCD_BIND(Hcd, matrix_units)},
};

const Field<Hcd> kLimits[] = {
    {"max_grid", Kind::Extents, false, {}, UT_HCD_BIND(Hcd, max_grid)},
    {"max_block", Kind::Extents, false, {}, UT_HCD_BIND(Hcd, max_block)},
    {"shared_memory_per_block", Kind::Size, false, {}, UT_HCD_BIND(Hcd, shared_memory_per_block)},
};

const Field<Hcd> kToolchain[] = {
    {"compiler", Kind::Text, false, {}, UT_HCD_BIND(Hcd, compiler)},
    {"flags", Kind::Texts, false, {}, UT_HCD_BIND(Hcd, flags)},
    {"target_triple", Kind::Text, false, {}, UT_HCD_BIND(Hcd, target_triple)},
    {"runner", Kind::Text, false, {}, UT_HCD_BIND(Hcd, runner)},
    {"assembly", Kind::Text, false, {}, UT_HCD_BIND(Hcd, assembly)},
    {"assembly_flags", Kind::Texts, false, {}, UT_HCD_BIND(Hcd, assembly_flags)},
};

const Section kSections[] = {
    {"device", true, kDevice},   {"codegen", true, kCodegen},     {"compute", true, kCompute},
    {"limits", false, kLimits},  {"toolchain", false, kToolchain},
};

const Field<MatrixUnit> kMatrixUnit[] = {
    {"m", Kind::Count, true, {}, UT_HCD_BIND(MatrixUnit, m)},
    {"n", Kind::Count, true, {}, UT_HCD_BIND(MatrixUnit, n)},
    {"k", Kind::Count, true, {}, UT_HCD_BIND(MatrixUnit, k)},
    {"inputs", Kind::DTypes, true, {}, UT_HCD_BIND(MatrixUnit, input_dtypes)},
    {"accumulator", Kind::OneDType, true, {}, UT_HCD_BIND(MatrixUnit, accumulator)},
    {"precision", Kind::Choice, false, kPrecisions, UT_HCD_BIND(MatrixUnit, precision)},
};

// bandwidth_gbps and latency_ns may be 0, meaning "not known".
const Field<MemoryLevel> kMemory[] = {
    {"name", Kind::Name, true, {}, UT_HCD_BIND(MemoryLevel, name)},
    {"scope", Kind::Choice, true, kScopes, UT_HCD_BIND(MemoryLevel, scope)},
    {"size", Kind::PositiveSize, true, {}, UT_HCD_BIND(MemoryLevel, size_bytes)},
    {"line", Kind::Count, false, {}, UT_HCD_BIND(MemoryLevel, line_bytes)},
    {"bandwidth_gbps", Kind::Rate, false, {}, UT_HCD_BIND(MemoryLevel, bandwidth_gbps)},
    {"latency_ns", Kind::Rate, false, {}, UT_HCD_BIND(MemoryLevel, latency_ns)},
    {"shared_by", Kind::Count, false, {}, UT_HCD_BIND(MemoryLevel, shared_by)},
};

#undef UT_HCD_BIND

} // namespace

std::span<const Section> sections() { return kSections; }
std::span<const Field<MatrixUnit>> matrix_unit_fields() { return kMatrixUnit; }
std::span<const Field<MemoryLevel>> memory_fields() { return kMemory; }

std::string_view expected_description(Kind k) {
  switch (k) {
  case Kind::Text:
  case Kind::Name:
  case Kind::Choice: return "a string";
  case Kind::Count: return "an integer";
  case Kind::Size:
  case Kind::PositiveSize: return "a size (an integer or a string like \"32KiB\")";
  case Kind::Rate: return "a number";
  case Kind::Texts: return "an array of strings";
  case Kind::Extents: return "an array of integers";
  case Kind::DTypes: return "an array of dtype names";
  case Kind::OneDType: return "a dtype name";
  case Kind::LanesTable:
  case Kind::RateTable: return "a table of dtype names";
  case Kind::MatrixUnits: return "an array of tables";
  }
  return "a value";
}

std::string_view device_kind_name(DeviceKind k) {
  switch (k) {
  case DeviceKind::Cpu: return "cpu";
  case DeviceKind::Gpu: return "gpu";
  case DeviceKind::Npu: return "npu";
  }
  return "cpu";
}

std::optional<DeviceKind> parse_device_kind(std::string_view s) {
  if (s == "cpu") return DeviceKind::Cpu;
  if (s == "gpu") return DeviceKind::Gpu;
  if (s == "npu") return DeviceKind::Npu;
  return std::nullopt;
}

} // namespace unitile::hcd::schema
