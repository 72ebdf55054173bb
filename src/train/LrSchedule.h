// Learning-rate schedules: the rate of every update, computed on the host and passed to
// the optimizer ops' scalar input Lr, so a changing rate never recompiles the step.
#pragma once

#include <cstdint>
#include <string>

namespace unitile::train {

struct LrSchedule {
  enum class Kind { Constant, WarmupCosine };
  Kind kind = Kind::Constant;
  double base_lr = 1e-3;
  int64_t warmup_steps = 0; // WarmupCosine: updates 0..warmup_steps-1 ramp up linearly
  int64_t total_steps = 0;  // WarmupCosine: the cosine reaches min_lr at this update
  double min_lr = 0;        // WarmupCosine: the floor

  /// `lr` at every update.
  static LrSchedule constant(double lr);
  /// base_lr * (s + 1) / warmup_steps for update s < warmup_steps; then a half cosine
  /// from base_lr down to min_lr at update total_steps; min_lr after that.
  static LrSchedule warmup_cosine(double base_lr, int64_t warmup_steps, int64_t total_steps,
                                  double min_lr = 0);

  /// The rate of update `step` (0 for the first update). UserError for a bad schedule.
  double at(int64_t step) const;
  /// A UserError naming the bad number when the schedule makes no sense.
  void check() const;
  /// "warmup_cosine(base_lr=0.001, warmup_steps=10, total_steps=100, min_lr=0)".
  std::string describe() const;
};

} // namespace unitile::train
