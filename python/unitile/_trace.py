"""Tracing: ``@tl.kernel`` runs a Python function once per input dtypes and shapes on
symbolic tensors. Every operation on them is recorded as one op call (name, attributes,
inputs) in a graph held by the engine, which checks it at once (so a shape or dtype error
names the user's file and line) and turns the whole graph into ONE Kernel IR kernel, so
the scheduler sees the chain and can fuse it. Kernels called while tracing are inlined."""

import functools
import inspect
import keyword
import os
import re
import sys
import threading

import numpy as np

from . import _core
from ._kernels import Compiled, Kernel, _pick_device, to_device_tensor
from ._tensor import Tensor, dtype_of_name, name_of_dtype

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_state = threading.local()


def _where():
    """"file:line" of the innermost caller outside this package: the user's code."""
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _PACKAGE_DIR:
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else ""


def _fail(message):
    where = _where()
    raise _core.Error(f"{where}: error: {message}" if where else f"error: {message}")


# --- dtypes -------------------------------------------------------------------------------

def _promote(a, b):
    """NumPy's promotion on Unitile dtype names (bf16 with another float widens to f32)."""
    if a == b:
        return a
    if "bf16" in (a, b):
        other = b if a == "bf16" else a
        if other in ("f32", "f64"):
            return other
        return "f32"
    return name_of_dtype(np.result_type(dtype_of_name(a), dtype_of_name(b)))


def _is_float(name):
    return name in ("f16", "bf16", "f32", "f64")


# --- symbolic tensors ---------------------------------------------------------------------

class Sym:
    """A tensor while tracing: its dtype and shape are known, its values are not.

    Writes (``x[key] = v``, ``x += y``) are functional underneath: the write makes a new
    traced value (a scatter, or the whole result) and the Python object `x` then stands for
    it, so later reads, and other names bound to the same object, see the write. What
    NumPy makes a view (basic indexing, ``.T``, ``.transpose``, ``.reshape``) is a view
    here too: it knows how to read itself from its base and how to write itself back, so
    writing into it writes into the base, and reading it after the base was written reads
    the base again."""

    __slots__ = ("_g", "_value", "_dtype", "shape", "_base", "_view", "_seen", "_version")
    __array_priority__ = 1000  # NumPy operands on the left defer to Sym's operators

    def __init__(self, graph, value, base=None, view=None):
        self._g = graph
        self._value = value
        dtype, shape = graph.value(value)
        self._dtype = dtype
        self.shape = tuple(shape)
        # The tensor this one is a view of, or None; `view` is (read, write): read(base)
        # gives this view's tensor, write(base, tensor) writes it into the base.
        self._base = base
        self._view = view
        self._seen = base._version if base is not None else 0
        self._version = 0  # counts changes of _value

    @property
    def _v(self):
        """The graph value this tensor stands for now (a view re-reads a written base)."""
        base = self._base
        if base is not None:
            base._v  # refresh the base first (it may be a view itself)
            if self._seen != base._version:
                self._value = self._view[0](base)._value
                self._seen = base._version
                self._version += 1
        return self._value

    def _assign(self, value):
        """Make this tensor stand for graph value `value` (of its dtype and shape); a view
        writes it into its base."""
        base = self._base
        if base is not None:
            self._view[1](base, Sym(self._g, value))
            self._seen = base._version
        self._value = value
        self._version += 1

    def _view_of(self, read, write):
        """read(self) as a view of self (see the class's note)."""
        return Sym(self._g, read(self)._v, base=self, view=(read, write))

    def copy(self):
        """The tensor's values as a new tensor that is no view of anything."""
        return Sym(self._g, self._v)

    @property
    def dtype(self):
        return dtype_of_name(self._dtype)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def T(self):
        return self.transpose()

    def __repr__(self):
        return f"<traced tensor {self._dtype}{list(self.shape)}>"

    # arithmetic, NumPy style
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _true_divide(self, o)
    def __rtruediv__(self, o): return _true_divide(o, self)
    def __floordiv__(self, o): return floor(_true_divide(self, o)) if _is_float(_operand_dtype(self, o)) else _int_floordiv(self, o)
    def __rfloordiv__(self, o): return floor(_true_divide(o, self)) if _is_float(_operand_dtype(o, self)) else _int_floordiv(o, self)
    def __mod__(self, o): return _binary("mod", self, o)
    def __rmod__(self, o): return _binary("mod", o, self)
    def __pow__(self, o): return power(self, o)
    def __rpow__(self, o): return power(o, self)
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)
    def __neg__(self): return call("neg", [self])
    def __pos__(self): return self
    def __abs__(self): return call("abs", [self])
    def __invert__(self): return _bitwise_not(self)
    def __and__(self, o): return _bitwise("&", self, o)
    def __rand__(self, o): return _bitwise("&", o, self)
    def __or__(self, o): return _bitwise("|", self, o)
    def __ror__(self, o): return _bitwise("|", o, self)
    def __xor__(self, o): return _bitwise("^", self, o)
    def __rxor__(self, o): return _bitwise("^", o, self)
    def __lshift__(self, o): return _bitwise("<<", self, o)
    def __rlshift__(self, o): return _bitwise("<<", o, self)
    def __rshift__(self, o): return _bitwise(">>", self, o)
    def __rrshift__(self, o): return _bitwise(">>", o, self)

    # augmented assignment writes into the tensor, in its dtype, as NumPy does
    def __iadd__(self, o): return self._update("+=", self + o)
    def __isub__(self, o): return self._update("-=", self - o)
    def __imul__(self, o): return self._update("*=", self * o)
    def __itruediv__(self, o): return self._update("/=", self / o)
    def __ifloordiv__(self, o): return self._update("//=", self // o)
    def __imod__(self, o): return self._update("%=", self % o)
    def __ipow__(self, o): return self._update("**=", self ** o)
    def __iand__(self, o): return self._update("&=", self & o)
    def __ior__(self, o): return self._update("|=", self | o)
    def __ixor__(self, o): return self._update("^=", self ^ o)
    def __ilshift__(self, o): return self._update("<<=", self << o)
    def __irshift__(self, o): return self._update(">>=", self >> o)

    def _update(self, op, result):
        if result.shape != self.shape:
            _fail(f"{op}: the result's shape {list(result.shape)} (broadcast) is not the shape "
                  f"{list(self.shape)} of the tensor written in place")
        if result._dtype != self._dtype:
            if not _can_cast_same_kind(result._dtype, self._dtype):
                _fail(f"{op}: cannot write the {result._dtype} result into a {self._dtype} tensor in place "
                      f"(NumPy's same_kind rule); write x = x {op[:-1]} y to get a new {result._dtype} "
                      f"tensor, or convert with .astype({self._dtype!r}) first")
            result = astype(result, self._dtype)
        self._assign(result._v)
        return self
    def __lt__(self, o): return _binary("less", self, o)
    def __le__(self, o): return _binary("less_equal", self, o)
    def __gt__(self, o): return _binary("greater", self, o)
    def __ge__(self, o): return _binary("greater_equal", self, o)
    def __eq__(self, o): return _binary("equal", self, o)
    def __ne__(self, o): return _binary("not_equal", self, o)
    __hash__ = object.__hash__

    # methods
    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return self._view_of(lambda base: reshape(base, shape),
                             lambda base, value: base._whole(reshape(value, base.shape)))

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else (axes or None)
        perm = list(range(self.ndim))[::-1] if axes is None else [int(a) % (self.ndim or 1) for a in axes]
        back = [perm.index(d) for d in range(len(perm))]
        return self._view_of(lambda base: transpose(base, perm),
                             lambda base, value: base._whole(transpose(value, back)))

    def _whole(self, value):
        """self[...] = value, for a value of self's shape."""
        self._assign(astype(value, self._dtype)._v)

    def astype(self, dtype):
        return astype(self, dtype)

    def sum(self, axis=None, keepdims=False): return sum(self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return mean(self, axis, keepdims)
    def max(self, axis=None, keepdims=False): return max(self, axis=axis, keepdims=keepdims)
    def min(self, axis=None, keepdims=False): return min(self, axis=axis, keepdims=keepdims)
    def prod(self, axis=None, keepdims=False): return prod(self, axis, keepdims)

    def __getitem__(self, key):
        if not _indexing.is_basic(self, key):
            return _indexing.get(self, key)  # a copy, as in NumPy
        return self._view_of(lambda base: _indexing.get(base, key), lambda base, value: base.__setitem__(key, value))

    def __setitem__(self, key, value):
        self._assign(_indexing.set(self, key, value)._v)

    def __len__(self):
        if not self.shape:
            _fail("len() of a 0-d traced tensor")
        return self.shape[0]

    # Python that needs a value the tracer does not have
    def __bool__(self):
        _fail("the truth value of a traced tensor is not known while tracing, so `if`, `while`, "
              "`and`, `or` and `not` cannot depend on it; choose elementwise with "
              "tl.where(condition, a, b) (and combine conditions with &, |, ~)")

    def __iter__(self):
        _fail("iterating over a traced tensor is not supported (the loop would be unrolled over "
              "values the tracer does not have); index it (x[i], x[:, j]) or reduce it "
              "(x.sum(axis=0), tl.max(x, axis=0))")

    def __float__(self):
        _fail("a traced tensor has no value to convert to a Python number; keep it a tensor "
              "(use x.astype(...) to change its dtype)")

    __int__ = __float__
    __index__ = __float__
    __complex__ = __float__

    def __array__(self, *args, **kwargs):
        _fail("NumPy cannot compute on a traced tensor; use the tl function of the same name "
              "(tl.exp, tl.sum, tl.matmul, ...) inside @tl.kernel")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        f = _UFUNCS.get(ufunc.__name__)
        if f is None or method != "__call__" or kwargs:
            _fail(f"numpy.{ufunc.__name__} cannot compute on a traced tensor; use the tl function "
                  "of the same purpose inside @tl.kernel (see dir(unitile))")
        return f(*inputs)


def _graph_of(values):
    graph = None
    for v in values:
        if isinstance(v, Sym):
            if graph is not None and v._g is not graph:
                _fail("tensors of two different traces are mixed (a traced tensor escaped its kernel)")
            graph = v._g
    return graph


def _constant(graph, value, dtype):
    if isinstance(value, (bool, np.bool_)):
        value = float(bool(value))
    return Sym(graph, graph.add("constant", [], {"value": float(value), "dtype": dtype}, _where())[0])


def _operand_dtype(a, b):
    """NumPy's result dtype: a Python number takes the tensor's dtype, except that a float
    with an integer or bool tensor gives f64 (as NumPy: int32 array + 1.5 is float64)."""
    da = a._dtype if isinstance(a, Sym) else None
    db = b._dtype if isinstance(b, Sym) else None
    if da and db:
        return _promote(da, db)
    known, other = (da, b) if da else (db, a)
    if known and not _is_float(known) and isinstance(other, (float, np.floating)):
        return "f64"
    return known


def _as_sym(graph, x, dtype):
    if isinstance(x, Sym):
        return x
    if isinstance(x, (bool, int, float, np.number, np.bool_)):
        return _constant(graph, x, dtype)
    if isinstance(x, (np.ndarray, Tensor)) or hasattr(x, "__dlpack__"):
        _fail("an array captured inside a traced function is not supported; pass it to the "
              "kernel as an argument")
    _fail(f"cannot use a {type(x).__name__} as a tensor")


def call(op, inputs, attrs=None):
    """Record op `op` on `inputs` (traced tensors, or Python numbers that take the dtype of
    the first traced input); returns its output, or a tuple of outputs."""
    graph = _graph_of(inputs)
    if graph is None and not inputs:  # an op without inputs (range) joins the trace running
        graph = getattr(_state, "graph", None)
    if graph is None:
        _fail(f"tl.{op} needs a traced tensor here")
    dtype = next((x._dtype for x in inputs if isinstance(x, Sym)), None)
    syms = [_as_sym(graph, x, dtype) for x in inputs]
    outs = graph.add(op, [s._v for s in syms], attrs or {}, _where())
    result = [Sym(graph, v) for v in outs]
    return result[0] if len(result) == 1 else tuple(result)


def _binary(op, a, b):
    graph = _graph_of([a, b])
    target = _operand_dtype(a, b)
    a = _as_sym(graph, a, target)
    b = _as_sym(graph, b, target)
    if a._dtype != target:
        a = astype(a, target)
    if b._dtype != target:
        b = astype(b, target)
    return call(op, [a, b])


def _true_divide(a, b):
    target = _operand_dtype(a, b)
    if not _is_float(target):  # NumPy: integers divide into float64
        graph = _graph_of([a, b])
        a = astype(_as_sym(graph, a, target), "f64")
        b = astype(_as_sym(graph, b, target), "f64")
    return _binary("div", a, b)


def _int_floordiv(a, b):
    # Python's floor division: the library's integer div truncates and its mod takes the
    # divisor's sign, so a - mod(a, b) is an exact multiple of b and dividing it floors.
    return _binary("div", _binary("sub", a, _binary("mod", a, b)), b)


_BITWISE = {"&": ("bitwise_and", "and"), "|": ("bitwise_or", "or"), "^": ("bitwise_xor", "xor"),
            "<<": ("bit_shift", None), ">>": ("bit_shift", None)}


def _can_cast_same_kind(src, dst):
    if src == "bf16" or dst == "bf16":
        return _is_float(dst) or not _is_float(src)
    return bool(np.can_cast(dtype_of_name(src), dtype_of_name(dst), "same_kind"))


def _bitwise(symbol, a, b):
    """a & b, a | b, a ^ b (logical on bool, the library's bitwise ops on integers) and
    a << b, a >> b (bit_shift; NumPy shifts bools as int8)."""
    target = _operand_dtype(a, b)
    op, logical = _BITWISE[symbol]
    if _is_float(target):
        _fail(f"the operator {symbol} needs integer or bool tensors, got {target} (NumPy's {op} is not "
              "defined for floats); compare (x > 0) or convert with .astype(...) first")
    if target == "bool":
        if logical is not None:
            return _binary(logical, a, b)
        graph = _graph_of([a, b])
        a, b = astype(_as_sym(graph, a, "i8"), "i8"), astype(_as_sym(graph, b, "i8"), "i8")
    if op == "bit_shift":
        graph = _graph_of([a, b])
        a, b = _as_sym(graph, a, target), _as_sym(graph, b, target)
        a, b = astype(a, a._dtype if a._dtype != "bool" else "i8"), astype(b, b._dtype if b._dtype != "bool" else "i8")
        target = _promote(a._dtype, b._dtype)
        return call("bit_shift", [astype(a, target), astype(b, target)],
                    {"direction": "LEFT" if symbol == "<<" else "RIGHT"})
    return _binary(op, a, b)


def _bitwise_not(x):
    if x._dtype == "bool":
        return call("not", [x])
    if _is_float(x._dtype):
        _fail(f"the operator ~ needs an integer or bool tensor, got {x._dtype} (NumPy's invert is not "
              "defined for floats)")
    return call("bitwise_not", [x])


# --- NumPy-style functions (also usable outside a trace: see _eager) ----------------------

def _axes(axis, ndim):
    if axis is None:
        return []
    if isinstance(axis, (int, np.integer)):
        return [int(axis)]
    return [int(a) for a in axis]


def matmul(a, b):
    """NumPy's matmul (also ``a @ b``): batched and broadcast; 1-D operands as in NumPy."""
    return _binary("matmul", a, b)


def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    return call("softmax", [x], {"axis": int(axis)})


def transpose(x, axes=None):
    """x with its axes permuted (reversed when `axes` is None), like numpy.transpose."""
    return call("transpose", [x], {"perm": [] if axes is None else [int(a) for a in axes]})


def reshape(x, shape):
    """x's elements in C order under `shape` (one extent may be -1)."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = [int(s) for s in shape]
    if not shape:
        shape_numel = 1
        if x.size != shape_numel:
            _fail(f"cannot reshape {list(x.shape)} to []")
        return call("reshape", [x], {"shape": []}) if x.ndim else x
    return call("reshape", [x], {"shape": shape})


def astype(x, dtype):
    """x converted to `dtype` (a NumPy dtype or a Unitile name such as 'bf16')."""
    name = name_of_dtype(dtype)
    return x if x._dtype == name else call("cast", [x], {"dtype": name})


def _reduce(op, x, axis, keepdims):
    return call(op, [x], {"axes": _axes(axis, x.ndim), "keepdims": bool(keepdims)})


def sum(x, axis=None, keepdims=False):
    return _reduce("reduce_sum", x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    return _reduce("reduce_mean", x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    return _reduce("reduce_prod", x, axis, keepdims)


def max(x, y=None, axis=None, keepdims=False):
    """The maximum along `axis` (NumPy's max), or elementwise of two tensors (maximum)."""
    return _reduce("reduce_max", x, axis, keepdims) if y is None else _binary("max", x, y)


def min(x, y=None, axis=None, keepdims=False):
    """The minimum along `axis` (NumPy's min), or elementwise of two tensors (minimum)."""
    return _reduce("reduce_min", x, axis, keepdims) if y is None else _binary("min", x, y)


def maximum(a, b):
    return _binary("max", a, b)


def minimum(a, b):
    return _binary("min", a, b)


def where(cond, a, b):
    """a where cond is true, else b (elementwise, broadcast): the traced form of `if`."""
    graph = _graph_of([cond, a, b])
    target = _operand_dtype(a, b) or "f32"
    a, b = _as_sym(graph, a, target), _as_sym(graph, b, target)
    if a._dtype != target:
        a = astype(a, target)
    if b._dtype != target:
        b = astype(b, target)
    return call("where", [cond, a, b])


def power(a, b):
    """a ** b; a constant exponent of 2, 0.5, -0.5 or 1 becomes square, sqrt, rsqrt or a copy."""
    if isinstance(a, Sym) and isinstance(b, (int, float)) and not isinstance(b, bool):
        special = {2: "square", 0.5: "sqrt", -0.5: "rsqrt"}
        if b == 1:
            return a
        if b in special and (_is_float(a._dtype) or b == 2):
            return call(special[b], [a])
    return _binary("pow", a, b)


def floor(x):
    return call("floor", [x])


def onnx_slice(x, starts, ends, axes=None, steps=None):
    """tl.slice with the library's (ONNX) attributes: elements starts, starts + steps, ...
    before ends on `axes` (negative positions count from the end, then clamp), as
    x[start:end:step] on each axis (a view, as basic indexing is)."""
    axes = list(range(len(starts))) if axes is None else [int(a) % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    key = [slice(None)] * x.ndim
    for a, b, e, s in zip(axes, starts, ends, steps):
        key[a] = slice(int(b), int(e), int(s))
    return x[tuple(key)]


def onnx_cast(x, to):
    """tl.cast with the library's attribute: x converted to dtype `to`."""
    return astype(x, to)


def _op_function(spec):
    """tl.<name> for a library (or graph) op: positional tensors fill its input ports in
    order, keyword arguments name ports or attributes."""
    ports = [p[0] for p in spec["inputs"]]
    attr_names = {a[0] for a in spec["attrs"]}

    def op(*inputs, **kwargs):
        inputs = list(inputs)
        attrs = {}
        for key, value in kwargs.items():
            if key in attr_names:
                attrs[key] = value
            elif key in ports:
                at = ports.index(key)
                while len(inputs) <= at:
                    inputs.append(None)
                inputs[at] = value
            else:
                _fail(f"tl.{spec['name']}: unknown argument '{key}' (inputs: {', '.join(ports) or 'none'}; "
                      f"attributes: {', '.join(sorted(attr_names)) or 'none'})")
        while inputs and inputs[-1] is None:
            inputs.pop()
        if any(v is None for v in inputs):
            _fail(f"tl.{spec['name']}: leaving out an optional input before a given one is not supported")
        return call(spec["name"], inputs, attrs)

    op.takes_no_inputs = not ports
    op.__name__ = spec["name"]
    op.__doc__ = f"{spec['summary']} (op:{spec['name']}; inputs {', '.join(ports)}" + (
        f"; attributes {', '.join(a[0] for a in spec['attrs'])})" if spec["attrs"] else ")")
    return op


_UFUNCS = {
    "add": lambda a, b: _binary("add", a, b), "subtract": lambda a, b: _binary("sub", a, b),
    "multiply": lambda a, b: _binary("mul", a, b), "true_divide": _true_divide,
    "negative": lambda a: call("neg", [a]), "absolute": lambda a: call("abs", [a]),
    "exp": lambda a: call("exp", [a]), "log": lambda a: call("log", [a]),
    "sqrt": lambda a: call("sqrt", [a]), "tanh": lambda a: call("tanh", [a]),
    "maximum": maximum, "minimum": minimum, "matmul": matmul, "power": power,
}


# --- kernels ------------------------------------------------------------------------------

_GENERATED = re.compile(r"^(t\d+|out\d+|n\d+_.*)$")
_RESERVED = {"f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "bool", "float", "double",
             "half", "int", "long", "inf", "nan", "true", "false", "max", "min", "kernel", "input",
             "output", "local", "param", "operation", "schedule"}


def _tensor_name(name):
    if _GENERATED.match(name) or name in _RESERVED or keyword.iskeyword(name) or not name.isidentifier():
        return "in_" + re.sub(r"\W", "_", name)
    return name


def _is_array(x):
    return isinstance(x, (np.ndarray, Tensor, np.generic)) and not isinstance(x, (np.number, np.bool_)) \
        or (not isinstance(x, (int, float, bool, str, type(None))) and hasattr(x, "__dlpack__"))


def _array_type(x):
    if isinstance(x, Tensor):
        return x._t.dtype, tuple(x.shape)
    a = np.asarray(x) if not hasattr(x, "__dlpack__") or isinstance(x, np.ndarray) else np.from_dlpack(x)
    return name_of_dtype(a.dtype), tuple(a.shape)


def _tracing(args, kwargs):
    return any(isinstance(v, Sym) for v in args) or any(isinstance(v, Sym) for v in kwargs.values())


class KernelFunction:
    """A Python function traced into one kernel per input dtypes and shapes. Called with
    arrays (NumPy, tl.Tensor, anything with DLPack) it compiles (once per device and
    shapes) and runs; called while another kernel is traced, it is inlined there.
    Non-array arguments (numbers, strings, tuples) are constants of the trace."""

    def __init__(self, fn, name=None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._name = re.sub(r"\W", "_", name or fn.__name__) or "kernel"
        if not self._name[0].isalpha():
            self._name = "k" + self._name
        self._signature = inspect.signature(fn)
        self._traced = {}

    def _bind(self, args, kwargs):
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        tensors, key = [], []
        for name, value in bound.arguments.items():
            kind = self._signature.parameters[name].kind
            items = list(enumerate(value)) if kind == inspect.Parameter.VAR_POSITIONAL else [(None, value)]
            for i, v in items:
                label = name if i is None else f"{name}{i}"
                if _is_array(v):
                    dtype, shape = _array_type(v)
                    tensors.append((label, v))
                    key.append((label, "tensor", dtype, shape))
                else:
                    try:
                        hash(v)
                    except TypeError:
                        raise TypeError(f"{self._name}: argument '{label}' is neither an array nor a hashable "
                                        f"constant ({type(v).__name__})") from None
                    key.append((label, "constant", type(v).__name__, v))
        return bound, tensors, tuple(key)

    def trace(self, *args, **kwargs):
        """The tl.Kernel traced for these arguments' dtypes and shapes (see its .text)."""
        return self._specialize(args, kwargs)[0]

    def _specialize(self, args, kwargs):
        bound, tensors, key = self._bind(args, kwargs)
        traced = self._traced.get(key)
        if traced is None:
            traced = self._trace(bound, tensors)
            self._traced[key] = traced
        return traced[0], traced[1], [v for _, v in tensors]

    def _trace(self, bound, tensors):
        graph = _core.Graph()
        syms = {}
        names = []
        for label, value in tensors:
            dtype, shape = _array_type(value)
            name = _tensor_name(label)
            names.append(name)
            syms[label] = Sym(graph, graph.add_input(name, dtype, list(shape)))
        call_args = []
        call_kwargs = {}
        for name, value in bound.arguments.items():
            param = self._signature.parameters[name]
            if param.kind == inspect.Parameter.VAR_POSITIONAL:
                call_args.extend(syms.get(f"{name}{i}", v) for i, v in enumerate(value))
            elif param.kind == inspect.Parameter.VAR_KEYWORD:
                call_kwargs.update(value)
            elif param.kind == inspect.Parameter.KEYWORD_ONLY:
                call_kwargs[name] = syms.get(name, value)
            else:
                call_args.append(syms.get(name, value))
        outer = getattr(_state, "graph", None)
        _state.graph = graph
        try:
            result = self._fn(*call_args, **call_kwargs)
        finally:
            _state.graph = outer
        single = not isinstance(result, (tuple, list))
        outputs = [result] if single else list(result)
        for i, o in enumerate(outputs):
            if not isinstance(o, Sym) or o._g is not graph:
                raise _core.Error(f"{self._name}: returned value {i} is a {type(o).__name__}, not a tensor "
                                  "computed from the kernel's inputs")
        graph.set_outputs([o._v for o in outputs])
        return Kernel(graph.kernel(self._name)), single

    def compile(self, *args, device=None, **kwargs):
        """The compiled form for these arguments on `device` (its .source(), .explain())."""
        kernel, _, values = self._specialize(args, kwargs)
        return kernel.compile(*values, device=device)

    def __call__(self, *args, device=None, **kwargs):
        if _tracing(args, kwargs):
            return self._fn(*args, **kwargs)
        kernel, single, values = self._specialize(args, kwargs)
        result = kernel(*values, device=device)
        return result if not single or not isinstance(result, tuple) else result[0]

    def __repr__(self):
        return f"<unitile traced kernel {self._name}>"


def kernel(fn=None, *, name=None):
    """Decorator: trace a NumPy-like function into one kernel (see KernelFunction)."""
    if fn is None:
        return lambda f: KernelFunction(f, name)
    return KernelFunction(fn, name)


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


def _eager(function, name):
    """`function` (which records op calls) usable on arrays outside a trace too: it is then
    traced alone as a kernel, per attributes, and run."""
    kernels = {}

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if _graph_of(list(args) + list(kwargs.values())) is not None:
            return function(*args, **kwargs)
        device = kwargs.pop("device", None)
        arrays = [a for a in args if _is_array(a)]
        if not arrays and getattr(_state, "graph", None) is not None:
            return function(*args, **kwargs)  # inside a trace: an op without inputs (range)
        if not arrays and (args or not getattr(function, "takes_no_inputs", False)):
            return function(*args, **kwargs)  # fails with the "needs a traced tensor" message
        # The argument count is part of the key: tl.linear(x, w) and tl.linear(x, w, b)
        # are two kernels.
        key = (len(args),) + tuple((i, _freeze(a)) for i, a in enumerate(args) if not _is_array(a)) + tuple(
            sorted((k, _freeze(v)) for k, v in kwargs.items()))
        k = kernels.get(key)
        if k is None:
            positions = [i for i, a in enumerate(args) if _is_array(a)]
            constants = dict((i, a) for i, a in enumerate(args) if not _is_array(a))

            def body(*xs):
                full = []
                it = iter(xs)
                for i in range(len(args)):
                    full.append(next(it) if i in positions else constants[i])
                return function(*full, **kwargs)

            body.__signature__ = inspect.Signature(
                [inspect.Parameter(f"x{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in positions])
            k = KernelFunction(body, name)
            kernels[key] = k
        return k(*arrays, device=device)

    return wrapper


from . import _indexing  # noqa: E402 (it builds on the definitions above)
