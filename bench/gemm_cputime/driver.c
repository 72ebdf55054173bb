// Thread-CPU-time ratio of the generated f32 GEMM (one thread, every grid block in turn)
// to OpenBLAS cblas_sgemm on one thread, interleaved in one process (docs/PERFORMANCE.md,
// "The AVX-512 Xeon": there it measured GEMM tilings faster than the runtime did, so
// check a tiling through `unitile bench` too). Built by run.sh with the kernel's
// generated C included; ENTRY is its entry point, GRID its number of blocks. Wall-clock time on a
// loaded machine moves with the other processes; the thread's CPU time moves much less.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <time.h>
#include KERNEL_C
#include <cblas.h>
#include <malloc.h>

extern void openblas_set_num_threads(int);

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static float* fill(size_t n, unsigned seed) {
  float* p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f * 2.0f - 1.0f;
  }
  return p;
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  openblas_set_num_threads(1);
  // As the cpu plugin does (CpuDevice.cpp, keep_staging_memory_warm): the kernel's
  // staging buffers come from a warm heap instead of fresh pages at every call.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  float *A = fill((size_t)GM * GK, 1), *B = fill((size_t)GK * GN, 2);
  float *C = fill((size_t)GM * GN, 3), *R = fill((size_t)GM * GN, 4);
  ut_c_arg args[] = {{.p = A}, {.p = B}, {.p = C}};
  double ratio[64], ums[64], bms[64];
  for (int r = -1; r < reps && r < 64; ++r) { // r = -1: warm-up and check
    double t0 = cpu_now();
    for (uint32_t b = 0; b < GRID; ++b) ENTRY(args, b, 0, 0);
    double t1 = cpu_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, GM, GN, GK, 1.0f, A, GK, B, GN, 0.0f, R, GN);
    double t2 = cpu_now();
    if (r < 0) {
      double worst = 0;
      for (size_t i = 0; i < (size_t)GM * GN; ++i) {
        double e = fabs((double)C[i] - R[i]) - (1e-4 * sqrt((double)GK) + 1e-4 * fabs((double)R[i]));
        if (e > worst) worst = e;
      }
      if (worst > 0) { printf("GM=%d GN=%d GK=%d WRONG (excess %g)\n", GM, GN, GK, worst); return 1; }
      continue;
    }
    ums[r] = 1e3 * (t1 - t0);
    bms[r] = 1e3 * (t2 - t1);
    ratio[r] = bms[r] / ums[r];
  }
  qsort(ratio, (size_t)reps, sizeof(double), cmp);
  qsort(ums, (size_t)reps, sizeof(double), cmp);
  qsort(bms, (size_t)reps, sizeof(double), cmp);
  printf("%d,%d,%d unitile %.2f ms openblas %.2f ms ratio %.3f (min %.3f max %.3f) %.1f GF/s\n", GM, GN, GK,
         ums[reps / 2], bms[reps / 2], ratio[reps / 2], ratio[0], ratio[reps - 1],
         2e-6 * GM * GN * (double)GK / ums[reps / 2]);
  return 0;
}
