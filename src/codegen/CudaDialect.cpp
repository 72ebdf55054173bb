// The cuda dialect table: CUDA C++ as NVRTC compiles it, for the cuda device plugin.
//
// NVRTC sees no host headers, so the prelude defines the fixed-width integer types and
// the few C macros the shared printer uses (NAN, INFINITY, INT64_C, abort). f16 and bf16
// are stored as __half and __nv_bfloat16 from cuda_fp16.h / cuda_bf16.h (the plugin
// passes the CUDA include directory) and converted with the hardware's round-to-nearest-
// even conversions, which give the sim device's values bit for bit (NaN payloads aside).
//
// Calling convention: each LoopFunc is `extern "C" __global__ void ut_entry_NAME(const
// ut_args<N> args)`, where ut_args<N> holds N ut_c_arg values (the c dialect's argument
// union: device pointers in .p, integer params in .i, float params in .f) passed by
// value, so a launch needs no device-side argument buffer. Grid loops read blockIdx,
// thread loops threadIdx; Barrier is __syncthreads(). Matrix statements (a matrix unit's
// tiles) print as inline PTX mma.sync for the lanes of a warp (CPrinter.cpp).
#include "codegen/CDialect.h"

#include "codegen/CDialectAbi.h"

namespace unitile::codegen {

namespace {

constexpr std::string_view kPrelude = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(x) x##LL
#define INT64_MAX 9223372036854775807LL
#define INT64_MIN (-INT64_MAX - 1)
#define NAN __int_as_float(0x7fffffff)
#define INFINITY __int_as_float(0x7f800000)
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
#define abort() __trap()
typedef union ut_c_arg { void* p; int64_t i; double f; } ut_c_arg;
template <int N> struct ut_args { ut_c_arg a[N]; };
)";

constexpr std::string_view kF16ToF32 =
    "static __device__ __forceinline__ float ut_f16_to_f32(__half h) { return __half2float(h); "
    "}\n";
constexpr std::string_view kF32ToF16 =
    "static __device__ __forceinline__ __half ut_f32_to_f16(float f) { return "
    "__float2half_rn(f); }\n";
constexpr std::string_view kBf16ToF32 =
    "static __device__ __forceinline__ float ut_bf16_to_f32(__nv_bfloat16 h) { return "
    "__bfloat162float(h); }\n";
constexpr std::string_view kF32ToBf16 =
    "static __device__ __forceinline__ __nv_bfloat16 ut_f32_to_bf16(float f) { return "
    "__float2bfloat16_rn(f); }\n";

} // namespace

const CDialect& cuda_dialect() {
  static const CDialect d = [] {
    CDialect c;
    c.name = "cuda";
    c.prelude = kPrelude;
    c.entry_prefix = UT_C_ENTRY_PREFIX;
    c.entry_signature = "extern \"C\" __global__ void __launch_bounds__({block_threads}) "
                        "{entry}(const ut_args<{nargs}> args)";
    c.buffer_binding = "{const}{type}* __restrict__ {name} = ({const}{type}*)args.a[{index}].p;";
    c.int_arg = "args.a[{index}].i";
    c.float_arg = "args.a[{index}].f";
    c.block_index = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
    c.thread_index = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
    c.block_extent = {"blockDim.x", "blockDim.y", "blockDim.z"};
    // Indexed by DType: f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool.
    c.storage_type = {"__half",  "__nv_bfloat16", "float",   "double",  "int8_t",
                      "int16_t", "int32_t",       "int64_t", "uint8_t", "uint8_t"};
    c.f32_math_suffix = "f";
    c.barrier = "__syncthreads();";
    c.shared_qualifier = "__shared__ ";
    // Static __shared__ arrays stop at 48 KiB; more (up to the HCD's 227 KiB on sm_90)
    // needs dynamic shared memory and an opt-in attribute, which codegen does not use yet.
    c.max_static_shared_bytes = 48 * 1024;
    c.helper_qualifier = "static __device__ __forceinline__";
    c.helper_overrides = {{"ut_f16_to_f32", kF16ToF32},
                          {"ut_f32_to_f16", kF32ToF16},
                          {"ut_bf16_to_f32", kBf16ToF32},
                          {"ut_f32_to_bf16", kF32ToBf16}};
    c.warp_mma = true;
    c.unroll_pragma = "#pragma unroll {count}";
    c.ivdep_pragma = "";
    c.reserved_identifiers = {
        "blockIdx", "threadIdx", "blockDim", "gridDim", "warpSize", "half", "__half",
        // C++ keywords that are not C's
        "alignas", "alignof", "catch", "class", "constexpr", "const_cast", "decltype", "delete",
        "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept",
        "nullptr", "operator", "private", "protected", "public", "reinterpret_cast",
        "static_assert", "static_cast", "template", "this", "thread_local", "throw", "try",
        "typeid", "typename", "using", "virtual", "wchar_t", "char16_t", "char32_t", "concept",
        "requires", "and", "or", "not", "xor", "bitand", "bitor", "compl", "not_eq", "and_eq",
        "or_eq", "xor_eq"};
    return c;
  }();
  return d;
}

} // namespace unitile::codegen
