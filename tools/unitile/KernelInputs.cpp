// Reading the input flags of `unitile run` and `unitile profile` (see KernelInputs.h).
#include "unitile/KernelInputs.h"

#include "ir/Diagnostic.h"
#include "runtime/Inputs.h"
#include "runtime/Npy.h"
#include "runtime/SourceFiles.h"

#include <fmt/core.h>

#include <algorithm>

namespace unitile::cli {

void add_input_flags(CLI::App& cmd, InputFlags& f) {
  cmd.add_option("--param", f.params, "param values NAME=VALUE; may repeat")
      ->allow_extra_args(false);
  cmd.add_option("--input", f.inputs, "read input NAME from a .npy file: NAME=PATH; may repeat")
      ->allow_extra_args(false);
  cmd.add_option("--seed", f.seed, "seed of the random inputs (default 0)");
}

std::vector<std::string> device_list(const std::string& devices) {
  std::vector<std::string> names;
  for (size_t at = 0; at <= devices.size();) {
    size_t comma = std::min(devices.find(',', at), devices.size());
    std::string name = devices.substr(at, comma - at);
    if (name.empty())
      throw UserError(fmt::format("error: --device '{}' has an empty device name", devices));
    names.push_back(name);
    at = comma + 1;
  }
  return names;
}

KernelTarget load_kernel_target(const CommonOptions& co, const InputFlags& f,
                                const OpTargetOptions& op) {
  KernelTarget t;
  t.op = is_op_target(co.file);
  if (!t.op && (!op.attrs.empty() || !op.dtypes.empty()))
    throw UserError("error: --attr and --dtype apply to op:NAME targets only");
  if (t.op && !co.kernel.empty())
    throw UserError("error: --kernel does not apply to op:NAME (it is one kernel)");
  t.module = t.op ? instantiate_op_target(co.file, co.shapes, f.inputs, op).module
                  : load_module(co.file);
  return t;
}

KernelInputs check_input_flags(const CommonOptions& co, const InputFlags& f,
                               const std::vector<const Kernel*>& kernels, bool op_target) {
  KernelInputs in;
  if (!op_target) in.shapes = shape_bindings(co, kernels);
  in.seed = f.seed;
  for (const auto& [name, value] : name_values(f.params, "--param", true)) {
    bool known = false;
    for (const Kernel* k : kernels)
      known |= k->find_param(name) != nullptr;
    if (!known)
      throw UserError(
          fmt::format("error: --param {}: no kernel run here has a param '{}'", name, name));
    in.params[name] = parse_number(value, "--param " + name);
  }
  for (const auto& [name, path] : name_values(f.inputs, "--input", false)) {
    bool known = false;
    for (const Kernel* k : kernels) {
      const TensorDecl* t = k->find_tensor(name);
      known |= t && t->role == TensorRole::Input;
    }
    if (!known) {
      std::vector<std::string> names;
      for (const Kernel* k : kernels)
        for (const TensorDecl* t : k->inputs())
          names.push_back(t->name);
      throw UserError(
          fmt::format("error: --input {}: no kernel run here has an input '{}' (inputs: {})", name,
                      name, join(names)));
    }
    if (!in.input_files.emplace(name, path).second)
      throw UserError(fmt::format("error: --input {} is given twice", name));
  }
  return in;
}

KernelCall prepare_call(const Kernel& k, const KernelInputs& in) {
  ShapeBindings given;
  const std::vector<std::string> bindable = bindable_names(k);
  for (const auto& [name, v] : in.shapes)
    if (std::find(bindable.begin(), bindable.end(), name) != bindable.end())
      given[name] = v;
  for (const std::string& p : specialisation_params(k))
    if (auto it = in.params.find(p); it != in.params.end() && !given.count(p))
      given[p] = parse_int(fmt::format("{}", it->second), "--param " + p);

  std::map<std::string, Tensor> loaded;
  std::map<std::string, std::vector<int64_t>> loaded_shapes;
  for (const TensorDecl* decl : k.inputs()) {
    auto f = in.input_files.find(decl->name);
    if (f == in.input_files.end())
      continue;
    Tensor t = read_npy(f->second, decl->dtype);
    if (t.dtype != decl->dtype)
      throw UserError(fmt::format("error: input '{}' ({}): expected dtype {} ('{}'), got {} ('{}')",
                                  decl->name, f->second, dtype_name(decl->dtype),
                                  npy_descr(decl->dtype), dtype_name(t.dtype), npy_descr(t.dtype)));
    if (t.shape.size() != decl->shape.size())
      throw UserError(fmt::format("error: input '{}' ({}): expected rank {}, got shape {}",
                                  decl->name, f->second, decl->shape.size(),
                                  shape_string(t.shape)));
    loaded_shapes[decl->name] = t.shape;
    loaded.emplace(decl->name, std::move(t));
  }
  KernelCall call;
  call.kernel = &k;
  call.bindings = bind_shapes(k, loaded_shapes, given);
  call.inputs = complete_inputs(k, call.bindings, std::move(loaded), in.seed);
  return call;
}

} // namespace unitile::cli
