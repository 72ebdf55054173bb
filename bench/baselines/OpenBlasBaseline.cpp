// The OpenBLAS baseline: sgemm/dgemm, and causal attention as OpenBLAS matmul, a plain
// causal softmax loop and OpenBLAS matmul (the N x N scores are materialised).
//
// Operations (row-major):
//   gemm f32|f64 {M,N,K}: inputs A[M,K], B[K,N]; output C[M,N] = A B.
//   gemm bf16 {M,N,K}: the same on bf16 data as a machine without bf16 arithmetic does it:
//     widen A and B to f32, sgemm, round C to bf16 (nearest even); the conversions are
//     part of the timed call. (Debian's OpenBLAS is built without sbgemm.)
//   causal_attention f32 {H,N,D}: inputs Q, K, V [H,N,D]; output O[H,N,D] =
//     softmax_j<=i(Q K^T / sqrt(D)) V per head.
// Threads: openblas_set_num_threads works for both the pthreads and the OpenMP build of
// OpenBLAS; the softmax loop runs on OpenMP with the same count.
#include "BaselineSupport.h"

#include <cblas.h>
#include <omp.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

using unitile::bench_baseline::causal_softmax_row;
using unitile::bench_baseline::dims_ok;
using unitile::bench_baseline::fail;

struct ub_op {
  std::string kind;  // "sgemm", "dgemm", "causal_attention"
  int64_t d0 = 0, d1 = 0, d2 = 0;
  std::vector<float> scores; // N x N, attention only
  std::vector<float> a32, b32, c32; // bf16 gemm: widened operands and the f32 result
  std::string impl;
};

namespace {

int g_threads = 1;

const char* threading_name() {
  switch (openblas_get_parallel()) {
  case 0: return "sequential";
  case 1: return "pthreads";
  case 2: return "openmp";
  default: return "unknown threading";
  }
}

void run_attention(ub_op& op, const float* q, const float* k, const float* v, float* o) {
  const int64_t heads = op.d0, n = op.d1, d = op.d2;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  float* s = op.scores.data();
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * n * d;
    const float* kh = k + h * n * d;
    const float* vh = v + h * n * d;
    float* oh = o + h * n * d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(n),
                static_cast<int>(d), scale, qh, static_cast<int>(d), kh, static_cast<int>(d), 0.0f,
                s, static_cast<int>(n));
#pragma omp parallel for num_threads(g_threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) causal_softmax_row(s + i * n, n, i + 1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(d),
                static_cast<int>(n), 1.0f, s, static_cast<int>(n), vh, static_cast<int>(d), 0.0f, oh,
                static_cast<int>(d));
  }
}

float widen_bf16(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t round_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40); // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

void run_bf16_gemm(ub_op& op, const uint16_t* a, const uint16_t* b, uint16_t* c) {
  const int64_t m = op.d0, n = op.d1, k = op.d2;
#pragma omp parallel for num_threads(g_threads) schedule(static)
  for (int64_t i = 0; i < m * k; ++i) op.a32[i] = widen_bf16(a[i]);
#pragma omp parallel for num_threads(g_threads) schedule(static)
  for (int64_t i = 0; i < k * n; ++i) op.b32[i] = widen_bf16(b[i]);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, op.a32.data(), static_cast<int>(k), op.b32.data(),
              static_cast<int>(n), 0.0f, op.c32.data(), static_cast<int>(n));
#pragma omp parallel for num_threads(g_threads) schedule(static)
  for (int64_t i = 0; i < m * n; ++i) c[i] = round_to_bf16(op.c32[i]);
}

} // namespace

UB_DEFINE_COMMON_EXPORTS

extern "C" const char* ub_describe(void) {
  static std::string text;
  text = std::string(openblas_get_config()) + " (" + threading_name() + ", core " +
         openblas_get_corename() + ")";
  return text.c_str();
}

extern "C" int ub_set_threads(int threads) {
  if (threads < 1) return fail(0, "threads must be positive");
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);
  g_threads = threads;
  return openblas_get_num_threads();
}

extern "C" ub_op* ub_create(const char* op, const char* dtype, const int64_t* dims, int ndims,
                            const double* params, int nparams) {
  const std::string name = op, type = dtype;
  auto made = std::make_unique<ub_op>();
  if (name == "gemm" && (type == "f32" || type == "f64")) {
    if (!dims_ok(dims, ndims, 3, op)) return nullptr;
    made->kind = type == "f32" ? "sgemm" : "dgemm";
  } else if (name == "gemm" && type == "bf16") {
    if (!dims_ok(dims, ndims, 3, op)) return nullptr;
    made->kind = "bf16 widened to f32, sgemm, rounded";
    made->a32.resize(static_cast<size_t>(dims[0] * dims[2]));
    made->b32.resize(static_cast<size_t>(dims[2] * dims[1]));
    made->c32.resize(static_cast<size_t>(dims[0] * dims[1]));
  } else if (name == "causal_attention" && type == "f32") {
    if (!dims_ok(dims, ndims, 3, op)) return nullptr;
    made->kind = name;
    made->scores.assign(static_cast<size_t>(dims[1] * dims[1]), 0.0f);
  } else {
    return fail<ub_op*>(nullptr, "no " + name + " for " + type);
  }
  made->d0 = dims[0];
  made->d1 = dims[1];
  made->d2 = dims[2];
  made->impl = made->kind + " (" + openblas_get_corename() + " kernels)";
  if (made->kind == "causal_attention")
    made->impl = "sgemm + causal softmax loop + sgemm (" + std::string(openblas_get_corename()) + ")";
  return made.release();
}

extern "C" const char* ub_op_impl(const ub_op* op) { return op->impl.c_str(); }

extern "C" int ub_run(ub_op* op, const void* const* in, void* const* out) {
  const int m = static_cast<int>(op->d0), n = static_cast<int>(op->d1), k = static_cast<int>(op->d2);
  if (op->kind == "sgemm") {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                static_cast<const float*>(in[0]), k, static_cast<const float*>(in[1]), n, 0.0f,
                static_cast<float*>(out[0]), n);
  } else if (op->kind == "dgemm") {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0,
                static_cast<const double*>(in[0]), k, static_cast<const double*>(in[1]), n, 0.0,
                static_cast<double*>(out[0]), n);
  } else if (op->kind == "causal_attention") {
    run_attention(*op, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                  static_cast<const float*>(in[2]), static_cast<float*>(out[0]));
  } else {
    run_bf16_gemm(*op, static_cast<const uint16_t*>(in[0]), static_cast<const uint16_t*>(in[1]),
                  static_cast<uint16_t*>(out[0]));
  }
  return 0;
}

extern "C" void ub_destroy(ub_op* op) { delete op; }
