// Thread-CPU-time ratio of one generated row kernel to the STREAM triad loop, on one
// thread (docs/PERFORMANCE.md, "Bandwidth-bound ops on 4096 x 4096 f32 vs the STREAM
// triad"). Built by run.sh with the kernel's generated C included; KERNEL selects the
// argument list, ENTRY is the generated entry point. Wall-clock time on a loaded machine
// moves with the other processes; the thread's CPU time moves much less.
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include KERNEL_C

#define N 4096
#define D 4096

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
  float* p = aligned_alloc(64, n * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f * 4.0f - 2.0f;
  }
  return p;
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 7;
  const size_t nd = (size_t)N * D;
  float *ta = fill(nd, 1), *tb = fill(nd, 2), *tc = fill(nd, 3);
  float *X = fill(nd, 4), *Y = fill(nd, 5), *A = fill(nd, 6), *B = fill(nd, 7);
  float *g = fill(D, 8), *be = fill(D, 9), *l1 = fill(N, 10), *l2 = fill(N, 11);
#if defined(K_SOFTMAX)
  ut_c_arg args[] = {{.p = X}, {.p = Y}, {.p = l1}, {.p = l2}};
  const double bytes = 2.0 * nd * 4;
#elif defined(K_LAYERNORM)
  ut_c_arg args[] = {{.p = X}, {.p = g}, {.p = be}, {.p = Y}, {.p = l1}, {.p = l2}, {.f = 1e-5}};
  const double bytes = 2.0 * nd * 4 + 2.0 * D * 4;
#elif defined(K_RMSNORM)
  ut_c_arg args[] = {{.p = X}, {.p = g}, {.p = Y}, {.p = l1}, {.f = 1e-5}};
  const double bytes = 2.0 * nd * 4 + 1.0 * D * 4;
#elif defined(K_CHAIN)
  ut_c_arg args[] = {{.p = X}, {.p = A}, {.p = B}, {.p = Y}};
  const double bytes = 4.0 * nd * 4;
#endif
  double ratio[64], kms[64];
  for (int r = 0; r < reps && r < 64; ++r) {
    double t0 = cpu_now();
    for (size_t i = 0; i < nd; ++i) ta[i] = tb[i] + 3.0f * tc[i];
    double t1 = cpu_now();
    for (uint32_t i = 0; i < N; ++i) ENTRY(args, i, 0, 0); // one launch block per row
    double t2 = cpu_now();
    __asm__ volatile("" ::"r"(ta), "r"(Y) : "memory");
    ratio[r] = (bytes / (t2 - t1)) / (3.0 * nd * 4 / (t1 - t0));
    kms[r] = 1e3 * (t2 - t1);
  }
  qsort(ratio, (size_t)reps, sizeof(double), cmp);
  qsort(kms, (size_t)reps, sizeof(double), cmp);
  printf("%s ratio %.3f (min %.3f max %.3f) kernel %.2f ms\n", KNAME, ratio[reps / 2], ratio[0], ratio[reps - 1],
         kms[reps / 2]);
  return 0;
}
