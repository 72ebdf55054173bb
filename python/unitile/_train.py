"""tl.TrainStep: one training step (forward, backward, optional clipping, optimizer
update) compiled as ONE graph and run on device-resident parameters.

The loss function is traced like ``@tl.kernel``: ``loss_fn(params, *batch)`` runs once per
batch dtypes and shapes on symbolic tensors (``params`` is a dict of them, keyed like the
dict given) and returns a scalar loss. The engine appends the gradients, the clipping and
the updates to that graph and compiles it once; ``step`` then only runs it."""

import inspect
import keyword
import os
import re

import numpy as np

from . import _core, _devices
from ._kernels import to_device_tensor
from ._tensor import Tensor, dtype_of_name, name_of_dtype
from ._trace import Sym, _array_type, _is_array, _RESERVED
from .optim import Optimizer


def _input_names(keys):
    """Distinct plain identifiers for the parameter keys ('blocks.0.w' -> 'blocks_0_w')."""
    names, used = [], set()
    for key in keys:
        base = re.sub(r"\W", "_", str(key))
        if not base or not (base[0].isalpha() or base[0] == "_") or base in _RESERVED or keyword.iskeyword(base):
            base = "p_" + base
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        names.append(name)
    return names


# The keys of a saved file's optimizer state and update count (see TrainStep.save).
_STATE = "__optimizer__"
_STEP = "__train_step__"


class TrainStep:
    """Trains `params` (a dict of float NumPy arrays, the initial values) to lower
    ``loss_fn(params, *batch)`` with `optimizer` (tl.optim.SGD / Adam / AdamW).

    ``step(*batch)`` runs one update and returns the loss (a float, computed before the
    update). With `clip_norm` the gradients are first scaled so their joint L2 norm is at
    most clip_norm (torch.nn.utils.clip_grad_norm_). With ``keep_grads=True`` every step
    also returns its gradients (before clipping), readable as ``.grads``. Parameters and
    optimizer state stay on `device` between steps; ``.params`` copies them out."""

    def __init__(self, loss_fn, params, optimizer, clip_norm=None, device=None, keep_grads=False):
        if not callable(loss_fn):
            raise TypeError(f"TrainStep: loss_fn must be callable, got {type(loss_fn).__name__}")
        if not isinstance(params, dict) or not params:
            raise _core.Error("error: TrainStep: params must be a non-empty dict of name -> array")
        if not isinstance(optimizer, Optimizer):
            raise TypeError("TrainStep: optimizer must be tl.optim.SGD, tl.optim.Adam or tl.optim.AdamW, "
                            f"got {type(optimizer).__name__}")
        if clip_norm is not None and (isinstance(clip_norm, bool) or not clip_norm > 0):
            raise _core.Error(f"error: TrainStep: clip_norm must be a number above 0, got {clip_norm!r}")
        self._fn = loss_fn
        self._optimizer = optimizer
        self._clip = None if clip_norm is None else float(clip_norm)
        self._keep = bool(keep_grads)
        self._device = _devices.resolve(device)
        self._keys = list(params)
        self._names = _input_names(self._keys)
        tensors = []
        for key, value in params.items():
            if isinstance(value, Tensor):
                t = value._t if value._t.device.name == self._device.name else value._t.to(self._device)
            else:
                a = np.array(value)  # a copy: the caller's array is not trained in place
                if a.dtype.kind != "f":
                    raise _core.Error(f"error: TrainStep: parameter '{key}' is {a.dtype}: parameters must be floats")
                t = _core.DeviceTensor.from_array(self._device, np.ascontiguousarray(a), False)
            tensors.append(t)
        self._groups = optimizer._resolve_groups(self._keys, self._names)
        # The optimizer state each parameter keeps (its group's), e.g. ['m', 'v'].
        slots = {name: list(g.config.state_names) for g in self._groups for name in g.params}
        self._slots = {key: slots.get(name, optimizer.state_names) for key, name in zip(self._keys, self._names)}
        self._state = _core.make_train_state(self._device, self._names, tensors, optimizer._config, self._groups)
        self._programs = {}
        self._last = None
        code = getattr(loss_fn, "__code__", None)
        self._where = f"{code.co_filename}:{code.co_firstlineno}" if code else ""

    # --- tracing ------------------------------------------------------------------------

    def _program(self, batch):
        key = tuple((t.dtype, tuple(t.shape)) for t in batch)
        program = self._programs.get(key)
        if program is None:
            program = self._trace(batch)
            self._programs[key] = program
        return program

    def _trace(self, batch):
        graph = _core.Graph()
        params = {}
        for key, name in zip(self._keys, self._names):
            t = self._state.param(name)
            params[key] = Sym(graph, graph.add_input(name, t.dtype, list(t.shape)))
        taken = set(self._names)
        syms = []
        for i, t in enumerate(batch):
            name = f"batch{i}"
            while name in taken:
                name = "_" + name
            syms.append(Sym(graph, graph.add_input(name, t.dtype, list(t.shape))))
        loss = self._fn(params, *syms)
        if not isinstance(loss, Sym) or loss._g is not graph:
            raise _core.Error(f"{self._where}: error: the loss function must return a tensor computed from its "
                              f"inputs (a scalar loss), got {type(loss).__name__}")
        graph.set_outputs([loss._v])
        return _core.TrainStep(self._device, graph, loss._v, self._names, self._optimizer._config, self._clip,
                               self._keep, self._where, self._groups)

    # --- training -----------------------------------------------------------------------

    def step(self, *batch):
        """One update on this batch (arrays or tl.Tensors); returns the loss before it."""
        tensors = []
        for i, value in enumerate(batch):
            if not _is_array(value):
                raise _core.Error(f"error: TrainStep.step: batch item {i} is a {type(value).__name__}, not an "
                                  "array (give constants to the loss function another way, e.g. a closure)")
            tensors.append(to_device_tensor(value, self._device, f"batch{i}"))
        program = self._program(tensors)
        loss = program.run(self._state, tensors)
        self._last = program
        return loss

    @property
    def step_count(self):
        """The number of updates done."""
        return self._state.step

    @property
    def lr(self):
        """The learning rate of the last update (of the first one before any)."""
        return self._optimizer.lr_at(max(self._state.step - 1, 0))

    @property
    def optimizer(self):
        return self._optimizer

    @property
    def params(self):
        """The current parameters, copied to NumPy arrays (a dict keyed like the one given)."""
        return {key: self._state.param(name).numpy() for key, name in zip(self._keys, self._names)}

    @property
    def grads(self):
        """The last step's gradients (before clipping) as NumPy arrays (keep_grads=True)."""
        if not self._keep:
            raise _core.Error("error: TrainStep keeps no gradients: make it with keep_grads=True")
        if self._last is None:
            raise _core.Error("error: TrainStep has no gradients yet: no step has run")
        return {key: g.numpy() for key, g in zip(self._keys, self._last.gradients())}

    @property
    def grad_norm(self):
        """The last step's global gradient norm before clipping (with clip_norm), else None."""
        return None if self._last is None else self._last.grad_norm

    def set_params(self, values):
        """Replace some or all parameters (a dict keyed like the one given; same dtypes and
        shapes). The optimizer state and the update count are kept."""
        index = dict(zip(self._keys, self._names))
        for key in values:
            if key not in index:
                raise _core.Error(f"error: no parameter named '{key}' (the parameters: {', '.join(map(str, self._keys))})")
        for key, value in values.items():
            a = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
            self._state.set_param(index[key], _core.DeviceTensor.from_array(self._device, np.ascontiguousarray(a), False))

    def save(self, path, optimizer_state=True):
        """The parameters to a NumPy .npz file (keys as given), and with `optimizer_state`
        everything else training needs to go on exactly where it is: the optimizer's
        state per parameter (``__optimizer__/<slot>/<key>``: Adam's m and v, SGD's
        momentum buffer) and the number of updates done (``__train_step__``, which is
        also the position in the learning-rate schedule and Adam's bias correction)."""
        arrays = {str(k): v for k, v in self.params.items()}
        if optimizer_state:
            for key, name in zip(self._keys, self._names):
                for slot, t in zip(self._slots[key], self._state.optimizer_state(name)):
                    arrays[f"{_STATE}/{slot}/{key}"] = t.numpy()
            arrays[_STEP] = np.array(self._state.step, dtype=np.int64)
            arrays[_STATE] = np.array(repr(self._optimizer))
        np.savez(os.fspath(path), **arrays)

    def load(self, path, optimizer_state=True):
        """Parameters from a .npz file written by save (or np.savez with the same keys):
        every parameter must be there, with its dtype and shape. A file saved with the
        optimizer's state also restores that state and the update count (with
        `optimizer_state`), so training goes on as if it had never stopped; a file of
        parameters only leaves the optimizer state and the update count as they are.
        Nothing changes when anything in the file does not fit."""
        where = os.fspath(path)
        with np.load(where) as f:
            stored = {k: f[k] for k in f.files}
        has_state = _STEP in stored
        params = {k: v for k, v in stored.items() if not k.startswith(_STATE) and k != _STEP}
        missing = [str(k) for k in self._keys if str(k) not in params]
        extra = sorted(set(params) - {str(k) for k in self._keys})
        if missing or extra:
            raise _core.Error(f"error: {where}: " + "; ".join(
                ([f"missing parameters {', '.join(missing)}"] if missing else []) +
                ([f"unknown parameters {', '.join(extra)}"] if extra else [])))
        for key, name in zip(self._keys, self._names):
            a, t = params[str(key)], self._state.param(name)
            if name_of_dtype(a.dtype) != t.dtype or tuple(a.shape) != tuple(t.shape):
                raise _core.Error(f"error: {where}: parameter '{key}' is {name_of_dtype(a.dtype)}{list(a.shape)} in "
                                  f"the file but {t.dtype}{list(t.shape)} here")
        state = {}
        if has_state and optimizer_state:
            saved_by = str(stored.get(_STATE, "an unknown optimizer"))
            want = {f"{_STATE}/{slot}/{key}" for key in self._keys for slot in self._slots[key]}
            have = {k for k in stored if k.startswith(_STATE + "/")}
            if want != have:
                lost = sorted(want - have)
                unknown = sorted(have - want)
                raise _core.Error(
                    f"error: {where}: the optimizer state saved by {saved_by} does not fit {self._optimizer!r}" +
                    (f": missing {', '.join(lost[:4])}{' ...' if len(lost) > 4 else ''}" if lost else "") +
                    (f"; unexpected {', '.join(unknown[:4])}{' ...' if len(unknown) > 4 else ''}" if unknown else "") +
                    " (load(path, optimizer_state=False) loads the parameters alone)")
            for key, name in zip(self._keys, self._names):
                current = self._state.optimizer_state(name)
                values = []
                for slot, t in zip(self._slots[key], current):
                    a = stored[f"{_STATE}/{slot}/{key}"]
                    if name_of_dtype(a.dtype) != t.dtype or tuple(a.shape) != tuple(t.shape):
                        raise _core.Error(f"error: {where}: optimizer state {slot} of '{key}' is "
                                          f"{name_of_dtype(a.dtype)}{list(a.shape)} but the parameter's is "
                                          f"{t.dtype}{list(t.shape)}")
                    values.append(a)
                state[name] = values
            step = stored[_STEP]
            if step.shape != () or step.dtype.kind not in "iu" or int(step) < 0:
                raise _core.Error(f"error: {where}: {_STEP} must be a count of updates (an integer >= 0), got {step!r}")
        self.set_params({k: params[str(k)] for k in self._keys})
        if state:
            for name, values in state.items():
                self._state.set_optimizer_state(name, [
                    _core.DeviceTensor.from_array(self._device, np.ascontiguousarray(a), False) for a in values])
            self._state.step = int(stored[_STEP])

    def describe(self):
        """How the last step's graph runs (the executor's kernels)."""
        if self._last is None:
            raise _core.Error("error: no step has run yet")
        return self._last.describe()

    def __repr__(self):
        return (f"<tl.TrainStep of {len(self._keys)} parameters, {self._optimizer!r}, "
                f"{self.step_count} updates done>")
