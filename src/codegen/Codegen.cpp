// generate_source: picks the printer for the HCD's dialect.
#include "codegen/Codegen.h"

#include "codegen/CDialect.h"
#include "codegen/CPrinter.h"

#include <fmt/core.h>

namespace unitile {

GeneratedSource generate_source(const LoopProgram& p, const hcd::Hcd& hcd) {
  if (const codegen::CDialect* d = codegen::find_c_dialect(hcd.dialect))
    return codegen::print_c_family(p, hcd, *d);
  if (hcd.dialect == "loopir") {
    // The sim device executes Loop IR text; its entries are the funcs' own names.
    GeneratedSource g{"loopir", to_string(p), {}};
    for (const auto& f : p.funcs)
      g.entries.push_back(f.name);
    return g;
  }
  Diagnostic d;
  d.file = hcd.source;
  d.message = fmt::format("unknown dialect '{}' in HCD '{}'", hcd.dialect, hcd.name);
  d.hint = "the dialects this build can print are: c, cuda, opencl, loopir";
  throw UserError(d);
}

} // namespace unitile
