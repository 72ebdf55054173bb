// Lowering Kernel IR to Loop IR with the default schedule, after binding shapes.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"

#include <map>
#include <string>
#include <vector>

namespace unitile {

/// Resolve every shape symbol of `k`: from `given` (e.g. `--shape M=64`), then from the
/// concrete shapes of inputs (a symbol standing alone as a dimension is bound by it),
/// then check every declared dimension of those inputs. Integer specialisation params
/// must be in `given`. A conflict or an unbound symbol is a UserError that names the
/// tensor, dimension and both values.
ShapeBindings bind_shapes(const Kernel& k,
                          const std::map<std::string, std::vector<int64_t>>& input_shapes,
                          const ShapeBindings& given);

/// Concrete shape of tensor `name` under `b`.
std::vector<int64_t> concrete_shape(const Kernel& k, const std::string& name,
                                    const ShapeBindings& b);

/// Lower a verified kernel under concrete bindings to Loop IR with the plain default
/// schedule: one loop nest per comprehension, loops ordered so the innermost access is
/// unit-stride, the outermost spatial loop on the grid, reductions accumulated in the
/// compute type. Unguarded accesses that can leave their tensor for these shapes are a
/// UserError naming the access and the range. `hcd` may be used for vector width.
struct LowerOptions {
  /// Lower an in-place reduction (`C[i,j] += ...` accumulating in C) as two launches:
  /// `<kernel>_<n>_init` stores the identity, `<kernel>_<n>` is the update as one perfect
  /// nest with no grid loop, ready for schedule primitives.
  bool separate_init = false;
};
LoopProgram lower_to_loops(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& hcd,
                           const LowerOptions& options = {});

} // namespace unitile
