"""Gradients: ``tl.grad(f)`` and ``tl.value_and_grad(f)`` trace `f` like ``@tl.kernel``
into a graph of op calls, append the reverse-mode nodes computing d(loss)/d(argument)
(the engine's append_gradients: derived from the ops' comprehensions where it can, the
registered gradient ops otherwise), and run the loss, the auxiliary outputs and the
gradients on the graph executor (as one kernel where the engine has none). Called on traced tensors (inside another traced function), they
add the gradient nodes to that trace instead."""

import functools
import inspect
import re

from . import _core
from ._kernels import _pick_device, to_device_tensor
from ._tensor import Tensor
from ._trace import KernelFunction, Sym, _fail, _is_array

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


# Arguments that are structures (pytrees): dicts, lists and tuples (namedtuples too),
# nested, whose leaves are arrays or constants. A structure is described by a hashable
# tree of ("dict", ((key, child), ...)), ("list"|"tuple", (child, ...)), ("namedtuple",
# type, (child, ...)), ("leaf", path) for an array and ("const", value) for anything else.


def _is_leaf(v):
    return isinstance(v, Sym) or _is_array(v)


def _holds_arrays(v):
    if isinstance(v, dict):
        return any(_holds_arrays(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return any(_holds_arrays(x) for x in v)
    return _is_leaf(v)


def _flatten(v, path, leaves):
    """v's structure; its array leaves (and their paths, e.g. "p['l1']['w']") appended to `leaves`."""
    if _is_leaf(v):
        leaves.append((path, v))
        return ("leaf", path)
    if isinstance(v, dict):
        return ("dict", tuple((k, _flatten(x, f"{path}[{k!r}]", leaves)) for k, x in v.items()))
    if isinstance(v, tuple) and hasattr(type(v), "_fields"):
        return ("namedtuple", type(v), tuple(_flatten(x, f"{path}.{f}", leaves) for f, x in zip(v._fields, v)))
    if isinstance(v, (list, tuple)):
        return ("list" if isinstance(v, list) else "tuple",
                tuple(_flatten(x, f"{path}[{i}]", leaves) for i, x in enumerate(v)))
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"{path} is neither an array nor a hashable constant ({type(v).__name__})") from None
    return ("const", v)


def _unflatten(structure, leaves):
    """The structure rebuilt with the next items of the iterator `leaves` as its arrays."""
    kind = structure[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "const":
        return structure[1]
    if kind == "dict":
        return {k: _unflatten(c, leaves) for k, c in structure[1]}
    if kind == "namedtuple":
        return structure[1](*(_unflatten(c, leaves) for c in structure[2]))
    items = [_unflatten(c, leaves) for c in structure[1]]
    return items if kind == "list" else tuple(items)


def _constants(structure):
    """The constants' values in a structure."""
    kind = structure[0]
    if kind == "const":
        return [structure[1]]
    if kind == "leaf":
        return []
    children = structure[1] if kind in ("list", "tuple") else (structure[2] if kind == "namedtuple" else
                                                                [c for _, c in structure[1]])
    return [x for c in children for x in _constants(c)]


class _TreeGradFunction:
    """The gradient of `f` whose positional arguments may be structures holding arrays:
    `f` is traced as a function of the leaves (one _GradFunction per structure), and the
    gradient of each argument in argnums comes back in that argument's structure."""

    def __init__(self, f, argnums, has_aux, with_value):
        functools.update_wrapper(self, f)
        self._f = f
        self._single, self._argnums = _argnums(argnums)
        self._has_aux = has_aux
        self._with_value = with_value
        self._plain = _GradFunction(f, argnums, has_aux, with_value)  # no structure among the arguments
        self._flat = {}  # (structures, keyword names) -> (_GradFunction of the leaves, leaves per argnum, structures)

    def _flat_function(self, args, kwargs):
        leaves, structures = [], []
        try:
            names = list(inspect.signature(self._f).bind_partial(*args).arguments)
        except TypeError:
            names = []
        for i, a in enumerate(args):
            structures.append(_flatten(a, names[i] if i < len(names) else f"argument {i}", leaves))
        for i in self._argnums:
            if i >= len(args):
                raise TypeError(f"argnums {i}: {getattr(self._f, '__name__', 'f')} was given {len(args)} positional "
                                "arguments")
            consts = _constants(structures[i])
            if consts:
                raise _core.Error(f"error: argument {i} is selected by argnums, so all of its leaves need "
                                  f"gradients, but it holds {type(consts[0]).__name__} {consts[0]!r}, which is not "
                                  "an array")
        key = (tuple(structures), tuple(kwargs))
        entry = self._flat.get(key)
        if entry is None:
            entry = self._make(structures, [p for p, _ in leaves], kwargs)
            self._flat[key] = entry
        return entry, [v for _, v in leaves]

    def _make(self, structures, paths, kwargs):
        f = self._f
        used, params = set(kwargs), []
        for path in paths:
            base = re.sub(r"\W+", "_", path).strip("_") or "x"
            if not base[0].isalpha():
                base = "x" + base
            name, k = base, 1
            while name in used:
                name, k = f"{base}_{k}", k + 1
            used.add(name)
            params.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD))
        params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY) for k in kwargs]

        def leaves_function(*xs, **kw):
            it = iter(xs)
            return f(*(_unflatten(s, it) for s in structures), **kw)

        leaves_function.__name__ = getattr(f, "__name__", "f")
        leaves_function.__qualname__ = getattr(f, "__qualname__", leaves_function.__name__)
        leaves_function.__signature__ = inspect.Signature(params)
        counts = [sum(1 for _ in _leaf_paths(s)) for s in structures]
        starts = [sum(counts[:i]) for i in range(len(counts))]
        selected = [list(range(starts[i], starts[i] + counts[i])) for i in self._argnums]
        flat_argnums = tuple(j for idx in selected for j in idx)
        if not flat_argnums:
            raise _core.Error(f"error: the arguments selected by argnums={self._argnums} hold no arrays, so there is "
                              "nothing to differentiate")
        return _GradFunction(leaves_function, flat_argnums, self._has_aux, self._with_value), selected, structures

    def _has_structures(self, args):
        return any(isinstance(a, (dict, list, tuple)) and _holds_arrays(a) for a in args) or any(
            i < len(args) and isinstance(args[i], (dict, list, tuple)) for i in self._argnums)

    def __call__(self, *args, device=None, **kwargs):
        if not self._has_structures(args):
            return self._plain(*args, device=device, **kwargs)
        (inner, selected, structures), leaves = self._flat_function(args, kwargs)
        result = inner(*leaves, device=device, **kwargs)
        if self._has_aux:
            (value, aux), grads = (result if self._with_value else ((None, result[1]), result[0]))
        elif self._with_value:
            value, grads = result
        else:
            grads = result
        grads = list(grads)
        out, k = [], 0
        for i, idx in zip(self._argnums, selected):
            out.append(_unflatten(structures[i], iter(grads[k:k + len(idx)])))
            k += len(idx)
        grads = out[0] if self._single else tuple(out)
        if self._has_aux:
            return ((value, aux), grads) if self._with_value else (grads, aux)
        return (value, grads) if self._with_value else grads

    def trace(self, *args, **kwargs):
        """The tl.Kernel computing the loss, aux outputs and gradients for these arguments."""
        if not self._has_structures(args):
            return self._plain.trace(*args, **kwargs)
        (inner, _, _), leaves = self._flat_function(args, kwargs)
        return inner.trace(*leaves, **kwargs)

    def __repr__(self):
        return f"<unitile gradient of {getattr(self._f, '__name__', 'a function')}>"


def _leaf_paths(structure):
    kind = structure[0]
    if kind == "leaf":
        yield structure[1]
    elif kind in ("list", "tuple"):
        for c in structure[1]:
            yield from _leaf_paths(c)
    elif kind == "namedtuple":
        for c in structure[2]:
            yield from _leaf_paths(c)
    elif kind == "dict":
        for _, c in structure[1]:
            yield from _leaf_paths(c)


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
        self._layouts = {}  # per traced key: the structure of the aux outputs
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
        # aux may be a structure (dicts, lists, tuples) of tensors; it comes back as one
        aux_leaves = []
        try:
            aux_structure = _flatten(aux, "aux", aux_leaves)
        except TypeError as e:
            _fail(f"the auxiliary outputs: {e}")
        aux_items = [v for _, v in aux_leaves]
        for a in aux_items:
            if not isinstance(a, Sym) or a._g is not loss._g:
                _fail("the auxiliary outputs must be tensors computed from the arguments")
        graph = loss._g
        grads = _core.append_gradients(graph, loss._v, [args[i]._v for i in self._argnums])
        self._last_layout = aux_structure
        self._last_graph = graph
        return (loss, *aux_items, *[Sym(graph, v) for v in grads])

    def _shape_result(self, outputs, layout):
        outputs = list(outputs)
        n = len(self._argnums)
        grads = outputs[len(outputs) - n:]
        grads = grads[0] if self._single else tuple(grads)
        loss = outputs[0]
        if self._has_aux:
            count = sum(1 for _ in _leaf_paths(layout))
            aux = _unflatten(layout, iter(outputs[1:1 + count]))
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
    shapes into one kernel with the gradient nodes; arrays in, arrays out. An argument may
    be a structure (dicts, lists, tuples, nested) of arrays: argnums selects it whole and
    its gradient comes back in the same structure (a dict of parameters gives a dict of
    gradients)."""
    return _TreeGradFunction(f, argnums, has_aux, with_value=True)


def grad(f, argnums=0, has_aux=False):
    """A function returning d f(*args) / d(the arguments in `argnums`) (a tuple when
    `argnums` is a tuple; with ``has_aux=True``, ``(gradients, aux)``). See value_and_grad."""
    return _TreeGradFunction(f, argnums, has_aux, with_value=False)
