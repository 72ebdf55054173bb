"""Cases of losses and training ops: cross_entropy and nll_loss (class weights,
ignore_index, label smoothing, every reduction, [N, C] and [N, C, d...]), mse_loss,
dropout (the hash recomputed here in NumPy from its definition in docs/ARCHITECTURE.md),
sgd/adam/adamw against a real torch.optim step, clip_grad_norm against
torch.nn.utils.clip_grad_norm_, and the backward ops against torch autograd in f64."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(17)


def rand(*shape, dt=np.float64, lo=-1, hi=1):
    return RNG.uniform(lo, hi, size=shape).astype(dt)


def targets(shape, classes, ignore=-100, some_ignored=True):
    t = RNG.integers(0, classes, size=shape).astype(np.int64)
    if some_ignored:
        t.reshape(-1)[::4] = ignore
    return t


# --- classification losses --------------------------------------------------------------

def np_class_loss(x, t, w, a, from_logits):
    """PyTorch's cross_entropy / nll_loss written out in NumPy (class axis 1)."""
    x = x.astype(np.float64)
    c = x.shape[1]
    logp = x - np.log(np.sum(np.exp(x - x.max(1, keepdims=True)), 1, keepdims=True)) \
        - x.max(1, keepdims=True) if from_logits else x
    w = np.ones(c) if w is None else w.astype(np.float64)
    ign = t == a.get("ignore_index", -100)
    tc = np.where(ign, 0, t)
    logp_t = np.take_along_axis(logp, np.expand_dims(tc, 1), 1).squeeze(1)
    nll = np.where(ign, 0.0, -w[tc] * logp_t)
    eps = a.get("label_smoothing", 0.0)
    wshape = (1, c) + (1,) * (x.ndim - 2)
    smooth = np.where(ign, 0.0, -np.sum(logp * w.reshape(wshape), 1))
    loss = (1 - eps) * nll + eps / c * smooth
    red = a.get("reduction", "mean")
    if red == "none":
        return loss
    if red == "sum":
        return np.array(loss.sum())
    return np.array(loss.sum() / np.where(ign, 0.0, w[tc]).sum())


def torch_class_loss(x, t, w, a, from_logits):
    import torch
    import torch.nn.functional as F
    red = a.get("reduction", "mean")
    ign = a.get("ignore_index", -100)
    eps = a.get("label_smoothing", 0.0)
    if from_logits:
        return F.cross_entropy(x, t, weight=w, ignore_index=ign, reduction=red, label_smoothing=eps)
    if eps == 0:
        return F.nll_loss(x, t, weight=w, ignore_index=ign, reduction=red)
    # nll_loss with smoothing is cross_entropy's formula on the given log-probabilities.
    c = x.shape[1]
    wv = torch.ones(c, dtype=x.dtype) if w is None else w
    mask = t == ign
    tc = torch.where(mask, torch.zeros_like(t), t)
    nll = torch.where(mask, torch.zeros(()).double(), -wv[tc] * x.gather(1, tc.unsqueeze(1)).squeeze(1))
    wshape = (1, c) + (1,) * (x.dim() - 2)
    smooth = torch.where(mask, torch.zeros(()).double(), -(x * wv.reshape(wshape)).sum(1))
    loss = (1 - eps) * nll + eps / c * smooth
    if red == "none":
        return loss
    if red == "sum":
        return loss.sum()
    return loss.sum() / torch.where(mask, torch.zeros(()).double(), wv[tc]).sum()


def class_grad_ref(from_logits):
    def ref(i, a):
        import torch
        x = torch.tensor(i["X"].astype(np.float64), requires_grad=True)
        w = torch.tensor(i["W"].astype(np.float64)) if "W" in i else None
        y = torch_class_loss(x, torch.tensor(i["T"]), w, a, from_logits)
        y.backward(torch.tensor(i["dY"].astype(np.float64)))
        return {"dX": x.grad.numpy()}
    return ref


def class_cases():
    out = []
    configs = [  # X shape, weights, attrs, dtype
        ((6, 5), False, {}, np.float32),
        ((6, 5), True, {"reduction": "sum", "label_smoothing": 0.1}, np.float64),
        ((4, 7, 3), True, {"reduction": "none"}, np.float32),
        ((3, 4, 2, 3), False, {"label_smoothing": 0.2, "ignore_index": 1}, np.float64),
        ((5, 3, 2), True, {"label_smoothing": 0.05}, np.float32),
    ]
    for name, logits in (("cross_entropy", True), ("nll_loss", False)):
        for xs, weighted, attrs, dt in configs:
            x = rand(*xs, dt=dt, lo=-3, hi=3)
            if not logits:  # proper log-probabilities
                x = (x - np.log(np.exp(x.astype(np.float64)).sum(1, keepdims=True))).astype(dt)
            ign = attrs.get("ignore_index", -100)
            t = targets((xs[0],) + xs[2:], xs[1], ign)
            inputs = {"X": x, "T": t}
            if weighted:
                inputs["W"] = rand(xs[1], dt=dt, lo=0.2, hi=2)
            out.append(Case(name, inputs,
                            lambda i, a, lg=logits: {"Y": np_class_loss(i["X"], i["T"], i.get("W"), a, lg)},
                            attrs=attrs, scale=4))
            if dt == np.float64 or attrs.get("reduction") == "none":
                y = np_class_loss(x, t, inputs.get("W"), attrs, logits)
                g = dict(inputs, X=x.astype(np.float64), dY=rand(*y.shape))
                if "W" in g:
                    g["W"] = g["W"].astype(np.float64)
                out.append(Case(name + "_grad", g, class_grad_ref(logits), attrs=attrs))
    # i32 targets are accepted too
    x, t = rand(4, 6, dt=np.float32), targets((4,), 6, some_ignored=False).astype(np.int32)
    out.append(Case("cross_entropy", {"X": x, "T": t},
                    lambda i, a: {"Y": np_class_loss(i["X"], i["T"].astype(np.int64), None, a, True)},
                    label="-i32"))
    return out


# --- mse --------------------------------------------------------------------------------

def mse_cases():
    out = []
    for shape, red, dt in (((5, 7), "mean", np.float32), ((3, 4, 5), "sum", np.float64),
                           ((9,), "none", np.float32)):
        a_, b_ = rand(*shape, dt=dt), rand(*shape, dt=dt)

        def ref(i, a):
            d = (i["A"].astype(np.float64) - i["B"].astype(np.float64)) ** 2
            r = a["reduction"]
            return {"Y": d if r == "none" else np.array(d.sum() if r == "sum" else d.mean())}
        out.append(Case("mse_loss", {"A": a_, "B": b_}, ref, attrs={"reduction": red}, scale=4))

        def gref(i, a):
            import torch
            import torch.nn.functional as F
            A = torch.tensor(i["A"].astype(np.float64), requires_grad=True)
            B = torch.tensor(i["B"].astype(np.float64), requires_grad=True)
            F.mse_loss(A, B, reduction=a["reduction"]).backward(torch.tensor(i["dY"]))
            return {"dA": A.grad.numpy(), "dB": B.grad.numpy()}
        dy = rand(*shape) if red == "none" else np.array(RNG.uniform(-1, 1))
        out.append(Case("mse_loss_grad", {"A": a_.astype(np.float64), "B": b_.astype(np.float64),
                                          "dY": dy}, gref, attrs={"reduction": red}))
    return out


# --- dropout ----------------------------------------------------------------------------

TWO32 = 2 ** 32


def mix(x, a):
    """The hash's mix (docs/ARCHITECTURE.md), on int64 arrays holding values < 2^32."""
    x = (x + x // 65536) % TWO32
    x = (x * a) % TWO32
    x = (x + x // 32768) % TWO32
    x = (x * 0x6B43A9B5) % TWO32
    return (x + x // 65536) % TWO32


def dropout_mask(shape, ratio, seed):
    key = int(mix(np.int64(seed % TWO32), 0x7FEB352D))
    a = 2 ** 30 + 1 + 2 * (int(mix(np.int64((key + 0x9E3779B9) % TWO32), 0x7FEB352D)) % 2 ** 29)
    i = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    h = mix((i + key) % TWO32, a)
    return h >= int(np.floor(ratio * TWO32))


def dropout_ref(i, a):
    x = i["X"]
    if not a.get("training_mode", 0):
        return {"Y": x, "Mask": np.ones(x.shape, dtype=bool)}
    ratio = a.get("ratio", 0.5)
    m = dropout_mask(x.shape, ratio, a.get("seed", 0))
    scale = 1 / (1 - ratio) if ratio < 1 else 0.0
    return {"Y": np.where(m, x.astype(np.float64) * scale, 0.0), "Mask": m}


def dropout_cases():
    out = []
    for shape, attrs, dt in (((37, 29), {"training_mode": 1}, np.float32),
                             ((5, 6, 7), {"training_mode": 1, "ratio": 0.2, "seed": 12345}, np.float64),
                             ((11,), {"training_mode": 1, "ratio": 0.9, "seed": -7}, np.float32),
                             ((4, 5), {}, np.float32),
                             ((6, 3), {"training_mode": 1, "ratio": 1.0}, np.float64)):
        out.append(Case("dropout", {"X": rand(*shape, dt=dt)}, dropout_ref, attrs=attrs))
    for shape, attrs in (((7, 9), {"training_mode": 1, "ratio": 0.3}), ((5,), {})):
        dy = rand(*shape)
        mask = dropout_mask(shape, 0.3, 0) if attrs else np.ones(shape, dtype=bool)

        def gref(i, a):
            import torch
            x = torch.tensor(np.zeros(i["dY"].shape), requires_grad=True)
            ratio = a.get("ratio", 0.5) if a.get("training_mode", 0) else 0.0
            (x * torch.tensor(i["Mask"]) / (1 - ratio)).backward(torch.tensor(i["dY"]))
            return {"dX": x.grad.numpy()}
        out.append(Case("dropout_grad", {"dY": dy, "Mask": mask}, gref, attrs=attrs))
    return out


# --- optimizers -------------------------------------------------------------------------

def torch_step(opt_name, attrs, i):
    """One real torch.optim step from the case's parameter, gradient and state."""
    import torch
    p = torch.nn.Parameter(torch.tensor(i["P"].astype(np.float64)))
    p.grad = torch.tensor(i["G"].astype(np.float64))
    maximize = bool(attrs.get("maximize", 0))
    if opt_name == "sgd":
        opt = torch.optim.SGD([p], lr=attrs.get("lr", 1e-3), momentum=attrs.get("momentum", 0.0),
                              dampening=attrs.get("dampening", 0.0),
                              weight_decay=attrs.get("weight_decay", 0.0),
                              nesterov=bool(attrs.get("nesterov", 0)), maximize=maximize)
        if "M" in i:
            opt.state[p]["momentum_buffer"] = torch.tensor(i["M"].astype(np.float64))
        opt.step()
        out = {"P_new": p.detach().numpy()}
        if attrs.get("momentum", 0.0):
            out["M_new"] = opt.state[p]["momentum_buffer"].numpy()
        return out
    cls = torch.optim.AdamW if opt_name == "adamw" else torch.optim.Adam
    wd = attrs.get("weight_decay", 1e-2 if opt_name == "adamw" else 0.0)
    opt = cls([p], lr=attrs.get("lr", 1e-3), betas=(attrs.get("beta1", 0.9), attrs.get("beta2", 0.999)),
              eps=attrs.get("eps", 1e-8), weight_decay=wd, maximize=maximize, foreach=False)
    t = int(i["Step"]) if "Step" in i else attrs.get("t", 1)
    st = opt.state[p]
    st["step"] = torch.tensor(float(t - 1))
    st["exp_avg"] = torch.tensor(i["M"].astype(np.float64))
    st["exp_avg_sq"] = torch.tensor(i["V"].astype(np.float64))
    opt.step()
    return {"P_new": p.detach().numpy(), "M_new": st["exp_avg"].numpy(), "V_new": st["exp_avg_sq"].numpy()}


def optimizer_cases():
    out = []
    sgd = [({"lr": 0.1}, False), ({"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}, True),
           ({"lr": 0.05, "momentum": 0.8, "nesterov": 1, "maximize": 1, "weight_decay": 0.1}, True),
           ({"lr": 0.05, "momentum": 0.9}, False)]
    for k, (attrs, has_m) in enumerate(sgd):
        for dt in ((np.float32, np.float64) if k == 1 else (np.float64,)):
            i = {"P": rand(5, 7, dt=dt), "G": rand(5, 7, dt=dt)}
            if has_m:
                i["M"] = rand(5, 7, dt=dt)
            out.append(Case("sgd", i, lambda i, a: torch_step("sgd", a, i), attrs=attrs))
    adam = [({}, None), ({"lr": 0.01, "weight_decay": 0.1, "t": 7}, None),
            ({"lr": 0.02, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "maximize": 1}, 5)]
    for name in ("adam", "adamw"):
        for k, (attrs, step) in enumerate(adam):
            for dt in ((np.float32, np.float64) if k == 1 else (np.float64,)):
                i = {"P": rand(3, 9, dt=dt), "G": rand(3, 9, dt=dt), "M": rand(3, 9, dt=dt) * 0.1,
                     "V": rand(3, 9, dt=dt, lo=0, hi=0.01)}
                if step is not None:
                    i["Step"] = np.array(step, dtype=np.int64)
                out.append(Case(name, i, lambda i, a, n=name: torch_step(n, a, i), attrs=attrs,
                                scale=10 if dt == np.float32 else 1))
    for shapes, attrs, dt in ((((5, 7), (3,), ()), {"max_norm": 1.0}, np.float64),
                              (((4, 3), (6,)), {"max_norm": 100.0}, np.float32),
                              (((9,), (2, 2)), {"max_norm": 0.5, "norm_type": float("inf")}, np.float64),
                              (((8,),), {"max_norm": 0.3, "norm_type": 1.5}, np.float64)):
        i = {f"G{k}": rand(*s, dt=dt) for k, s in enumerate(shapes)}

        def ref(i, a):
            import torch
            ps = []
            for k in range(len(i)):
                p = torch.nn.Parameter(torch.zeros(i[f"G{k}"].shape, dtype=torch.float64))
                p.grad = torch.tensor(i[f"G{k}"].astype(np.float64))
                ps.append(p)
            total = torch.nn.utils.clip_grad_norm_(ps, a["max_norm"], a.get("norm_type", 2.0))
            out = {f"Y{k}": p.grad.numpy() for k, p in enumerate(ps)}
            out["TotalNorm"] = total.numpy()
            return out
        out.append(Case("clip_grad_norm", i, ref, attrs=attrs, scale=4))
    return out


def cases():
    return class_cases() + mse_cases() + dropout_cases() + optimizer_cases()
