// What differs between the C-family dialects (c, cuda, opencl), as data the shared printer
// reads: type names, qualifiers, how an entry point is declared and how it finds its
// arguments, block and thread index. The printer never branches on a dialect name.
#pragma once

#include "ir/Type.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace unitile::codegen {

/// The spelling of vector types in a dialect.
enum class VectorSyntax : uint8_t {
  None,
  /// GCC vector extensions: vector_size types, __builtin_convertvector, memcpy loads.
  Gcc,
  /// OpenCL C vector types (floatN): vloadN/vstoreN, select, convert_typeN, as_typeN.
  OpenCL,
};

struct CDialect {
  std::string_view name;
  /// Printed once at the top of the translation unit (includes, ABI declarations).
  std::string_view prelude;
  /// Prefix of every entry point's name; the func name follows.
  std::string_view entry_prefix;
  /// Entry point declaration; `{entry}` is replaced by its name, `{nargs}` by the number of
  /// arguments (buffers, then runtime params; at least 1) and `{block_threads}` by the
  /// threads of one block (the product of the func's launch block extents).
  std::string_view entry_signature;
  /// Binding of argument `{index}` to buffer `{name}` of element type `{type}`;
  /// `{const}` is "const " for inputs and empty otherwise.
  std::string_view buffer_binding;
  /// Argument `{index}` read as a widened integer and as a widened float (params).
  std::string_view int_arg;
  std::string_view float_arg;
  /// How block index 0/1/2 of the launch grid is spelled inside an entry.
  std::array<std::string_view, 3> block_index;
  /// Storage type name per DType (indexed by its numeric value).
  std::array<std::string_view, 10> storage_type;
  /// Suffix that selects the f32 variant of a math function ("f": expf), or empty when
  /// the dialect overloads them.
  std::string_view f32_math_suffix;
  /// How vectorized loops are printed as vector code (CHelpers.h defines the types and
  /// their helpers in each syntax), or None: as scalar loops the vendor compiler may
  /// still vectorize.
  VectorSyntax vector_syntax = VectorSyntax::None;
  /// Most lanes one vector type may have in this dialect (OpenCL C: 16).
  int max_vector_lanes = 64;
  /// Whether a register tile that scalar code also reads (a vectorized reduction's final
  /// sum over its lanes) is still declared as an array of vectors. PoCL's LLVM keeps the
  /// plain array in memory through the whole reduction; GCC keeps it in registers either
  /// way, and its RVV code for the vector form trips an assertion of qemu-riscv64 7.2.
  bool vector_tiles_with_scalar_access = false;
  /// Statement a Barrier becomes when blocks have more than one thread, or empty when the
  /// dialect cannot run such blocks.
  std::string_view barrier;
  /// How thread index 0/1/2 within a block and the block's extent along that axis are
  /// spelled, or empty when a block is one C thread (its thread loops then run serially
  /// and the HCD's block limits do not apply to them).
  std::array<std::string_view, 3> thread_index;
  std::array<std::string_view, 3> block_extent;
  /// Qualifier before an Allocate in MemScope::Shared ("__shared__ "), or empty when a
  /// shared allocation is an ordinary local array. Non-empty means shared allocations
  /// count against the HCD's shared_memory_per_block.
  std::string_view shared_qualifier;
  /// Most bytes of shared allocations one block may declare statically in this dialect
  /// (CUDA: 48 KiB without dynamic shared memory), or 0 when only the HCD limits them.
  int64_t max_static_shared_bytes = 0;
  /// Declaration prefix of the helper functions (CHelpers.h) in place of "static inline".
  std::string_view helper_qualifier = "static inline";
  /// Helpers the dialect defines its own way (name, full definition), e.g. f16
  /// conversions through the vendor's half type.
  std::vector<std::pair<std::string_view, std::string_view>> helper_overrides;
  /// Loop hints; `{count}` is the unroll factor. Empty: no hint printed.
  std::string_view unroll_pragma = "#pragma GCC unroll {count}";
  std::string_view ivdep_pragma = "#pragma GCC ivdep";
  /// Identifiers the dialect reserves beyond C's (IR names that collide get a '_').
  std::vector<std::string_view> reserved_identifiers;
  /// When `entry_signature` holds `{params}`, every argument is an entry parameter, in
  /// calling-convention order: buffer `{name}` of element type `{type}` (`{const}` as for
  /// buffer_binding), then params; `{index}` is the argument's position and a float
  /// param's `{type}` its value type. int_arg/float_arg then name the params.
  std::string_view buffer_param;
  std::string_view int_param;
  std::string_view float_param;
  /// Whether shared allocations must be declared at the entry's outermost scope (OpenCL's
  /// __local) rather than where they occur.
  bool shared_at_entry_scope = false;
  /// Whether large private allocations may live on the heap (malloc/free).
  bool heap_allocations = true;
  /// The math function that rounds half to even (before the f32 suffix).
  std::string_view round_half_even = "nearbyint";
  /// Statement a Prefetch (a cache hint) becomes; `{address}` is the element's address.
  /// Empty: the dialect prints nothing for it.
  std::string_view prefetch;
  /// The same for a hint into the second-level cache (Prefetch's cache_level 2); empty:
  /// `prefetch`.
  std::string_view prefetch_l2;
  /// Whether Matrix statements (a matrix unit's tile operations, Loop.h) print as PTX
  /// `mma.sync` on the 32 lanes of a warp (thread.x), their accumulators distributed in
  /// the instruction's fragment layout. Dialects without it refuse Matrix statements.
  bool warp_mma = false;
  /// Whether Matrix statements print as Intel AMX tile instructions where the HCD's isa
  /// lists amx-tile and amx-bf16 (single-lane cores: an accumulator of at most 4 16 x 16
  /// f32 tiles lives in tile registers tmm0-3, operands are loaded into tmm4-7;
  /// matrix_mma_pairs only). Inline assembly, so no -mamx flags are needed; x86-64 only.
  bool amx_tiles = false;
};

/// The `c` dialect: C11 with GCC extensions, one exported function per LoopFunc following
/// the calling convention in CDialectAbi.h.
const CDialect& c_dialect();

/// The `cuda` dialect: CUDA C++ for NVRTC, one `extern "C" __global__` function per
/// LoopFunc taking its arguments as one by-value array of ut_c_arg (CudaDialect.cpp).
const CDialect& cuda_dialect();

/// The `opencl` dialect: OpenCL C 1.2 kernels taking every argument as a kernel parameter
/// (OpenCLDialect.cpp).
const CDialect& opencl_dialect();

/// The C-family dialect called `name`, or nullptr.
const CDialect* find_c_dialect(std::string_view name);

} // namespace unitile::codegen
