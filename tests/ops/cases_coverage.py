"""Cases of the ops and backward ops added by the issue-5 coverage audit: the gradients of
where, mod, fmod, reduce_prod (zeros included) and inference batchnorm against PyTorch
autograd in float64, and the ONNX ops the audit added (add_n, mean_n and their gradients,
hardmax, lp_normalization, mean_variance_normalization, eye_like) against NumPy."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(4242)
F32, F64 = np.float32, np.float64


def rand(shape, dt=F64, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dt)


def autograd(fn, wrt, others, dy, out_names=None):
    """{"d" + name: gradient} of fn(**tensors) for the inputs named in `wrt`."""
    import torch
    ts = {k: torch.tensor(v.astype(F64) if v.dtype.kind == "f" else v, requires_grad=k in wrt)
          for k, v in others.items()}
    y = fn(**ts)
    y.backward(torch.tensor(np.asarray(dy, F64)))
    return {"d" + k: ts[k].grad.numpy() for k in wrt}


def grad_cases():
    import torch
    out = []
    # where: broadcast Cond, A and B, each summed back to its own shape
    for dt, cs, as_, bs in ((F64, (4, 1), (4, 6), (6,)), (F32, (2, 3, 5), (1, 5), (3, 1))):
        c = RNG.uniform(size=cs) > 0.5
        a, b = rand(as_, dt), rand(bs, dt)
        shape = np.broadcast_shapes(cs, as_, bs)
        out.append(Case("where_grad", {"Cond": c, "A": a, "B": b, "dY": rand(shape, dt)},
                        lambda i, at: autograd(lambda Cond, A, B, dY: torch.where(Cond, A, B),
                                               ("A", "B"), i, i["dY"])))
    # mod (floor) and fmod (trunc): A's gradient is dY, B's -dY * floor/trunc(A / B)
    for name, fn in (("mod", torch.remainder), ("fmod", torch.fmod)):
        for dt, as_, bs in ((F64, (3, 7), (3, 7)), (F32, (4, 1, 5), (3, 1))):
            a = rand(as_, dt, -5, 5)
            b = np.where(RNG.uniform(size=bs) < 0.5, -1, 1) * rand(bs, dt, 0.6, 2)
            b = b.astype(dt)
            shape = np.broadcast_shapes(as_, bs)
            out.append(Case(name + "_grad", {"A": a, "B": b, "dC": rand(shape, dt)},
                            lambda i, at, fn=fn: autograd(lambda A, B, dC: fn(A, B), ("A", "B"), i,
                                                          i["dC"])))
    # reduce_prod: no zero, one zero and two zeros in a group
    for dt, axes, kd in ((F64, [1], True), (F32, [0, 2], False), (F64, [], True)):
        x = rand((3, 4, 5), dt, 0.5, 1.5) * np.where(RNG.uniform(size=(3, 4, 5)) < 0.5, -1, 1)
        x = x.astype(dt)
        x[0, 1, 2] = 0
        x[1, 2, 3] = 0
        x[1, 2, 4] = 0
        x[2, 0, 0] = 0

        def prod(X, axes=axes, kd=kd):
            for d in sorted(axes or range(X.dim()), reverse=True):
                X = X.prod(dim=d, keepdim=True)
            return X if kd else X.reshape([s for d, s in enumerate(X.shape) if d not in (axes or range(3))])
        y = prod(torch.tensor(x.astype(F64))).numpy()
        dy = rand(y.shape, dt)
        out.append(Case("reduce_prod_grad", {"X": x, "dY": dy},
                        lambda i, at, prod=prod: autograd(lambda X, dY: prod(X), ("X",), i, i["dY"]),
                        attrs={"axes": axes, "keepdims": kd}, scale=4))
    # inference batchnorm with fixed statistics
    for dt, shape, scale in ((F64, (2, 3, 5, 4), True), (F32, (5, 3), False)):
        c = shape[1]
        ins = {"X": rand(shape, dt, -2, 2)}
        if scale:
            ins["Scale"] = rand((c,), dt)
        ins.update({"Mean": rand((c,), dt), "Var": rand((c,), dt, 0.5, 2), "dY": rand(shape, dt)})

        def ref(i, a):
            import torch.nn.functional as F
            wrt = ("X", "Scale") if "Scale" in i else ("X",)
            g = autograd(lambda X, Mean, Var, dY, Scale=None: F.batch_norm(
                X, Mean, Var, Scale, None, training=False, eps=a.get("epsilon", 1e-5)),
                wrt, i, i["dY"])
            axes = (0,) + tuple(range(2, i["X"].ndim))
            g["dB"] = i["dY"].astype(F64).sum(axis=axes)
            return g
        out.append(Case("batchnorm_grad", ins, ref, attrs={"epsilon": 1e-3} if scale else {}))
    return out


def hardmax_ref(i, a):
    x = i["X"]
    ax = a.get("axis", -1) % x.ndim
    first = np.expand_dims(np.argmax(x, axis=ax), ax)
    y = np.zeros(x.shape)
    np.put_along_axis(y, first, 1.0, axis=ax)
    return {"Y": y}


def lp_ref(i, a):
    x = i["X"].astype(F64)
    ax = a.get("axis", -1)
    n = np.abs(x).sum(ax, keepdims=True) if a.get("p", 2) == 1 else np.sqrt((x * x).sum(ax, keepdims=True))
    return {"Y": x / n}


def mvn_ref(i, a):
    x = i["X"].astype(F64)
    ax = tuple(a.get("axes", [0, 2, 3]))
    mu = x.mean(ax, keepdims=True)
    return {"Y": (x - mu) / (np.sqrt(((x - mu) ** 2).mean(ax, keepdims=True)) + 1e-9)}


def onnx_cases():
    out = []
    # add_n / mean_n (ONNX Sum / Mean): one, two and three inputs with broadcasting
    for name, div in (("add_n", False), ("mean_n", True)):
        for dt, shapes in ((F32, [(3, 5)]), (F64, [(3, 5), (5,)]), (F32, [(2, 1, 4), (3, 1), (4,)])):
            ins = {f"X{k}": rand(s, dt) for k, s in enumerate(shapes)}
            out.append(Case(name, ins, lambda i, a, div=div: {
                "Y": sum(v.astype(F64) for v in i.values()) / (len(i) if div else 1)}))
        shapes = [(2, 1, 4), (3, 1), (4,)]
        ins = {f"X{k}": rand(s) for k, s in enumerate(shapes)}
        ins["dY"] = rand((2, 3, 4))

        def ref(i, a, div=div):
            xs = {k: v for k, v in i.items() if k != "dY"}
            g = autograd(lambda **t: sum(t[k] for k in xs) / (len(xs) if div else 1), tuple(xs), xs, i["dY"])
            return g
        out.append(Case(name + "_grad", ins, ref))
    # hardmax: ties take the first index
    for dt, shape, axis in ((F32, (4, 7), -1), (F64, (3, 5, 2), 1)):
        x = np.round(rand(shape, dt, -2, 2) * 2) / 2
        out.append(Case("hardmax", {"X": x.astype(dt)}, hardmax_ref, attrs={"axis": axis}))
    # lp_normalization
    for dt, shape, attrs in ((F32, (4, 7), {}), (F64, (3, 5, 2), {"axis": 1, "p": 1})):
        out.append(Case("lp_normalization", {"X": rand(shape, dt)}, lp_ref, attrs=attrs))
    # mean_variance_normalization: the default axes and a custom set
    out.append(Case("mean_variance_normalization", {"X": rand((2, 3, 4, 5), F32, -2, 2)}, mvn_ref))
    out.append(Case("mean_variance_normalization", {"X": rand((3, 6), F64)}, mvn_ref, attrs={"axes": [1]}))
    # eye_like
    for dt, shape, attrs in ((F32, (4, 6), {}), (F64, (5, 3), {"k": -1}), (np.int32, (3, 4), {"k": 2}),
                             (F32, (3, 3), {"dtype": "i64", "k": 1})):
        x = rand(shape, dt) if dt != np.int32 else RNG.integers(0, 5, shape).astype(dt)
        out.append(Case("eye_like", {"X": x}, lambda i, a, dt=dt: {
            "Y": np.eye(*i["X"].shape, k=a.get("k", 0)).astype(
                {"i64": np.int64}.get(a.get("dtype", ""), i["X"].dtype))}, attrs=attrs))
    return out


def cases():
    return grad_cases() + onnx_cases()
