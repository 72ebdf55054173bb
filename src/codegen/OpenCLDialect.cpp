// The opencl dialect table: OpenCL C 1.2 kernels for any OpenCL device.
//
// Every argument is a kernel parameter: buffers as __global pointers, integer params as
// long and float params in their value type (the plugin narrows the ABI's widened
// values to match). Blocks are work-groups and threads are work-items; shared
// allocations become __local arrays at the kernel's outermost scope, as OpenCL requires.
// f16 and bf16 tensors are stored as ushort and converted by the same integer helpers as
// the c dialect, so they work on devices without cl_khr_fp16 (PoCL's CPU device has
// none) and round exactly as the sim device does.
#include "codegen/CDialect.h"

#include <vector>

namespace unitile::codegen {

namespace {

// OpenCL C keywords, types and built-ins an IR name could collide with.
const std::vector<std::string_view>& opencl_reserved() {
  static const std::vector<std::string_view> words = {
      "kernel",
      "__kernel",
      "global",
      "__global",
      "local",
      "__local",
      "constant",
      "__constant",
      "private",
      "__private",
      "read_only",
      "write_only",
      "read_write",
      "half",
      "uchar",
      "ushort",
      "uint",
      "ulong",
      "image1d_t",
      "image2d_t",
      "image3d_t",
      "sampler_t",
      "event_t",
      "get_global_id",
      "get_local_id",
      "get_group_id",
      "get_local_size",
      "get_global_size",
      "get_num_groups",
      "get_work_dim",
      "barrier",
      "mem_fence",
      "CLK_LOCAL_MEM_FENCE",
      "CLK_GLOBAL_MEM_FENCE",
      "rint",
      "clamp",
      "mad",
      "mix",
      "select",
      "dot",
      "as_float",
      "as_uint",
      "as_int",
      "as_double",
      "as_long",
      "as_ulong",
      "convert_float",
      "convert_int",
      "vload2",
      "vload4",
      "vload8",
      "vload16",
      "vstore2",
      "vstore4",
      "vstore8",
      "vstore16",
      "vload_half",
      "vstore_half",
      "HUGE_VALF",
      "MAXFLOAT",
      "char2",
      "char3",
      "char4",
      "char8",
      "char16",
      "uchar2",
      "uchar3",
      "uchar4",
      "uchar8",
      "uchar16",
      "short2",
      "short3",
      "short4",
      "short8",
      "short16",
      "ushort2",
      "ushort3",
      "ushort4",
      "ushort8",
      "ushort16",
      "int2",
      "int3",
      "int4",
      "int8",
      "int16",
      "uint2",
      "uint3",
      "uint4",
      "uint8",
      "uint16",
      "long2",
      "long3",
      "long4",
      "long8",
      "long16",
      "ulong2",
      "ulong3",
      "ulong4",
      "ulong8",
      "ulong16",
      "float2",
      "float3",
      "float4",
      "float8",
      "float16",
      "double2",
      "double3",
      "double4",
      "double8",
      "double16",
  };
  return words;
}

// The C names the shared printer and its helpers use, defined for OpenCL C: fixed-width
// integer types, INT64_C and limits, C's fmodf (OpenCL overloads fmod), and memcpy for
// the helpers' bit casts (between private variables only, which __builtin_memcpy allows).
constexpr std::string_view kOpenCLPrelude =
    "#ifdef cl_khr_fp64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "typedef char int8_t;\n"
    "typedef short int16_t;\n"
    "typedef int int32_t;\n"
    "typedef long int64_t;\n"
    "typedef uchar uint8_t;\n"
    "typedef ushort uint16_t;\n"
    "typedef uint uint32_t;\n"
    "typedef ulong uint64_t;\n"
    "#define INT64_C(c) c##L\n"
    "#define INT64_MAX 0x7fffffffffffffffL\n"
    "#define INT64_MIN (-INT64_MAX - 1)\n"
    "#define fmodf(x, y) fmod(x, y)\n"
    "#define memcpy(dst, src, n) __builtin_memcpy(dst, src, n)\n"
    // A cache hint: OpenCL's prefetch() is a no-op in PoCL (softmax 0.67x of cpu without
    // the hint); on a CPU target (one flat address space) clang's builtin is a real one.
    "#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__riscv)\n"
    "#define ut_prefetch(p) __builtin_prefetch(p)\n"
    "#define ut_prefetch_l2(p) __builtin_prefetch(p, 0, 2)\n"
    "#else\n"
    "#define ut_prefetch(p) prefetch(p, 1)\n"
    "#define ut_prefetch_l2(p) prefetch(p, 1)\n"
    "#endif\n";

} // namespace

const CDialect& opencl_dialect() {
  static const CDialect d = [] {
    CDialect c;
    c.name = "opencl";
    c.prelude = kOpenCLPrelude;
    c.entry_prefix = "ut_entry_";
    c.entry_signature = "__kernel void {entry}({params})";
    c.buffer_param = "__global {const}{type}* restrict {name}";
    c.int_param = "long ut_arg{index}";
    c.float_param = "{type} ut_arg{index}";
    c.int_arg = "ut_arg{index}";
    c.float_arg = "ut_arg{index}";
    c.block_index = {"get_group_id(0)", "get_group_id(1)", "get_group_id(2)"};
    c.thread_index = {"get_local_id(0)", "get_local_id(1)", "get_local_id(2)"};
    c.block_extent = {"get_local_size(0)", "get_local_size(1)", "get_local_size(2)"};
    // Indexed by DType: f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool.
    c.storage_type = {"ushort", "ushort", "float", "double", "char",
                      "short",  "int",    "long",  "uchar",  "uchar"};
    c.f32_math_suffix = ""; // OpenCL C overloads exp, sqrt, ... on float and double
    c.vector_syntax = VectorSyntax::OpenCL;
    c.max_vector_lanes = 16;
    c.vector_tiles_with_scalar_access = true;
    // Work-items of a group may also exchange data through global workspace buffers.
    c.barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);";
    c.shared_qualifier = "__local ";
    c.shared_at_entry_scope = true;
    c.heap_allocations = false;
    c.round_half_even = "rint";
    c.prefetch = "ut_prefetch({address});";
    c.prefetch_l2 = "ut_prefetch_l2({address});";
    c.reserved_identifiers = opencl_reserved();
    return c;
  }();
  return d;
}

} // namespace unitile::codegen
