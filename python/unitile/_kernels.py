"""Callable kernels: .ut kernels (tl.load, tl.loads) and bare comprehensions
(tl.comprehension). The engine keeps each compiled form per device and shapes, so a
repeated call with the same shapes only runs."""

import os

import numpy as np

from . import _core, _devices
from ._tensor import Tensor, dtype_of_name, name_of_dtype


def _pick_device(device, args):
    """An explicit device wins, then the device of the first tl.Tensor argument, then the default."""
    if device is not None:
        return _devices.resolve(device)
    for a in args:
        if isinstance(a, Tensor):
            return a._t.device
    return _devices.resolve(None)


def to_device_tensor(value, dev, name, want=None):
    """`value` as a _core.DeviceTensor on `dev`: a tl.Tensor as it is (moved if on another
    device), a host array shared without a copy where the device's memory is the host's."""
    if isinstance(value, Tensor):
        t = value._t
        if t.device.name != dev.name:
            t = t.to(dev)
    else:
        a = np.asarray(value) if want is None else np.asarray(value, dtype=None)
        if want is not None and not isinstance(value, np.ndarray):
            a = np.asarray(value, dtype=dtype_of_name(want)) if want != "bf16" else a
        if not a.flags.c_contiguous or not a.flags.aligned:
            a = np.ascontiguousarray(a)
        try:
            t = _core.DeviceTensor.from_array(dev, a, True)
        except TypeError:
            raise _core.Error(f"input '{name}': unsupported value of type {type(value).__name__} "
                              f"(dtype {getattr(a, 'dtype', '?')})") from None
    if want is not None and t.dtype != want:
        raise _core.Error(f"input '{name}' is {t.dtype} but the kernel declares {want}; "
                          f"convert it first (e.g. x.astype(np.{dtype_of_name(want)}))")
    return t


def _results(outputs, names, as_tensors):
    values = [Tensor(outputs[n]) if as_tensors else outputs[n].numpy() for n in names]
    return values[0] if len(values) == 1 else tuple(values)


class Compiled:
    """A kernel compiled for one device and shapes: its generated code and schedule."""

    def __init__(self, core_compiled, output_names):
        self._c = core_compiled
        self._outputs = output_names

    @property
    def device(self):
        return self._c.device.name

    def source(self):
        """The source generated for the device, in the dialect its HCD names."""
        return self._c.source()

    def explain(self):
        """The schedule applied and why (what `unitile compile --explain` prints)."""
        return self._c.explain()

    def loop_ir(self):
        """The Loop IR that was compiled."""
        return self._c.loop_ir()


class Kernel:
    """A .ut kernel, callable: positional arguments are its inputs in declaration order;
    keyword arguments name inputs, params, or shape symbols that no input determines."""

    def __init__(self, core_kernel):
        self._k = core_kernel
        self.name = core_kernel.name
        self.inputs = [n for n, _ in core_kernel.inputs]
        self.outputs = [n for n, _ in core_kernel.outputs]
        self._input_dtypes = dict(core_kernel.inputs)
        self._params = dict(core_kernel.params)
        self._bound = set(core_kernel.bound_names)

    @property
    def text(self):
        """The kernel as .ut text."""
        return self._k.text

    def _bind(self, args, kwargs, device):
        if len(args) > len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} inputs ({', '.join(self.inputs)}), "
                            f"got {len(args)}")
        values = dict(zip(self.inputs, args))
        params, given = {}, {}
        for key, v in kwargs.items():
            if key in self._input_dtypes:
                if key in values:
                    raise TypeError(f"{self.name}: input '{key}' given twice")
                values[key] = v
            elif key in self._params or key in self._bound:
                if key in self._bound:
                    given[key] = int(v)
                if key in self._params:
                    params[key] = float(v)
            else:
                known = self.inputs + sorted(self._params) + sorted(self._bound - set(self._params))
                raise TypeError(f"{self.name}: unexpected argument '{key}' (it takes {', '.join(known)})")
        missing = [n for n in self.inputs if n not in values]
        if missing:
            raise TypeError(f"{self.name}: no value for input(s) {', '.join(missing)}")
        dev = _pick_device(device, list(values.values()))
        tensors = {n: to_device_tensor(values[n], dev, n, self._input_dtypes[n]) for n in self.inputs}
        as_tensors = any(isinstance(v, Tensor) for v in values.values())
        return dev, tensors, params, given, as_tensors

    def compile(self, *args, device=None, **kwargs):
        """The compiled form for these arguments' shapes on `device` (tl.Compiled)."""
        dev, tensors, _, given, _ = self._bind(args, kwargs, device)
        shapes = {n: list(t.shape) for n, t in tensors.items()}
        return Compiled(self._k.compile(dev, shapes, given), self.outputs)

    def __call__(self, *args, device=None, **kwargs):
        dev, tensors, params, given, as_tensors = self._bind(args, kwargs, device)
        shapes = {n: list(t.shape) for n, t in tensors.items()}
        compiled = self._k.compile(dev, shapes, given)
        return _results(compiled.run(tensors, params), self.outputs, as_tensors)

    def __repr__(self):
        return f"<unitile kernel {self.name}({', '.join(self.inputs)}) -> {', '.join(self.outputs)}>"


class Module:
    """The kernels of a .ut file, by name: ``m.MatrixMul(a, b)`` or ``m["MatrixMul"]``."""

    def __init__(self, kernels):
        self._kernels = {k.name: Kernel(k) for k in kernels}

    def __getattr__(self, name):
        try:
            return self.__dict__["_kernels"][name]
        except KeyError:
            raise AttributeError(f"no kernel '{name}' (kernels: {', '.join(self._kernels)})") from None

    def __getitem__(self, name):
        return getattr(self, name)

    def __iter__(self):
        return iter(self._kernels.values())

    def __len__(self):
        return len(self._kernels)

    def __dir__(self):
        return list(self._kernels)


def loads(text, filename="<string>", kernel=None):
    """The kernels of .ut text (a Module), or the one named `kernel`."""
    m = Module(_core.parse_module(text, filename))
    return m if kernel is None else m[kernel]


def load(path, kernel=None):
    """The kernels of a .ut file (a Module), or the one named `kernel`."""
    with open(os.fspath(path), encoding="utf-8") as f:
        return loads(f.read(), os.fspath(path), kernel)


class Comprehension:
    """Bare comprehension statements as a callable kernel. Tensors only read are inputs
    (positional, in order of first appearance, or by name); written tensors that later
    statements read are locals; the others are the outputs; names used only outside
    brackets are scalars passed by name. Each new combination of input dtypes and shapes
    writes a new kernel; written tensors take `dtype` or the first input's dtype."""

    def __init__(self, statements, name="comprehension", dtype=None):
        self.statements = statements
        self.name = name
        self._dtype = None if dtype is None else name_of_dtype(dtype)
        sig = _core.comprehension_signature(statements)
        self.inputs, self.outputs, self.params = sig["inputs"], sig["outputs"], sig["params"]
        self._kernels = {}

    def kernel(self, *args, **kwargs):
        """The tl.Kernel written for these arguments' dtypes and shapes."""
        values, params = self._split(args, kwargs)
        types = {}
        for n, v in values.items():
            if isinstance(v, Tensor):
                types[n] = (v._t.dtype, list(v.shape))
            else:
                a = np.asarray(v)
                types[n] = (name_of_dtype(a.dtype), list(a.shape))
        ptypes = {n: ("i64" if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else "f32")
                  for n, v in params.items()}
        key = (tuple(sorted((n, t[0], tuple(t[1])) for n, t in types.items())), tuple(sorted(ptypes.items())))
        k = self._kernels.get(key)
        if k is None:
            k = Kernel(_core.comprehension_kernel(self.name, self.statements, types, ptypes, self._dtype))
            self._kernels[key] = k
        return k, values, params

    def _split(self, args, kwargs):
        if len(args) > len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} inputs ({', '.join(self.inputs)}), "
                            f"got {len(args)}")
        values = dict(zip(self.inputs, args))
        params = {}
        for key, v in kwargs.items():
            if key in self.inputs:
                values[key] = v
            elif key in self.params:
                params[key] = v
            else:
                raise TypeError(f"{self.name}: unexpected argument '{key}' "
                                f"(inputs: {', '.join(self.inputs)}; scalars: {', '.join(self.params) or 'none'})")
        return values, params

    def compile(self, *args, device=None, **kwargs):
        k, values, params = self.kernel(*args, **kwargs)
        return k.compile(device=device, **values, **params)

    def __call__(self, *args, device=None, **kwargs):
        k, values, params = self.kernel(*args, **kwargs)
        return k(device=device, **values, **params)


def comprehension(statements, name="comprehension", dtype=None):
    """A callable kernel from comprehension statements, e.g.
    ``tl.comprehension("C[i,j] += A[i,k] * B[k,j]")(a, b)``."""
    return Comprehension(statements, name, dtype)
