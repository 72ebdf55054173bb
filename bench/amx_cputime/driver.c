/* Thread CPU time of one generated bf16 GEMM entry (compiled into this file), all its
 * blocks run in order on the calling thread, on random bf16 inputs in [-1, 1): AMX's
 * speed depends on the data (all-zero tiles multiply several times faster), so the
 * inputs are those of bench/amx_cputime/onednn.cpp. See run.sh. */
#include KERNEL_C
#include <malloc.h>
#include <stdio.h>
#include <time.h>

#include "driver_common.h"
int main(int argc, char** argv) {
  /* As the cpu plugin does (CpuDevice.cpp): staging panels stay in the heap. */
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  long M = atol(argv[1]), N = atol(argv[2]), K = atol(argv[3]), blocks = atol(argv[4]);
  int reps = atoi(argv[5]);
  if (reps > 1000) reps = 1000;
  uint16_t* A = operand_alloc(M * K * 2);
  uint16_t* B = operand_alloc(K * N * 2);
  void* C = operand_alloc(M * N * 4);
  uint64_t seed = 1;
  for (long i = 0; i < M * K; ++i) A[i] = rnd_bf16(&seed);
  for (long i = 0; i < K * N; ++i) B[i] = rnd_bf16(&seed);
  ut_c_arg args[3];
  args[0].p = A;
  args[1].p = B;
  args[2].p = C;
  static double t[1000];
  for (int r = 0; r <= reps; ++r) {
    double t0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    for (long b = 0; b < blocks; ++b) ENTRY(args, (uint32_t)b, 0, 0);
    if (r) t[r - 1] = clock_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
  }
  qsort(t, reps, sizeof(double), cmp_double);
  printf("unitile %ldx%ldx%ld thread-cpu ms: median %.3f min %.3f\n", M, N, K, t[reps / 2], t[0]);
  return 0;
}
