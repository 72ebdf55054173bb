// Parsers for the two text forms: Kernel IR (.ut files) and Loop IR.
#pragma once

#include "ir/Diagnostic.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"

namespace unitile {

/// Parse every kernel in a .ut file and verify each one (see Verifier.h). Throws
/// UserError carrying FILE:LINE:COL diagnostics; never crashes or hangs on any input.
Module parse_module(const SourceFile& src);

/// Parse Loop IR text as printed by to_string(const LoopProgram&). Throws UserError.
LoopProgram parse_loop_program(const SourceFile& src);

} // namespace unitile
