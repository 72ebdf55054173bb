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
};

/// The `c` dialect: C11 with GCC extensions, one exported function per LoopFunc following
/// the calling convention in CDialectAbi.h.
const CDialect& c_dialect();

} // namespace unitile::codegen
