"""Cases of the data movement ops (src/ops/defs/DataMovement.cpp): reshape-like copies,
transpose, concat, split, slice, expand, tile, flip, pad, triu/tril, depth/space, cast,
range against NumPy; their backward ops against PyTorch autograd in float64. Small odd
shapes, f32 and f64 (and an integer dtype where the op only moves data), one case per
main attribute variant."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(5)


def rnd(shape, dt=np.float32):
    if np.issubdtype(dt, np.integer):
        return RNG.integers(-50, 50, size=shape).astype(dt)
    return RNG.uniform(-1, 1, size=shape).astype(dt)


def fwd(fn, out="Y"):
    """A reference from a NumPy function of (inputs, attrs) returning one output."""
    return lambda i, a: {out: fn(i, a)}


def grad_ref(fn, wrt=("X",), grads=("dY",), outs=("dX",)):
    """dX (etc.) from PyTorch autograd in float64: fn(tensors by port, attrs) returns the
    forward output(s) in the order of `grads`."""
    def ref(i, a):
        import torch
        ts = {k: torch.tensor(v.astype(np.float64) if v.dtype.kind == "f" else v,
                              requires_grad=k in wrt) for k, v in i.items()}
        ys = fn(ts, a)
        ys = ys if isinstance(ys, (list, tuple)) else [ys]
        torch.autograd.backward(list(ys), [torch.tensor(i[g].astype(np.float64)) for g in grads])
        return {o: ts[w].grad.numpy() for o, w in zip(outs, wrt)}
    return ref


def onnx_reshape(x, shape):
    shape = [x.shape[d] if s == 0 else s for d, s in enumerate(shape)]
    return x.reshape(shape)


def onnx_slice_index(shape, starts, ends, axes, steps):
    """The NumPy index of an ONNX Slice (Python slices clamp the same way)."""
    idx = [slice(None)] * len(shape)
    axes = axes or list(range(len(starts)))
    steps = steps or [1] * len(starts)
    for s, e, a, st in zip(starts, ends, axes, steps):
        n = shape[a]
        if st < 0 and e < -n:
            e = None  # past the front: Python would wrap -n-1 to n-1
        idx[a] = slice(s, e, st)
    return tuple(idx)


def onnx_pads(rank, pads, axes=None):
    axes = axes or list(range(rank))
    width = [(0, 0)] * rank
    for k, a in enumerate(axes):
        width[a] = (pads[k], pads[k + len(axes)])
    return width


def np_pad(x, pads, mode, value=0.0):
    width = onnx_pads(x.ndim, pads)
    # Negative pads crop first.
    crop = tuple(slice(max(-b, 0), x.shape[d] - max(-e, 0)) for d, (b, e) in enumerate(width))
    x = x[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in width]
    if mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=value)
    return np.pad(x, width, mode={"reflect": "reflect", "edge": "edge"}[mode])


def depth_to_space(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(x, b):
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


def forward_cases():
    out = []
    F32, F64 = np.float32, np.float64
    # reshape family
    for dt, shape, target in ((F32, (2, 3, 5), [0, -1]), (F64, (6, 5), [5, 3, 2]),
                              (np.int32, (3, 4), [-1])):
        out.append(Case("reshape", {"X": rnd(shape, dt)},
                        fwd(lambda i, a: onnx_reshape(i["X"], a["shape"])), {"shape": target}))
    out.append(Case("flatten", {"X": rnd((2, 3, 5), F32)},
                    fwd(lambda i, a: i["X"].reshape(6, 5)), {"axis": 2}))
    out.append(Case("squeeze", {"X": rnd((1, 3, 1, 5), F64)},
                    fwd(lambda i, a: i["X"].reshape(3, 1, 5)), {"axes": [0]}))
    out.append(Case("squeeze", {"X": rnd((1, 3, 1, 5), F32)},
                    fwd(lambda i, a: i["X"].reshape(3, 5))))
    out.append(Case("unsqueeze", {"X": rnd((3, 5), F32)},
                    fwd(lambda i, a: i["X"].reshape(1, 3, 5, 1)), {"axes": [0, -1]}))
    out.append(Case("identity", {"X": rnd((4, 3), np.int64)}, fwd(lambda i, a: i["X"])))
    # transpose
    for dt, shape, perm in ((F32, (2, 3, 5, 4), [0, 2, 1, 3]), (F64, (3, 5, 2), []),
                            (np.int64, (3, 7), [1, 0])):
        out.append(Case("transpose", {"X": rnd(shape, dt)},
                        fwd(lambda i, a: np.transpose(i["X"], a["perm"] or None)), {"perm": perm}))
    # concat / split
    for dt, shapes, axis in ((F32, [(3, 2), (3, 5), (3, 1)], 1), (F64, [(2, 3, 4), (1, 3, 4)], 0),
                             (np.int32, [(2, 3), (2, 4)], -1)):
        ins = {f"X{k}": rnd(s, dt) for k, s in enumerate(shapes)}
        out.append(Case("concat", ins,
                        fwd(lambda i, a: np.concatenate(list(i.values()), axis=a["axis"])),
                        {"axis": axis}))
    for dt, shape, attrs in ((F32, (3, 7), {"axis": 1, "split": [2, 4, 1]}),
                             (F64, (7, 2), {"axis": 0, "num_outputs": 3}),
                             (np.int64, (2, 6), {"axis": -1, "num_outputs": 2})):
        def ref(i, a):
            x, ax = i["X"], a["axis"]
            if "split" in a:
                parts = np.split(x, np.cumsum(a["split"])[:-1], axis=ax)
            else:
                n = x.shape[ax]
                each = -(-n // a["num_outputs"])
                parts = np.split(x, list(range(each, n, each)), axis=ax)
            return {f"Y{k}": p for k, p in enumerate(parts)}
        out.append(Case("split", {"X": rnd(shape, dt)}, ref, attrs))
    # slice: steps both ways, clamping, negative positions, axes subset
    for dt, shape, attrs in (
            (F32, (5, 9), {"starts": [1, -8], "ends": [4, 100], "axes": [], "steps": [1, 3]}),
            (F64, (5, 9), {"starts": [-1, 7], "ends": [-100, 0], "axes": [0, 1], "steps": [-2, -3]}),
            (F32, (3, 4, 6), {"starts": [2], "ends": [5], "axes": [-1], "steps": []}),
            (np.int32, (7,), {"starts": [10], "ends": [-10], "axes": [0], "steps": [-1]})):
        out.append(Case("slice", {"X": rnd(shape, dt)},
                        fwd(lambda i, a: i["X"][onnx_slice_index(
                            i["X"].shape, a["starts"], a["ends"], a["axes"], a["steps"])]), attrs))
    # expand, tile, flip
    for dt, shape, target in ((F32, (3, 1), [2, 3, 5]), (F64, (1, 4), [3, 1]),
                              (np.int64, (2, 1, 3), [2, 4, 3])):
        out.append(Case("expand", {"X": rnd(shape, dt)},
                        fwd(lambda i, a: i["X"] * np.ones(a["shape"], i["X"].dtype)),
                        {"shape": target}))
    for dt, shape, reps in ((F32, (2, 3), [3, 2]), (F64, (3, 1, 2), [1, 4, 1])):
        out.append(Case("tile", {"X": rnd(shape, dt)}, fwd(lambda i, a: np.tile(i["X"], a["repeats"])),
                        {"repeats": reps}))
    for dt, shape, axes in ((F32, (3, 5), []), (F64, (2, 3, 4), [0, -1]), (np.int32, (5,), [0])):
        out.append(Case("flip", {"X": rnd(shape, dt)},
                        fwd(lambda i, a: np.flip(i["X"], axis=tuple(a["axes"]) or None)),
                        {"axes": axes}))
    # pad: each mode, negative pads (crop), an axes subset
    for dt, shape, attrs in (
            (F32, (3, 4), {"pads": [1, 2, 2, 0], "mode": "constant", "value": 1.5}),
            (F64, (3, 5), {"pads": [2, 1, 1, 4], "mode": "reflect"}),
            (F32, (2, 3, 4), {"pads": [0, 2, 1, 1, 0, 3], "mode": "edge"}),
            (F64, (4, 5), {"pads": [-1, 2, 1, -2], "mode": "constant"}),
            (np.int32, (3, 3), {"pads": [1, 1, 1, 1], "mode": "constant", "value": 7})):
        out.append(Case("pad", {"X": rnd(shape, dt)},
                        fwd(lambda i, a: np_pad(i["X"], a["pads"], a["mode"], a.get("value", 0.0))),
                        attrs))
    out.append(Case("pad", {"X": rnd((3, 4, 5), F32)},
                    fwd(lambda i, a: np.pad(i["X"], [(0, 0), (1, 2), (0, 0)], mode="reflect")),
                    {"pads": [1, 2], "mode": "reflect", "axes": [1]}, label="-axes"))
    # triu / tril
    for name, fn in (("triu", np.triu), ("tril", np.tril)):
        for dt, shape, k in ((F32, (4, 6), 0), (F64, (2, 5, 3), -1), (np.int64, (3, 3), 2)):
            out.append(Case(name, {"X": rnd(shape, dt)}, fwd(lambda i, a, fn=fn: fn(i["X"], a["k"])),
                            {"k": k}))
    # depth_to_space / space_to_depth
    for dt, mode in ((F32, "DCR"), (F64, "CRD")):
        out.append(Case("depth_to_space", {"X": rnd((2, 12, 3, 2), dt)},
                        fwd(lambda i, a: depth_to_space(i["X"], a["blocksize"], a["mode"])),
                        {"blocksize": 2, "mode": mode}))
    for dt, shape, b in ((F32, (2, 3, 4, 6), 2), (F64, (1, 1, 6, 3), 3)):
        out.append(Case("space_to_depth", {"X": rnd(shape, dt)},
                        fwd(lambda i, a: space_to_depth(i["X"], a["blocksize"])), {"blocksize": b}))
    # cast
    xs = RNG.uniform(-20, 20, size=(3, 5))
    for src, to in ((F32, "f64"), (F64, "f16"), (F32, "i32"), (np.int64, "f32"), (np.int32, "bool"),
                    (np.bool_, "f32")):
        x = (xs > 0) if src == np.bool_ else (np.round(xs) if src != F32 else xs).astype(src)
        out.append(Case("cast", {"X": x.astype(src)},
                        fwd(lambda i, a: i["X"].astype({"f64": F64, "f16": np.float16, "i32": np.int32,
                                                         "f32": F32, "bool": np.bool_}[a["to"]])),
                        {"to": to}))
    # range
    for attrs in ({"start": 0, "limit": 7, "delta": 1, "dtype": "i64"},
                  {"start": 10, "limit": -3, "delta": -4, "dtype": "i32"},
                  {"start": 0.5, "limit": 3.2, "delta": 0.25, "dtype": "f32"},
                  {"start": -1.0, "limit": 1.0, "delta": 0.3, "dtype": "f64"}):
        def ref(i, a):
            dt = {"i64": np.int64, "i32": np.int32, "f32": F32, "f64": F64}[a["dtype"]]
            n = int(np.ceil((a["limit"] - a["start"]) / a["delta"]))
            return {"Y": (a["start"] + np.arange(n) * a["delta"]).astype(dt)}
        out.append(Case("range", {}, ref, attrs, label="-" + attrs["dtype"]))
    return out


def grad_cases():
    import_torch_ok = True
    try:
        import torch  # noqa: F401
    except ImportError:
        import_torch_ok = False
    if not import_torch_ok:
        return []
    out = []
    F32, F64 = np.float32, np.float64

    def case(op, x_shape, y_shape, fn, attrs=None, dt=F64, extra=None):
        ins = {"X": rnd(x_shape, dt)}
        ins.update(extra or {})
        ins["dY"] = rnd(y_shape, dt)
        out.append(Case(op, ins, grad_ref(fn), attrs))

    case("reshape_grad", (2, 3, 5), (6, 5), lambda t, a: t["X"].reshape(6, 5), {"shape": [-1, 5]})
    case("flatten_grad", (2, 3, 5), (2, 15), lambda t, a: t["X"].reshape(2, 15), {"axis": 1}, F32)
    case("squeeze_grad", (1, 3, 1), (3,), lambda t, a: t["X"].reshape(3))
    case("unsqueeze_grad", (3, 2), (3, 1, 2), lambda t, a: t["X"].unsqueeze(1), {"axes": [1]})
    case("identity_grad", (4, 3), (4, 3), lambda t, a: t["X"] * 1, dt=F32)
    case("transpose_grad", (2, 3, 5), (5, 2, 3), lambda t, a: t["X"].permute(2, 0, 1),
         {"perm": [2, 0, 1]})
    case("expand_grad", (3, 1), (2, 3, 5), lambda t, a: t["X"].expand(2, 3, 5), {"shape": [2, 1, 5]})
    case("tile_grad", (2, 3), (6, 6), lambda t, a: t["X"].repeat(3, 2), {"repeats": [3, 2]}, F32)
    case("flip_grad", (3, 4), (3, 4), lambda t, a: t["X"].flip(1), {"axes": [1]})
    for attrs, yshape, sl in (
            ({"starts": [1, -8], "ends": [4, 100], "steps": [1, 3]}, (3, 3),
             (slice(1, 4), slice(1, 9, 3))),
            ({"starts": [-1], "ends": [-100], "axes": [1], "steps": [-2]}, (5, 5),
             (slice(None), slice(8, None, -2)))):
        def fn(t, a, sl=sl):
            x = t["X"]
            if sl[1].step and sl[1].step < 0:  # torch has no negative steps: flip, then step
                return x.flip(1)[:, ::-sl[1].step]
            return x[sl]
        case("slice_grad", (5, 9), yshape, fn, attrs)
    import torch.nn.functional as Fn
    case("pad_grad", (3, 4), (6, 5), lambda t, a: Fn.pad(t["X"], (1, 0, 1, 2), value=0.0),
         {"pads": [1, 1, 2, 0]})
    case("pad_grad", (4, 5), (5, 2), lambda t, a: Fn.pad(t["X"], (-1, -2, 2, -1)),
         {"pads": [2, -1, -1, -2]})
    case("pad_grad", (2, 3, 5), (2, 5, 8), lambda t, a: Fn.pad(t["X"], (2, 1, 1, 1), mode="reflect"),
         {"pads": [1, 2, 1, 1], "mode": "reflect", "axes": [1, 2]})
    case("pad_grad", (1, 3, 4), (1, 6, 7), lambda t, a: Fn.pad(t["X"], (2, 1, 0, 3), mode="replicate"),
         {"pads": [0, 2, 3, 1], "mode": "edge", "axes": [1, 2]}, F32)
    case("triu_grad", (4, 5), (4, 5), lambda t, a: torch.triu(t["X"], 1), {"k": 1})
    case("tril_grad", (2, 4, 3), (2, 4, 3), lambda t, a: torch.tril(t["X"], -1), {"k": -1})
    case("depth_to_space_grad", (1, 8, 2, 3), (1, 2, 4, 6),
         lambda t, a: Fn.pixel_shuffle(t["X"], 2), {"blocksize": 2, "mode": "CRD"})
    case("space_to_depth_grad", (2, 2, 4, 2), (2, 8, 2, 1),
         lambda t, a: t["X"].reshape(2, 2, 2, 2, 1, 2).permute(0, 3, 5, 1, 2, 4).reshape(2, 8, 2, 1),
         {"blocksize": 2})
    ins = {"X": rnd((3, 4), F32), "dY": rnd((3, 4), F64)}
    out.append(Case("cast_grad", ins, grad_ref(lambda t, a: t["X"].to(torch.float64)), {"to": "f64"}))
    # concat / split (variadic gradients)
    ins = {"X0": rnd((2, 3)), "X1": rnd((2, 1)), "X2": rnd((2, 4)), "dY": rnd((2, 8))}
    out.append(Case("concat_grad", ins,
                    grad_ref(lambda t, a: torch.cat([t["X0"], t["X1"], t["X2"]], 1),
                             wrt=("X0", "X1", "X2"), outs=("dX0", "dX1", "dX2")), {"axis": 1}))
    ins = {"X": rnd((5, 3)), "dY0": rnd((2, 3)), "dY1": rnd((2, 3)), "dY2": rnd((1, 3))}
    out.append(Case("split_grad", ins,
                    grad_ref(lambda t, a: torch.split(t["X"], 2, 0), grads=("dY0", "dY1", "dY2")),
                    {"axis": 0, "num_outputs": 3}))
    return out


def cases():
    return forward_cases() + grad_cases()
