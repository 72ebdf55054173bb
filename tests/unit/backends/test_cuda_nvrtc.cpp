// The cuda plugin's compile path without a GPU: every differential-test kernel (at the
// shapes and dtypes of its RUN lines) and every example compiles with NVRTC to an sm_90
// cubin through the plugin, a staged Loop IR program's PTX uses shared memory and
// bar.sync, and NVRTC's errors reach the user with its log. Where NVRTC is not installed
// each test is skipped with that reason, never passed silently.
//
// GEMMs the auto-scheduler puts on the HCD's matrix unit (tensor cores) compile to PTX
// mma.sync on tiles staged in shared memory, for f16 and bf16, and for f32 as tf32 when
// the kernel's schedule asks for it (never by itself).
#include "ir/Diagnostic.h"
#include "ir/Parser.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"
#include "schedule/Lower.h"
#include "schedule/Specialize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace unitile {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

Device cuda_device() {
  DeviceOptions o;
  o.plugin_path = std::string(UNITILE_PLUGIN_DIR) + "/libunitile-device-cuda.so";
  return open_device("cuda", o);
}

// Empty when NVRTC compiles here, else why not (the tests skip with it).
std::string nvrtc_missing() {
  static const std::string why = [] {
    try {
      cuda_device().compile("extern \"C\" __global__ void k() {}", "nvrtc");
      return std::string();
    } catch (const UserError& e) {
      std::string m = e.what();
      if (m.find("not available") != std::string::npos)
        return m;
      throw;
    }
  }();
  return why;
}

#define SKIP_WITHOUT_NVRTC()                                                                       \
  if (std::string why = nvrtc_missing(); !why.empty())                                             \
  GTEST_SKIP() << "NVRTC is not usable on this machine, cuda compile tests skipped: " << why

// The SM architecture a cubin targets (90 for sm_90), or -1 if it is not a CUDA ELF.
int cubin_sm(const std::vector<uint8_t>& elf) {
  if (elf.size() < 64 || std::memcmp(elf.data(),
                                     "\x7f"
                                     "ELF",
                                     4) != 0)
    return -1;
  uint16_t machine;
  uint32_t flags;
  std::memcpy(&machine, elf.data() + 18, 2);
  std::memcpy(&flags, elf.data() + 48, 4);
  if (machine != 190) // EM_CUDA
    return -1;
  // ELF ABI version 8 (CUDA 12.8+) moved the SM number one byte up.
  return elf[8] >= 8 ? static_cast<int>((flags >> 8) & 0xff) : static_cast<int>(flags & 0xff);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// One kernel build: a .ut text (after its RUN line's sed), a kernel name filter and
// NAME=VALUE shape bindings.
struct Case {
  std::string label, text, kernel, shapes;
};

// The cases of a differential test: each `unitile run` RUN line, with the `sed 's/A/B/g'`
// substitutions of the %t file it runs.
std::vector<Case> cases_of(const fs::path& file) {
  std::string text = read_text(file);
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> seds;
  std::vector<Case> out;
  std::set<std::string> seen;
  std::regex sed_line(R"(RUN: sed '([^']*)' %s > %t\.(\w+)\.ut)");
  std::regex subst(R"(s/([^/]*)/([^/]*)/g)");
  std::regex run_line(R"(RUN: %unitile run (\S+)(.*))");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, sed_line)) {
      std::string cmds = m[1];
      for (std::sregex_iterator it(cmds.begin(), cmds.end(), subst), end; it != end; ++it)
        seds[m[2]].push_back({(*it)[1], (*it)[2]});
      continue;
    }
    if (!std::regex_search(line, m, run_line))
      continue;
    std::string input = m[1], rest = m[2], variant = "source", kernel, shapes;
    std::string body = text;
    if (input.rfind("%t.", 0) == 0) {
      variant = input.substr(3, input.size() - 6);
      for (const auto& [from, to] : seds[variant])
        body = replace_all(body, from, to);
    }
    std::smatch o;
    if (std::regex_search(rest, o, std::regex(R"(--kernel (\S+))")))
      kernel = o[1];
    if (std::regex_search(rest, o, std::regex(R"(--shape (\S+))")))
      shapes = o[1];
    std::string label = file.filename().string() + " " + variant + " " + kernel + " " + shapes;
    if (seen.insert(label).second)
      out.push_back({label, body, kernel, shapes});
  }
  return out;
}

ShapeBindings parse_shapes(const std::string& text) {
  ShapeBindings b;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t eq = item.find('=');
    if (eq != std::string::npos)
      b[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
  }
  return b;
}

// Build every kernel of `c` for cuda through the plugin; each must be an sm_90 cubin.
void expect_sm90_cubins(Session& s, const Case& c, int* built) {
  SCOPED_TRACE(c.label);
  Module m = parse_module(SourceFile{c.label, c.text});
  ShapeBindings given = parse_shapes(c.shapes);
  for (const Kernel& k : m.kernels) {
    if (!c.kernel.empty() && k.name != c.kernel)
      continue;
    ShapeBindings mine;
    for (const std::string& n : bound_names(k))
      mine[n] = given.count(n) ? given[n] : 17;
    Session::Built b = s.build(k, bind_shapes(k, {}, mine));
    EXPECT_EQ(cubin_sm(*b.binary), 90) << k.name << ": not an sm_90 cubin";
    ++*built;
  }
}

class CudaCompile : public ::testing::Test {
protected:
  void SetUp() override {
    SKIP_WITHOUT_NVRTC();
    cache_dir_ = fs::temp_directory_path() / ("unitile-cuda-test-" + std::to_string(::getpid()));
    session_ = std::make_unique<Session>(cuda_device(),
                                         std::make_shared<KernelCache>(cache_dir_.string()));
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(cache_dir_, ec);
  }
  fs::path cache_dir_;
  std::unique_ptr<Session> session_;
};

TEST_F(CudaCompile, EveryDifferentialTestKernelCompilesForSm90) {
  int built = 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(UNITILE_SOURCE_DIR) / "tests/lit/diff"))
    if (e.path().extension() == ".ut")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) {
    std::vector<Case> cases = cases_of(f);
    EXPECT_FALSE(cases.empty()) << f << " has no `unitile run` RUN lines";
    for (const Case& c : cases)
      expect_sm90_cubins(*session_, c, &built);
  }
  EXPECT_GE(built, 40);
}

TEST_F(CudaCompile, EveryExampleCompilesForSm90AtTwoShapes) {
  int built = 0;
  for (const auto& e : fs::directory_iterator(fs::path(UNITILE_SOURCE_DIR) / "examples")) {
    if (e.path().extension() != ".ut")
      continue;
    std::string text = read_text(e.path());
    for (const char* shapes : {"", "N=33,M=33,K=33,D=16"}) // unbound symbols: 17
      expect_sm90_cubins(*session_, {e.path().filename().string(), text, "", shapes}, &built);
  }
  EXPECT_GE(built, 2);
}

TEST_F(CudaCompile, PtxOfTheMatmulTargetsSm90) {
  Module m = parse_module(SourceFile{"mm.ut", R"(kernel MatrixMul {
  input:  f16[M,K] A, f16[K,N] B
  output: f16[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
})"});
  const hcd::Hcd& h = session_->device().hcd();
  ASSERT_EQ(h.assembly, "ptx");
  Session::Built b = session_->build(
      m.kernels[0], bind_shapes(m.kernels[0], {}, {{"M", 33}, {"K", 17}, {"N", 65}}),
      h.assembly_flags);
  std::string ptx(b.binary->begin(), b.binary->end());
  EXPECT_THAT(ptx, HasSubstr(".target sm_90"));
  EXPECT_THAT(ptx, HasSubstr(".visible .entry ut_entry_MatrixMul_0("));
  EXPECT_THAT(ptx, HasSubstr("cvt.rn.f16.f32")); // the f16 store rounds to nearest even
}

TEST_F(CudaCompile, StagedTileUsesSharedMemoryAndBarriers) {
  LoopProgram p = parse_loop_program(SourceFile{
      "shared-tile.loop",
      read_text(fs::path(UNITILE_SOURCE_DIR) / "tests/lit/codegen/Inputs/shared-tile.loop")});
  const hcd::Hcd& h = session_->device().hcd();
  GeneratedSource src = generate_source(p, h);
  std::string options = session_->compile_options();
  std::vector<uint8_t> cubin = session_->device().compile(src.code, options);
  EXPECT_EQ(cubin_sm(cubin), 90);
  // The cubin reserves the tile in the entry's shared-memory section.
  std::string image(cubin.begin(), cubin.end());
  EXPECT_THAT(image, HasSubstr(".nv.shared.ut_entry_ReverseRows_0"));
  std::string flags;
  for (const std::string& f : h.assembly_flags)
    flags += " " + f;
  std::vector<uint8_t> ptx_bytes = session_->device().compile(src.code, options + flags);
  std::string ptx(ptx_bytes.begin(), ptx_bytes.end());
  EXPECT_THAT(ptx, HasSubstr(".shared .align 4 .b8"));
  EXPECT_THAT(ptx, HasSubstr("st.shared.f32"));
  EXPECT_THAT(ptx, HasSubstr("ld.shared.f32"));
  EXPECT_THAT(ptx, HasSubstr("bar.sync"));
  EXPECT_THAT(ptx, HasSubstr(".maxntid 64, 1, 1"));
}

TEST_F(CudaCompile, MatrixUnitGemmsCompileToMmaSync) {
  const hcd::Hcd& h = session_->device().hcd();
  auto build = [&](const std::string& text, const std::vector<std::string>& flags) {
    Module m = parse_module(SourceFile{"mma.ut", text});
    Session::Built b = session_->build(
        m.kernels[0], bind_shapes(m.kernels[0], {}, {{"M", 100}, {"K", 72}, {"N", 96}}), flags);
    return *b.binary;
  };
  auto gemm = [](const std::string& t, const std::string& schedule) {
    return "kernel Gemm {\n  input: " + t + "[M,K] A, " + t + "[K,N] B\n  output: " + t +
           "[M,N] C\n  operation: C[i,j] += A[i,k] * B[k,j]\n}\n" + schedule;
  };
  for (const std::string t : {"bf16", "f16"}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(cubin_sm(build(gemm(t, ""), {})), 90);
    std::vector<uint8_t> bytes = build(gemm(t, ""), h.assembly_flags);
    std::string ptx(bytes.begin(), bytes.end());
    EXPECT_THAT(ptx, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32." + t + "." + t + ".f32"));
    EXPECT_THAT(ptx, HasSubstr("st.shared")); // the staged A and B tiles
    EXPECT_THAT(ptx, HasSubstr("ld.shared"));
    EXPECT_THAT(ptx, HasSubstr("bar.sync"));
    EXPECT_THAT(ptx, HasSubstr(".maxntid 128, 1, 1")); // 4 warps of 32 lanes
  }
  std::vector<uint8_t> tf32 = build(gemm("f32", "schedule { matrix_unit C tf32 }"), h.assembly_flags);
  std::string ptx(tf32.begin(), tf32.end());
  EXPECT_THAT(ptx, HasSubstr("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
  EXPECT_THAT(ptx, HasSubstr("cvt.rna.tf32.f32"));
  EXPECT_EQ(cubin_sm(build(gemm("f32", "schedule { matrix_unit C tf32 }"), {})), 90);
  std::vector<uint8_t> plain = build(gemm("f32", ""), h.assembly_flags);
  EXPECT_EQ(std::string(plain.begin(), plain.end()).find("mma.sync"), std::string::npos)
      << "an f32 GEMM must not use tf32 unless its schedule asks";
}

// Schedules for blocks of SIMT threads (Threads.cpp, ThreadGemm.cpp): an f32 GEMM that no
// matrix unit takes stages A and B tiles in shared memory between barriers, its blocks hold
// several warps and each thread's register tile stays in registers (no local memory); a
// map runs on blocks of 256 threads, a row reduction on a block of 256 threads per row
// whose partial sums meet in shared memory (block_rows).
// The same Loop IR runs on sim in tests/lit/diff/gpu-schedules.ut.
TEST_F(CudaCompile, SimtSchedulesUseThreadBlocksAndSharedTiles) {
  const hcd::Hcd& h = session_->device().hcd();
  auto ptx_of = [&](const std::string& text, const ShapeBindings& shapes) {
    Module m = parse_module(SourceFile{"simt.ut", text});
    Session::Built b = session_->build(m.kernels[0], bind_shapes(m.kernels[0], {}, shapes), h.assembly_flags);
    return std::string(b.binary->begin(), b.binary->end());
  };
  std::string gemm = ptx_of(R"(kernel Gemm {
  input:  f32[M,K] A, f32[K,N] B
  output: f32[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
})",
                            {{"M", 1024}, {"K", 1024}, {"N", 1024}});
  EXPECT_THAT(gemm, HasSubstr(".shared .align 4 .b8"));
  EXPECT_THAT(gemm, HasSubstr("st.shared.f32"));
  EXPECT_THAT(gemm, HasSubstr("ld.shared.f32"));
  EXPECT_THAT(gemm, HasSubstr("bar.sync"));
  EXPECT_THAT(gemm, HasSubstr("fma.rn.f32"));
  EXPECT_THAT(gemm, HasSubstr(".maxntid 128, 1, 1")); // 16 x 8 threads, 4 x 8 outputs each
  EXPECT_EQ(gemm.find(".local"), std::string::npos) << "the per-thread register tile spilled to local memory";
  EXPECT_EQ(gemm.find("mma.sync"), std::string::npos);
  std::string map = ptx_of(R"(kernel Map {
  input:  f32[M,N] X
  output: f32[M,N] Y
  operation: Y[i,j] = X[i,j] * 2.0
})",
                           {{"M", 512}, {"N", 512}});
  EXPECT_THAT(map, HasSubstr(".maxntid 256, 1, 1"));
  EXPECT_THAT(map, HasSubstr("%tid.x;"));
  std::string rows = ptx_of(R"(kernel RowSum {
  input:  f32[M,N] X
  output: f32[M] S
  operation: S[i] += X[i,j]
})",
                            {{"M", 1024}, {"N", 300}});
  EXPECT_THAT(rows, HasSubstr(".maxntid 256, 1, 1"));
  EXPECT_THAT(rows, HasSubstr("st.shared.f32"));
  EXPECT_THAT(rows, HasSubstr("bar.sync"));
}

// Attention written as comprehensions (FlashAttention.cpp, FlashThreads): one launch on
// blocks of 16 x 16 threads, Q, K and V tiles and the score tile in shared memory between
// barriers, each thread's score and output tiles in registers (no local memory). The same
// Loop IR runs on sim in tests/lit/diff/gpu-schedules.ut.
TEST_F(CudaCompile, FlashAttentionRunsOnBlocksOfThreads) {
  const hcd::Hcd& h = session_->device().hcd();
  Module m = parse_module(SourceFile{"attention.ut", R"(kernel Causal {
  input:  f32[H,N,D] Q, f32[H,N,D] K, f32[H,N,D] V
  output: f32[H,N,D] O
  local:  f32[H,N,N] S, f32[H,N] m, f32[H,N] l
  operation:
    S[h,i,j] += Q[h,i,e] * K[h,j,e] * rsqrt(f32(D))
    m[h,i]  max= j <= i ? S[h,i,j] : -inf
    l[h,i]   += j <= i ? exp(S[h,i,j] - m[h,i]) : 0
    O[h,i,e] += (j <= i ? exp(S[h,i,j] - m[h,i]) / l[h,i] : 0) * V[h,j,e]
})"});
  const Kernel& k = m.kernels[0];
  Session::Built b =
      session_->build(k, bind_shapes(k, {}, {{"H", 32}, {"N", 1024}, {"D", 64}}), h.assembly_flags);
  const std::string ptx(b.binary->begin(), b.binary->end());
  EXPECT_THAT(ptx, HasSubstr(".maxntid 256, 1, 1")); // 16 x 16 threads, 64 rows x 32 keys per block
  EXPECT_THAT(ptx, HasSubstr(".shared .align 4 .b8"));
  EXPECT_THAT(ptx, HasSubstr("st.shared.f32"));
  EXPECT_THAT(ptx, HasSubstr("ld.shared.f32"));
  EXPECT_THAT(ptx, HasSubstr("bar.sync"));
  EXPECT_THAT(ptx, HasSubstr("fma.rn.f32"));
  EXPECT_THAT(ptx, HasSubstr("%tid.y;"));
  EXPECT_EQ(ptx.find(".local"), std::string::npos) << "the per-thread tiles spilled to local memory";
  int launches = 0;
  for (size_t p = ptx.find(".entry"); p != std::string::npos; p = ptx.find(".entry", p + 1)) ++launches;
  EXPECT_EQ(launches, 1) << "attention is one fused launch";
}

TEST_F(CudaCompile, NvrtcErrorsShowItsLog) {
  try {
    session_->device().compile("extern \"C\" __global__ void k() { undeclared_name = 1; }",
                               "nvrtc --gpu-architecture=sm_90");
    FAIL() << "expected a compile error";
  } catch (const UserError& e) {
    std::string m = e.what();
    EXPECT_THAT(m, HasSubstr("compile failed; the compiler said"));
    EXPECT_THAT(m, HasSubstr("NVRTC_ERROR_COMPILATION"));
    EXPECT_THAT(m, HasSubstr("identifier \"undeclared_name\" is undefined"));
  }
}

TEST_F(CudaCompile, AnotherCompilerInTheHcdIsRefused) {
  try {
    session_->device().compile("extern \"C\" __global__ void k() {}", "nvcc -O3");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("this plugin compiles with nvrtc"));
  }
}

TEST(CudaDevice, WithoutAGpuRunningSaysWhy) {
  // Describing never needs the GPU; allocating does. Here (no GPU) it must say why; on a
  // machine with one, it must work.
  Device d = cuda_device();
  EXPECT_EQ(d.hcd().plugin, "cuda");
  EXPECT_EQ(d.hcd().dialect, "cuda");
  try {
    DeviceBuffer b = d.alloc(16);
    EXPECT_EQ(b.bytes(), 16u);
  } catch (const UserError& e) {
    std::string m = e.what();
    EXPECT_THAT(m, HasSubstr("device cuda is not available on this machine"));
    EXPECT_TRUE(m.find("libcuda.so.1") != std::string::npos ||
                m.find("no CUDA GPU") != std::string::npos)
        << m;
  }
}

} // namespace
} // namespace unitile
