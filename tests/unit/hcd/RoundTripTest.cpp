// to_toml writes what load_string reads back unchanged; hash and summary follow from it.
#include "hcd/Hcd.h"
#include "ir/Diagnostic.h"

#include <gtest/gtest.h>

namespace unitile::hcd {
namespace {

// Every field of the struct except `source`, which records where a copy came from.
void expect_same_device(const Hcd& a, const Hcd& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.vendor, b.vendor);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.plugin, b.plugin);
  EXPECT_EQ(a.dialect, b.dialect);
  EXPECT_EQ(a.vector_bits, b.vector_bits);
  EXPECT_EQ(a.lanes, b.lanes);
  EXPECT_EQ(a.vector_registers, b.vector_registers);
  EXPECT_EQ(a.warp_size, b.warp_size);
  EXPECT_EQ(a.isa, b.isa);
  EXPECT_EQ(a.units, b.units);
  EXPECT_EQ(a.max_threads_per_block, b.max_threads_per_block);
  EXPECT_EQ(a.peak_gflops, b.peak_gflops); // exact: floats must survive the text form
  ASSERT_EQ(a.matrix_units.size(), b.matrix_units.size());
  for (size_t i = 0; i < a.matrix_units.size(); ++i) {
    EXPECT_EQ(a.matrix_units[i].m, b.matrix_units[i].m);
    EXPECT_EQ(a.matrix_units[i].n, b.matrix_units[i].n);
    EXPECT_EQ(a.matrix_units[i].k, b.matrix_units[i].k);
    EXPECT_EQ(a.matrix_units[i].input_dtypes, b.matrix_units[i].input_dtypes);
    EXPECT_EQ(a.matrix_units[i].accumulator, b.matrix_units[i].accumulator);
    EXPECT_EQ(a.matrix_units[i].precision, b.matrix_units[i].precision);
  }
  ASSERT_EQ(a.memory.size(), b.memory.size());
  for (size_t i = 0; i < a.memory.size(); ++i) {
    SCOPED_TRACE(a.memory[i].name);
    EXPECT_EQ(a.memory[i].name, b.memory[i].name);
    EXPECT_EQ(a.memory[i].scope, b.memory[i].scope);
    EXPECT_EQ(a.memory[i].size_bytes, b.memory[i].size_bytes);
    EXPECT_EQ(a.memory[i].line_bytes, b.memory[i].line_bytes);
    EXPECT_EQ(a.memory[i].bandwidth_gbps, b.memory[i].bandwidth_gbps);
    EXPECT_EQ(a.memory[i].latency_ns, b.memory[i].latency_ns);
    EXPECT_EQ(a.memory[i].shared_by, b.memory[i].shared_by);
  }
  EXPECT_EQ(a.max_grid, b.max_grid);
  EXPECT_EQ(a.max_block, b.max_block);
  EXPECT_EQ(a.shared_memory_per_block, b.shared_memory_per_block);
  EXPECT_EQ(a.compiler, b.compiler);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.target_triple, b.target_triple);
  EXPECT_EQ(a.runner, b.runner);
  EXPECT_EQ(a.ext, b.ext);
}

TEST(HcdRoundTrip, EveryBuiltinAndTheDetectedHost) {
  for (const auto& name : builtin_names()) {
    SCOPED_TRACE(name);
    Hcd h = builtin(name);
    Hcd back = load_string(to_toml(h), "roundtrip.toml");
    expect_same_device(h, back);
    EXPECT_EQ(back.source, "roundtrip.toml");
    EXPECT_EQ(back.hash(), h.hash());
  }
  Hcd host = detect_host_cpu();
  expect_same_device(host, load_string(to_toml(host), "host.toml"));
}

// Values the built-in files do not exercise: awkward strings, non-round sizes and
// floats, explicit lanes, extension keys of every TOML type.
Hcd awkward_device() {
  Hcd h;
  h.name = "odd \"name\" \\ with\ttabs and ünïcode";
  h.vendor = "";
  h.kind = DeviceKind::Npu;
  h.plugin = "sim";
  h.dialect = "opencl";
  h.vector_bits = 96;
  h.lanes = {{DType::F32, 3}, {DType::Bool, 96}};
  h.isa = {"a b", "line\nbreak"};
  h.units = 7;
  h.peak_gflops = {{DType::F32, 0.1}, {DType::F64, 1e-7}, {DType::I8, 1e300}, {DType::BF16, 3.0}};
  h.matrix_units = {MatrixUnit{1, 2, 3, {DType::I8, DType::U8}, DType::I32}};
  h.memory = {MemoryLevel{"tiny", "register", 1000, 3, 0.0, 0.25, 1},
              MemoryLevel{"big", "global", (int64_t{3} << 40) + 1024, 256, 123456.789, 1e-3, 7}};
  h.max_grid = {5};
  h.max_block = {2, 3};
  h.shared_memory_per_block = 1536;
  h.compiler = "x";
  h.flags = {};
  h.runner = "qemu -L '/a b'";
  h.ext = {{"flag", "true"}, {"count", "3"}, {"name", "'vendor'"}, {"list", "[ 1, 2 ]"},
           {"needs quotes.key", "1.5"}};
  return h;
}

TEST(HcdRoundTrip, AwkwardValuesSurvive) {
  Hcd h = awkward_device();
  std::string text = to_toml(h);
  Hcd back = load_string(text, "awkward.toml");
  expect_same_device(h, back);
  back.source.clear();
  EXPECT_EQ(to_toml(back), text); // the text form is a fixed point
}

TEST(HcdRoundTrip, ExtKeepsAnyValueAsTomlText) {
  const std::string text = R"([device]
name = "x"
kind = "gpu"
plugin = "vendorx"

[codegen]
dialect = "opencl"

[compute]
units = 1

[[memory]]
name = "global"
scope = "global"
size = 4096

[ext]
flag = true
ratio = 0.5
tags = ["a", "b"]
when = 2024-01-02

[ext.vendorx]
queue_depth = 8
mode = { fast = true }
)";
  Hcd h = load_string(text, "ext.toml");
  ASSERT_EQ(h.ext.size(), 5u);
  EXPECT_EQ(h.ext.at("flag"), "true");
  EXPECT_EQ(h.ext.at("ratio"), "0.5");
  EXPECT_EQ(h.ext.at("when"), "2024-01-02");
  EXPECT_EQ(h.ext.at("vendorx"), "{ mode = { fast = true }, queue_depth = 8 }");
  Hcd back = load_string(to_toml(h), "ext2.toml");
  EXPECT_EQ(back.ext, h.ext);
  EXPECT_EQ(back.memory.at(0).size_bytes, 4096);
}

TEST(HcdRoundTrip, SizesAcceptIntegersAndBinaryUnits) {
  std::string base = R"([device]
name = "s"
kind = "cpu"
plugin = "sim"
[codegen]
dialect = "c"
[compute]
units = 1
[limits]
shared_memory_per_block = "48 KiB"
)";
  int count = 0;
  auto level = [&](const std::string& size) {
    return "[[memory]]\nname = \"m" + std::to_string(count++) + "\"\nscope = \"global\"\nsize = " +
           size + "\n";
  };
  Hcd h = load_string(base + level("512") + level("\"512B\"") + level("\"3MiB\"") +
                          level("\"2GiB\"") + level("\"1TiB\""),
                      "sizes.toml");
  EXPECT_EQ(h.shared_memory_per_block, 48 * 1024);
  ASSERT_EQ(h.memory.size(), 5u);
  EXPECT_EQ(h.memory[0].size_bytes, 512);
  EXPECT_EQ(h.memory[1].size_bytes, 512);
  EXPECT_EQ(h.memory[2].size_bytes, 3 << 20);
  EXPECT_EQ(h.memory[3].size_bytes, int64_t{2} << 30);
  EXPECT_EQ(h.memory[4].size_bytes, int64_t{1} << 40);
}

TEST(HcdHash, IgnoresSourceAndSeesEveryOtherField) {
  Hcd a = builtin("sim");
  Hcd b = load_file(std::string(UNITILE_SOURCE_DIR) + "/src/hcd/devices/sim.toml");
  EXPECT_NE(a.source, b.source);
  EXPECT_EQ(a.hash(), b.hash());
  Hcd c = a;
  c.memory[0].latency_ns += 0.5;
  EXPECT_NE(c.hash(), a.hash());
  Hcd d = a;
  d.flags.push_back("-g");
  EXPECT_NE(d.hash(), a.hash());
  Hcd e = a;
  e.ext["x"] = "1";
  EXPECT_NE(e.hash(), a.hash());
}

TEST(HcdHash, IsTheSameInEveryRun) {
  // XXH64 of the TOML text, so it can key on-disk caches. If this value changes, the
  // text form changed, and every cache keyed on HCD hashes is invalidated with it.
  Hcd h;
  h.name = "golden";
  h.plugin = "sim";
  h.memory = {MemoryLevel{"L1", "local", 32768, 64, 1.0, 1.0, 1}};
  EXPECT_EQ(h.hash(), Hcd(h).hash());
  EXPECT_EQ(h.hash(), load_string(to_toml(h), "g.toml").hash());
  EXPECT_EQ(h.hash(), 0x835169476a145744ull) << std::hex << h.hash();
}

TEST(HcdSummary, OneLineWithTheNumbersThatMatter) {
  EXPECT_EQ(summary(builtin("sim")),
            "sim: cpu, 4 units, 256-bit vectors (8 x f32), L1 32 KiB, L2 1 MiB, dialect loopir");
  EXPECT_EQ(summary(builtin("nvidia-h200")),
            "nvidia-h200: gpu, 132 units, sm_90, 128-bit vectors (4 x f32), matrix 16x8x16 f16/bf16, 16x8x8 "
            "tf32, 16x8x32 i8, warp 32, registers 256 KiB, shared 228 KiB, L2 50 MiB, dialect cuda");
  Hcd host = builtin("sim");
  host.name = "host-cpu";
  host.plugin = "cpu";
  host.dialect = "c";
  host.units = 2;
  host.isa = {"sse4.2", "avx", "avx2", "avx512f", "amx-bf16"};
  host.vector_bits = 512;
  host.memory = {MemoryLevel{"L1", "local", 48 << 10}, MemoryLevel{"L2", "local", 2 << 20},
                 MemoryLevel{"L3", "shared", 105 << 20}, MemoryLevel{"DRAM", "global", int64_t{1} << 34}};
  EXPECT_EQ(summary(host), "host-cpu: cpu, 2 units, avx512f, 512-bit vectors (16 x f32), "
                           "L1 48 KiB, L2 2 MiB, L3 105 MiB, dialect c");
  host.matrix_units = {MatrixUnit{16, 16, 32, {DType::BF16}, DType::F32}};
  EXPECT_EQ(summary(host), "host-cpu: cpu, 2 units, avx512f, 512-bit vectors (16 x f32), matrix 16x16x32 bf16, "
                           "L1 48 KiB, L2 2 MiB, L3 105 MiB, dialect c");
  EXPECT_EQ(summary(builtin("host-cpu")).rfind("host-cpu: cpu, ", 0), 0u);
}

} // namespace
} // namespace unitile::hcd
