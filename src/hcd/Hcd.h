// The Hardware Capability Description: everything the scheduler and codegen may know
// about a device, loaded from a TOML file (or detected, for the host CPU). Passes read
// these fields; no code outside src/backends/ branches on a device's name.
#pragma once

#include "ir/Type.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace unitile::hcd {

enum class DeviceKind : uint8_t { Cpu, Gpu, Npu };

struct MatrixUnit {
  int m = 0, n = 0, k = 0;
  std::vector<DType> input_dtypes;
  DType accumulator = DType::F32;
  /// What the unit multiplies at: "inputs" (the operands' own dtype, exact products) or
  /// "tf32" (f32 operands rounded to a 10-bit mantissa first, as NVIDIA's TF32 mode):
  /// a lossy unit the scheduler uses only when a schedule asks for it.
  std::string precision = "inputs";
};

struct MemoryLevel {
  std::string name;      // "L1", "L2", "L3", "DRAM", "shared", "global"
  std::string scope;     // "register", "local", "shared", "global" (the MemScope names)
  int64_t size_bytes = 0;
  int line_bytes = 64;
  double bandwidth_gbps = 0; // GB/s, 1e9 bytes per second
  double latency_ns = 0;
  int shared_by = 1;     // how many compute units share one instance of this level
};

struct Hcd {
  // [device]
  std::string name;   // "host-cpu", "nvidia-h200", ...
  std::string vendor;
  DeviceKind kind = DeviceKind::Cpu;
  std::string plugin; // plugin name: "cpu", "opencl", "cuda", "sim"
  // [codegen]
  std::string dialect = "c"; // "c", "opencl", "cuda", "loopir"
  int vector_bits = 128;
  std::map<DType, int> lanes; // lanes per dtype at vector_bits
  int vector_registers = 16;
  int warp_size = 1;
  std::vector<std::string> isa; // feature names: "avx2", "avx512f", "neon", "rvv", ...
  // [compute]
  int units = 1;                 // cores / SMs / NPU cores
  int max_threads_per_block = 1;
  std::map<DType, double> peak_gflops; // per dtype
  std::vector<MatrixUnit> matrix_units;
  // [[memory]], innermost first
  std::vector<MemoryLevel> memory;
  // [limits]
  std::vector<int64_t> max_grid{2147483647, 65535, 65535};
  std::vector<int64_t> max_block{1, 1, 1};
  int64_t shared_memory_per_block = 0;
  // [toolchain]
  std::string compiler;    // "cc", "aarch64-linux-gnu-gcc", "nvrtc", "pocl"
  std::vector<std::string> flags;
  std::string target_triple;
  std::string runner;      // optional: how to run cross binaries ("qemu-aarch64 -L ...")
  // optional: the name of the compiler's readable output ("ptx") and the flags that,
  // appended to `flags`, make compile produce it instead of the binary (`unitile
  // compile --emit NAME` prints it)
  std::string assembly;
  std::vector<std::string> assembly_flags;
  // [ext]: vendor extension keys, typed, kept verbatim as TOML text values
  std::map<std::string, std::string> ext;

  std::string source; // where it came from: a path, "builtin:NAME", or "detected"

  int lanes_for(DType t) const; // lanes[t] if given, else vector_bits / (8*bytes)
  const MemoryLevel* level(const std::string& name) const;
  /// The largest cache a program can count on keeping its data in between launches:
  /// every cached level (not registers, not the device memory), and on a CPU at most
  /// 16 MiB per CPU sharing an instance (a VM's sysfs reports the whole socket's L3,
  /// 480 MiB on the AMX Xeon of docs/PERFORMANCE.md for two vCPUs, which the host's
  /// other guests share). 0 when the HCD names no cache.
  int64_t kept_cache_bytes() const;
  /// Stable hash of every field that affects generated code (not `source`).
  uint64_t hash() const;
};

/// Load and validate an HCD file. Errors are UserError with FILE:LINE:COL diagnostics:
/// unknown key, wrong type, missing required field, out-of-range value.
Hcd load_file(const std::string& path);
/// Same, from text; `name` is used in diagnostics.
Hcd load_string(const std::string& toml_text, const std::string& name);
/// Built-in descriptions by name: the files under src/hcd/devices/ (compiled in), plus
/// "host-cpu", detected at run time from the OS and cpuid.
Hcd builtin(const std::string& name);
std::vector<std::string> builtin_names();
/// The host CPU as the OS and cpuid report it: cores, cache sizes, vector ISA and lanes.
Hcd detect_host_cpu();
/// TOML text of `h` that load_string accepts and that reproduces `h`.
std::string to_toml(const Hcd& h);
/// One-line summary for `unitile devices`.
std::string summary(const Hcd& h);

} // namespace unitile::hcd
