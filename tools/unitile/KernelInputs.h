// The kernels a command runs (a .ut file, or op:NAME) and the flags that give them their
// inputs (--param, --input, --seed, with --shape), turned into each kernel's bindings
// and tensors: shared by `unitile run` and `unitile profile`, so both read the same
// command line the same way.
#pragma once

#include "unitile/Command.h"

#include "OpTarget.h"

#include "runtime/Session.h"
#include "runtime/Tensor.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace unitile::cli {

struct InputFlags {
  std::vector<std::string> params, inputs;
  uint64_t seed = 0;
};
void add_input_flags(CLI::App& cmd, InputFlags& f);

/// The target's kernels: a .ut file's, or op:NAME written out for the inputs given
/// (OpTarget.h; its shapes are concrete, so --shape describes inputs there instead of
/// binding symbols). --attr/--dtype only apply to op:NAME, --kernel only to files.
struct KernelTarget {
  Module module;
  bool op = false;
};
KernelTarget load_kernel_target(const CommonOptions& co, const InputFlags& f,
                                const OpTargetOptions& op);

/// The flags checked against the kernels that will run: every --param and --input
/// names something one of them has, and no input is given twice. For an op target
/// --shape binds nothing (it described the op's inputs).
struct KernelInputs {
  ShapeBindings shapes;                           // --shape
  ParamValues params;                             // --param, by name
  std::map<std::string, std::string> input_files; // --input NAME=PATH
  uint64_t seed = 0;
};
KernelInputs check_input_flags(const CommonOptions& co, const InputFlags& f,
                               const std::vector<const Kernel*>& kernels, bool op_target = false);

/// One kernel ready to run: its bound shapes and every input tensor (read from the
/// --input files that name its inputs, random otherwise, seeded).
struct KernelCall {
  const Kernel* kernel = nullptr;
  ShapeBindings bindings;
  std::map<std::string, Tensor> inputs;
};
KernelCall prepare_call(const Kernel& k, const KernelInputs& in);

/// `--device a,b`: the device names, in order (a repeated option's values are joined
/// with commas first).
std::vector<std::string> device_list(const std::string& devices);

} // namespace unitile::cli
