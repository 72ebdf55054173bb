// `unitile vjp`: the vector-Jacobian-product kernel the comprehension differentiator
// derives from a kernel (a .ut file or an op:NAME instance), printed as .ut text.
#include "unitile/Command.h"

#include "OpTarget.h"

#include "graph/DeriveVjp.h"
#include "runtime/SourceFiles.h"

#include <fmt/core.h>

#include <iostream>
#include <optional>

namespace unitile::cli {
namespace {

struct VjpOptions {
  std::string file, kernel;
  std::vector<std::string> shapes, wrt, cotangents;
  OpTargetOptions op;
};

std::vector<std::string> split_names(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      const size_t comma = item.find(',', start);
      const std::string name =
          item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!name.empty())
        out.push_back(name);
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
  }
  return out;
}

int vjp_command(const VjpOptions& o) {
  std::optional<ops::OpInstance> inst;
  if (is_op_target(o.file))
    inst = instantiate_op_target(o.file, o.shapes, {}, o.op);
  else if (!o.shapes.empty() || !o.op.attrs.empty() || !o.op.dtypes.empty())
    throw UserError("error: --shape, --attr and --dtype apply to op:NAME targets only");
  const Module m = inst ? inst->module : load_module(o.file);
  for (const Kernel* k : select_kernels(m, o.kernel, o.file)) {
    graph::VjpRequest req;
    req.wrt = split_names(o.wrt);
    req.cotangents = split_names(o.cotangents);
    if (req.wrt.empty())
      for (const TensorDecl* t : k->inputs())
        if (is_float(t->dtype))
          req.wrt.push_back(t->name);
    if (req.cotangents.empty())
      for (const TensorDecl* t : k->outputs())
        if (is_float(t->dtype))
          req.cotangents.push_back(t->name);
    const graph::VjpDerivation d = graph::derive_vjp(*k, req);
    if (!d.vjp)
      throw UserError(fmt::format("error: kernel {}: cannot derive its vector-Jacobian product: {}",
                                  k->name, d.why_not));
    std::cout << d.vjp->text;
  }
  return 0;
}

CommandAction setup_vjp(CLI::App& cmd) {
  auto o = std::make_shared<VjpOptions>();
  cmd.add_option("file", o->file, "a .ut file, or op:NAME for a library op")->required();
  cmd.add_option("--kernel", o->kernel, "the kernel of the file (default: every kernel)");
  cmd.add_option("--shape", o->shapes, "op:NAME input shapes, NAME=2x3");
  cmd.add_option("--wrt", o->wrt,
                 "inputs to differentiate with respect to (default: every float input)");
  cmd.add_option("--cotangent", o->cotangents,
                 "outputs given a cotangent (default: every float output)");
  add_op_target_options(&cmd, o->op);
  cmd.footer(kExitStatusHelp);
  return [o] { return vjp_command(*o); };
}

const CommandRegistration reg{
    {"vjp", "print the vector-Jacobian-product kernel derived from a kernel's comprehensions", 25,
     setup_vjp}};

} // namespace
} // namespace unitile::cli
