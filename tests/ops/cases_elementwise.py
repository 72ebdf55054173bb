"""Cases of the elementwise ops: every op on f32 and f64 (integer ops on i32/i64) at an
odd shape and a broadcasting shape, and every backward op against PyTorch autograd."""
import math

import numpy as np

from harness import Case

RNG = np.random.default_rng(1234)
erf = np.vectorize(math.erf, otypes=[np.float64])
S2PI, RS2 = math.sqrt(2 / math.pi), 1 / math.sqrt(2)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


# name -> (reference on float64 arrays with attrs a, input domain, attrs to test)
UNARY = {
    "abs": (lambda x, a: np.abs(x), "any", {}),
    "neg": (lambda x, a: -x, "any", {}),
    "exp": (lambda x, a: np.exp(x), "any", {}),
    "exp2": (lambda x, a: np.exp2(x), "any", {}),
    "expm1": (lambda x, a: np.expm1(x), "any", {}),
    "log": (lambda x, a: np.log(x), "pos", {}),
    "log2": (lambda x, a: np.log2(x), "pos", {}),
    "log1p": (lambda x, a: np.log1p(x), "pos", {}),
    "sqrt": (lambda x, a: np.sqrt(x), "pos", {}),
    "rsqrt": (lambda x, a: 1 / np.sqrt(x), "pos", {}),
    "reciprocal": (lambda x, a: 1 / x, "pos", {}),
    "square": (lambda x, a: x * x, "any", {}),
    "sin": (lambda x, a: np.sin(x), "any", {}),
    "cos": (lambda x, a: np.cos(x), "any", {}),
    "tan": (lambda x, a: np.tan(x), "any", {}),
    "asin": (lambda x, a: np.arcsin(x), "unit", {}),
    "acos": (lambda x, a: np.arccos(x), "unit", {}),
    "atan": (lambda x, a: np.arctan(x), "any", {}),
    "sinh": (lambda x, a: np.sinh(x), "any", {}),
    "cosh": (lambda x, a: np.cosh(x), "any", {}),
    "tanh": (lambda x, a: np.tanh(x), "any", {}),
    "asinh": (lambda x, a: np.arcsinh(x), "any", {}),
    "acosh": (lambda x, a: np.arccosh(x), "gt1", {}),
    "atanh": (lambda x, a: np.arctanh(x), "unit", {}),
    "erf": (lambda x, a: erf(x), "any", {}),
    "floor": (lambda x, a: np.floor(x), "wide", {}),
    "ceil": (lambda x, a: np.ceil(x), "wide", {}),
    "round": (lambda x, a: np.round(x), "halves", {}),
    "trunc": (lambda x, a: np.trunc(x), "wide", {}),
    "sign": (lambda x, a: np.sign(x), "withzero", {}),
    "isnan": (lambda x, a: np.isnan(x), "special", {}),
    "isinf": (lambda x, a: np.isinf(x), "special", {}),
    "isfinite": (lambda x, a: np.isfinite(x), "special", {}),
    "relu": (lambda x, a: np.maximum(x, 0), "any", {}),
    "sigmoid": (lambda x, a: sigmoid(x), "wide", {}),
    "silu": (lambda x, a: x * sigmoid(x), "wide", {}),
    "gelu": (lambda x, a: 0.5 * x * (1 + erf(x * RS2)), "wide", {}),
    "gelu_tanh": (lambda x, a: 0.5 * x * (1 + np.tanh(S2PI * (x + 0.044715 * x ** 3))), "wide", {}),
    "leaky_relu": (lambda x, a: np.where(x >= 0, x, a.get("alpha", 0.01) * x), "any", {"alpha": 0.2}),
    "elu": (lambda x, a: np.where(x > 0, x, a.get("alpha", 1.0) * np.expm1(x)), "any", {"alpha": 0.5}),
    "selu": (lambda x, a: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)), "any", {}),
    "celu": (lambda x, a: np.maximum(x, 0) + np.minimum(0, a.get("alpha", 1.0) * np.expm1(x / a.get("alpha", 1.0))), "any", {"alpha": 2.0}),
    "softplus": (lambda x, a: softplus(x), "wide", {}),
    "softsign": (lambda x, a: x / (1 + np.abs(x)), "wide", {}),
    "hard_sigmoid": (lambda x, a: np.clip(a.get("alpha", 0.2) * x + a.get("beta", 0.5), 0, 1), "wide", {}),
    "hardswish": (lambda x, a: x * np.clip(x / 6 + 0.5, 0, 1), "wide", {}),
    "mish": (lambda x, a: x * np.tanh(softplus(x)), "wide", {}),
    "thresholded_relu": (lambda x, a: np.where(x > a.get("alpha", 1.0), x, 0), "wide", {"alpha": 0.5}),
    "shrink": (lambda x, a: np.where(x < -a.get("lambd", 0.5), x + a.get("bias", 0.0),
                                     np.where(x > a.get("lambd", 0.5), x - a.get("bias", 0.0), 0)), "wide", {"bias": 0.25}),
    "clip": (lambda x, a: np.clip(x, a.get("min", -3.4e38), a.get("max", 3.4e38)), "wide", {"min": -0.5, "max": 1.5}),
}

BINARY = {
    "add": (lambda x, y: x + y, "any"),
    "sub": (lambda x, y: x - y, "any"),
    "mul": (lambda x, y: x * y, "any"),
    "div": (lambda x, y: x / y, "nonzero"),
    "pow": (lambda x, y: np.power(x, y), "pospow"),
    "mod": (lambda x, y: np.mod(x, y), "nonzero"),
    "fmod": (lambda x, y: np.fmod(x, y), "nonzero"),
    "max": (lambda x, y: np.maximum(x, y), "any"),
    "min": (lambda x, y: np.minimum(x, y), "any"),
    "atan2": (lambda x, y: np.arctan2(x, y), "nonzero"),
    "prelu": (lambda x, y: np.where(x >= 0, x, y * x), "any"),
    "equal": (lambda x, y: x == y, "ties"),
    "not_equal": (lambda x, y: x != y, "ties"),
    "less": (lambda x, y: x < y, "ties"),
    "less_equal": (lambda x, y: x <= y, "ties"),
    "greater": (lambda x, y: x > y, "ties"),
    "greater_equal": (lambda x, y: x >= y, "ties"),
}
INT_BINARY = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "div": lambda x, y: np.trunc(x / y).astype(x.dtype), "mod": lambda x, y: np.mod(x, y),
    "max": np.maximum, "min": np.minimum, "equal": lambda x, y: x == y,
    "less": lambda x, y: x < y, "greater_equal": lambda x, y: x >= y,
}
INT_UNARY = {"abs": np.abs, "neg": lambda x: -x, "relu": lambda x: np.maximum(x, 0),
             "sign": np.sign, "square": lambda x: x * x}
LOGIC = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def sample(shape, dtype, domain):
    u = RNG.uniform(-1, 1, size=shape)
    if domain == "pos":
        x = RNG.uniform(0.05, 3, size=shape)
    elif domain == "unit":
        x = u * 0.95
    elif domain == "gt1":
        x = RNG.uniform(1.05, 4, size=shape)
    elif domain == "wide":
        x = u * 4
    elif domain == "halves":
        x = np.round(u * 8) / 2  # exact halves: round half to even is visible
    elif domain == "withzero":
        x = np.where(RNG.uniform(size=shape) < 0.2, 0.0, u)
    elif domain == "special":
        x = u.copy().reshape(-1)
        x[::3] = np.nan
        x[1::5] = np.inf
        x[2::7] = -np.inf
        x = x.reshape(shape)
    elif domain == "nonzero":
        x = np.where(np.abs(u) < 0.1, 0.5, u) * 3
    elif domain == "ties":
        x = np.round(u * 2) / 2
    else:
        x = u
    return np.asarray(x).astype(dtype)


def unary_case(name, ref, domain, attrs, dtype, shape, label=""):
    x = sample(shape, dtype, domain)
    return Case(name, {"X": x}, lambda i, a, ref=ref: {"Y": ref(i["X"].astype(np.float64), a)},
                attrs=attrs, label=label, cross=name in ("gelu", "exp", "relu"))


def cases():
    out = []
    for name, (ref, domain, attrs) in UNARY.items():
        for dt in (np.float32, np.float64):
            out.append(unary_case(name, ref, domain, {}, dt, (3, 37)))
        out.append(unary_case(name, ref, domain, {}, np.float32, (2, 3, 5), label="-r3"))
        if attrs:
            out.append(unary_case(name, ref, domain, attrs, np.float32, (17,)))
    for name, ref in INT_UNARY.items():
        for dt in (np.int32, np.int64):
            x = RNG.integers(-9, 10, size=(4, 9)).astype(dt)
            out.append(Case(name, {"X": x}, lambda i, a, ref=ref: {"Y": ref(i["X"])}))
    x = RNG.uniform(-1, 1, (5, 7)) > 0
    out.append(Case("not", {"X": x}, lambda i, a: {"Y": ~i["X"]}))
    # The rounding ops' edge values: halves both ways, +-0, NaN, +-inf, subnormals, values
    # past 2^23 (already whole) and just below a half; 3 x 37 so the vector loop and its
    # scalar tail both see them.
    edge = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.4, -0.4, 0.6, -0.6, 0.0, -0.0, np.nan,
                     np.inf, -np.inf, 8388607.5, -8388607.5, 16777217.0, 1e30, -1e30, 2.7, -2.7,
                     1e-40, -1e-40, 0.49999997, -0.49999997, 7.0, -7.0])
    x = np.resize(edge, (3, 37)).astype(np.float32)
    for name in ("floor", "ceil", "round", "trunc", "sign"):
        out.append(Case(name, {"X": x}, lambda i, a, ref=UNARY[name][0]: {"Y": ref(i["X"].astype(np.float64), a)},
                        label="-edges"))

    for name, (ref, domain) in BINARY.items():
        for dt in (np.float32, np.float64):
            a = sample((3, 37), dt, domain if domain != "pospow" else "pos")
            b = sample((3, 37), dt, domain if domain != "pospow" else "any")
            out.append(Case(name, {"A": a, "B": b},
                            lambda i, at, ref=ref: {"C": ref(i["A"].astype(np.float64), i["B"].astype(np.float64))}))
        # broadcasting: [4, 1, 5] with [3, 1]
        a = sample((4, 1, 5), np.float32, domain if domain != "pospow" else "pos")
        b = sample((3, 1), np.float32, domain if domain != "pospow" else "any")
        out.append(Case(name, {"A": a, "B": b},
                        lambda i, at, ref=ref: {"C": ref(i["A"].astype(np.float64), i["B"].astype(np.float64))},
                        label="-bcast"))
    for name, ref in INT_BINARY.items():
        for dt in (np.int32, np.int64):
            a = RNG.integers(-20, 21, size=(3, 11)).astype(dt)
            b = RNG.integers(1, 7, size=(11,)).astype(dt) * np.where(RNG.uniform(size=11) < 0.5, -1, 1).astype(dt)
            out.append(Case(name, {"A": a, "B": b}, lambda i, at, ref=ref: {"C": ref(i["A"], i["B"])}))
    for name, ref in LOGIC.items():
        a = RNG.uniform(size=(3, 8)) > 0.5
        b = RNG.uniform(size=(8,)) > 0.5
        out.append(Case(name, {"A": a, "B": b}, lambda i, at, ref=ref: {"C": ref(i["A"], i["B"])}))
    for dt in (np.float32, np.float64, np.int32):
        c = RNG.uniform(size=(4, 1)) > 0.5
        a = RNG.uniform(-1, 1, (4, 6)).astype(dt) if dt != np.int32 else RNG.integers(-5, 5, (4, 6)).astype(dt)
        b = np.asarray(RNG.uniform(-1, 1, (6,))).astype(dt)
        out.append(Case("where", {"Cond": c, "A": a, "B": b},
                        lambda i, at: {"Y": np.where(i["Cond"], i["A"], i["B"])}))
    out += grad_cases()
    return out


# --- backward ops against PyTorch autograd (float64) --------------------------------

def torch_unary():
    import torch
    import torch.nn.functional as F
    return {
        "abs": torch.abs, "neg": torch.neg, "exp": torch.exp, "exp2": torch.exp2,
        "expm1": torch.expm1, "log": torch.log, "log2": torch.log2, "log1p": torch.log1p,
        "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
        "square": torch.square, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
        "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
        "cosh": torch.cosh, "tanh": torch.tanh, "asinh": torch.asinh, "acosh": torch.acosh,
        "atanh": torch.atanh, "erf": torch.erf, "relu": torch.relu, "sigmoid": torch.sigmoid,
        "silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "leaky_relu": lambda x: F.leaky_relu(x, 0.01), "elu": F.elu, "selu": F.selu,
        "celu": F.celu, "softplus": F.softplus, "softsign": F.softsign,
        "hard_sigmoid": lambda x: torch.clamp(0.2 * x + 0.5, 0, 1),
        "hardswish": F.hardswish, "mish": F.mish,
        "thresholded_relu": lambda x: torch.where(x > 1.0, x, torch.zeros_like(x)),
        "shrink": lambda x: torch.where(x < -0.5, x, torch.where(x > 0.5, x, torch.zeros_like(x))),
        "clip": lambda x: x.clamp(min=-3.4028234663852886e38, max=3.4028234663852886e38),
    }


def torch_binary():
    import torch
    return {
        "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
        "pow": torch.pow, "max": torch.maximum, "min": torch.minimum, "atan2": torch.atan2,
        "prelu": lambda a, b: torch.where(a >= 0, a, b * a),
    }


def grad_ref_unary(fn):
    def ref(i, a):
        import torch
        x = torch.tensor(i["X"].astype(np.float64), requires_grad=True)
        fn(x).backward(torch.tensor(i["dY"].astype(np.float64)))
        return {"dX": x.grad.numpy()}
    return ref


def grad_ref_binary(fn):
    def ref(i, a):
        import torch
        x = torch.tensor(i["A"].astype(np.float64), requires_grad=True)
        y = torch.tensor(i["B"].astype(np.float64), requires_grad=True)
        fn(x, y).backward(torch.tensor(i["dC"].astype(np.float64)))
        return {"dA": x.grad.numpy(), "dB": y.grad.numpy()}
    return ref


def grad_cases():
    out = []
    for name, fn in torch_unary().items():
        domain = UNARY[name][1]
        if domain in ("halves", "withzero", "special"):
            continue
        for dt in (np.float32, np.float64):
            x = sample((3, 37), dt, domain)
            dy = sample((3, 37), dt, "any")
            out.append(Case(name + "_grad", {"X": x, "dY": dy}, grad_ref_unary(fn)))
    for name, fn in torch_binary().items():
        domain = BINARY[name][1]
        for dt, sa, sb in ((np.float64, (3, 37), (3, 37)), (np.float32, (4, 1, 5), (3, 1))):
            a = sample(sa, dt, "pos" if domain == "pospow" else domain)
            b = sample(sb, dt, "any" if domain == "pospow" else domain)
            dc = sample(np.broadcast_shapes(sa, sb), dt, "any")
            out.append(Case(name + "_grad", {"A": a, "B": b, "dC": dc}, grad_ref_binary(fn)))
    return out
