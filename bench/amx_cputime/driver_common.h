/* What driver.c and driver_threads.c share: their random bf16 inputs in [-1, 1) (those
 * of onednn.cpp: AMX's speed depends on the data), a clock in ms, and the operands'
 * memory: with UNITILE_HUGE_PAGES=1 in the environment, as the cpu device allocates
 * then (2 MiB-aligned, marked for transparent huge pages), else plain malloc. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static void* operand_alloc(size_t bytes) {
  const char* env = getenv("UNITILE_HUGE_PAGES");
  const size_t huge = (size_t)2 << 20;
  if (!env || strcmp(env, "1") != 0 || bytes < huge) return malloc(bytes);
  const size_t rounded = (bytes + huge - 1) / huge * huge;
  void* p = aligned_alloc(huge, rounded);
  if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

static uint16_t rnd_bf16(uint64_t* s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  float f = (float)((*s >> 40) & 0xffffff) / 8388608.0f - 1.0f;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}
__attribute__((unused)) static double clock_ms(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}
__attribute__((unused)) static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
