"""Optimizers and learning-rate schedules for ``tl.TrainStep``.

``tl.optim.SGD``, ``tl.optim.Adam`` and ``tl.optim.AdamW`` take torch.optim's arguments and
compute torch.optim's updates (the library ops sgd, adam and adamw). ``lr`` is a number or
a schedule (``tl.optim.Constant``, ``tl.optim.WarmupCosine``); the rate of each update is
computed on the host and passed to the compiled step as a scalar input, so a schedule
never recompiles anything. The settings are checked at once (``unitile.Error``).
"""

from . import _core


class Constant:
    """The same learning rate at every update."""

    def __init__(self, lr):
        self._schedule = _core.LrSchedule.constant(float(lr))

    def __call__(self, step):
        """The rate of update `step` (0 for the first)."""
        return self._schedule.at(int(step))

    def __repr__(self):
        return f"tl.optim.Constant(lr={self._schedule.base_lr})"


class WarmupCosine:
    """Linear warm-up, then cosine decay to a floor: update s < warmup_steps uses
    base_lr * (s + 1) / warmup_steps; from there a half cosine falls from base_lr to
    min_lr, reached at update total_steps and kept after it."""

    def __init__(self, base_lr, warmup_steps, total_steps, min_lr=0.0):
        self._schedule = _core.LrSchedule.warmup_cosine(float(base_lr), int(warmup_steps), int(total_steps),
                                                        float(min_lr))

    def __call__(self, step):
        """The rate of update `step` (0 for the first)."""
        return self._schedule.at(int(step))

    def __repr__(self):
        s = self._schedule
        return (f"tl.optim.WarmupCosine(base_lr={s.base_lr}, warmup_steps={s.warmup_steps}, "
                f"total_steps={s.total_steps}, min_lr={s.min_lr})")


def _schedule(lr):
    if isinstance(lr, (Constant, WarmupCosine)):
        return lr._schedule
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        raise _core.Error(f"error: lr must be a number or a schedule (tl.optim.Constant, "
                          f"tl.optim.WarmupCosine), got {type(lr).__name__}")
    return _core.LrSchedule.constant(float(lr))


class Optimizer:
    """An optimizer's settings; a TrainStep keeps its state (on the device)."""

    def __init__(self, config, lr):
        self._config = config
        self._lr = lr

    @property
    def lr(self):
        """The learning rate as given: a number or a schedule."""
        return self._lr

    def lr_at(self, step):
        """The rate of update `step` (0 for the first)."""
        return self._config.lr.at(int(step))

    @property
    def state_names(self):
        """The state kept per parameter, e.g. ['m', 'v'] for Adam."""
        return list(self._config.state_names)

    def __repr__(self):
        return f"tl.optim.{type(self).__name__}: {self._config!r}"


class SGD(Optimizer):
    """torch.optim.SGD: momentum, dampening, L2 weight decay, Nesterov."""

    def __init__(self, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(_core.OptimizerConfig.sgd(_schedule(lr), float(momentum), float(weight_decay),
                                                   bool(nesterov), float(dampening)), lr)


def _betas(betas):
    try:
        b1, b2 = betas
    except (TypeError, ValueError):
        raise _core.Error(f"error: betas must be a pair (beta1, beta2), got {betas!r}") from None
    return float(b1), float(b2)


class Adam(Optimizer):
    """torch.optim.Adam (weight_decay is an L2 penalty added to the gradient)."""

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        b1, b2 = _betas(betas)
        super().__init__(_core.OptimizerConfig.adam(_schedule(lr), b1, b2, float(eps), float(weight_decay)), lr)


class AdamW(Optimizer):
    """torch.optim.AdamW (decoupled weight decay: p *= 1 - lr * weight_decay first)."""

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        b1, b2 = _betas(betas)
        super().__init__(_core.OptimizerConfig.adamw(_schedule(lr), b1, b2, float(eps), float(weight_decay)), lr)


__all__ = ["Adam", "AdamW", "Constant", "Optimizer", "SGD", "WarmupCosine"]
