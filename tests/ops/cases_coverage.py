"""Cases of the ops and backward ops added by the issue-5 coverage audit: the gradients of
where, mod, fmod, reduce_prod (zeros included) and inference batchnorm against PyTorch
autograd in float64, and the ONNX ops the audit added (see docs/ARCHITECTURE.md, "The
operator library") against NumPy."""
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


def cases():
    return grad_cases()
