// Codegen: one C-family printer from Loop IR with a dialect per device family.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Loop.h"

#include <string>
#include <vector>

namespace unitile {

struct GeneratedSource {
  std::string dialect;              // the HCD's dialect: "c", "loopir", later "opencl", "cuda"
  std::string code;                 // one translation unit holding every func
  std::vector<std::string> entries; // entry point per LoopFunc, in order
};

/// Print `p` in the dialect `hcd.dialect` names. "loopir" is the Loop IR text itself
/// (the sim device executes it). An unknown dialect is a UserError.
GeneratedSource generate_source(const LoopProgram& p, const hcd::Hcd& hcd);

} // namespace unitile
