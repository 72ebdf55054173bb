// Graph targets' inputs from --input files or seeded random values (see GraphInputs.h).
#include "unitile/GraphInputs.h"

#include "ir/Diagnostic.h"
#include "runtime/Npy.h"
#include "unitile/Command.h"

#include <fmt/core.h>
#include <xxhash.h>

#include <map>

namespace unitile::cli {

std::vector<Tensor> graph_host_inputs(const graph::NamedGraph& parsed, const std::vector<std::string>& input_flags,
                                      uint64_t seed) {
  const graph::Graph& g = parsed.graph;
  std::map<std::string, std::string> files;
  for (const auto& [name, path] : name_values(input_flags, "--input", false)) {
    if (files.count(name)) throw UserError(fmt::format("error: --input {} is given twice", name));
    files[name] = path;
  }
  std::vector<Tensor> out;
  std::vector<std::string> names;
  for (graph::ValueId v : g.inputs()) {
    const graph::Value& val = g.value(v);
    names.push_back(val.input_name);
    if (auto it = files.find(val.input_name); it != files.end()) {
      Tensor t = read_npy(it->second, val.type.dtype);
      if (t.dtype != val.type.dtype || t.shape != val.type.shape)
        throw UserError(fmt::format("error: --input {}={}: the graph input is {} but the file holds {}{}",
                                    val.input_name, it->second, graph::type_text(val.type), dtype_name(t.dtype),
                                    shape_string(t.shape)));
      out.push_back(std::move(t));
      files.erase(it);
    } else {
      const uint64_t stream = XXH3_64bits(val.input_name.data(), val.input_name.size());
      out.push_back(random_tensor(val.type.dtype, val.type.shape, seed, stream));
    }
  }
  if (!files.empty())
    throw UserError(fmt::format("error: --input {}: graph {} has no input of that name (inputs: {})",
                                files.begin()->first, parsed.name, join(names)));
  return out;
}

} // namespace unitile::cli
