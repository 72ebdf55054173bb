// The text form of a graph (.utg files): printing a Graph and parsing one back.
//
//   graph mlp(x: f32[4, 8], w: f32[8, 16]) {
//     %0 = matmul(x, w) : f32[4, 16]
//     %1 = relu(%0) : f32[4, 16]
//     %2 = reduce_sum(%1) {axes = [1], keepdims = false} : f32[4]
//     %3, %4 = split(%1) {axis = 1, num_outputs = 2} : f32[4, 8], f32[4, 8]
//     return %2, %3
//   }
//
// Graph inputs are named by identifiers, node results by `%NAME`. Inputs bind to the
// op's ports in order (a variadic port takes the rest); `_` leaves out an optional port
// so that a later one can be given (`layernorm(x, _, b)`). The `: TYPE, ...` after a node
// is optional when parsing; when present it must equal the type the op instantiation
// gives. `//` starts a comment; the fusion and memory-plan printers use comment lines.
#pragma once

#include "graph/Graph.h"
#include "ir/Diagnostic.h"

#include <functional>
#include <string>
#include <vector>

namespace unitile::graph {

/// A graph with the name of its text form.
struct NamedGraph {
  std::string name;
  Graph graph;
};

/// Parse the one graph of `src`. Every error is a UserError at FILE:LINE:COL saying why
/// (unknown op, wrong arity, unknown value, a type the op does not give, and the op's own
/// shape or attribute errors at the node that called it).
NamedGraph parse_graph(const SourceFile& src);

/// The names the printer gives values: inputs by their own names, node results `%0`,
/// `%1`, ... numbered in the order the nodes are printed (`order`; empty = stored order).
std::vector<std::string> value_names(const Graph& g, const std::vector<size_t>& order = {});

struct GraphPrintOptions {
  bool types = true;         // ` : f32[4, 16]` after each node
  std::vector<size_t> order; // the nodes to print, in this order (empty: all, as stored)
  /// Comment lines printed before node `n` (without the `// `), e.g. kernel headers.
  std::function<std::vector<std::string>(size_t n)> comments_before;
  std::vector<std::string> trailer; // comment lines after `return`
};

/// `g` as text; parse_graph reads it back to the same graph.
std::string print_graph(const Graph& g, const std::string& name, const GraphPrintOptions& opts = {});

/// "f32[4, 16]"
std::string type_text(const ops::TensorSpec& t);
/// An attribute as the text form writes it (`[1, 2]`, `1.5`, `"tanh"`, `true`).
std::string attr_text(const ops::AttrValue& v, bool as_bool = false);

} // namespace unitile::graph
