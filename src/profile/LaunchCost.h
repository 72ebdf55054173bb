// The static cost of one launch: arithmetic operations and bytes moved, counted from
// the Loop IR the device was given, without running it.
//
// A profile reports achieved GFLOP/s and GB/s and places each kernel on a roofline, so
// every launch needs its work and traffic. Running the sim chip model for that would
// cost as much as interpreting the kernel (seconds for a large GEMM); the Loop IR has
// concrete shapes, so the counts follow from its loop extents instead:
//  - operations: per executed store, one per arithmetic node, comparison and select of
//    its value (math calls count one, fma two; casts and index arithmetic nothing), so a
//    GEMM is 2*M*N*K. A loop whose body's control flow does not depend on its variable
//    is counted once and multiplied by its extent; other loops (tails of split loops)
//    are walked value by value, with results memoised. A branch on data, or a walk over
//    kMaxCountSteps, leaves the count unknown rather than guessed.
//  - bytes: each program buffer (global memory) the launch reads, plus each it writes,
//    counted once at its full size: the compulsory traffic, as STREAM and `unitile
//    bench` count it. Allocations (registers, shared, local scratch) are not traffic.
#pragma once

#include "ir/Loop.h"
#include "ir/Type.h"

#include <cstdint>
#include <optional>
#include <string>

namespace unitile::profile {

inline constexpr int64_t kMaxCountSteps = 4'000'000;

struct LaunchCost {
  double bytes = 0;
  std::optional<double> operations;
  DType dtype = DType::F32; // the dtype of most operations (the roofline's peak)
  std::string why_unknown;  // when operations is nullopt
};

LaunchCost static_launch_cost(const LoopProgram& program, const LoopFunc& func);

} // namespace unitile::profile
