"""Cases of the indexing ops (src/ops/defs/Indexing.cpp): gathers, scatters, one_hot and
topk against NumPy, the gathers' backward ops against PyTorch autograd in float64.
Indices are in range (negative ones included, counted from the end): an out-of-range
index is a run-time error on sim and clamped on cpu, which these cases do not test.
Scatters with reduction none use distinct positions (ONNX leaves repeats undefined)."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(11)


def rnd(shape, dt=np.float32):
    if np.issubdtype(dt, np.integer):
        return RNG.integers(-50, 50, size=shape).astype(dt)
    return RNG.uniform(-1, 1, size=shape).astype(dt)


def idx(n, shape, it=np.int64):
    """Indices into an axis of size n, in [-n, n)."""
    return RNG.integers(-n, n, size=shape).astype(it)


def take_along(x, i, axis):
    return np.take_along_axis(x, np.where(i < 0, i + x.shape[axis], i), axis=axis)


def gather_nd(x, i, b):
    i = np.where(i < 0, i + np.array(x.shape[b:b + i.shape[-1]]), i)
    out = np.empty(i.shape[:-1] + x.shape[b + i.shape[-1]:], x.dtype)
    for pos in np.ndindex(*i.shape[:-1]):
        out[pos] = x[tuple(pos[:b]) + tuple(i[pos])]
    return out


def scatter_elements(x, i, u, axis, reduction):
    y = x.copy()
    i = np.where(i < 0, i + x.shape[axis], i)
    for pos in np.ndindex(*i.shape):
        at = list(pos)
        at[axis] = i[pos]
        at = tuple(at)
        if reduction == "none":
            y[at] = u[pos]
        elif reduction == "add":
            y[at] += u[pos]
        elif reduction == "mul":
            y[at] *= u[pos]
        elif reduction == "max":
            y[at] = max(y[at], u[pos])
        else:
            y[at] = min(y[at], u[pos])
    return y


def scatter_nd(x, i, u, reduction):
    y = x.copy()
    m = i.shape[-1]
    i = np.where(i < 0, i + np.array(x.shape[:m]), i)
    f = {"none": lambda a, b: b, "add": np.add, "mul": np.multiply, "max": np.maximum,
         "min": np.minimum}[reduction]
    for pos in np.ndindex(*i.shape[:-1]):
        at = tuple(i[pos])
        y[at] = f(y[at], u[pos])
    return y


def distinct(n, count, it=np.int64):
    """`count` distinct positions of an axis of size n, some written negative."""
    p = RNG.permutation(n)[:count]
    return np.where(RNG.random(count) < 0.5, p - n, p).astype(it)


def grad_ref(fn, wrt, out):
    def ref(i, a):
        import torch
        ts = {k: torch.tensor(v.astype(np.float64) if v.dtype.kind == "f" else v.astype(np.int64),
                              requires_grad=k == wrt) for k, v in i.items()}
        fn(ts, a).backward(torch.tensor(i["dY"].astype(np.float64)))
        return {out: ts[wrt].grad.numpy()}
    return ref


def cases():
    out = []
    F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64
    # gather: any ranks, negative axis, a scalar index, i32 and i64 indices
    for dt, xs, ishape, axis, it in ((F32, (7, 4), (2, 3), 0, I64), (F64, (3, 5, 2), (4,), -2, I32),
                                     (I32, (6, 3), (), 1, I64), (F32, (2, 3, 5), (2, 2), 2, I32)):
        x = rnd(xs, dt)
        out.append(Case("gather", {"X": x, "Idx": idx(xs[axis], ishape, it)},
                        lambda i, a: {"Y": np.take(i["X"], np.where(i["Idx"] < 0, i["Idx"] + i["X"].shape[a["axis"]], i["Idx"]), axis=a["axis"])},
                        {"axis": axis}))
    out.append(Case("index_select", {"X": rnd((4, 6), F64), "Idx": RNG.integers(0, 6, 5).astype(I64)},
                    lambda i, a: {"Y": i["X"][:, i["Idx"]]}, {"dim": 1}))
    out.append(Case("index_select", {"X": rnd((4, 6), F32), "Idx": RNG.integers(0, 4, 3).astype(I32)},
                    lambda i, a: {"Y": i["X"][i["Idx"]]}, {"dim": 0}))
    for dt, it in ((F32, I64), (F64, I32)):
        out.append(Case("embedding", {"Idx": RNG.integers(0, 11, (2, 5)).astype(it), "W": rnd((11, 3), dt)},
                        lambda i, a: {"Y": i["W"][i["Idx"]]}))
    # gather_elements: Idx smaller than X off the axis, and equal
    for dt, xs, ishape, axis in ((F32, (4, 6), (3, 5), 1), (F64, (5, 3), (7, 3), 0),
                                 (I64, (2, 3, 4), (2, 3, 2), -1)):
        out.append(Case("gather_elements", {"X": rnd(xs, dt), "Idx": idx(xs[axis], ishape)},
                        lambda i, a: {"Y": take_along(i["X"][tuple(slice(0, s) if d != a["axis"] % i["X"].ndim else slice(None) for d, s in enumerate(i["Idx"].shape))], i["Idx"], a["axis"])},
                        {"axis": axis}))
    # gather_nd, with and without batch dims
    for dt, xs, ishape, b in ((F32, (5, 4, 3), (2, 2), 0), (F64, (6, 5), (3, 2, 1), 0),
                              (F32, (2, 4, 3), (2, 5, 2), 1), (I32, (4, 3), (3, 2), 0)):
        m = ishape[-1]
        i = np.stack([idx(xs[b + k], ishape[:-1]) for k in range(m)], axis=-1)
        out.append(Case("gather_nd", {"X": rnd(xs, dt), "Idx": i},
                        lambda i, a: {"Y": gather_nd(i["X"], i["Idx"], a["batch_dims"])},
                        {"batch_dims": b}))
    # scatter_elements: every reduction
    for dt, red in ((F32, "none"), (F64, "add"), (F32, "mul"), (I32, "max"), (F64, "min")):
        x = rnd((5, 4), dt)
        if red == "none":
            i = np.stack([distinct(5, 3) for _ in range(4)], axis=1)[:, :3]
        else:
            i = idx(5, (3, 3))
        out.append(Case("scatter_elements", {"X": x, "Idx": i, "U": rnd((3, 3), dt)},
                        lambda i, a: {"Y": scatter_elements(i["X"], i["Idx"], i["U"], a["axis"], a["reduction"])},
                        {"axis": 0, "reduction": red}))
    out.append(Case("scatter_elements", {"X": rnd((3, 6), F32), "Idx": np.stack([distinct(6, 4) for _ in range(3)]),
                                         "U": rnd((3, 4), F32)},
                    lambda i, a: {"Y": scatter_elements(i["X"], i["Idx"], i["U"], 1, "none")},
                    {"axis": -1, "reduction": "none"}))
    # scatter_nd: rows and single elements
    for dt, red, xs, m, n in ((F32, "none", (6, 4), 1, 3), (F64, "add", (5, 4), 2, 6),
                              (I64, "mul", (4, 3, 2), 1, 5), (F32, "max", (6, 3), 1, 4)):
        if red == "none":
            i = distinct(xs[0], n).reshape(n, 1)
        else:
            i = np.stack([idx(xs[k], (n,)) for k in range(m)], axis=-1)
        u = rnd((n,) + xs[m:], dt)
        out.append(Case("scatter_nd", {"X": rnd(xs, dt), "Idx": i, "U": u},
                        lambda i, a: {"Y": scatter_nd(i["X"], i["Idx"], i["U"], a["reduction"])},
                        {"reduction": red}))
    # one_hot: axes, values, dtypes; out-of-range indices give a row of `off`
    for it, ishape, attrs in ((I64, (3, 4), {"depth": 5}),
                              (I32, (4,), {"depth": 3, "axis": 0, "values": [-1.0, 2.5], "dtype": "f64"}),
                              (I64, (2, 3), {"depth": 4, "axis": 1, "dtype": "i32"})):
        i = RNG.integers(-attrs["depth"] - 2, attrs["depth"] + 2, size=ishape).astype(it)

        def ref(i, a):
            d = a["depth"]
            v = a.get("values", [0.0, 1.0])
            k = np.where(i["Idx"] < 0, i["Idx"] + d, i["Idx"])
            hot = np.expand_dims(k, -1) == np.arange(d)
            y = np.where(hot, v[1], v[0])
            y = np.moveaxis(y, -1, a.get("axis", -1))
            return {"Y": y.astype({"f32": F32, "f64": F64, "i32": I32}[a.get("dtype", "f32")])}
        out.append(Case("one_hot", {"Idx": i}, ref, attrs))
    # topk: largest/smallest, axes, ties (coarse values) and NaN
    # The first four rank every element (O(n^2)); the rest have rows long enough for the
    # chain of k selections (3k + 2 <= n / 4): NaNs (more than k in some rows, so the
    # outputs come wholly from the NaN chain or wholly from the values), -inf, many ties.
    for dt, shape, attrs in ((F32, (3, 9), {"k": 4}), (F64, (5, 4, 3), {"k": 2, "axis": 1, "largest": 0}),
                             (I32, (4, 7), {"k": 7, "axis": -1}), (F32, (2, 6), {"k": 3, "largest": 0}),
                             (F32, (4, 70), {"k": 3}), (F32, (3, 80), {"k": 4, "largest": 0}),
                             (F64, (2, 64, 3), {"k": 2, "axis": 1}), (I32, (3, 90), {"k": 5}),
                             (I32, (2, 100), {"k": 6, "largest": 0}), (F32, (130,), {"k": 8})):
        x = (np.round(rnd(shape, F64) * 3) / 3).astype(dt) if dt != I32 else RNG.integers(-3, 3, shape).astype(dt)
        if dt == F32 and attrs.get("largest", 1) == 0:
            x[0, 2] = np.nan
        if shape[-1] >= 64 and dt != I32:
            flat = x.reshape(-1)  # a view: NaNs and infinities land in x
            flat[RNG.choice(flat.size, flat.size // 12, replace=False)] = np.nan
            flat[RNG.choice(flat.size, 3, replace=False)] = -np.inf
            if x.ndim == 2:
                x[-1, :20] = np.nan  # a row with more NaNs than k
        if dt == I32 and shape[-1] >= 64:
            x[0, ::7] = np.iinfo(np.int32).min  # the reduction's fill value, also a real value

        def ref(i, a):
            import torch
            v, ix = torch.topk(torch.tensor(i["X"]), a["k"], dim=a.get("axis", -1),
                               largest=bool(a.get("largest", 1)), sorted=True)
            # torch's order among equal values is not specified: take NumPy's stable
            # order (lower index first), which the op promises.
            x = i["X"]
            # (negated in i64: -INT32_MIN does not fit an i32)
            key = -x.astype(np.int64 if x.dtype.kind == "i" else x.dtype) if a.get("largest", 1) else x
            if x.dtype.kind == "f":
                key = np.where(np.isnan(x), -np.inf if a.get("largest", 1) else np.inf, key)
            order = np.argsort(key, axis=a.get("axis", -1), kind="stable")
            order = np.take(order, range(a["k"]), axis=a.get("axis", -1))
            return {"Values": np.take_along_axis(x, order, axis=a.get("axis", -1)),
                    "Indices": order.astype(np.int64)}
        out.append(Case("topk", {"X": x}, ref, attrs))
    out += grad_cases()
    return out


def grad_cases():
    try:
        import torch
    except ImportError:
        return []
    out = []
    F64, F32 = np.float64, np.float32

    def norm(t, n):
        return torch.where(t < 0, t + n, t)
    out.append(Case("gather_grad", {"X": rnd((5, 4), F64), "Idx": idx(5, (2, 3)), "dY": rnd((2, 3, 4), F64)},
                    grad_ref(lambda t, a: t["X"][norm(t["Idx"], 5)], "X", "dX"), {"axis": 0}))
    out.append(Case("gather_grad", {"X": rnd((3, 6), F32), "Idx": idx(6, (4,), np.int32), "dY": rnd((3, 4), F32)},
                    grad_ref(lambda t, a: t["X"][:, norm(t["Idx"], 6)], "X", "dX"), {"axis": -1}))
    out.append(Case("index_select_grad", {"X": rnd((4, 5), F64), "Idx": RNG.integers(0, 5, 7), "dY": rnd((4, 7), F64)},
                    grad_ref(lambda t, a: torch.index_select(t["X"], 1, t["Idx"]), "X", "dX"), {"dim": 1}))
    out.append(Case("embedding_grad", {"Idx": RNG.integers(0, 6, (3, 4)), "W": rnd((6, 5), F64), "dY": rnd((3, 4, 5), F64)},
                    grad_ref(lambda t, a: torch.nn.functional.embedding(t["Idx"], t["W"]), "W", "dW")))
    out.append(Case("gather_elements_grad", {"X": rnd((4, 6), F64), "Idx": idx(6, (3, 5)), "dY": rnd((3, 5), F64)},
                    grad_ref(lambda t, a: torch.gather(t["X"], 1, norm(t["Idx"], 6)), "X", "dX"), {"axis": 1}))
    i = np.stack([idx(5, (4,)), idx(4, (4,))], axis=-1)
    out.append(Case("gather_nd_grad", {"X": rnd((5, 4, 3), F64), "Idx": i, "dY": rnd((4, 3), F64)},
                    grad_ref(lambda t, a: t["X"][norm(t["Idx"][:, 0], 5), norm(t["Idx"][:, 1], 4)], "X", "dX")))
    return out
