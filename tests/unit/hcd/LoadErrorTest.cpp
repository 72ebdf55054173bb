// Malformed HCD files: each gives one UserError with the exact message, hint and
// LINE:COL a user would need to fix it.
#include "hcd/Hcd.h"
#include "ir/Diagnostic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace unitile::hcd {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A minimal valid file; the cases below each break one thing in a copy of it.
constexpr const char* kValid = R"([device]
name = "t"
kind = "cpu"
plugin = "sim"

[codegen]
dialect = "c"

[compute]
units = 2

[[memory]]
name = "L1"
scope = "local"
size = "32KiB"
)";

Diagnostic load_error(const std::string& text) {
  try {
    load_string(text, "t.toml");
  } catch (const UserError& e) {
    EXPECT_EQ(e.diagnostics().size(), 1u);
    if (!e.diagnostics().empty()) return e.diagnostics()[0];
  }
  ADD_FAILURE() << "expected a UserError for:\n" << text;
  return {};
}

// `kValid` with its line `line` (1-based) replaced by `replacement`.
std::string with_line(int line, const std::string& replacement) {
  std::string text = kValid, out;
  int n = 1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string current = text.substr(pos, end - pos);
    out += (n == line ? replacement : current) + "\n";
    pos = end + 1;
    ++n;
  }
  return out;
}

void expect_at(const Diagnostic& d, int line, int col) {
  EXPECT_EQ(d.file, "t.toml");
  EXPECT_EQ(d.loc.line, line) << d.render();
  EXPECT_EQ(d.loc.col, col) << d.render();
}

TEST(HcdLoadError, TheValidBaseLoads) {
  Hcd h = load_string(kValid, "t.toml");
  EXPECT_EQ(h.name, "t");
  EXPECT_EQ(h.units, 2);
  EXPECT_EQ(h.memory.at(0).size_bytes, 32 * 1024);
  EXPECT_EQ(h.source, "t.toml");
}

TEST(HcdLoadError, TomlSyntaxErrorIsReformatted) {
  Diagnostic d = load_error(with_line(3, "kind = = \"cpu\""));
  expect_at(d, 3, 8);
  EXPECT_THAT(d.message, StartsWith("invalid TOML: "));
  EXPECT_EQ(d.source_line, "kind = = \"cpu\"");
  EXPECT_THAT(d.render(), StartsWith("t.toml:3:8: error: invalid TOML: "));
  EXPECT_THAT(d.render(), HasSubstr("\n  kind = = \"cpu\"\n         ^"));
}

TEST(HcdLoadError, DuplicateKeyIsASyntaxError) {
  Diagnostic d = load_error(with_line(3, "name = \"again\""));
  EXPECT_EQ(d.loc.line, 3);
  EXPECT_THAT(d.message, StartsWith("invalid TOML: "));
}

TEST(HcdLoadError, UnknownKeyWithNearMiss) {
  Diagnostic d = load_error(with_line(7, "dialect = \"c\"\nvectr_bits = 128"));
  expect_at(d, 8, 1);
  EXPECT_EQ(d.message, "unknown key 'vectr_bits' in [codegen]");
  EXPECT_EQ(d.hint, "did you mean 'vector_bits'?");
  EXPECT_EQ(d.caret_len, 10);
}

TEST(HcdLoadError, UnknownKeyWithoutNearMissListsTheValidOnes) {
  Diagnostic d = load_error(with_line(2, "name = \"t\"\ncolour = \"red\""));
  expect_at(d, 3, 1);
  EXPECT_EQ(d.message, "unknown key 'colour' in [device]");
  EXPECT_EQ(d.hint, "valid keys: name, vendor, kind, plugin");
}

TEST(HcdLoadError, UnknownSection) {
  Diagnostic d = load_error(with_line(6, "[codgen]"));
  expect_at(d, 6, 2);
  EXPECT_EQ(d.message, "unknown section [codgen]");
  EXPECT_EQ(d.hint, "did you mean [codegen]?");
}

TEST(HcdLoadError, WrongTypeSaysWhatWasExpected) {
  Diagnostic d = load_error(with_line(10, "units = \"four\""));
  expect_at(d, 10, 9);
  EXPECT_EQ(d.message, "compute.units: expected an integer, got a string");
  EXPECT_EQ(d.caret_len, 6);
}

TEST(HcdLoadError, MissingRequiredKeyPointsAtItsTable) {
  Diagnostic d = load_error(with_line(4, ""));
  expect_at(d, 1, 1);
  EXPECT_EQ(d.message, "missing required key 'plugin' in [device]");
  EXPECT_EQ(d.source_line, "[device]");
}

TEST(HcdLoadError, MissingRequiredKeyInAMemoryLevel) {
  Diagnostic d = load_error(with_line(14, ""));
  expect_at(d, 12, 1);
  EXPECT_EQ(d.message, "missing required key 'scope' in memory[0]");
}

TEST(HcdLoadError, MissingRequiredSection) {
  Diagnostic d = load_error(with_line(9, "").replace(with_line(9, "").find("units = 2"), 9, ""));
  expect_at(d, 1, 1);
  EXPECT_EQ(d.message, "missing required section [compute]");
  EXPECT_EQ(d.hint, "every HCD file needs [device], [codegen], [compute], [[memory]]");
}

TEST(HcdLoadError, NoMemoryLevel) {
  std::string text = kValid;
  text = text.substr(0, text.find("[[memory]]"));
  Diagnostic d = load_error(text);
  expect_at(d, 1, 1);
  EXPECT_EQ(d.message, "missing required section [[memory]]");
  EXPECT_EQ(d.hint, "describe at least one memory level: [[memory]] name, scope, size");
}

TEST(HcdLoadError, InvalidEnumValue) {
  Diagnostic d = load_error(with_line(3, "kind = \"gpus\""));
  expect_at(d, 3, 8);
  EXPECT_EQ(d.message, "device.kind: invalid value 'gpus'");
  EXPECT_EQ(d.hint, "did you mean 'gpu'? expected one of: cpu, gpu, npu");
}

TEST(HcdLoadError, InvalidDialect) {
  Diagnostic d = load_error(with_line(7, "dialect = \"metal\""));
  expect_at(d, 7, 11);
  EXPECT_EQ(d.message, "codegen.dialect: invalid value 'metal'");
  EXPECT_EQ(d.hint, "expected one of: c, opencl, cuda, loopir");
}

TEST(HcdLoadError, NonPositiveSize) {
  Diagnostic d = load_error(with_line(15, "size = 0"));
  expect_at(d, 15, 8);
  EXPECT_EQ(d.message, "memory[0].size: size must be positive, got 0");
}

TEST(HcdLoadError, DecimalSizeUnitIsRejected) {
  Diagnostic d = load_error(with_line(15, "size = \"32KB\""));
  expect_at(d, 15, 8);
  EXPECT_EQ(d.message, "memory[0].size: invalid size '32KB'");
  EXPECT_THAT(d.hint, HasSubstr("\"32KiB\""));
}

TEST(HcdLoadError, ZeroUnits) {
  Diagnostic d = load_error(with_line(10, "units = 0"));
  expect_at(d, 10, 9);
  EXPECT_EQ(d.message, "compute.units: must be at least 1, got 0");
}

TEST(HcdLoadError, CountTooLargeForAnInt) {
  Diagnostic d = load_error(with_line(10, "units = 4294967296"));
  expect_at(d, 10, 9);
  EXPECT_EQ(d.message, "compute.units: 4294967296 is too large (at most 2147483647)");
}

TEST(HcdLoadError, UnknownDTypeInLanes) {
  Diagnostic d = load_error(with_line(7, "dialect = \"c\"\nlanes = { f32 = 8, f128 = 2 }"));
  expect_at(d, 8, 20);
  EXPECT_EQ(d.message, "codegen.lanes: unknown dtype 'f128'");
  EXPECT_EQ(d.hint, "dtypes are f16, bf16, f32, f64, i8, i16, i32, i64, u8, bool");
}

TEST(HcdLoadError, UnknownDTypeInAMatrixUnit) {
  std::string text = with_line(10, "units = 2\n\n[[compute.matrix_units]]\nm = 16\nn = 16\nk = 16\n"
                                   "inputs = [\"f16\", \"fp8\"]\naccumulator = \"f32\"");
  Diagnostic d = load_error(text);
  expect_at(d, 16, 18);
  EXPECT_EQ(d.message, "compute.matrix_units[0].inputs[1]: unknown dtype 'fp8'");
}

TEST(HcdLoadError, WrongTypeInsideAnArray) {
  Diagnostic d = load_error(with_line(7, "dialect = \"c\"\nisa = [\"avx2\", 512]"));
  expect_at(d, 8, 16);
  EXPECT_EQ(d.message, "codegen.isa[1]: expected a string, got an integer");
}

TEST(HcdLoadError, TooManyGridExtents) {
  Diagnostic d = load_error(std::string(kValid) + "\n[limits]\nmax_grid = [1, 2, 3, 4]\n");
  expect_at(d, 18, 12);
  EXPECT_EQ(d.message, "limits.max_grid: expected 1 to 3 extents, got 4");
}

TEST(HcdLoadError, NegativeBandwidth) {
  Diagnostic d = load_error(with_line(15, "size = \"32KiB\"\nbandwidth_gbps = -5.0"));
  expect_at(d, 16, 18);
  EXPECT_EQ(d.message, "memory[0].bandwidth_gbps: must be a finite number >= 0, got -5.0");
}

TEST(HcdLoadError, DuplicateMemoryLevelName) {
  std::string text = std::string(kValid) + "\n[[memory]]\nname = \"L1\"\nscope = \"global\"\nsize = \"1GiB\"\n";
  Diagnostic d = load_error(text);
  expect_at(d, 18, 8);
  EXPECT_EQ(d.message, "memory[1].name: duplicate memory level 'L1'");
}

TEST(HcdLoadError, MemoryMustBeAnArrayOfTables) {
  Diagnostic d = load_error(with_line(12, "[memory]"));
  expect_at(d, 12, 1);
  EXPECT_EQ(d.message, "memory: expected an array of tables ([[memory]]), got a table");
}

TEST(HcdLoadError, EmptyName) {
  Diagnostic d = load_error(with_line(2, "name = \"\""));
  expect_at(d, 2, 8);
  EXPECT_EQ(d.message, "device.name: must not be empty");
}

TEST(HcdLoadError, UnknownKeyInAMemoryLevel) {
  Diagnostic d = load_error(with_line(15, "size = \"32KiB\"\nlatency = 4"));
  expect_at(d, 16, 1);
  EXPECT_EQ(d.message, "unknown key 'latency' in memory[0]");
  EXPECT_EQ(d.hint, "valid keys: name, scope, size, line, bandwidth_gbps, latency_ns, shared_by");
}

TEST(HcdLoadError, FirstErrorInFileOrderWins) {
  // Both keys are wrong; 'zzz' sorts last but comes first in the file.
  Diagnostic d = load_error(with_line(2, "zzz = 1\naaa = 2\nname = \"t\""));
  EXPECT_EQ(d.message, "unknown key 'zzz' in [device]");
  expect_at(d, 2, 1);
}

TEST(HcdLoadError, RenderedDiagnosticHasCaretAndHint) {
  Diagnostic d = load_error(with_line(7, "dialect = \"c\"\nvectr_bits = 128"));
  EXPECT_EQ(d.render(), "t.toml:8:1: error: unknown key 'vectr_bits' in [codegen]\n"
                        "  vectr_bits = 128\n"
                        "  ^~~~~~~~~~\n"
                        "  hint: did you mean 'vector_bits'?\n");
}

TEST(HcdLoadError, MissingFileIsAClearError) {
  try {
    load_file("/nonexistent/dir/device.toml");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_THAT(std::string(e.what()),
                StartsWith("/nonexistent/dir/device.toml: error: cannot read HCD file: "
                           "No such file or directory"));
  }
}

TEST(HcdLoadError, LoadFileReadsAFileAndRecordsItsPath) {
  std::string path = std::string(UNITILE_SOURCE_DIR) + "/src/hcd/devices/sim.toml";
  Hcd h = load_file(path);
  EXPECT_EQ(h.name, "sim");
  EXPECT_EQ(h.source, path);
}

} // namespace
} // namespace unitile::hcd
