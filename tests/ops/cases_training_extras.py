"""Cases of the op variants added after their families: adam/adamw with amsgrad against a
real torch.optim step, mse_loss with broadcast operands (and its gradient) against torch,
max_pool's Indices against torch's return_indices (made flat over the whole input, as
ONNX's MaxPool gives them), and resize's cubic mode against a NumPy transcription of
ONNX's reference (and torch's bicubic where the two agree)."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(71)
F32, F64 = np.float32, np.float64


def rand(*shape, dt=F64, lo=-1, hi=1):
    return RNG.uniform(lo, hi, size=shape).astype(dt)


# --- amsgrad ------------------------------------------------------------------------------

def amsgrad_step(name, attrs, i):
    import torch
    p = torch.nn.Parameter(torch.tensor(i["P"].astype(np.float64)))
    p.grad = torch.tensor(i["G"].astype(np.float64))
    cls = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
    wd = attrs.get("weight_decay", 1e-2 if name == "adamw" else 0.0)
    opt = cls([p], lr=attrs.get("lr", 1e-3), betas=(attrs.get("beta1", 0.9), attrs.get("beta2", 0.999)),
              eps=attrs.get("eps", 1e-8), weight_decay=wd, amsgrad=True, foreach=False)
    t = attrs.get("t", 1)
    st = opt.state[p]
    st["step"] = torch.tensor(float(t - 1))
    st["exp_avg"] = torch.tensor(i["M"].astype(np.float64))
    st["exp_avg_sq"] = torch.tensor(i["V"].astype(np.float64))
    st["max_exp_avg_sq"] = torch.tensor(i["VMax"].astype(np.float64) if "VMax" in i else np.zeros(i["P"].shape))
    opt.step()
    return {"P_new": p.detach().numpy(), "M_new": st["exp_avg"].numpy(), "V_new": st["exp_avg_sq"].numpy(),
            "VMax_new": st["max_exp_avg_sq"].numpy()}


def amsgrad_cases():
    out = []
    for name in ("adam", "adamw"):
        for dt, attrs, vmax in ((F64, {"amsgrad": 1, "lr": 0.01, "t": 4}, True),
                                (F32, {"amsgrad": 1, "weight_decay": 0.05, "t": 9}, True),
                                (F64, {"amsgrad": 1}, False)):
            i = {"P": rand(4, 7, dt=dt), "G": rand(4, 7, dt=dt), "M": rand(4, 7, dt=dt) * 0.1,
                 "V": rand(4, 7, dt=dt, lo=0, hi=0.01)}
            if vmax:  # some maxima above V's update, some below
                i["VMax"] = rand(4, 7, dt=dt, lo=0, hi=0.012)
            out.append(Case(name, i, lambda i, a, n=name: amsgrad_step(n, a, i), attrs=attrs,
                            scale=10 if dt == F32 else 1, label="-vmax" if vmax else ""))
    return out


# --- mse with broadcasting ----------------------------------------------------------------

def mse_cases():
    out = []
    for sa, sb, red, dt in (((5, 7), (7,), "mean", F32), ((3, 1, 5), (4, 1), "sum", F64),
                            ((1, 6), (4, 1), "none", F64), ((2, 3), (), "mean", F64)):
        def ref(i, a):
            d = (i["A"].astype(np.float64) - i["B"].astype(np.float64)) ** 2
            r = a["reduction"]
            return {"Y": d if r == "none" else np.array(d.sum() if r == "sum" else d.mean())}
        out.append(Case("mse_loss", {"A": rand(*sa, dt=dt), "B": rand(*sb, dt=dt)}, ref,
                        attrs={"reduction": red}, scale=4))
        shape = np.broadcast_shapes(sa, sb)
        dy = rand(*shape, dt=dt) if red == "none" else rand(dt=dt)

        def gref(i, a):
            import torch
            import warnings
            A = torch.tensor(i["A"].astype(np.float64), requires_grad=True)
            B = torch.tensor(i["B"].astype(np.float64), requires_grad=True)
            with warnings.catch_warnings():  # torch warns that the operands broadcast
                warnings.simplefilter("ignore")
                y = torch.nn.functional.mse_loss(A, B, reduction=a["reduction"])
            y.backward(torch.tensor(i["dY"].astype(np.float64)))
            return {"dA": A.grad.numpy(), "dB": B.grad.numpy()}
        out.append(Case("mse_loss_grad", {"A": rand(*sa, dt=dt), "B": rand(*sb, dt=dt), "dY": dy}, gref,
                        attrs={"reduction": red}, scale=4))
    return out


# --- max_pool indices ---------------------------------------------------------------------

def max_pool_cases():
    out = []
    for xs, attrs, dt in (((2, 3, 7, 6), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}, F32),
                          ((1, 2, 10), {"kernel_shape": [3], "strides": [2], "dilations": [2], "ceil_mode": 1}, F64),
                          ((2, 2, 5, 5), {"kernel_shape": [2, 2]}, F64)):
        attrs = dict(attrs, return_indices=1)

        def ref(i, a):
            import torch
            import torch.nn.functional as F
            x = torch.tensor(i["X"])
            r = x.dim() - 2
            pads = a.get("pads", [0] * 2 * r)
            assert pads[:r] == pads[r:] or r == 2, "torch pads symmetrically"
            if pads[:r] != pads[r:]:  # asymmetric: pad with -inf first, then no padding
                flat = []
                for d in reversed(range(r)):
                    flat += [pads[d], pads[d + r]]
                x = F.pad(x, flat, value=-np.inf)
                padding = 0
            else:
                padding = pads[:r]
            fn = {1: F.max_pool1d, 2: F.max_pool2d}[r]
            y, ix = fn(x, a["kernel_shape"], a.get("strides", [1] * r), padding, a.get("dilations", [1] * r),
                       bool(a.get("ceil_mode", 0)), return_indices=True)
            # torch's indices are flat within the (padded) plane: back to X's coordinates,
            # then flat over the whole tensor
            plane = x.shape[2:]
            coords = np.unravel_index(ix.numpy(), plane)
            if pads[:r] != pads[r:]:
                coords = tuple(c - pads[d] for d, c in enumerate(coords))
            sp = i["X"].shape[2:]
            n, c = np.meshgrid(np.arange(y.shape[0]), np.arange(y.shape[1]), indexing="ij")
            flat = n.reshape(n.shape + (1,) * r) * i["X"].shape[1] + c.reshape(c.shape + (1,) * r)
            for d in range(r):
                flat = flat * sp[d] + coords[d]
            return {"Y": y.numpy(), "Indices": flat.astype(np.int64)}
        out.append(Case("max_pool", {"X": rand(*xs, dt=dt)}, ref, attrs))
    return out


# --- cubic resize -------------------------------------------------------------------------

def cubic_weights(t, a):
    def w(x):
        x = abs(x)
        if x <= 1:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        if x < 2:
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return 0.0
    return np.array([w(1 + t), w(t), w(1 - t), w(2 - t)])


def cubic_matrix(n_in, n_out, scale, ctm, a, exclude):
    """The 1-D cubic resize as an n_out x n_in matrix, from ONNX's reference: the source
    coordinate, its four neighbours (edge-padded), their weights (zeroed outside and
    renormalised with exclude_outside)."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        if ctm == "half_pixel":
            x = (o + 0.5) / scale - 0.5
        elif ctm == "pytorch_half_pixel":
            x = (o + 0.5) / scale - 0.5 if n_out > 1 else 0.0
        elif ctm == "asymmetric":
            x = o / scale
        else:
            x = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        base = int(np.floor(x))
        w = cubic_weights(x - base, a)
        taps = [base - 1 + j for j in range(4)]
        if exclude:
            w = np.array([wj if 0 <= t < n_in else 0.0 for wj, t in zip(w, taps)])
            w = w / w.sum()
        for wj, t in zip(w, taps):
            m[o, min(max(t, 0), n_in - 1)] += wj
    return m


def cubic_resize(x, out_shape, scales, ctm, a, exclude):
    y = x.astype(np.float64)
    for d, (n_in, n_out) in enumerate(zip(x.shape, out_shape)):
        s = scales[d] if scales else n_out / n_in
        if n_in == n_out and s == 1.0:
            continue
        y = np.moveaxis(np.tensordot(cubic_matrix(n_in, n_out, s, ctm, a, exclude), np.moveaxis(y, d, 0), 1), 0, d)
    return y


def resize_cases():
    out = []
    for xs, attrs, dt in (((2, 3, 5, 4), {"sizes": [2, 3, 9, 7]}, F32),
                          ((1, 1, 6, 7), {"sizes": [1, 1, 4, 3], "coordinate_transformation_mode": "align_corners"}, F64),
                          ((3, 8), {"scales": [1.0, 1.75], "cubic_coeff_a": -0.5, "exclude_outside": 1}, F64),
                          ((7,), {"sizes": [12], "coordinate_transformation_mode": "asymmetric"}, F32)):
        attrs = dict(attrs, mode="cubic")

        def ref(i, a):
            x = i["X"]
            out_shape = a.get("sizes") or [int(np.floor(n * s)) for n, s in zip(x.shape, a["scales"])]
            y = cubic_resize(x, out_shape, a.get("scales"), a.get("coordinate_transformation_mode", "half_pixel"),
                             a.get("cubic_coeff_a", -0.75), a.get("exclude_outside", 0))
            if x.ndim == 4 and a.get("cubic_coeff_a", -0.75) == -0.75 and not a.get("exclude_outside", 0):
                import torch
                t = torch.nn.functional.interpolate(
                    torch.tensor(x.astype(np.float64)), size=tuple(out_shape[2:]), mode="bicubic",
                    align_corners=a.get("coordinate_transformation_mode") == "align_corners")
                assert np.allclose(t.numpy(), y, atol=1e-12), "the NumPy reference disagrees with torch"
            return {"Y": y}
        out.append(Case("resize", {"X": rand(*xs, dt=dt)}, ref, attrs, scale=4))
    # rank 1, linear too: every table and the output share one loop (a compute_at
    # ordering case the scheduler once got wrong)
    out.append(Case("resize", {"X": rand(7, dt=F64)},
                    lambda i, a: {"Y": np.interp(np.minimum(np.arange(12) * 7 / 12, 6), np.arange(7), i["X"])},
                    {"mode": "linear", "sizes": [12], "coordinate_transformation_mode": "asymmetric"}))
    # the gradient, against torch's bicubic backward
    for xs, size, ac, dt in (((1, 2, 5, 4), (7, 6), False, F64), ((2, 1, 6, 6), (3, 4), True, F32)):
        dy = rand(xs[0], xs[1], *size, dt=dt)

        def gref(i, a):
            import torch
            x = torch.tensor(i["X"].astype(np.float64), requires_grad=True)
            y = torch.nn.functional.interpolate(x, size=tuple(a["sizes"][2:]), mode="bicubic",
                                                align_corners=a["coordinate_transformation_mode"] == "align_corners")
            y.backward(torch.tensor(i["dY"].astype(np.float64)))
            return {"dX": x.grad.numpy()}
        out.append(Case("resize_grad", {"X": rand(*xs, dt=dt), "dY": dy}, gref,
                        {"mode": "cubic", "sizes": [xs[0], xs[1], *size],
                         "coordinate_transformation_mode": "align_corners" if ac else "half_pixel"}, scale=4))
    return out


def cases():
    try:
        import torch  # noqa: F401
    except ImportError:
        return []
    return amsgrad_cases() + mse_cases() + max_pool_cases() + resize_cases()
