/* What driver.c and driver_threads.c share: their random bf16 inputs in [-1, 1) (those
 * of onednn.cpp: AMX's speed depends on the data) and a clock in ms. */
#include <stdint.h>
#include <string.h>
#include <time.h>

static uint16_t rnd_bf16(uint64_t* s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  float f = (float)((*s >> 40) & 0xffffff) / 8388608.0f - 1.0f;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}
static double clock_ms(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}
static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
