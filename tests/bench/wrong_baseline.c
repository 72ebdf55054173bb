/* A baseline library that answers every operation with a wrong result (all outputs 0.5),
 * so the bench test can check that a disagreement is reported as a failure, untimed. */
#include "baselines/baseline.h"

#include <stdlib.h>
#include <string.h>

struct ub_op {
  size_t out_bytes;
};

int ub_abi_version(void) { return UB_ABI_VERSION; }
const char* ub_describe(void) { return "wrong answers (test double)"; }
int ub_set_threads(int threads) { return threads; }

ub_op* ub_create(const char* op, const char* dtype, const int64_t* dims, int ndims,
                 const double* params, int nparams) {
  (void)params, (void)nparams;
  if (strcmp(op, "gemm") != 0 || strcmp(dtype, "f32") != 0 || ndims != 3) return NULL;
  ub_op* made = malloc(sizeof *made);
  made->out_bytes = (size_t)(dims[0] * dims[1]) * sizeof(float);
  return made;
}

const char* ub_op_impl(const ub_op* op) { (void)op; return "wrong"; }

int ub_run(ub_op* op, const void* const* inputs, void* const* outputs) {
  (void)inputs;
  float* c = outputs[0];
  for (size_t i = 0; i < op->out_bytes / sizeof(float); ++i) c[i] = 0.5f;
  return 0;
}

void ub_destroy(ub_op* op) { free(op); }
const char* ub_last_error(void) { return "wrong baseline: only f32 gemm"; }
