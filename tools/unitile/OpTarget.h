// `op:NAME` in place of a .ut file: a library op instantiated from the command line's
// inputs (.npy files or --shape NAME=2x3 with --dtype) and --attr values, shared by
// every command that runs kernels (run, profile, ...).
#pragma once

#include "ops/OpLibrary.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace unitile::cli {

bool is_op_target(const std::string& file);

struct OpTargetOptions {
  std::vector<std::string> attrs;  // --attr NAME=VALUE
  std::vector<std::string> dtypes; // --dtype DT (every data input) or NAME=DT
};
/// Adds --attr and --dtype to a command.
void add_op_target_options(CLI::App* cmd, OpTargetOptions& o);

/// The op `target` ("op:NAME") instantiated for: inputs given as .npy files (`inputs`,
/// NAME=PATH; their dtype and shape are read from the header), the rest from `shapes`
/// (NAME=D0xD1x...; `NAME=` alone or `NAME=scalar` is rank 0) with the dtype from
/// --dtype (data inputs; f32 by default), i64 (indices) or bool (masks). Optional inputs
/// are left out unless given; a variadic input X is given as X0, X1, ....
ops::OpInstance instantiate_op_target(const std::string& target,
                                      const std::vector<std::string>& shapes,
                                      const std::vector<std::string>& inputs,
                                      const OpTargetOptions& o);

} // namespace unitile::cli
