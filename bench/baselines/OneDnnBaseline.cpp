// The oneDNN baseline: matmul (f32, bf16), softmax and layer normalization, each a
// primitive created once and executed many times on one CPU engine and stream.
//
// Operations (row-major):
//   gemm f32|bf16 {M,N,K}: inputs A[M,K], B[K,N]; output C[M,N] = A B (bf16 in, bf16 out).
//   softmax f32 {N,D}: input X; output Y, softmax over the last axis.
//   layernorm f32 {N,D}, params {eps}: inputs X, gamma[D], beta[D]; output Y.
// Threads: Debian's oneDNN is built with the OpenMP runtime, so omp_set_num_threads on
// the calling thread sets the threads of every later primitive execution.
#include "BaselineSupport.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <memory>
#include <string>
#include <vector>

using unitile::bench_baseline::dims_ok;
using unitile::bench_baseline::fail;

struct ub_op {
  dnnl::primitive prim;
  std::vector<dnnl::memory::desc> in_descs;  // in ub_run's input order
  std::vector<int> in_args;
  dnnl::memory::desc out_desc;
  std::string impl;
};

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& cpu_stream() {
  static dnnl::stream stream(cpu_engine());
  return stream;
}

dnnl::memory::desc matrix(int64_t rows, int64_t cols, dt type) {
  return dnnl::memory::desc({rows, cols}, type, tag::ab);
}

std::unique_ptr<ub_op> make_gemm(const int64_t* d, dt type) {
  auto op = std::make_unique<ub_op>();
  const auto a = matrix(d[0], d[2], type), b = matrix(d[2], d[1], type), c = matrix(d[0], d[1], type);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), cpu_engine());
  op->prim = dnnl::matmul(pd);
  op->in_descs = {a, b};
  op->in_args = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS};
  op->out_desc = c;
  op->impl = pd.impl_info_str();
  return op;
}

std::unique_ptr<ub_op> make_softmax(const int64_t* d) {
  auto op = std::make_unique<ub_op>();
  const auto x = matrix(d[0], d[1], dt::f32);
  dnnl::softmax_forward::primitive_desc pd(
      dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, x, 1), cpu_engine());
  op->prim = dnnl::softmax_forward(pd);
  op->in_descs = {x};
  op->in_args = {DNNL_ARG_SRC};
  op->out_desc = x;
  op->impl = pd.impl_info_str();
  return op;
}

std::unique_ptr<ub_op> make_layernorm(const int64_t* d, float eps) {
  auto op = std::make_unique<ub_op>();
  const auto x = matrix(d[0], d[1], dt::f32);
  const dnnl::memory::desc vec({d[1]}, dt::f32, tag::a);
  dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(
          dnnl::prop_kind::forward_inference, x, eps,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
      cpu_engine());
  op->prim = dnnl::layer_normalization_forward(pd);
  op->in_descs = {x, vec, vec};
  op->in_args = {DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
  op->out_desc = x;
  op->impl = pd.impl_info_str();
  return op;
}

} // namespace

UB_DEFINE_COMMON_EXPORTS

extern "C" const char* ub_describe(void) {
  static std::string text;
  const dnnl_version_t* v = dnnl_version();
  text = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (" +
         (v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "non-OpenMP runtime") + ", ISA " +
         [] {
           switch (dnnl::get_effective_cpu_isa()) {
           case dnnl::cpu_isa::avx2: return "avx2";
           case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
           case dnnl::cpu_isa::avx512_core: return "avx512_core";
           case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
           case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
           default: return "other";
           }
         }() + ")";
  return text.c_str();
}

extern "C" int ub_set_threads(int threads) {
  if (threads < 1) return fail(0, "threads must be positive");
  omp_set_num_threads(threads);
  return omp_get_max_threads();
}

extern "C" ub_op* ub_create(const char* op, const char* dtype, const int64_t* dims, int ndims,
                            const double* params, int nparams) {
  const std::string name = op, type = dtype;
  try {
    if (name == "gemm" && (type == "f32" || type == "bf16")) {
      if (!dims_ok(dims, ndims, 3, op)) return nullptr;
      return make_gemm(dims, type == "f32" ? dt::f32 : dt::bf16).release();
    }
    if (name == "softmax" && type == "f32") {
      if (!dims_ok(dims, ndims, 2, op)) return nullptr;
      return make_softmax(dims).release();
    }
    if (name == "layernorm" && type == "f32") {
      if (!dims_ok(dims, ndims, 2, op)) return nullptr;
      if (nparams != 1) return fail<ub_op*>(nullptr, "layernorm takes one param, eps");
      return make_layernorm(dims, static_cast<float>(params[0])).release();
    }
  } catch (const dnnl::error& e) {
    return fail<ub_op*>(nullptr, name + " " + type + ": " + e.what());
  }
  return fail<ub_op*>(nullptr, "no " + name + " for " + type);
}

extern "C" const char* ub_op_impl(const ub_op* op) { return op->impl.c_str(); }

extern "C" int ub_run(ub_op* op, const void* const* in, void* const* out) {
  try {
    std::unordered_map<int, dnnl::memory> args;
    for (size_t i = 0; i < op->in_descs.size(); ++i)
      args.emplace(op->in_args[i],
                   dnnl::memory(op->in_descs[i], cpu_engine(), const_cast<void*>(in[i])));
    args.emplace(DNNL_ARG_DST, dnnl::memory(op->out_desc, cpu_engine(), out[0]));
    op->prim.execute(cpu_stream(), args);
    cpu_stream().wait();
  } catch (const dnnl::error& e) {
    return fail(1, std::string("execute: ") + e.what());
  }
  return 0;
}

extern "C" void ub_destroy(ub_op* op) { delete op; }
