// The C-family printer: Loop IR to one translation unit of C-like source, shared by every
// dialect that looks like C (c today; opencl and cuda read the same printer with their
// own CDialect table).
//
// Why it exists: the generated code must mean exactly what the sim device's reference
// semantics say (integer division, Python modulo, NaN-propagating min/max, f16 rounding,
// lazy guarded reads), and it must stay fast where that costs nothing (plain `/` and `%`
// on provably non-negative indices, vector code for simple elementwise loops).
#pragma once

#include "codegen/CDialect.h"
#include "codegen/Codegen.h"

namespace unitile::codegen {

/// Print every func of `p` in dialect `d`. A program the dialect cannot express (a
/// barrier in multi-thread blocks where the dialect has none) is a UserError; malformed
/// Loop IR is an InternalError.
GeneratedSource print_c_family(const LoopProgram& p, const hcd::Hcd& hcd, const CDialect& d);

} // namespace unitile::codegen
