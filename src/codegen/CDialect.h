// What differs between the C-family dialects (c, later opencl and cuda), as data the
// shared printer reads: type names, qualifiers, how an entry point is declared and how
// it finds its arguments and block index. The printer never branches on a dialect name.
#pragma once

#include "ir/Type.h"

#include <array>
#include <string_view>

namespace unitile::codegen {

struct CDialect {
  std::string_view name;
  /// Printed once at the top of the translation unit (includes, ABI declarations).
  std::string_view prelude;
  /// Prefix of every entry point's name; the func name follows.
  std::string_view entry_prefix;
  /// Entry point declaration; `{entry}` is replaced by its name.
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
  /// Whether vectorized loops may be printed with GCC vector extensions.
  bool gcc_vector_extensions = false;
  /// Statement a Barrier becomes when blocks have more than one thread, or empty when the
  /// dialect cannot run such blocks.
  std::string_view barrier;

  // Capabilities of dialects whose entry points are device kernels (opencl, cuda). The
  // defaults describe the c dialect.

  /// When `entry_signature` holds `{params}`, every argument is an entry parameter, in
  /// calling-convention order: buffer `{name}` of element type `{type}` (`{const}` as
  /// for buffer_binding), then params; `{index}` is the argument's position and a
  /// float param's `{type}` is its value type. int_arg/float_arg then name the params.
  std::string_view buffer_param;
  std::string_view int_param;
  std::string_view float_param;
  /// How thread index 0/1/2 within a block is spelled; empty when a block's threads run
  /// as a serial loop (then blocks must have one thread to use barriers).
  std::array<std::string_view, 3> thread_index;
  /// Qualifier of shared-scope (block-wide) allocations, and whether they must be declared
  /// at the entry's outermost scope (OpenCL's __local) rather than where they occur.
  std::string_view shared_qualifier;
  bool shared_at_entry_scope = false;
  /// Whether large private allocations may live on the heap (malloc/free).
  bool heap_allocations = true;
  /// The math function that rounds half to even (before the f32 suffix).
  std::string_view round_half_even = "nearbyint";
  /// Identifiers the dialect reserves beyond C's (keywords, builtins), space-separated.
  std::string_view reserved_identifiers;
};

/// The `c` dialect: C11 with GCC extensions, one exported function per LoopFunc following
/// the calling convention in CDialectAbi.h.
const CDialect& c_dialect();

/// The `opencl` dialect: OpenCL C 1.2 kernels (OpenCLDialect.cpp).
const CDialect& opencl_dialect();

} // namespace unitile::codegen
