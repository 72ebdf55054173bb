// Tests of the cuda dialect's text: the entry convention, thread and block indices,
// shared memory and barriers, half types, and the HCD limits the printer enforces.
// Whether NVRTC accepts the text is tested with the plugin (test_cuda_nvrtc.cpp).
#include "codegen/Codegen.h"
#include "ir/Diagnostic.h"
#include "ir/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace unitile {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

LoopProgram parse(const std::string& text) {
  return parse_loop_program(SourceFile{"test.loop", text});
}

std::string cuda(const LoopProgram& p) {
  return generate_source(p, hcd::builtin("nvidia-h100")).code;
}

std::string read_input(const std::string& name) {
  std::ifstream in(std::string(UNITILE_SOURCE_DIR) + "/tests/lit/codegen/Inputs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A program of one func: `body` inside `program K { buffers... func f { ... } }`.
LoopProgram one_func(const std::string& buffers, const std::string& body) {
  return parse("program K {\n" + buffers + "\nfunc f {\n" + body + "\n}\n}\n");
}

TEST(CudaDialect, SharedTileBarrierAndHalfTypes) {
  std::string s = cuda(parse(read_input("shared-tile.loop")));
  EXPECT_THAT(s, HasSubstr("#include <cuda_fp16.h>"));
  EXPECT_THAT(s, HasSubstr("extern \"C\" __global__ void __launch_bounds__(64) "
                           "ut_entry_ReverseRows_0(const ut_args<4> args)"));
  EXPECT_THAT(s, HasSubstr("const int64_t b = (int64_t)blockIdx.x;"));
  EXPECT_THAT(s, HasSubstr("__shared__ float tile[64];"));
  EXPECT_THAT(s, HasSubstr("const int64_t t = (int64_t)threadIdx.x;"));
  EXPECT_THAT(s, HasSubstr("__syncthreads();"));
  EXPECT_THAT(s, HasSubstr("const __half* __restrict__ H = (const __half*)args.a[1].p;"));
  EXPECT_THAT(s, HasSubstr("__nv_bfloat16* __restrict__ Z = (__nv_bfloat16*)args.a[3].p;"));
  EXPECT_THAT(s, HasSubstr("__float2bfloat16_rn"));
  EXPECT_THAT(s, Not(HasSubstr("static inline"))); // host functions cannot run on the GPU
  EXPECT_THAT(s, Not(HasSubstr("#pragma GCC")));
}

TEST(CudaDialect, ParamsAreReadFromTheArgumentArray) {
  std::string s = cuda(parse(R"(program K {
  buffer X: f32[4] input
  buffer Y: f32[4] output
  param alpha: f32
  param n: i32
  func f {
    for i in 0..4 grid.x {
      Y[i] = X[i] * alpha + f32(n)
    }
  }
})"));
  EXPECT_THAT(s, HasSubstr("const float alpha = (float)args.a[2].f;"));
  EXPECT_THAT(s, HasSubstr("const int32_t n = (int32_t)args.a[3].i;"));
  EXPECT_THAT(s, HasSubstr("__launch_bounds__(1)"));
}

TEST(CudaDialect, ThreadLoopNarrowerThanTheBlockStrides) {
  // Sibling thread loops: the block holds the wider (100 threads); the narrower one
  // strides by blockDim, so only its 32 iterations run.
  std::string s = cuda(one_func("buffer Y: f32[2, 100] output", R"(
    for b in 0..2 grid.x {
      for t in 0..32 thread.x {
        Y[b, t] = 1.0
      }
      for u in 0..100 thread.x {
        Y[b, u] = 2.0
      }
    })"));
  EXPECT_THAT(s, HasSubstr("__launch_bounds__(100)"));
  EXPECT_THAT(s, HasSubstr("for (int64_t t = (int64_t)threadIdx.x, ut_end0 = 32; t < ut_end0; "
                           "t += blockDim.x) {"));
  EXPECT_THAT(s, HasSubstr("const int64_t u = (int64_t)threadIdx.x;"));
}

TEST(CudaDialect, OneIterationThreadLoopInAWideBlockRunsOnce) {
  std::string s = cuda(one_func("buffer Y: f32[33] output", R"(
    for b in 0..1 grid.x {
      for t in 0..32 thread.x {
        Y[t] = 1.0
      }
      for u in 0..1 thread.x {
        Y[32] = 2.0
      }
    })"));
  EXPECT_THAT(s, HasSubstr("for (int64_t u = (int64_t)threadIdx.x, ut_end"));
  EXPECT_THAT(s, HasSubstr(" = 1; u < ut_end"));
}

TEST(CudaDialect, IrNamesThatAreCudaWordsAreRenamed) {
  std::string s = cuda(one_func("buffer threadIdx: f32[4] output", R"(
    for template in 0..4 grid.x {
      threadIdx[template] = 1.0
    })"));
  EXPECT_THAT(s, HasSubstr("threadIdx_[template_]"));
}

void expect_user_error(const LoopProgram& p, const std::string& fragment) {
  try {
    cuda(p);
    FAIL() << "expected a UserError containing: " << fragment;
  } catch (const UserError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(fragment));
  }
}

TEST(CudaDialect, BlockLargerThanTheHcdAllowsIsAUserError) {
  expect_user_error(one_func("buffer Y: f32[2048] output", R"(
    for b in 0..1 grid.x {
      for t in 0..2048 thread.x {
        Y[t] = 1.0
      }
    })"),
                    "thread.x has 2048 threads, more than the device's limit of 1024");
  expect_user_error(one_func("buffer Y: f32[64, 64] output", R"(
    for b in 0..1 grid.x {
      for ty in 0..64 thread.y {
        for tx in 0..32 thread.x {
          Y[ty, tx] = 1.0
        }
      }
    })"),
                    "a block of 2048 threads exceeds the device's 1024");
}

TEST(CudaDialect, SharedMemoryBeyondTheLimitsIsAUserError) {
  // 64 KiB: within the HCD's 227 KiB, beyond what static __shared__ can declare.
  expect_user_error(one_func("buffer Y: f32[16384] output", R"(
    for b in 0..1 grid.x {
      allocate big: f32[16384] shared {
        for t in 0..1 thread.x {
          big[t] = 1.0
          Y[t] = big[t]
        }
      }
    })"),
                    "65536 bytes of shared memory per block, more than the 49152 bytes");
  // 256 KiB: beyond the HCD's shared_memory_per_block.
  expect_user_error(one_func("buffer Y: f32[4] output", R"(
    for b in 0..1 grid.x {
      allocate big: f32[65536] shared {
        Y[0] = big[0]
      }
    })"),
                    "262144 bytes of shared memory per block, more than the device's 232448");
}

TEST(CudaDialect, StoreOutsideThreadLoopsOfAMultiThreadBlockIsAUserError) {
  expect_user_error(one_func("buffer Y: f32[33] output", R"(
    for b in 0..1 grid.x {
      Y[32] = 0.0
      for t in 0..32 thread.x {
        Y[t] = 1.0
      }
    })"),
                    "buffer 'Y' is stored outside every thread loop");
}

TEST(CudaDialect, BarrierInAStridedThreadLoopIsAUserError) {
  expect_user_error(one_func("buffer Y: f32[100] output", R"(
    for b in 0..1 grid.x {
      for t in 0..32 thread.x {
        barrier
        Y[t] = 1.0
      }
      for u in 0..100 thread.x {
        Y[u] = 2.0
      }
    })"),
                    "thread loop 't' has 32 iterations but the block has 100 threads along "
                    "thread.x, and its body holds a barrier");
}

TEST(CudaDialect, TheCDialectCannotRunTheSameBarrier) {
  // The same program on a dialect whose blocks are one C thread: a clear refusal.
  try {
    generate_source(parse(read_input("shared-tile.loop")), hcd::builtin("host-cpu"));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("cannot run multi-thread blocks with barriers"));
  }
}

} // namespace
} // namespace unitile
