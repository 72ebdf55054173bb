/* The C interface every measurement baseline library exports (OpenBLAS, oneDNN, plain
 * loops). Only `unitile bench` loads these libraries, with dlopen, so Unitile's own
 * kernels can never run through them and the `unitile` binary has no link dependency on
 * any baseline.
 *
 * A library prepares an operation once (ub_create: sizes, dtype, a oneDNN primitive or
 * a BLAS call's arguments) and runs it many times (ub_run), so the timed calls contain
 * only the work. Tensors are contiguous, row-major, little-endian; bf16 is its raw
 * 16-bit pattern. Errors are values: NULL or non-zero, with text from ub_last_error(). */
#ifndef UNITILE_BENCH_BASELINE_H
#define UNITILE_BENCH_BASELINE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UB_ABI_VERSION 1

typedef struct ub_op ub_op;

/* UB_ABI_VERSION of the library. */
int ub_abi_version(void);
/* What the library is: name, version, threading runtime ("OpenBLAS 0.3.21, pthreads"). */
const char* ub_describe(void);
/* Use `threads` threads from now on; returns the count the library reports in effect. */
int ub_set_threads(int threads);
/* Prepare operation `op` ("gemm", "softmax", ...) on `dtype` ("f32", "f64", "bf16")
 * with sizes `dims` and scalar parameters `params`; NULL if the library cannot. */
ub_op* ub_create(const char* op, const char* dtype, const int64_t* dims, int ndims,
                 const double* params, int nparams);
/* Which implementation the library chose for `op` ("brg:avx2", "sgemm Haswell", ...). */
const char* ub_op_impl(const ub_op* op);
/* Run once: read `inputs`, write `outputs` (orders are per operation). 0 on success. */
int ub_run(ub_op* op, const void* const* inputs, void* const* outputs);
void ub_destroy(ub_op* op);
/* Text of the last failure on this thread. */
const char* ub_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
