"""Cases of the reductions: every op over several axis sets with and without keepdims,
f32 and f64 (sum, max, min, prod, argmax also on integers), odd sizes."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(99)

REDUCE = {
    "reduce_sum": lambda x, ax, kd: np.sum(x, axis=ax, keepdims=kd),
    "reduce_mean": lambda x, ax, kd: np.mean(x, axis=ax, keepdims=kd),
    "reduce_max": lambda x, ax, kd: np.max(x, axis=ax, keepdims=kd),
    "reduce_min": lambda x, ax, kd: np.min(x, axis=ax, keepdims=kd),
    "reduce_prod": lambda x, ax, kd: np.prod(x, axis=ax, keepdims=kd),
    "reduce_l1": lambda x, ax, kd: np.sum(np.abs(x), axis=ax, keepdims=kd),
    "reduce_l2": lambda x, ax, kd: np.sqrt(np.sum(x * x, axis=ax, keepdims=kd)),
    "reduce_sum_square": lambda x, ax, kd: np.sum(x * x, axis=ax, keepdims=kd),
    "reduce_log_sum": lambda x, ax, kd: np.log(np.sum(x, axis=ax, keepdims=kd)),
    "reduce_log_sum_exp": lambda x, ax, kd: np.log(np.sum(np.exp(x), axis=ax, keepdims=kd)),
    "var": lambda x, ax, kd: np.var(x, axis=ax, keepdims=kd),
    "std": lambda x, ax, kd: np.std(x, axis=ax, keepdims=kd),
}
AXES = [((), True), ((1,), True), ((0, 2), False), ((-1,), False)]


def ref_for(fn):
    def ref(i, a):
        axes = tuple(a.get("axes", ())) or None
        return {"Y": fn(i["X"].astype(np.float64), axes, bool(a.get("keepdims", 1)))}
    return ref


def cases():
    out = []
    for name, fn in REDUCE.items():
        for dt in (np.float32, np.float64):
            for axes, kd in AXES:
                lo = 0.1 if name in ("reduce_log_sum", "reduce_prod") else -1
                hi = 1.2 if name == "reduce_prod" else 1
                x = RNG.uniform(lo, hi, size=(3, 5, 7)).astype(dt)
                attrs = {"axes": list(axes), "keepdims": kd}
                out.append(Case(name, {"X": x}, ref_for(fn), attrs=attrs, scale=4))
    for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        for dt in (np.int32, np.int64):
            x = RNG.integers(-3, 4, size=(4, 6)).astype(dt)
            fn = REDUCE[name]
            out.append(Case(name, {"X": x},
                            lambda i, a, fn=fn: {"Y": fn(i["X"], (1,), False).astype(i["X"].dtype)},
                            attrs={"axes": [1], "keepdims": False}))
    for corr in (1,):
        x = RNG.uniform(-1, 1, size=(6, 9)).astype(np.float64)
        for name, fn in (("var", np.var), ("std", np.std)):
            out.append(Case(name, {"X": x},
                            lambda i, a, fn=fn: {"Y": fn(i["X"], axis=1, ddof=1)},
                            attrs={"axes": [1], "keepdims": False, "correction": corr}))
    # arg reductions: ties included (values on a coarse grid)
    for name, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        for dt in (np.float32, np.float64, np.int32):
            for axis, kd, last in ((1, True, False), (-1, False, False), (0, False, True)):
                x = (np.round(RNG.uniform(-2, 2, size=(4, 5, 6)) * 2) / 2).astype(dt)

                def ref(i, a, fn=fn, axis=axis, kd=kd, last=last):
                    x = i["X"]
                    if last:
                        r = x.shape[axis] - 1 - fn(np.flip(x, axis=axis), axis=axis, keepdims=kd)
                    else:
                        r = fn(x, axis=axis, keepdims=kd)
                    return {"Y": r.astype(np.int64)}
                out.append(Case(name, {"X": x}, ref,
                                attrs={"axis": axis, "keepdims": kd, "select_last_index": last}))
    for dt in (np.float32, np.float64, np.int64):
        for axis, excl, rev in ((1, False, False), (0, True, False), (-1, False, True), (1, True, True)):
            x = RNG.uniform(-1, 1, size=(5, 8)).astype(dt) if dt != np.int64 else RNG.integers(-5, 5, (5, 8))

            def ref(i, a, axis=axis, excl=excl, rev=rev):
                x = i["X"]
                if rev:
                    x = np.flip(x, axis=axis)
                c = np.cumsum(x, axis=axis)
                if excl:
                    c = c - x
                if rev:
                    c = np.flip(c, axis=axis)
                return {"Y": c.astype(i["X"].dtype) if i["X"].dtype.kind == "i" else c}
            out.append(Case("cumsum", {"X": x}, ref,
                            attrs={"axis": axis, "exclusive": excl, "reverse": rev}))
    # axes of 64 or more run as blocked GEMMs (the last axis, an inner axis, 1-D)
    for shape, axis, excl, rev in (((6, 128), -1, False, False), ((6, 128), 1, True, False),
                                   ((6, 128), 1, False, True), ((6, 128), 1, True, True),
                                   ((3, 96, 17), 1, False, False), ((3, 96, 17), 1, True, True),
                                   ((80,), 0, True, False)):
        x = RNG.uniform(-1, 1, size=shape).astype(np.float32)

        def ref(i, a, axis=axis, excl=excl, rev=rev):
            x = i["X"].astype(np.float64)
            if rev:
                x = np.flip(x, axis=axis)
            c = np.cumsum(x, axis=axis)
            if excl:
                c = c - x
            if rev:
                c = np.flip(c, axis=axis)
            return {"Y": c}
        out.append(Case("cumsum", {"X": x}, ref, attrs={"axis": axis, "exclusive": excl, "reverse": rev},
                        scale=4))
    return out + grad_cases()


# --- backward ops against PyTorch autograd (float64) --------------------------------

def torch_reduce(name, axes, kd, corr=0):
    import torch
    dims = tuple(axes) if axes else None

    def f(x):
        d = dims if dims is not None else tuple(range(x.dim()))
        return {
            "reduce_sum": lambda: x.sum(d, keepdim=kd),
            "reduce_mean": lambda: x.mean(d, keepdim=kd),
            "reduce_max": lambda: x.amax(d, keepdim=kd),
            "reduce_min": lambda: x.amin(d, keepdim=kd),
            "reduce_l1": lambda: x.abs().sum(d, keepdim=kd),
            "reduce_l2": lambda: (x * x).sum(d, keepdim=kd).sqrt(),
            "reduce_sum_square": lambda: (x * x).sum(d, keepdim=kd),
            "reduce_log_sum": lambda: x.sum(d, keepdim=kd).log(),
            "reduce_log_sum_exp": lambda: x.logsumexp(d, keepdim=kd),
            "var": lambda: x.var(d, keepdim=kd, correction=corr),
            "std": lambda: x.std(d, keepdim=kd, correction=corr),
        }[name]()
    return f


def reduce_grad_ref(name, axes, kd, corr=0):
    def ref(i, a):
        import torch
        x = torch.tensor(i["X"].astype(np.float64), requires_grad=True)
        torch_reduce(name, axes, kd, corr)(x).backward(torch.tensor(i["dY"].astype(np.float64)))
        return {"dX": x.grad.numpy()}
    return ref


def grad_cases():
    out = []
    for name, fn in REDUCE.items():
        if name == "reduce_prod":
            continue
        for dt, (axes, kd) in ((np.float64, ((1,), True)), (np.float32, ((0, 2), False)),
                               (np.float64, ((), False))):
            lo = 0.1 if name == "reduce_log_sum" else -1
            x = RNG.uniform(lo, 1, size=(3, 5, 7)).astype(dt)
            if name in ("reduce_max", "reduce_min") and dt == np.float64:
                x = (np.round(x * 2) / 2).astype(dt)  # ties share the gradient
            y = fn(x.astype(np.float64), tuple(axes) or None, kd)
            dy = RNG.uniform(-1, 1, size=np.shape(y)).astype(dt)
            attrs = {"axes": list(axes), "keepdims": kd}
            out.append(Case(name + "_grad", {"X": x, "dY": dy}, reduce_grad_ref(name, axes, kd),
                            attrs=attrs, scale=4))
    for excl, rev, n in ((False, False, 9), (True, True, 9), (False, False, 96)):
        dy = RNG.uniform(-1, 1, size=(4, n))

        def ref(i, a, excl=excl, rev=rev):
            import torch
            x = torch.zeros(i["dY"].shape, dtype=torch.float64, requires_grad=True)
            xx = x.flip(1) if rev else x
            c = xx.cumsum(1)
            if excl:
                c = c - xx
            if rev:
                c = c.flip(1)
            c.backward(torch.tensor(i["dY"]))
            return {"dX": x.grad.numpy()}
        out.append(Case("cumsum_grad", {"dY": dy}, ref,
                        attrs={"axis": 1, "exclusive": excl, "reverse": rev}))
    return out
