"""Cases of the normalization ops: softmax and log_softmax along several axes, layernorm
and rmsnorm over trailing axes with broadcast Scale/B, batchnorm inference and training
(running statistics), instancenorm and groupnorm, against NumPy or torch.nn.functional,
and every backward op against PyTorch autograd in float64."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(77)


def rand(shape, dt=np.float32, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dt)


def f64(x):
    return x.astype(np.float64)


def softmax_ref(i, a):
    x = f64(i["X"])
    ax = a.get("axis", -1)
    e = np.exp(x - x.max(axis=ax, keepdims=True))
    return {"Y": e / e.sum(axis=ax, keepdims=True)}


def log_softmax_ref(i, a):
    x = f64(i["X"])
    ax = a.get("axis", -1)
    m = x.max(axis=ax, keepdims=True)
    return {"Y": x - m - np.log(np.exp(x - m).sum(axis=ax, keepdims=True))}


def norm_axes(x, a):
    axis = a.get("axis", -1) % x.ndim
    return tuple(range(axis, x.ndim))


def layernorm_ref(i, a):
    x = f64(i["X"])
    ax = norm_axes(x, a)
    mu = x.mean(axis=ax, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=ax, keepdims=True)
    y = (x - mu) / np.sqrt(var + a.get("epsilon", 1e-5))
    if "Scale" in i:
        y = y * f64(i["Scale"])
    if "B" in i:
        y = y + f64(i["B"])
    return {"Y": y}


def rmsnorm_ref(i, a):
    x = f64(i["X"])
    ax = norm_axes(x, a)
    y = x / np.sqrt((x * x).mean(axis=ax, keepdims=True) + a.get("epsilon", 1e-5))
    if "Scale" in i:
        y = y * f64(i["Scale"])
    return {"Y": y}


def channel(v, x):
    """A per-channel [C] vector shaped to broadcast against X [N, C, ...]."""
    return f64(v).reshape((1, -1) + (1,) * (x.ndim - 2))


def batchnorm_ref(i, a):
    x = f64(i["X"])
    y = (x - channel(i["Mean"], x)) / np.sqrt(channel(i["Var"], x) + a.get("epsilon", 1e-5))
    if "Scale" in i:
        y = y * channel(i["Scale"], x)
    if "B" in i:
        y = y + channel(i["B"], x)
    return {"Y": y}


def torch_t(x):
    import torch
    return None if x is None else torch.tensor(f64(x))


def batchnorm_training_ref(i, a):
    import torch
    import torch.nn.functional as F
    x = f64(i["X"])
    rm, rv = torch_t(i["RunningMean"]), torch_t(i["RunningVar"])
    y = F.batch_norm(torch_t(x), rm, rv, torch_t(i.get("Scale")), torch_t(i.get("B")),
                     training=True, momentum=a.get("momentum", 0.1), eps=a.get("epsilon", 1e-5))
    axes = (0,) + tuple(range(2, x.ndim))
    return {"Y": y.numpy(), "BatchMean": x.mean(axis=axes), "BatchVar": x.var(axis=axes),
            "RunningMeanOut": rm.numpy(), "RunningVarOut": rv.numpy()}


def instancenorm_ref(i, a):
    import torch.nn.functional as F
    return {"Y": F.instance_norm(torch_t(i["X"]), weight=torch_t(i.get("Scale")),
                                 bias=torch_t(i.get("B")), eps=a.get("epsilon", 1e-5)).numpy()}


def groupnorm_ref(i, a):
    import torch.nn.functional as F
    return {"Y": F.group_norm(torch_t(i["X"]), a["num_groups"], weight=torch_t(i.get("Scale")),
                              bias=torch_t(i.get("B")), eps=a.get("epsilon", 1e-5)).numpy()}


def cases():
    out = []
    for dt in (np.float32, np.float64):
        for axis in (-1, 1, 0):
            x = rand((3, 5, 7), dt, -4, 4)
            out.append(Case("softmax", {"X": x}, softmax_ref, attrs={"axis": axis},
                            cross=dt == np.float32 and axis == -1))
            out.append(Case("log_softmax", {"X": x}, log_softmax_ref, attrs={"axis": axis}))
    out.append(Case("softmax", {"X": rand((4, 9), np.float16, -4, 4)}, softmax_ref))
    out.append(Case("softmax", {"X": np.array([[1.0, -np.inf, 2.0], [-np.inf, 0.0, 0.5]], np.float32)},
                    softmax_ref, label="-inf"))
    # layernorm / rmsnorm: full and broadcast Scale/B, several axes, no affine
    for dt in (np.float32, np.float64):
        x = rand((3, 5, 7), dt, -2, 2)
        out.append(Case("layernorm", {"X": x, "Scale": rand((7,), dt), "B": rand((7,), dt)},
                        layernorm_ref, cross=dt == np.float32))
        out.append(Case("rmsnorm", {"X": x, "Scale": rand((7,), dt)}, rmsnorm_ref))
    x = rand((3, 5, 7), np.float32, -2, 2)
    out.append(Case("layernorm", {"X": x, "Scale": rand((5, 7)), "B": rand((1, 7))}, layernorm_ref,
                    attrs={"axis": 1, "epsilon": 1e-3}))
    out.append(Case("layernorm", {"X": x}, layernorm_ref, attrs={"axis": 0}))
    out.append(Case("rmsnorm", {"X": x, "Scale": rand((5, 1))}, rmsnorm_ref, attrs={"axis": -2}))
    out.append(Case("rmsnorm", {"X": rand((4, 9), np.float64)}, rmsnorm_ref))
    out.append(Case("layernorm", {"X": rand((4, 33), np.float16, -2, 2), "Scale": rand((33,), np.float16),
                                  "B": rand((33,), np.float16)}, layernorm_ref, scale=2))
    # batchnorm inference and training
    for dt in (np.float32, np.float64):
        x = rand((2, 3, 5, 4), dt, -2, 2)
        ins = {"X": x, "Scale": rand((3,), dt), "B": rand((3,), dt), "Mean": rand((3,), dt),
               "Var": rand((3,), dt, 0.5, 2)}
        out.append(Case("batchnorm", ins, batchnorm_ref))
        tr = {"X": x, "Scale": rand((3,), dt), "B": rand((3,), dt),
              "RunningMean": rand((3,), dt), "RunningVar": rand((3,), dt, 0.5, 2)}
        out.append(Case("batchnorm_training", tr, batchnorm_training_ref))
    out.append(Case("batchnorm", {"X": rand((5, 3)), "Mean": rand((3,)), "Var": rand((3,), np.float32, 0.5, 2)},
                    batchnorm_ref, attrs={"epsilon": 1e-3}))
    out.append(Case("batchnorm_training", {"X": rand((7, 3)), "RunningMean": rand((3,)),
                                           "RunningVar": rand((3,), np.float32, 0.5, 2)},
                    batchnorm_training_ref, attrs={"momentum": 0.3}))
    # instancenorm and groupnorm
    for dt in (np.float32, np.float64):
        x = rand((2, 6, 5, 3), dt, -2, 2)
        out.append(Case("instancenorm", {"X": x, "Scale": rand((6,), dt), "B": rand((6,), dt)},
                        instancenorm_ref))
        out.append(Case("groupnorm", {"X": x, "Scale": rand((6,), dt), "B": rand((6,), dt)},
                        groupnorm_ref, attrs={"num_groups": 3}))
    out.append(Case("instancenorm", {"X": rand((3, 4, 7))}, instancenorm_ref))
    out.append(Case("groupnorm", {"X": rand((3, 4, 7))}, groupnorm_ref, attrs={"num_groups": 1}))
    out.append(Case("groupnorm", {"X": rand((2, 6)), "Scale": rand((6,))}, groupnorm_ref,
                    attrs={"num_groups": 2, "epsilon": 1e-2}))
    return out + grad_cases()


# --- backward ops against PyTorch autograd ----------------------------------------------

def autograd(fn, wrt, others, dy):
    """Gradients {"d" + name: ...} of fn(**wrt, **others) w.r.t. the tensors in `wrt`."""
    import torch
    ts = {k: torch.tensor(f64(v), requires_grad=True) for k, v in wrt.items()}
    y = fn(**ts, **{k: torch_t(v) for k, v in others.items()})
    y.backward(torch.tensor(f64(dy)))
    return {"d" + k: t.grad.numpy() for k, t in ts.items()}


def softmax_grad_ref(log):
    def ref(i, a):
        import torch
        # The op gets Y = softmax(X); autograd runs from X recovered as log(Y) (log_softmax:
        # Y itself), which softmax maps back to the same Y.
        x = np.log(f64(i["Y"])) if not log else f64(i["Y"])
        ax = a.get("axis", -1)
        fn = (lambda X: torch.log_softmax(X, ax)) if log else (lambda X: torch.softmax(X, ax))
        return {"dX": autograd(fn, {"X": x}, {}, i["dY"])["dX"]}
    return ref


def affine_norm_grad_ref(kind):
    def ref(i, a):
        import torch
        x = i["X"]
        axis = a.get("axis", -1) % x.ndim
        ax = tuple(range(axis, x.ndim))
        eps = a.get("epsilon", 1e-5)
        wrt = {"X": x}
        if "Scale" in i:
            wrt["Scale"] = i["Scale"]
        if kind == "layernorm":
            wrt["B"] = np.zeros(x.shape[axis:])

        def fn(X, Scale=None, B=None):
            if kind == "layernorm":
                mu = X.mean(ax, keepdim=True)
                y = (X - mu) / torch.sqrt(((X - mu) ** 2).mean(ax, keepdim=True) + eps)
            else:
                y = X / torch.sqrt((X * X).mean(ax, keepdim=True) + eps)
            if Scale is not None:
                y = y * Scale
            return y + B if B is not None else y
        return autograd(fn, wrt, {}, i["dY"])
    return ref


def channel_norm_grad_ref(kind):
    def ref(i, a):
        import torch.nn.functional as F
        x = i["X"]
        c = x.shape[1]
        wrt = {"X": x, "B": np.zeros(c)}
        if "Scale" in i:
            wrt["Scale"] = i["Scale"]
        eps = a.get("epsilon", 1e-5)

        def fn(X, B, Scale=None):
            if Scale is None:  # torch's group_norm fails with a bias but no weight
                Scale = torch_t(np.ones(c))
            if kind == "batchnorm":
                return F.batch_norm(X, None, None, Scale, B, training=True, eps=eps)
            if kind == "instancenorm":
                return F.instance_norm(X, weight=Scale, bias=B, eps=eps)
            return F.group_norm(X, a["num_groups"], weight=Scale, bias=B, eps=eps)
        return autograd(fn, wrt, {}, i["dY"])
    return ref


def grad_cases():
    out = []
    for log in (False, True):
        name = "log_softmax_grad" if log else "softmax_grad"
        for dt, axis in ((np.float64, -1), (np.float32, 1)):
            x = rand((3, 5, 7), np.float64, -3, 3)
            y = (log_softmax_ref if log else softmax_ref)({"X": x}, {"axis": axis})["Y"]
            out.append(Case(name, {"Y": y.astype(dt), "dY": rand((3, 5, 7), dt)}, softmax_grad_ref(log),
                            attrs={"axis": axis}, scale=4))
    for kind in ("layernorm", "rmsnorm"):
        out.append(Case(kind + "_grad", {"X": rand((3, 5, 7), np.float64), "Scale": rand((7,), np.float64),
                                         "dY": rand((3, 5, 7), np.float64)}, affine_norm_grad_ref(kind)))
        out.append(Case(kind + "_grad", {"X": rand((3, 5, 7)), "Scale": rand((5, 1)), "dY": rand((3, 5, 7))},
                        affine_norm_grad_ref(kind), attrs={"axis": 1}, scale=4))
        out.append(Case(kind + "_grad", {"X": rand((4, 9), np.float64), "dY": rand((4, 9), np.float64)},
                        affine_norm_grad_ref(kind), attrs={"axis": 0, "epsilon": 1e-3}))
    for kind, shape, attrs in (("batchnorm", (4, 3, 5), {}), ("instancenorm", (2, 3, 7), {}),
                               ("groupnorm", (2, 6, 5), {"num_groups": 3})):
        name = "batchnorm_training_grad" if kind == "batchnorm" else kind + "_grad"
        for dt, with_scale in ((np.float64, True), (np.float32, False)):
            ins = {"X": rand(shape, dt, -2, 2)}
            if with_scale:
                ins["Scale"] = rand((shape[1],), dt)
            ins["dY"] = rand(shape, dt)
            out.append(Case(name, ins, channel_norm_grad_ref(kind), attrs=attrs, scale=4))
    return out
