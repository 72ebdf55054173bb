// Thread CPU time of oneDNN's bf16 matmul (bf16 in, bf16 out, one OpenMP thread) on the
// inputs driver.c makes, in the same kind of memory. See run.sh.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "driver_common.h"

static double now_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int main(int argc, char** argv) {
  const long M = atol(argv[1]), N = atol(argv[2]), K = atol(argv[3]);
  const int reps = atoi(argv[4]);
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const auto dt = memory::data_type::bf16;
  memory::desc a({M, K}, dt, memory::format_tag::ab), b({K, N}, dt, memory::format_tag::ab),
      c({M, N}, dt, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng);
  dnnl::matmul mm(pd);
  // The operands in memory of driver_common.h's kind (huge pages with UNITILE_HUGE_PAGES=1).
  memory A(a, eng, operand_alloc(M * K * 2)), B(b, eng, operand_alloc(K * N * 2)), C(c, eng, operand_alloc(M * N * 2));
  uint64_t seed = 1;
  auto* pa = static_cast<uint16_t*>(A.get_data_handle());
  auto* pb = static_cast<uint16_t*>(B.get_data_handle());
  for (long i = 0; i < M * K; ++i) pa[i] = rnd_bf16(&seed);
  for (long i = 0; i < K * N; ++i) pb[i] = rnd_bf16(&seed);
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    const double t0 = now_ms();
    mm.execute(s, {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, B}, {DNNL_ARG_DST, C}});
    s.wait();
    if (r) t.push_back(now_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  std::printf("onednn %ldx%ldx%ld thread-cpu ms: median %.3f min %.3f (%s)\n", M, N, K, t[t.size() / 2], t[0],
              pd.impl_info_str());
  return 0;
}
