"""Gradients: ``tl.grad(f)`` and ``tl.value_and_grad(f)`` trace `f` like ``@tl.kernel``
into a graph of op calls, append the reverse-mode nodes computing d(loss)/d(argument)
(the engine's append_gradients: derived from the ops' comprehensions where it can, the
registered gradient ops otherwise), and run the loss, the auxiliary outputs and the
gradients on the graph executor (as one kernel where the engine has none). Called on traced tensors (inside another traced function), they
add the gradient nodes to that trace instead."""

import functools
import inspect

from . import _core
from ._kernels import _pick_device, to_device_tensor
from ._tensor import Tensor
from ._trace import KernelFunction, Sym, _fail

# The graph executor (fusion into several kernels, memory planning) where the engine has
# it; otherwise the traced graph runs as one kernel, as @tl.kernel's do.
_EXECUTOR = hasattr(_core, "GraphExecutor")


def _argnums(argnums):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums or not all(isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    if len(set(nums)) != len(nums):
        raise TypeError(f"argnums lists an argument twice: {argnums!r}")
    return single, nums


class _GradFunction:
    """`f`'s loss, auxiliary outputs and gradients, traced once per input dtypes and
    shapes into one kernel (see value_and_grad)."""

    def __init__(self, f, argnums, has_aux, with_value):
        functools.update_wrapper(self, f)
        self._f = f
        self._single, self._argnums = _argnums(argnums)
        self._has_aux = has_aux
        self._with_value = with_value
        name = getattr(f, "__name__", "f")
        self._kernel = KernelFunction(self._traced, name=f"{name}_grad")
        # The traced function takes f's arguments (KernelFunction binds by signature).
        self._kernel._signature = inspect.signature(f)
        self._layouts = {}  # per traced key: how many aux outputs, and whether a tuple
        self._graphs = {}  # per traced key: the graph (loss, aux and gradients as outputs)
        self._executors = {}  # per (traced key, device)
        self._last_layout = self._last_graph = None

    def _traced(self, *args, **kwargs):
        for i in self._argnums:
            if i >= len(args):
                _fail(f"argnums {i}: {self._f.__name__} was given {len(args)} positional arguments")
            if not isinstance(args[i], Sym):
                _fail(f"argument {i} is not an array, so it has no gradient (argnums={self._argnums})")
        result = self._f(*args, **kwargs)
        if self._has_aux:
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                _fail("with has_aux=True the function must return a pair (loss, aux)")
            loss, aux = result
        else:
            loss, aux = result, None
        if not isinstance(loss, Sym):
            _fail(f"the loss is a {type(loss).__name__}, not a tensor computed from the arguments")
        aux_items = [] if aux is None else (list(aux) if isinstance(aux, (tuple, list)) else [aux])
        for a in aux_items:
            if not isinstance(a, Sym) or a._g is not loss._g:
                _fail("the auxiliary outputs must be tensors computed from the arguments")
        graph = loss._g
        grads = _core.append_gradients(graph, loss._v, [args[i]._v for i in self._argnums])
        self._last_layout = None if aux is None else (len(aux_items), isinstance(aux, (tuple, list)))
        self._last_graph = graph
        return (loss, *aux_items, *[Sym(graph, v) for v in grads])

    def _shape_result(self, outputs, layout):
        outputs = list(outputs)
        n = len(self._argnums)
        grads = outputs[len(outputs) - n:]
        grads = grads[0] if self._single else tuple(grads)
        loss = outputs[0]
        if self._has_aux:
            count, is_seq = layout
            aux = tuple(outputs[1:1 + count]) if is_seq else outputs[1]
            if self._with_value:
                return (loss, aux), grads
            return grads, aux
        return (loss, grads) if self._with_value else grads

    def __call__(self, *args, device=None, **kwargs):
        if any(isinstance(a, Sym) for a in args) or any(isinstance(v, Sym) for v in kwargs.values()):
            outputs = self._traced(*args, **kwargs)  # inside another trace: add to its graph
            return self._shape_result(outputs, self._last_layout)
        key = self._kernel._bind(args, kwargs)[2]
        self._last_layout = self._last_graph = None
        kernel, _, values = self._kernel._specialize(args, kwargs)
        if key not in self._layouts:
            self._layouts[key] = self._last_layout
            self._graphs[key] = self._last_graph
        if _EXECUTOR:
            result = self._run_graph(key, values, device)
        else:
            result = kernel(*values, device=device)
        return self._shape_result(result if isinstance(result, tuple) else (result,), self._layouts[key])

    def _run_graph(self, key, values, device):
        """The traced graph on the graph executor (fused kernels, planned buffers), one
        executor per argument types and device."""
        dev = _pick_device(device, values)
        exe = self._executors.get((key, dev.name))
        if exe is None:
            exe = _core.GraphExecutor(dev, self._graphs[key], name=self._kernel._name)
            self._executors[(key, dev.name)] = exe
        as_tensors = any(isinstance(v, Tensor) for v in values)
        inputs = [to_device_tensor(v, dev, f"argument {i}") for i, v in enumerate(values)]
        return tuple(Tensor(o) if as_tensors else o.numpy() for o in exe.run(inputs))

    def trace(self, *args, **kwargs):
        """The tl.Kernel computing the loss, aux outputs and gradients for these arguments."""
        return self._kernel.trace(*args, **kwargs)

    def __repr__(self):
        return f"<unitile gradient of {getattr(self._f, '__name__', 'a function')}>"


def value_and_grad(f, argnums=0, has_aux=False):
    """A function returning ``(f(*args), gradients)``: the loss (a single float value; with
    ``has_aux=True`` f returns ``(loss, aux)`` and the value is that pair) and d(loss)/d(the
    arguments in `argnums`), a tuple when `argnums` is a tuple. Traced per input dtypes and
    shapes into one kernel with the gradient nodes; arrays in, arrays out."""
    return _GradFunction(f, argnums, has_aux, with_value=True)


def grad(f, argnums=0, has_aux=False):
    """A function returning d f(*args) / d(the arguments in `argnums`) (a tuple when
    `argnums` is a tuple; with ``has_aux=True``, ``(gradients, aux)``). See value_and_grad."""
    return _GradFunction(f, argnums, has_aux, with_value=False)
