"""NumPy's indexing on traced tensors, read (``x[key]``) and write (``x[key] = v``), spelled
as library ops: basic indices (integers, slices, None, ...) are `slice` and `reshape`,
integer arrays and tensors (advanced indexing) are `gather` or `gather_nd`, and a write is
`scatter_nd` into a new traced value. Boolean masks are refused: their result's shape
depends on the data."""

import numpy as np

from . import _trace as T
from ._tensor import Tensor

# Python lists and NumPy arrays used as indices become a literal table in the kernel
# (`index_constant`, one select per entry, log2(n) deep); larger ones belong in an argument.
_MAX_LITERAL_INDEX = 4096


class _Array:
    """An integer index array: a traced tensor, or literal values (already checked)."""

    __slots__ = ("sym", "values", "shape")

    def __init__(self, sym=None, values=None):
        self.sym = sym
        self.values = values
        self.shape = tuple(sym.shape) if sym is not None else values.shape


def _mask_error(writing):
    what = ("tl.where(mask, value, x)" if writing
            else "tl.where(mask, x, 0) (or x * mask) to zero what the mask leaves out, and a reduction "
                 "such as (x * mask).sum() for totals")
    T._fail("a boolean mask as an index selects a number of elements known only from the data, so the "
            f"result has no shape while tracing; use {what}")


def _classify(k, writing):
    """One entry of a key: None, Ellipsis, a slice, an int, or an _Array."""
    if k is None or k is Ellipsis or isinstance(k, slice):
        return k
    if isinstance(k, (bool, np.bool_)):
        _mask_error(writing)
    if isinstance(k, (int, np.integer)):
        return int(k)
    if isinstance(k, T.Sym):
        if k._dtype == "bool":
            _mask_error(writing)
        if T._is_float(k._dtype):
            T._fail(f"a tensor used as an index must have an integer dtype, not {k._dtype}")
        return _Array(sym=k)
    if isinstance(k, Tensor) or (isinstance(k, np.ndarray) and k.size > _MAX_LITERAL_INDEX):
        T._fail("an index array captured inside a traced function must be a short list or array "
                f"(at most {_MAX_LITERAL_INDEX} entries) written into the kernel; pass a larger one "
                "to the kernel as an argument")
    if isinstance(k, (list, tuple, np.ndarray)):
        a = np.asarray(k)
        if a.dtype == np.bool_:
            _mask_error(writing)
        if a.size == 0:
            T._fail("an empty index array selects nothing; empty tensors are not supported")
        if a.dtype.kind not in "iu":
            T._fail(f"arrays used as indices must hold integers, got {a.dtype}")
        if a.size > _MAX_LITERAL_INDEX:
            T._fail(f"an index list of {a.size} entries is too long to write into the kernel "
                    f"(at most {_MAX_LITERAL_INDEX}); pass it to the kernel as an argument")
        return _Array(values=a.astype(np.int64))
    T._fail(f"unsupported index {k!r}: use integers, slices, None, ..., or integer arrays and tensors")


class _Key:
    """A key made explicit over x's dimensions: `entries` has one item per dimension of x
    (an int, a (start, step, size) slice, or an _Array) with the positions of None in the
    key kept as `new_axes` (positions in the list of entries, before which they stand)."""

    def __init__(self, x, key, writing=False):
        if not isinstance(key, tuple):
            key = (key,)
        items = [_classify(k, writing) for k in key]
        if len([k for k in items if k is Ellipsis]) > 1:
            T._fail("an index can have only one ellipsis (...)")
        used = len([k for k in items if k is not None and k is not Ellipsis])
        if used > x.ndim:
            T._fail(f"too many indices ({used}) for a tensor of rank {x.ndim}")
        if Ellipsis in items:
            at = items.index(Ellipsis)
            items = items[:at] + [slice(None)] * (x.ndim - used) + items[at + 1:]
        else:
            items = items + [slice(None)] * (x.ndim - used)
        self.advanced = any(isinstance(k, _Array) for k in items)
        self.items = []  # per key position: "new" (None), or the entry of dimension d
        d = 0
        for k in items:
            if k is None:
                self.items.append("new")
                continue
            n = x.shape[d]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                size = len(range(start, stop, step))
                if size == 0:
                    T._fail(f"the slice {k} of dimension {d} (extent {n}) is empty; empty tensors are not supported")
                self.items.append((start, step, size))
            elif isinstance(k, int):
                if not -n <= k < n:
                    T._fail(f"index {k} is out of range for dimension {d} of extent {n}")
                self.items.append(k % n)
            else:
                if k.values is not None:
                    bad = k.values[(k.values < -n) | (k.values >= n)]
                    if bad.size:
                        T._fail(f"index {int(bad[0])} is out of range for dimension {d} of extent {n}")
                self.items.append(k)
            d += 1
        self.ndim = x.ndim
        if self.advanced:
            # NumPy: integers count as advanced indices next to arrays; the broadcast shape
            # of all of them replaces them where they stand together, else it comes first.
            arrays = [k for k in self.items if isinstance(k, _Array)]
            try:
                self.broadcast = tuple(np.broadcast_shapes(*[a.shape for a in arrays]))
            except ValueError:
                T._fail("the index arrays could not be broadcast together with shapes "
                        + " ".join(str(list(a.shape)) for a in arrays))
            where = [i for i, k in enumerate(self.items) if isinstance(k, (int, _Array))]
            self.adjacent = where == list(range(where[0], where[-1] + 1))
            self.first = where[0]

    def dims(self):
        """(dimension, entry) for each dimension of x."""
        return [(d, k) for d, k in enumerate(k for k in self.items if k != "new")]

    def result_axes(self):
        """The indexed shape's axes in order: ("slice", d, (start, step, size)), ("new",) or
        ("advanced",) for the block of broadcast advanced axes."""
        axes = []
        d = 0
        placed = False
        for i, k in enumerate(self.items):
            if self.advanced and not placed and (not self.adjacent or i == self.first):
                axes.append(("advanced",))
                placed = True
            if k == "new":
                axes.append(("new",))
                continue
            if isinstance(k, tuple):
                axes.append(("slice", d, k))
            d += 1
        return axes

    def result_shape(self):
        shape = []
        for a in self.result_axes():
            if a[0] == "advanced":
                shape.extend(self.broadcast)
            elif a[0] == "new":
                shape.append(1)
            else:
                shape.append(a[2][2])
        return tuple(shape)


# --- building blocks ----------------------------------------------------------------------

def _literal_index(graph, values):
    """An i64 tensor holding `values` (an integer array of any shape)."""
    flat = [int(v) for v in values.reshape(-1)]
    t = T.Sym(graph, graph.add("index_constant", [], {"values": flat}, T._where())[0])
    return T.reshape(t, values.shape) if values.ndim != 1 else t


def _index_sym(graph, entry):
    """The index tensor of an advanced entry (an _Array or an int)."""
    if isinstance(entry, int):
        return _literal_index(graph, np.array(entry, np.int64))
    if entry.sym is not None:
        return entry.sym
    return _literal_index(graph, entry.values)


def _expand(x, shape):
    return x if tuple(x.shape) == tuple(shape) else T.call("expand", [x], {"shape": list(shape)})


def _basic(x, items):
    """Basic indexing (no arrays) over _Key items: one `slice` (squeezing integer-indexed
    dimensions) and a `reshape` where None adds axes."""
    starts, steps, sizes, squeeze, out_shape = [], [], [], [], []
    d = 0
    for k in items:
        if k == "new":
            out_shape.append(1)
            continue
        if isinstance(k, tuple):
            starts.append(k[0])
            steps.append(k[1])
            sizes.append(k[2])
            out_shape.append(k[2])
        else:
            starts.append(k)
            steps.append(1)
            sizes.append(1)
            squeeze.append(d)
        d += 1
    y = x
    if any(s != 0 for s in starts) or any(s != 1 for s in steps) or sizes != list(x.shape) or squeeze:
        y = T.call("slice", [x], {"starts": starts, "steps": steps, "sizes": sizes, "squeeze": squeeze})
    if tuple(out_shape) != y.shape:
        y = T.reshape(y, out_shape)
    return y


# --- reading ------------------------------------------------------------------------------

def is_basic(x, key):
    """Whether `key` is basic indexing (a view in NumPy)."""
    return not _Key(x, key).advanced


def get(x, key):
    """x[key] with NumPy's semantics."""
    k = _Key(x, key)
    if not k.advanced:
        return _basic(x, k.items)
    graph = x._g
    # None and slices first, as basic indexing; the advanced entries then index whole
    # dimensions of y, whose axes are the key's positions.
    items, d = [], 0
    for item in k.items:
        if item == "new":
            items.append(item)
            continue
        items.append(item if isinstance(item, tuple) else (0, 1, x.shape[d]))
        d += 1
    y = _basic(x, items)
    return _advanced(graph, y, k)


def _advanced(graph, y, k):
    axes = [i for i, item in enumerate(k.items) if isinstance(item, (int, _Array))]
    entries = [k.items[i] for i in axes]
    if len(entries) == 1:  # one array: gather puts its shape where the axis was, as NumPy
        return T.call("gather", [y, _index_sym(graph, entries[0])], {"axis": axes[0]})
    b = k.broadcast
    columns = []
    for e in entries:
        idx = T.astype(_index_sym(graph, e), "i64")
        columns.append(T.reshape(_expand(idx, b), list(b) + [1]))
    coords = T.call("concat", columns, {"axis": -1})
    rest = [d for d in range(y.ndim) if d not in axes]
    if axes != list(range(len(axes))):
        y = T.transpose(y, axes + rest)
    out = T.call("gather_nd", [y, coords])
    if k.adjacent and axes[0] > 0:
        nb, lead = len(b), axes[0]
        out = T.transpose(out, list(range(nb, nb + lead)) + list(range(nb)) + list(range(nb + lead, out.ndim)))
    return out


# --- writing ------------------------------------------------------------------------------

def _value(x, value, shape):
    """`value` as x's dtype, broadcast to the indexed `shape` (NumPy's rule for assignment:
    extra leading axes of extent 1 are dropped)."""
    graph = x._g
    if isinstance(value, T.Sym):
        v = value
    elif isinstance(value, (bool, int, float, np.number, np.bool_)):
        v = T._constant(graph, value, x._dtype)
    elif isinstance(value, (list, tuple, np.ndarray, Tensor)) or hasattr(value, "__dlpack__"):
        T._fail("assigning an array captured inside a traced function is not supported; pass it to "
                "the kernel as an argument (or assign a number)")
    else:
        T._fail(f"cannot assign a {type(value).__name__} to a traced tensor")
    if v._dtype != x._dtype:
        v = T.astype(v, x._dtype)
    vshape = list(v.shape)
    while len(vshape) > len(shape) and vshape[0] == 1:
        vshape.pop(0)
    ok = len(vshape) <= len(shape) and all(a in (1, b) for a, b in zip(vshape[::-1], shape[::-1]))
    if not ok:
        T._fail(f"could not broadcast a value of shape {list(v.shape)} into the indexed shape {list(shape)}")
    if vshape != list(v.shape):
        v = T.reshape(v, vshape)
    return _expand(v, shape)


def _range(graph, start, step, size):
    stop = start + step * size
    return T.Sym(graph, graph.add("range", [], {"start": float(start), "limit": float(stop), "delta": float(step),
                                                "dtype": "i64"}, T._where())[0])


def set(x, key, value):
    """The traced value of x after ``x[key] = value`` (NumPy's semantics; a position named
    twice by index arrays gets the last value written, in row-major order)."""
    k = _Key(x, key, writing=True)
    shape = k.result_shape()
    v = _value(x, value, shape)
    axes = k.result_axes()
    dims = k.dims()
    # Trailing dimensions taken whole stay slices of the scatter's updates.
    whole = 0
    while whole < len(k.items) and k.items[-1 - whole] != "new" and isinstance(k.items[-1 - whole], tuple) \
            and k.items[-1 - whole] == (0, 1, x.shape[len(dims) - 1 - whole]):
        whole += 1
    if whole == x.ndim:  # x[...] = v, x[:] = v: v itself (reshaped where None added axes)
        return T.reshape(v, x.shape) if v.shape != x.shape else v
    graph = x._g
    lead_axes = len(shape) - whole  # the indexed shape's axes the coordinates span
    lead_shape = list(shape[:lead_axes])
    position = {}  # result axis of each sliced dimension, and of the advanced block
    at = 0
    for a in axes:
        if a[0] == "slice":
            position[a[1]] = at
        elif a[0] == "advanced":
            position["advanced"] = at
        at += len(k.broadcast) if a[0] == "advanced" else 1
    columns = []
    for d, entry in dims[:x.ndim - whole]:
        if isinstance(entry, tuple):
            c = _range(graph, *entry)
            place = [1] * lead_axes
            place[position[d]] = entry[2]
            c = T.reshape(c, place)
        elif isinstance(entry, int) and not k.advanced:
            c = _literal_index(graph, np.array([entry], np.int64))
        else:
            c = T.astype(_index_sym(graph, entry), "i64")
            b = k.broadcast
            c = T.reshape(c, [1] * (len(b) - c.ndim) + list(c.shape)) if c.ndim < len(b) else c
            start = position["advanced"]
            place = [1] * start + list(c.shape) + [1] * (lead_axes - start - len(b))
            if list(c.shape) != place:
                c = T.reshape(c, place)
        c = _expand(c, lead_shape) if lead_shape else c
        columns.append(T.reshape(c, lead_shape + [1]))
    coords = columns[0] if len(columns) == 1 else T.call("concat", columns, {"axis": -1})
    return T.call("scatter_nd", [x, coords, v], {"reduction": "none"})
