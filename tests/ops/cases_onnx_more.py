"""Cases of the second batch of ONNX default-domain ops against NumPy, written from the
ONNX operator definitions: lp_pool, global_lp_pool, lrn, cast_like, reverse_sequence,
center_crop_pad, the Hann, Hamming and Blackman windows, and the seeded random ops
(random_uniform_like, random_normal_like, bernoulli), whose values are the dropout hash
(docs/ARCHITECTURE.md) recomputed here."""
import numpy as np

from harness import Case
from cases_losses import TWO32, mix

RNG = np.random.default_rng(6262)
F32, F64 = np.float32, np.float64


def rand(shape, dt=F64, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dt)


# --- pooling ------------------------------------------------------------------------------

def lp_pool_ref(i, a):
    x = i["X"].astype(F64)
    p = a.get("p", 2)
    k = a["kernel_shape"]
    r = len(k)
    strides = a.get("strides") or [1] * r
    pads = a.get("pads") or [0] * (2 * r)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[d], pads[d + r]) for d in range(r)])
    out = [(xp.shape[2 + d] - k[d]) // strides[d] + 1 for d in range(r)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for pos in np.ndindex(*out):
        sl = tuple(slice(pos[d] * strides[d], pos[d] * strides[d] + k[d]) for d in range(r))
        win = xp[(slice(None), slice(None)) + sl]
        y[(slice(None), slice(None)) + pos] = (np.abs(win) ** p).sum(axis=tuple(range(2, 2 + r))) ** (1 / p)
    return {"Y": y}


def global_lp_ref(i, a):
    x = i["X"].astype(F64)
    p = a.get("p", 2)
    return {"Y": (np.abs(x) ** p).sum(axis=tuple(range(2, x.ndim)), keepdims=True) ** (1 / p)}


# --- normalization and data movement --------------------------------------------------------

def lrn_ref(i, a):
    x = i["X"].astype(F64)
    size = a["size"]
    alpha, beta, bias = a.get("alpha", 1e-4), a.get("beta", 0.75), a.get("bias", 1.0)
    c = x.shape[1]
    sq = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(0, ch - (size - 1) // 2), min(c - 1, ch + int(np.ceil((size - 1) / 2)))
        sq[:, ch] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    return {"Y": x / (bias + alpha / size * sq) ** beta}


def reverse_sequence_ref(i, a):
    x, lens = i["X"], i["SequenceLens"]
    t, b = a.get("time_axis", 0), a.get("batch_axis", 1)
    y = x.copy()
    for e, n in enumerate(lens):
        idx = [slice(None)] * x.ndim
        idx[b] = e
        idx[t] = slice(0, int(n))
        src = [slice(None)] * x.ndim
        src[b] = e
        src[t] = slice(int(n) - 1, None, -1) if n > 0 else slice(0, 0)
        y[tuple(idx)] = x[tuple(src)]
    return {"Y": y}


def center_crop_pad_ref(i, a):
    x = i["X"]
    axes = a.get("axes") or list(range(x.ndim))
    y = x
    for ax, size in zip([d % x.ndim for d in axes], a["shape"]):
        n = y.shape[ax]
        if size <= n:
            start = (n - size) // 2
            y = np.take(y, np.arange(start, start + size), axis=ax)
        else:
            before = (size - n) // 2
            pads = [(0, 0)] * y.ndim
            pads[ax] = (before, size - n - before)
            y = np.pad(y, pads)
    return {"Y": y}


def window_ref(kind):
    def ref(i, a):
        size = a["size"]
        n1 = size if a.get("periodic", 1) else size - 1
        w = 2 * np.pi * np.arange(size) / max(n1, 1)
        y = {"hann": 0.5 - 0.5 * np.cos(w),
             "hamming": 25 / 46 - 21 / 46 * np.cos(w),
             "blackman": 0.42 - 0.5 * np.cos(w) + 0.08 * np.cos(2 * w)}[kind]
        return {"Y": y.astype({"f64": F64}.get(a.get("dtype", "f32"), F32))}
    return ref


# --- the seeded random ops ------------------------------------------------------------------

def uniform01(shape, seed, stream):
    s = (seed + stream * 0x9E3779B9) % TWO32
    key = int(mix(np.int64(s), 0x7FEB352D))
    mul = 2 ** 30 + 1 + 2 * (int(mix(np.int64((key + 0x9E3779B9) % TWO32), 0x7FEB352D)) % 2 ** 29)
    i = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return (mix((i + key) % TWO32, mul).astype(F64) + 0.5) / TWO32


def random_ref(kind):
    def ref(i, a):
        x = i["X"]
        seed = a.get("seed", 0)
        u = uniform01(x.shape, seed, 0)
        dt = {"f32": F32, "f64": F64, "i32": np.int32}.get(a.get("dtype", ""), x.dtype)
        if kind == "uniform":
            lo, hi = a.get("low", 0.0), a.get("high", 1.0)
            y = lo + (hi - lo) * u
        elif kind == "normal":
            y = a.get("mean", 0.0) + a.get("scale", 1.0) * np.sqrt(-2 * np.log(u)) * np.cos(
                2 * np.pi * uniform01(x.shape, seed, 1))
        else:
            y = (u < x.astype(F64)).astype(F64)
        return {"Y": y.astype(dt)}
    return ref


def torch_grads(fwd, i, attrs):
    """dX of sum(fwd(X) * dY) by PyTorch autograd in f64; fwd works on torch tensors."""
    import torch
    x = torch.tensor(i["X"].astype(F64), requires_grad=True)
    fwd(x, attrs).backward(torch.tensor(i["dY"].astype(F64)))
    return {"dX": x.grad.numpy()}


def torch_lp_pool(x, a):
    import torch
    import torch.nn.functional as F
    p, k = a.get("p", 2), a["kernel_shape"]
    r = len(k)
    strides = a.get("strides") or [1] * r
    pads = a.get("pads") or [0] * (2 * r)
    xp = F.pad(x, [v for d in reversed(range(r)) for v in (pads[d], pads[d + r])])
    for d in range(r):  # windows along each spatial axis: [..., out..., k...]
        xp = xp.unfold(2 + d, k[d], strides[d])
    return (xp.abs() ** p).sum(dim=tuple(range(-r, 0))) ** (1 / p)


def torch_global_lp(x, a):
    p = a.get("p", 2)
    return (x.abs() ** p).sum(dim=tuple(range(2, x.dim())), keepdim=True) ** (1 / p)


def torch_lrn(x, a):
    import torch
    size = a["size"]
    alpha, beta, bias = a.get("alpha", 1e-4), a.get("beta", 0.75), a.get("bias", 1.0)
    c = x.shape[1]
    sq = torch.stack([(x[:, max(0, ch - (size - 1) // 2):min(c - 1, ch + size // 2) + 1] ** 2).sum(1)
                      for ch in range(c)], 1)
    return x / (bias + alpha / size * sq) ** beta


def grad_cases():
    out = []
    for shape, attrs in (((1, 2, 4, 5), {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 1, 0, 1], "p": 3}),
                         ((2, 1, 6), {"kernel_shape": [2], "p": 1})):
        x = rand(shape)
        y = torch_lp_pool(__import__("torch").tensor(x), attrs)
        out.append(Case("lp_pool_grad", {"X": x, "dY": rand(tuple(y.shape))},
                        lambda i, a: torch_grads(torch_lp_pool, i, a), attrs=attrs))
    x = rand((2, 3, 2, 3), F32)
    out.append(Case("global_lp_pool_grad", {"X": x, "dY": rand((2, 3, 1, 1), F32)},
                    lambda i, a: torch_grads(torch_global_lp, i, a), attrs={"p": 3}))
    for dt, shape, attrs in ((F64, (2, 5, 3), {"size": 4, "alpha": 0.5, "beta": 0.6, "bias": 1.3}),
                             (F32, (1, 6, 2, 2), {"size": 3})):
        out.append(Case("lrn_grad", {"X": rand(shape, dt), "dY": rand(shape, dt)},
                        lambda i, a: torch_grads(torch_lrn, i, a), attrs=attrs))
    return out


def cases():
    out = grad_cases()
    for dt, shape, attrs in ((F32, (2, 3, 7, 6), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1], "p": 3}),
                             (F64, (1, 2, 9), {"kernel_shape": [4], "p": 1}),
                             (F32, (2, 2, 5, 5), {"kernel_shape": [2, 2], "strides": [2, 2]})):
        out.append(Case("lp_pool", {"X": rand(shape, dt)}, lp_pool_ref, attrs=attrs, cross=dt == F32))
    out.append(Case("global_lp_pool", {"X": rand((2, 3, 4, 5), F32)}, global_lp_ref))
    out.append(Case("global_lp_pool", {"X": rand((1, 4, 3, 2, 3), F64)}, global_lp_ref, attrs={"p": 3}))
    for dt, shape, attrs in ((F32, (2, 7, 3, 4), {"size": 3}),
                             (F64, (3, 6), {"size": 4, "alpha": 0.01, "beta": 0.5, "bias": 2.0}),
                             (F32, (1, 5, 6), {"size": 5, "alpha": 0.3})):
        out.append(Case("lrn", {"X": rand(shape, dt, -2, 2)}, lrn_ref, attrs=attrs))
    for x, target in ((rand((3, 4), F32, -50, 50), np.zeros(2, np.int32)),
                      (RNG.integers(-9, 9, (5,)).astype(np.int64), np.zeros((1, 1), F64)),
                      (rand((2, 3), F64), np.zeros(3, F32))):
        out.append(Case("cast_like", {"X": x, "Target": target},
                        lambda i, a: {"Y": i["X"].astype(i["Target"].dtype)}))
    for dt, shape, lens, attrs in ((F32, (5, 3, 2), [5, 0, 3], {}),
                                   (F64, (4, 6), [1, 4, 2, 6], {"time_axis": 1, "batch_axis": 0}),
                                   (np.int32, (3, 4, 5), [2, 3, 1, 0], {})):
        x = rand(shape, dt) if dt != np.int32 else RNG.integers(-50, 50, shape).astype(dt)
        out.append(Case("reverse_sequence", {"X": x, "SequenceLens": np.asarray(lens, np.int64)},
                        reverse_sequence_ref, attrs=attrs))
    for dt, shape, attrs in ((F32, (5, 6), {"shape": [3, 9]}), (F64, (2, 7, 4), {"shape": [4, 4], "axes": [1, -1]}),
                             (np.int64, (6, 3), {"shape": [1], "axes": [0]}),
                             # GCC 12's Zen 3 tuning dropped every other row of this one
                             # (docs/ARCHITECTURE.md, cpu device)
                             (F32, (5, 3, 2), {"shape": [3, 5], "axes": [0, 1]})):
        x = rand(shape, dt) if dt != np.int64 else RNG.integers(-5, 5, shape).astype(dt)
        out.append(Case("center_crop_pad", {"X": x}, center_crop_pad_ref, attrs=attrs))
    for kind in ("hann", "hamming", "blackman"):
        out.append(Case(kind + "_window", {}, window_ref(kind), attrs={"size": 10}))
        out.append(Case(kind + "_window", {}, window_ref(kind), attrs={"size": 4099}, label="-long"))
        out.append(Case(kind + "_window", {}, window_ref(kind), attrs={"size": 7, "periodic": 0, "dtype": "f64"}))
    for kind, op, attrs in (("uniform", "random_uniform_like", {"seed": 3}),
                            ("uniform", "random_uniform_like", {"low": -2.0, "high": 5.0, "seed": -11, "dtype": "f64"}),
                            ("normal", "random_normal_like", {"seed": 9}),
                            ("normal", "random_normal_like", {"mean": 1.5, "scale": 0.5, "dtype": "f64"}),
                            ("bernoulli", "bernoulli", {"seed": 4}),
                            ("bernoulli", "bernoulli", {"seed": 77, "dtype": "i32"})):
        x = rand((6, 7), F32, 0, 1)
        out.append(Case(op, {"X": x}, random_ref(kind), attrs=attrs))
    return out
