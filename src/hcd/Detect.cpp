// Host-CPU detection: the HCD of the machine we run on, from cpuid / auxv, sysfs and
// sched_getaffinity. It never fails: whatever the OS does not tell us gets a sane default.
#include "hcd/Hcd.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <sched.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) || defined(__riscv)
#include <sys/auxv.h>
#endif

namespace unitile::hcd {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

// "32K", "32768K", "1M", "512" (sysfs cache sizes) to bytes; 0 when unreadable.
int64_t parse_sysfs_size(const std::string& s) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return 0;
  int64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) v = v * 10 + (s[i] - '0');
  if (i < s.size() && (s[i] == 'K' || s[i] == 'k')) return v << 10;
  if (i < s.size() && s[i] == 'M') return v << 20;
  if (i < s.size() && s[i] == 'G') return v << 30;
  return v;
}

// "0-3,8,10-11" to the number of CPUs it names; 0 when unreadable.
int count_cpu_list(const std::string& s) {
  int count = 0;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        std::stoi(part);
        ++count;
      } else {
        int lo = std::stoi(part.substr(0, dash)), hi = std::stoi(part.substr(dash + 1));
        if (hi >= lo) count += hi - lo + 1;
      }
    } catch (const std::exception&) {
      return 0;
    }
  }
  return count;
}

int usable_cpus() {
  int n = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    n = online > 0 ? static_cast<int>(online) : 1;
  }
  // The cpu device runs blocks on UNITILE_NUM_THREADS threads when that is set: fewer
  // units than CPUs are then all a kernel gets, and the scheduler should split its work
  // (and repeat its GEMM packing) for those, not for idle CPUs. A malformed value is
  // left to the device, which rejects it at launch.
  if (const char* env = std::getenv("UNITILE_NUM_THREADS"); env && *env) {
    char* end = nullptr;
    errno = 0;
    const long long t = std::strtoll(env, &end, 10);
    if (*end == '\0' && errno == 0 && t >= 1 && t < n) n = static_cast<int>(t);
  }
  return n;
}

// The core clock in GHz: the cpufreq maximum, else the "@ 2.50GHz" of the model name,
// else the current "cpu MHz" rounded to 100 MHz (it wanders, and the HCD hash must
// not), else 2.5 GHz.
double clock_ghz() {
  std::string khz = read_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (int64_t v = parse_sysfs_size(khz); v > 0) return static_cast<double>(v) / 1e6;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  double mhz = 0;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t at = line.find(" @ ");
      if (at != std::string::npos) {
        double ghz = std::atof(line.c_str() + at + 3);
        if (ghz > 0.1 && ghz < 10 && line.find("GHz", at) != std::string::npos) return ghz;
      }
    }
    if (mhz == 0 && line.rfind("cpu MHz", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) mhz = std::atof(line.c_str() + colon + 1);
    }
    if (line.empty() && mhz > 0) break; // the first processor's block is enough
  }
  if (mhz > 100 && mhz < 10000) return std::round(mhz / 100) / 10;
  return 2.5;
}

struct IsaInfo {
  std::vector<std::string> features;
  std::string vendor;
  std::string triple;
  int vector_bits = 128;
  int vector_registers = 16;
};

bool has(const IsaInfo& info, std::string_view feature) {
  return std::find(info.features.begin(), info.features.end(), feature) != info.features.end();
}

#if defined(__x86_64__) || defined(__i386__)
uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

IsaInfo detect_isa() {
  IsaInfo info;
  info.triple = "x86_64-linux-gnu";
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return info;
  unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  info.vendor = std::string(vendor) == "GenuineIntel"   ? "intel"
                : std::string(vendor) == "AuthenticAMD" ? "amd"
                                                        : std::string(vendor);
  __get_cpuid(1, &a, &b, &c, &d);
  unsigned leaf1_ecx = c;
  // The OS must save the wider register state, or using it faults: XCR0 tells.
  bool osxsave = leaf1_ecx & (1u << 27);
  uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  bool os_avx = (xcr0 & 0x6) == 0x6;             // XMM and YMM state
  bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0; // opmask, ZMM_Hi256, Hi16_ZMM
  bool os_amx = (xcr0 & 0x60000) == 0x60000;     // XTILECFG and XTILEDATA

  auto add = [&](bool present, const char* name) {
    if (present) info.features.emplace_back(name);
  };
  add(leaf1_ecx & (1u << 20), "sse4.2");
  add(os_avx && (leaf1_ecx & (1u << 28)), "avx");
  add(os_avx && (leaf1_ecx & (1u << 12)), "fma");
  add(os_avx && (leaf1_ecx & (1u << 29)), "f16c");
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    unsigned l7_ebx = b, l7_edx = d, l7_max_sub = a;
    add(os_avx && (l7_ebx & (1u << 5)), "avx2");
    add(os_avx512 && (l7_ebx & (1u << 16)), "avx512f");
    add(os_avx512 && (l7_ebx & (1u << 17)), "avx512dq");
    add(os_avx512 && (l7_ebx & (1u << 30)), "avx512bw");
    add(os_avx512 && (l7_ebx & (1u << 31)), "avx512vl");
    if (l7_max_sub >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      add(os_avx512 && (a & (1u << 5)), "avx512_bf16");
    }
    add(os_avx512 && (l7_edx & (1u << 23)), "avx512_fp16");
    add(os_amx && (l7_edx & (1u << 24)), "amx-tile");
    add(os_amx && (l7_edx & (1u << 22)), "amx-bf16");
  }
  bool avx512 = has(info, "avx512f");
  info.vector_bits = avx512 ? 512 : has(info, "avx2") ? 256 : 128;
  info.vector_registers = avx512 ? 32 : 16;
  return info;
}
#elif defined(__aarch64__)
IsaInfo detect_isa() {
  IsaInfo info;
  info.vendor = "arm";
  info.triple = "aarch64-linux-gnu";
  unsigned long hwcap = getauxval(AT_HWCAP);
  if (hwcap & (1ul << 1)) info.features.emplace_back("neon"); // HWCAP_ASIMD
  if (hwcap & (1ul << 22)) info.features.emplace_back("sve");  // HWCAP_SVE
  info.vector_bits = 128;
  info.vector_registers = 32;
  return info;
}
#elif defined(__riscv)
IsaInfo detect_isa() {
  IsaInfo info;
  info.vendor = "riscv";
  info.triple = "riscv64-linux-gnu";
  unsigned long hwcap = getauxval(AT_HWCAP);
  if (hwcap & (1ul << ('V' - 'A'))) info.features.emplace_back("rvv");
  info.vector_bits = 128; // VLEN is at least 128 with V; we do not assume more
  info.vector_registers = 32;
  return info;
}
#else
IsaInfo detect_isa() { return IsaInfo{}; }
#endif

// Rough costs the OS does not report, as bytes per cycle (bandwidth seen by one core)
// and cycles (load-to-use latency) per cache level. ESTIMATES, typical of recent
// x86-64 and Arm server cores; the tuner measures, these only seed the analytic model.
// L1 serves two vector loads and one vector store a cycle (Intel since Haswell, AMD
// since Zen 2, Arm Neoverse): 192 bytes with 512-bit vectors. A flat 64 bytes made the
// sim chip model call AVX-512 GEMMs and convolutions L1-bound at 1.9-3.2x their
// measured time (docs/PERFORMANCE.md, "sim chip model accuracy"). L3 gives each core
// 32 bytes a cycle on AMD (Zen's L3 to L2 path), about 16 elsewhere; a shared level's
// HCD bandwidth is its sharers' together (detect_caches), as the sim model reads it.
struct CacheEstimate {
  double bytes_per_cycle;
  double latency_cycles;
};
CacheEstimate cache_estimate(int level, int vector_bits, const std::string& vendor) {
  switch (level) {
  case 1: return {3.0 * vector_bits / 8, 5};
  case 2: return {32, 14};
  case 3: return {vendor == "amd" ? 32.0 : 16.0, 50};
  default: return {8, 100};
  }
}

double round2(double v) { return std::round(v * 100) / 100; }

std::vector<MemoryLevel> detect_caches(double ghz, int vector_bits, const std::string& vendor) {
  std::vector<std::pair<int, MemoryLevel>> found;
  for (int index = 0; index < 16; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::string level_text = read_line(dir + "level");
    if (level_text.empty()) break;
    std::string type = read_line(dir + "type");
    if (type != "Data" && type != "Unified") continue; // instruction caches hold no tensors
    int level = std::atoi(level_text.c_str());
    int64_t size = parse_sysfs_size(read_line(dir + "size"));
    if (level < 1 || size <= 0) continue;
    MemoryLevel m;
    m.name = "L" + std::to_string(level);
    m.size_bytes = size;
    int line = std::atoi(read_line(dir + "coherency_line_size").c_str());
    m.line_bytes = line > 0 ? line : 64;
    m.shared_by = std::max(1, count_cpu_list(read_line(dir + "shared_cpu_list")));
    m.scope = m.shared_by > 1 ? "shared" : "local";
    CacheEstimate e = cache_estimate(level, vector_bits, vendor);
    // The last level's sharers are cores that each have their own path to it; the
    // private levels' "sharers" are at most SMT siblings of one core's port.
    m.bandwidth_gbps = round2(e.bytes_per_cycle * ghz * (level >= 3 ? m.shared_by : 1));
    m.latency_ns = round2(e.latency_cycles / ghz);
    found.emplace_back(level, m);
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<MemoryLevel> levels;
  for (const auto& entry : found) {
    const MemoryLevel& m = entry.second;
    if (!std::any_of(levels.begin(), levels.end(), [&](const auto& l) { return l.name == m.name; }))
      levels.push_back(m);
  }
  if (!levels.empty()) return levels;
  // No sysfs (containers, odd kernels): a typical core's private caches.
  MemoryLevel l1{"L1", "local", 32 << 10, 64, round2(64 * ghz), round2(5 / ghz), 1};
  MemoryLevel l2{"L2", "local", 1 << 20, 64, round2(32 * ghz), round2(14 / ghz), 1};
  return {l1, l2};
}

MemoryLevel detect_dram(int units) {
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  int64_t bytes = pages > 0 && page_size > 0 ? int64_t{pages} * page_size : int64_t{8} << 30;
  // ESTIMATES: about 20 GB/s per core until a socket's DDR channels run out at ~100 (one
  // Zen 4 core streams 29-33 GB/s by STREAM's count, about 40 with the lines a store
  // reads first; 10 a core made the sim model 2.7x slow on streaming maps).
  return MemoryLevel{"DRAM", "global", bytes, 64, std::min(20.0 * units, 100.0), 90.0, units};
}

} // namespace

Hcd detect_host_cpu() {
  IsaInfo isa = detect_isa();
  Hcd h;
  h.name = "host-cpu";
  h.vendor = isa.vendor;
  h.kind = DeviceKind::Cpu;
  h.plugin = "cpu";
  h.dialect = "c";
  h.vector_bits = isa.vector_bits;
  h.vector_registers = isa.vector_registers;
  h.warp_size = 1;
  h.isa = isa.features;
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I8, DType::I16,
                  DType::I32, DType::I64, DType::U8})
    h.lanes[t] = std::max(1, h.vector_bits / (8 * dtype_bytes(t)));

  h.units = usable_cpus();
  h.max_threads_per_block = 1;
  // Peak = clock x lanes x 2 FMA ports x 2 flops per FMA, over all usable cores (one
  // flop per lane per port without FMA). An estimate from the clock, not a measurement.
  double ghz = clock_ghz();
  double flops_per_lane = has(isa, "fma") || !isa.triple.starts_with("x86") ? 4 : 2;
  auto peak = [&](double lanes) { return round2(ghz * lanes * flops_per_lane * h.units); };
  h.peak_gflops[DType::F32] = peak(h.lanes_for(DType::F32));
  h.peak_gflops[DType::F64] = peak(h.lanes_for(DType::F64));
  if (has(isa, "avx512_bf16")) h.peak_gflops[DType::BF16] = peak(h.lanes_for(DType::BF16));
  if (has(isa, "avx512_fp16")) h.peak_gflops[DType::F16] = peak(h.lanes_for(DType::F16));
  if (has(isa, "amx-bf16")) {
    // One AMX TMUL op: a 16x16 f32 tile += (16x32 bf16) x (32x16 bf16).
    h.matrix_units.push_back(MatrixUnit{16, 16, 32, {DType::BF16}, DType::F32});
    // 1024 bf16 flops per cycle per core (16x16x32 MACs every 16 cycles).
    h.peak_gflops[DType::BF16] = round2(ghz * 1024 * h.units);
  } else if (has(isa, "avx512_bf16") && h.vector_bits == 512) {
    // Without AMX, AVX512-BF16's vdpbf16ps is the unit: 16 f32 lanes each += a pair of
    // bf16 products, a 1 x 16 x 2 tile (A's pair broadcast, B's 16 columns in k pairs;
    // MatrixUnit.cpp, the vector pair launch). Zen 4 is such a CPU.
    h.matrix_units.push_back(MatrixUnit{1, 16, 2, {DType::BF16}, DType::F32});
  }

  h.memory = detect_caches(ghz, h.vector_bits, h.vendor);
  h.memory.push_back(detect_dram(h.units));

  h.max_block = {1, 1, 1};
  h.shared_memory_per_block = 0;
  h.compiler = "cc";
  // -fno-tree-loop-if-convert: GCC 12 with -march=native on Zen 3 (its znver3 tuning)
  // miscompiles a guarded read in a short inner loop (`c ? X[..] : 0`, as a padded copy
  // prints) into masked vector loads with a wrong mask, silently dropping elements; the
  // tests/ops center_crop_pad case caught it. Unitile prints its own vector code, so
  // GCC's if-conversion of scalar loops is not what makes kernels fast.
  h.flags = {"-O3", "-march=native", "-fno-math-errno", "-fno-tree-loop-if-convert"};
  h.target_triple = isa.triple;
  h.source = "detected";
  return h;
}

} // namespace unitile::hcd
