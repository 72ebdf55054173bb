// Plain loops: the STREAM triad that measures the machine's bandwidth, and straight
// reference implementations of the bandwidth-bound ops (softmax, layernorm, rmsnorm, an
// elementwise chain) that Unitile's results are checked against. Compiled with the
// ordinary optimiser and OpenMP over rows; no library behind them.
//
// Operations (row-major, f32):
//   triad {N}, params {s}: inputs b, c; output a[i] = b[i] + s * c[i].
//   softmax {N,D}: input X; output Y over the last axis.
//   layernorm {N,D}, params {eps}: inputs X, gamma[D], beta[D]; output Y.
//   rmsnorm {N,D}, params {eps}: inputs X, gamma[D]; output Y = X / sqrt(mean(X^2) + eps) * gamma.
//   chain {M,N}: inputs A, B, C; output Y = max(A * B + C, 0) * 0.5.
#include "BaselineSupport.h"

#include <omp.h>

#include <memory>
#include <string>

using unitile::bench_baseline::causal_softmax_row;
using unitile::bench_baseline::dims_ok;
using unitile::bench_baseline::fail;

struct ub_op {
  std::string kind;
  int64_t rows = 0, cols = 0;
  float param = 0;
};

namespace {

int g_threads = 1;

void triad(const ub_op& op, const float* b, const float* c, float* a) {
  const int64_t n = op.rows;
  const float s = op.param;
#pragma omp parallel for num_threads(g_threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

void softmax(const ub_op& op, const float* x, float* y) {
  const int64_t n = op.rows, d = op.cols;
#pragma omp parallel for num_threads(g_threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float* row = y + i * d;
    for (int64_t j = 0; j < d; ++j) row[j] = x[i * d + j];
    causal_softmax_row(row, d, d);
  }
}

void layernorm(const ub_op& op, const float* x, const float* gamma, const float* beta, float* y) {
  const int64_t n = op.rows, d = op.cols;
#pragma omp parallel for num_threads(g_threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float* row = x + i * d;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += row[j];
    mean /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= static_cast<double>(d);
    const double inv = 1.0 / std::sqrt(var + op.param);
    for (int64_t j = 0; j < d; ++j)
      y[i * d + j] = static_cast<float>((row[j] - mean) * inv * gamma[j] + beta[j]);
  }
}

void rmsnorm(const ub_op& op, const float* x, const float* gamma, float* y) {
  const int64_t n = op.rows, d = op.cols;
#pragma omp parallel for num_threads(g_threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float* row = x + i * d;
    double ms = 0;
    for (int64_t j = 0; j < d; ++j) ms += static_cast<double>(row[j]) * row[j];
    const double inv = 1.0 / std::sqrt(ms / static_cast<double>(d) + op.param);
    for (int64_t j = 0; j < d; ++j) y[i * d + j] = static_cast<float>(row[j] * inv * gamma[j]);
  }
}

void chain(const ub_op& op, const float* a, const float* b, const float* c, float* y) {
  const int64_t n = op.rows * op.cols;
#pragma omp parallel for num_threads(g_threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float t = a[i] * b[i] + c[i];
    y[i] = (t > 0 ? t : 0) * 0.5f;
  }
}

} // namespace

UB_DEFINE_COMMON_EXPORTS

extern "C" const char* ub_describe(void) { return "plain loops (OpenMP over rows)"; }

extern "C" int ub_set_threads(int threads) {
  if (threads < 1) return fail(0, "threads must be positive");
  g_threads = threads;
  return g_threads;
}

extern "C" ub_op* ub_create(const char* op, const char* dtype, const int64_t* dims, int ndims,
                            const double* params, int nparams) {
  const std::string name = op;
  if (std::string(dtype) != "f32") return fail<ub_op*>(nullptr, "only f32");
  auto made = std::make_unique<ub_op>();
  made->kind = name;
  const bool one_dim = name == "triad";
  const bool wants_param = name == "triad" || name == "layernorm" || name == "rmsnorm";
  if (name != "triad" && name != "softmax" && name != "layernorm" && name != "rmsnorm" &&
      name != "chain")
    return fail<ub_op*>(nullptr, "no operation " + name);
  if (!dims_ok(dims, ndims, one_dim ? 1 : 2, op)) return nullptr;
  if (nparams != (wants_param ? 1 : 0))
    return fail<ub_op*>(nullptr, name + " takes " + (wants_param ? "one param" : "no params"));
  made->rows = dims[0];
  made->cols = one_dim ? 1 : dims[1];
  made->param = wants_param ? static_cast<float>(params[0]) : 0.0f;
  return made.release();
}

extern "C" const char* ub_op_impl(const ub_op* op) { return "plain loop"; }

extern "C" int ub_run(ub_op* op, const void* const* in, void* const* out) {
  auto f = [&](int i) { return static_cast<const float*>(in[i]); };
  float* y = static_cast<float*>(out[0]);
  if (op->kind == "triad") triad(*op, f(0), f(1), y);
  else if (op->kind == "softmax") softmax(*op, f(0), y);
  else if (op->kind == "layernorm") layernorm(*op, f(0), f(1), f(2), y);
  else if (op->kind == "rmsnorm") rmsnorm(*op, f(0), f(1), y);
  else chain(*op, f(0), f(1), f(2), y);
  return 0;
}

extern "C" void ub_destroy(ub_op* op) { delete op; }
