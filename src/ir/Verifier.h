// The Kernel IR verifier: name resolution, rank and dtype checks, index-range inference.
#pragma once

#include "ir/Diagnostic.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"

namespace unitile {

/// Check `k` and fill in what later passes rely on: every Expr's `type`, each
/// comprehension's reduction_vars and ranges. Errors are UserError diagnostics into
/// `src` (use an empty SourceFile for kernels from the C++ builder: the message then
/// names the kernel and statement instead of a line).
void verify(Kernel& k, const SourceFile& src);

/// Check a LoopProgram's internal consistency (every buffer and variable defined, ranks
/// match, grid loops outermost). A failure is the compiler's fault: InternalError.
void verify(const LoopProgram& p);

/// The same checks on a program read from `origin` (a .loop file): a failure is the
/// input's, a UserError naming the file.
void verify_input(const LoopProgram& p, const std::string& origin);

} // namespace unitile
