/* Wall-clock time of one generated bf16 GEMM entry (compiled into this file) on T
 * threads, its blocks handed out as the cpu plugin's pool does (about four contiguous
 * chunks per thread, taken in turn: src/backends/cpu/CpuDevice.cpp), on the random bf16
 * inputs of driver.c. Prints a hash of C so that two builds of the same kernel can be
 * compared bit for bit. Build and run (blocks: `unitile compile --explain`, "tasks"):
 *   gcc -O3 -march=native -fno-math-errno -fno-tree-loop-if-convert -std=gnu11 -w \
 *     -DKERNEL_C='"k.c"' -DENTRY=ut_entry_GemmBF16_0 driver_threads.c -o k -lpthread
 *   ./k M N K BLOCKS REPS THREADS */
#include KERNEL_C
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "driver_common.h"

static ut_c_arg args[3];
static long blocks, chunks;
static int threads;
static atomic_long next_chunk;
static atomic_int generation, finished;

static void run_chunks(void) {
  long c;
  while ((c = atomic_fetch_add(&next_chunk, 1)) < chunks)
    for (long b = c * blocks / chunks; b < (c + 1) * blocks / chunks; ++b) ENTRY(args, (uint32_t)b, 0, 0);
}
static void* worker(void* unused) {
  (void)unused;
  int seen = 0;
  for (;;) {
    while (atomic_load(&generation) == seen) {
    }
    seen = atomic_load(&generation);
    run_chunks();
    atomic_fetch_add(&finished, 1);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s M N K BLOCKS REPS THREADS\n", argv[0]);
    return 2;
  }
  mallopt(M_MMAP_THRESHOLD, 64 << 20); /* as the cpu plugin does: staging panels stay in the heap */
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  long M = atol(argv[1]), N = atol(argv[2]), K = atol(argv[3]);
  blocks = atol(argv[4]);
  int reps = atoi(argv[5]);
  threads = atoi(argv[6]);
  if (reps < 1 || reps > 1000 || threads < 1 || threads > 64 || blocks < 1) {
    fprintf(stderr, "REPS 1..1000, THREADS 1..64, BLOCKS >= 1\n");
    return 2;
  }
  chunks = blocks < 4L * threads ? blocks : 4L * threads;
  uint16_t* A = operand_alloc(M * K * 2);
  uint16_t* B = operand_alloc(K * N * 2);
  uint16_t* C = operand_alloc(M * N * 4);
  if (!A || !B || !C) return 1;
  uint64_t seed = 1;
  for (long i = 0; i < M * K; ++i) A[i] = rnd_bf16(&seed);
  for (long i = 0; i < K * N; ++i) B[i] = rnd_bf16(&seed);
  args[0].p = A;
  args[1].p = B;
  args[2].p = C;
  pthread_t th;
  for (int t = 1; t < threads; ++t) pthread_create(&th, NULL, worker, NULL);
  static double ms[1000];
  for (int r = 0; r <= reps; ++r) {
    double t0 = clock_ms(CLOCK_MONOTONIC);
    atomic_store(&finished, 0);
    atomic_store(&next_chunk, 0);
    atomic_fetch_add(&generation, 1);
    run_chunks();
    while (atomic_load(&finished) < threads - 1) {
    }
    if (r) ms[r - 1] = clock_ms(CLOCK_MONOTONIC) - t0;
  }
  uint64_t h = 1469598103934665603ULL; /* FNV-1a of C's first M x N 16-bit words */
  for (long i = 0; i < M * N; ++i) h = (h ^ C[i]) * 1099511628211ULL;
  qsort(ms, reps, sizeof(double), cmp_double);
  printf("%ldx%ldx%ld threads %d wall ms: median %.3f min %.3f (C hash %016llx)\n", M, N, K, threads, ms[reps / 2],
         ms[0], (unsigned long long)h);
  return 0;
}
