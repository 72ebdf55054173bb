// Learning-rate schedules: constant, and linear warm-up followed by cosine decay.
#include "train/LrSchedule.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <cmath>
#include <numbers>

namespace unitile::train {

LrSchedule LrSchedule::constant(double lr) {
  LrSchedule s;
  s.base_lr = lr;
  s.check();
  return s;
}

LrSchedule LrSchedule::warmup_cosine(double base_lr, int64_t warmup_steps, int64_t total_steps,
                                     double min_lr) {
  LrSchedule s;
  s.kind = Kind::WarmupCosine;
  s.base_lr = base_lr;
  s.warmup_steps = warmup_steps;
  s.total_steps = total_steps;
  s.min_lr = min_lr;
  s.check();
  return s;
}

void LrSchedule::check() const {
  auto fail = [&](const std::string& why) {
    throw UserError(fmt::format("error: learning-rate schedule {}: {}", describe(), why));
  };
  if (!(base_lr >= 0) || !std::isfinite(base_lr))
    fail("the learning rate must be a finite number >= 0");
  if (kind == Kind::Constant)
    return;
  if (warmup_steps < 0)
    fail("warmup_steps must not be negative");
  if (total_steps < warmup_steps)
    fail("total_steps must be at least warmup_steps");
  if (!(min_lr >= 0) || min_lr > base_lr)
    fail("min_lr must be in [0, base_lr]");
}

double LrSchedule::at(int64_t step) const {
  if (step < 0)
    throw UserError(fmt::format("error: learning rate asked for update {}: updates count from 0", step));
  if (kind == Kind::Constant)
    return base_lr;
  if (step < warmup_steps)
    return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (step >= total_steps)
    return min_lr;
  const double progress =
      static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  return min_lr + (base_lr - min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
}

std::string LrSchedule::describe() const {
  if (kind == Kind::Constant)
    return fmt::format("constant(lr={})", base_lr);
  return fmt::format("warmup_cosine(base_lr={}, warmup_steps={}, total_steps={}, min_lr={})", base_lr,
                     warmup_steps, total_steps, min_lr);
}

} // namespace unitile::train
