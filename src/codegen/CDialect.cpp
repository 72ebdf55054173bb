// The dialect tables of the C-family printer.
#include "codegen/CDialect.h"

#include "codegen/CDialectAbi.h"

namespace unitile::codegen {

const CDialect& c_dialect() {
  static const CDialect d = [] {
    CDialect c;
    c.name = "c";
    c.prelude = "#include <math.h>\n"
                "#include <stdint.h>\n"
                "#include <stdlib.h>\n"
                "#include <string.h>\n" UT_C_DIALECT_ABI_TEXT "\n";
    c.entry_prefix = UT_C_ENTRY_PREFIX;
    c.entry_signature =
        "__attribute__((visibility(\"default\"))) void {entry}(const ut_c_arg* args, "
        "uint32_t bx, uint32_t by, uint32_t bz)";
    c.buffer_binding = "{const}{type}* restrict {name} = ({const}{type}*)args[{index}].p;";
    c.int_arg = "args[{index}].i";
    c.float_arg = "args[{index}].f";
    c.block_index = {"bx", "by", "bz"};
    // Indexed by DType: f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool.
    c.storage_type = {"uint16_t", "uint16_t", "float",   "double",  "int8_t",
                      "int16_t",  "int32_t",  "int64_t", "uint8_t", "uint8_t"};
    c.f32_math_suffix = "f";
    c.vector_syntax = VectorSyntax::Gcc;
    c.barrier = ""; // blocks of the c dialect have one thread
    c.prefetch = "__builtin_prefetch({address});";
    c.prefetch_l2 = "__builtin_prefetch({address}, 0, 2);";
    c.amx_tiles = true;
    return c;
  }();
  return d;
}

const CDialect* find_c_dialect(std::string_view name) {
  for (const CDialect* d : {&c_dialect(), &cuda_dialect(), &opencl_dialect()})
    if (d->name == name)
      return d;
  return nullptr;
}

} // namespace unitile::codegen
