"""Cases of the backward ops of topk, scatter_elements and scatter_nd against PyTorch
autograd in float64 (torch.topk, Tensor.scatter / scatter_add, index_put with and
without accumulate, which is scatter_nd's gradient). Positions are in range, negative
ones included."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(51)
F32, F64 = np.float32, np.float64


def rnd(shape, dt):
    return RNG.uniform(-1, 1, size=shape).astype(dt)


def idx(n, shape, it=np.int64):
    return RNG.integers(-n, n, size=shape).astype(it)


def positive(t, n):
    import torch
    return torch.where(t < 0, t + n, t)


def tensors(i):
    import torch
    return {k: torch.tensor(v.astype(np.float64) if v.dtype.kind == "f" else v.astype(np.int64),
                            requires_grad=v.dtype.kind == "f" and k != "dY")
            for k, v in i.items()}


def scatter_elements_ref(i, a):
    import torch
    t = tensors(i)
    axis = a["axis"] % i["X"].ndim
    n = i["X"].shape[axis]
    if a["reduction"] == "add":
        y = t["X"].scatter_add(axis, positive(t["Idx"], n), t["U"])
    else:
        y = t["X"].scatter(axis, positive(t["Idx"], n), t["U"])
    y.backward(t["dY"])
    return {"dX": t["X"].grad.numpy(), "dU": t["U"].grad.numpy()}


def scatter_nd_ref(i, a):
    t = tensors(i)
    m = i["Idx"].shape[-1]
    at = tuple(positive(t["Idx"][..., d], i["X"].shape[d]) for d in range(m))
    y = t["X"].index_put(at, t["U"], accumulate=a["reduction"] == "add")
    y.backward(t["dY"])
    return {"dX": t["X"].grad.numpy(), "dU": t["U"].grad.numpy()}


def topk_ref(i, a):
    import torch
    t = tensors({"X": i["X"]})
    v, ix = torch.topk(t["X"], a["k"], dim=a.get("axis", -1), largest=bool(a.get("largest", 1)))
    v.backward(torch.tensor(i["dValues"].astype(np.float64)))
    # The op takes topk's Indices as given: check they are the ones torch chose (no ties).
    assert (ix.numpy() == i["Indices"]).all()
    return {"dX": t["X"].grad.numpy()}


def topk_case(dt, shape, attrs, it=np.int64):
    import torch
    x = rnd(shape, dt)
    _, ix = torch.topk(torch.tensor(x), attrs["k"], dim=attrs.get("axis", -1),
                       largest=bool(attrs.get("largest", 1)))
    ix = ix.numpy().astype(it)
    return Case("topk_grad", {"X": x, "Indices": ix, "dValues": rnd(ix.shape, dt)}, topk_ref, attrs)


def cases():
    try:
        import torch  # noqa: F401
    except ImportError:
        return []
    out = [topk_case(F64, (3, 7), {"k": 3}),
           topk_case(F32, (4, 5, 3), {"k": 2, "axis": 1, "largest": 0}, np.int32),
           topk_case(F64, (6,), {"k": 6, "axis": 0})]
    # scatter_elements: none (distinct positions per column) and add (repeats), both axes
    x = rnd((5, 4), F64)
    i = np.stack([RNG.permutation(5)[:3] - 5 * (RNG.random(3) < 0.5) for _ in range(3)], axis=1)
    out.append(Case("scatter_elements_grad", {"X": x, "Idx": i.astype(np.int64), "U": rnd((3, 3), F64),
                                              "dY": rnd((5, 4), F64)},
                    scatter_elements_ref, {"axis": 0, "reduction": "none"}))
    out.append(Case("scatter_elements_grad", {"X": rnd((3, 7), F32), "Idx": idx(7, (2, 9), np.int32),
                                              "U": rnd((2, 9), F32), "dY": rnd((3, 7), F32)},
                    scatter_elements_ref, {"axis": -1, "reduction": "add"}))
    out.append(Case("scatter_elements_grad", {"X": rnd((4, 3, 5), F64), "Idx": idx(3, (4, 2, 5)),
                                              "U": rnd((4, 2, 5), F64), "dY": rnd((4, 3, 5), F64)},
                    scatter_elements_ref, {"axis": 1, "reduction": "add"}))
    # scatter_nd: whole rows (none, distinct) and single elements (add, repeats)
    rows = (RNG.permutation(6)[:4] - 6 * (RNG.random(4) < 0.5)).reshape(4, 1).astype(np.int64)
    out.append(Case("scatter_nd_grad", {"X": rnd((6, 3), F64), "Idx": rows, "U": rnd((4, 3), F64),
                                        "dY": rnd((6, 3), F64)},
                    scatter_nd_ref, {"reduction": "none"}))
    elems = np.stack([idx(5, (7,)), idx(4, (7,))], axis=-1)
    out.append(Case("scatter_nd_grad", {"X": rnd((5, 4), F32), "Idx": elems, "U": rnd((7,), F32),
                                        "dY": rnd((5, 4), F32)},
                    scatter_nd_ref, {"reduction": "add"}))
    out.append(Case("scatter_nd_grad", {"X": rnd((5, 4, 2), F64), "Idx": elems[:3], "U": rnd((3, 2), F64),
                                        "dY": rnd((5, 4, 2), F64)},
                    scatter_nd_ref, {"reduction": "add"}))
    return out
