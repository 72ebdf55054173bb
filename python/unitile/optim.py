"""Optimizers and learning-rate schedules for ``tl.TrainStep``.

``tl.optim.SGD``, ``tl.optim.Adam`` and ``tl.optim.AdamW`` take torch.optim's arguments and
compute torch.optim's updates (the library ops sgd, adam and adamw). ``lr`` is a number or
a schedule (``tl.optim.Constant``, ``tl.optim.WarmupCosine``); the rate of each update is
computed on the host and passed to the compiled step as a scalar input, so a schedule
never recompiles anything. The settings are checked at once (``unitile.Error``).

``param_groups`` (torch.optim's param_groups) gives some parameters settings of their
own: a list of dicts, each with ``"params"`` (a list of the TrainStep's parameter keys,
or a function key -> bool) and any of the optimizer's arguments, e.g.
``tl.optim.AdamW(3e-4, weight_decay=0.1, param_groups=[{"params": lambda k: k.endswith(
".b"), "weight_decay": 0.0}])``. The other parameters use the optimizer's own settings. A
group's ``lr`` given as a number while the optimizer's is a schedule scales that
schedule (as a torch LR scheduler scales every group's initial rate by one factor).
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


def _scaled(schedule, lr):
    """`schedule`'s shape at base rate `lr` (a number): min_lr scales with it."""
    if isinstance(lr, (Constant, WarmupCosine)) or isinstance(schedule, Constant) or not isinstance(
            schedule, WarmupCosine):
        return lr
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        return lr  # _schedule's message
    s = schedule._schedule
    factor = float(lr) / s.base_lr if s.base_lr else 0.0
    return WarmupCosine(float(lr), s.warmup_steps, s.total_steps, s.min_lr * factor if s.base_lr else 0.0)


class Optimizer:
    """An optimizer's settings; a TrainStep keeps its state (on the device)."""

    def __init__(self, config, lr, settings=None, param_groups=None):
        self._config = config
        self._lr = lr
        self._groups = []  # (selector, group settings, OptimizerConfig)
        if param_groups is None:
            return
        if isinstance(param_groups, dict) or not isinstance(param_groups, (list, tuple)):
            raise _core.Error("error: param_groups must be a list of dicts, each with 'params' and settings, got "
                              f"{type(param_groups).__name__}")
        for g, group in enumerate(param_groups):
            if not isinstance(group, dict) or "params" not in group:
                raise _core.Error(f"error: param_groups[{g}] must be a dict with 'params' (a list of parameter keys "
                                  "or a function key -> bool) and settings")
            selector = group["params"]
            if isinstance(selector, str) or not (callable(selector) or isinstance(selector, (list, tuple, set))):
                raise _core.Error(f"error: param_groups[{g}]['params'] must be a list of parameter keys or a function "
                                  f"key -> bool, got {selector!r}")
            overrides = {k: v for k, v in group.items() if k != "params"}
            unknown = sorted(set(overrides) - set(settings))
            if unknown:
                raise _core.Error(f"error: param_groups[{g}]: {type(self).__name__} has no setting "
                                  f"{', '.join(unknown)} (its settings: {', '.join(settings)})")
            merged = {**settings, **overrides}
            if "lr" in overrides:
                merged["lr"] = _scaled(lr, overrides["lr"])
            config = type(self)(**merged)._config
            self._groups.append((selector if callable(selector) else list(selector), overrides, config))

    @property
    def lr(self):
        """The learning rate as given: a number or a schedule."""
        return self._lr

    def lr_at(self, step):
        """The rate of update `step` (0 for the first)."""
        return self._config.lr.at(int(step))

    @property
    def state_names(self):
        """The state kept per parameter, e.g. ['m', 'v'] for Adam (for the parameters in no group)."""
        return list(self._config.state_names)

    @property
    def param_groups(self):
        """The groups as given: a list of dicts with 'params' and the settings they change."""
        return [{"params": sel, **overrides} for sel, overrides, _ in self._groups]

    def _resolve_groups(self, keys, names):
        """The groups as _core.ParamGroup over the TrainStep's input `names` (of `keys`)."""
        by_key = dict(zip(keys, names))
        out, taken = [], {}
        for g, (selector, _, config) in enumerate(self._groups):
            if callable(selector):
                chosen = [k for k in keys if selector(k)]
            else:
                missing = [str(k) for k in selector if k not in by_key]
                if missing:
                    raise _core.Error(f"error: param_groups[{g}] names {', '.join(missing)}, which "
                                      f"{'is not a parameter' if len(missing) == 1 else 'are not parameters'} "
                                      f"(the parameters: {', '.join(map(str, keys))})")
                chosen = list(selector)
            for k in chosen:
                if k in taken:
                    raise _core.Error(f"error: parameter '{k}' is in param_groups[{taken[k]}] and param_groups[{g}]")
                taken[k] = g
            out.append(_core.ParamGroup([by_key[k] for k in chosen], config))
        return out

    def __repr__(self):
        return f"tl.optim.{type(self).__name__}: {self._config!r}"


class SGD(Optimizer):
    """torch.optim.SGD: momentum, dampening, L2 weight decay, Nesterov."""

    def __init__(self, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, param_groups=None):
        super().__init__(_core.OptimizerConfig.sgd(_schedule(lr), float(momentum), float(weight_decay),
                                                   bool(nesterov), float(dampening)), lr,
                         dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                              nesterov=nesterov), param_groups)


def _betas(betas):
    try:
        b1, b2 = betas
    except (TypeError, ValueError):
        raise _core.Error(f"error: betas must be a pair (beta1, beta2), got {betas!r}") from None
    return float(b1), float(b2)


class Adam(Optimizer):
    """torch.optim.Adam (weight_decay is an L2 penalty added to the gradient)."""

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, param_groups=None):
        b1, b2 = _betas(betas)
        super().__init__(_core.OptimizerConfig.adam(_schedule(lr), b1, b2, float(eps), float(weight_decay)), lr,
                         dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay), param_groups)


class AdamW(Optimizer):
    """torch.optim.AdamW (decoupled weight decay: p *= 1 - lr * weight_decay first)."""

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, param_groups=None):
        b1, b2 = _betas(betas)
        super().__init__(_core.OptimizerConfig.adamw(_schedule(lr), b1, b2, float(eps), float(weight_decay)), lr,
                         dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay), param_groups)


__all__ = ["Adam", "AdamW", "Constant", "Optimizer", "SGD", "WarmupCosine"]
