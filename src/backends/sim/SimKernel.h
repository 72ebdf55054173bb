// A Loop IR func prepared for fast interpretation by the sim device.
//
// Preparing resolves every variable to a numbered slot and every buffer to a slot
// with its shape baked in, and turns the statement and expression trees into a tree of
// small typed evaluation nodes (int64 or double, per the IR type), so running does no
// name lookups and no type dispatch per element. The semantics are SimNumerics.h's.
#pragma once

#include "backends/sim/SimTrace.h"
#include "ir/Loop.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace unitile::sim {

/// The kernel failed while running (an out-of-range access, an integer division by
/// zero): UT_ERROR_LAUNCH.
class LaunchError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The caller passed arguments that do not fit the kernel: UT_ERROR_INVALID.
class ArgumentError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The program uses something the sim cannot execute faithfully (a barrier that is not
/// at the top level of a thread loop's body, more than 8 dimensions).
class UnsupportedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct BufferArg {
  void* data = nullptr;
  size_t bytes = 0;
};

/// A runtime param as it travels through the ABI: widened to int64 or double.
struct ParamArg {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
};

class SimKernel {
public:
  /// Prepare func `entry` of a verified program. Throws UnsupportedError, or
  /// ArgumentError when there is no such func.
  SimKernel(LoopProgram program, const std::string& entry);
  ~SimKernel();
  SimKernel(const SimKernel&) = delete;
  SimKernel& operator=(const SimKernel&) = delete;

  /// Run the func once: `buffers` are the program's buffers in order, `params` its
  /// runtime params in order. Throws ArgumentError or LaunchError. Safe to call from
  /// several threads at once (all state of a run is local to it).
  /// With a `trace`, every access, every statement's arithmetic and the unit of every
  /// parallel iteration are reported to it (SimTrace.h); the results are the same.
  void run(const std::vector<BufferArg>& buffers, const std::vector<ParamArg>& params,
           Tracer* trace = nullptr) const;

  /// The storage slots accesses are reported against: program buffers, then allocations.
  const std::vector<SlotInfo>& slots() const;

  const LoopProgram& program() const { return program_; }
  const LoopFunc& func() const { return *func_; }
  const LaunchDims& launch_dims() const { return dims_; }

  struct Compiled; // the evaluation tree and slot layout (SimKernel.cpp)

private:
  LoopProgram program_;
  const LoopFunc* func_ = nullptr;
  LaunchDims dims_;
  std::unique_ptr<Compiled> compiled_;
};

} // namespace unitile::sim
