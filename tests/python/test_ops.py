"""Library ops called from Python (tl.<name>) against NumPy, on cpu and opencl. Each
family is one traced kernel per device holding every op of the table, so the whole
table compiles once per device; a failure names the op."""

import math

import numpy as np
import pytest

import unitile as tl

from conftest import RUN_DEVICES

DEVICES = [d for d in ("cpu", "opencl") if d in RUN_DEVICES]

erf = np.vectorize(math.erf, otypes=[np.float64])

# name -> (NumPy reference on float64, input transform to keep it in its domain)
UNARY = {
    "abs": (np.abs, None), "neg": (np.negative, None), "exp": (np.exp, None), "exp2": (np.exp2, None),
    "expm1": (np.expm1, None), "log": (np.log, abs), "log2": (np.log2, abs), "log1p": (np.log1p, abs),
    "sqrt": (np.sqrt, abs), "rsqrt": (lambda x: 1 / np.sqrt(x), abs), "reciprocal": (np.reciprocal, abs),
    "square": (np.square, None), "sin": (np.sin, None), "cos": (np.cos, None), "tan": (np.tan, None),
    "asin": (np.arcsin, None), "acos": (np.arccos, None), "atan": (np.arctan, None),
    "sinh": (np.sinh, None), "cosh": (np.cosh, None), "tanh": (np.tanh, None), "asinh": (np.arcsinh, None),
    "acosh": (np.arccosh, lambda x: 1 + abs(x)), "atanh": (np.arctanh, None), "erf": (erf, None),
    "floor": (np.floor, lambda x: 4 * x), "ceil": (np.ceil, lambda x: 4 * x), "trunc": (np.trunc, lambda x: 4 * x),
    "sign": (np.sign, None), "relu": (lambda x: np.maximum(x, 0), None),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None), "silu": (lambda x: x / (1 + np.exp(-x)), None),
    "softplus": (lambda x: np.log1p(np.exp(x)), None), "softsign": (lambda x: x / (1 + abs(x)), None),
    "gelu": (lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), None),
}

BINARY = {
    "add": (np.add, None), "sub": (np.subtract, None), "mul": (np.multiply, None),
    "div": (np.divide, lambda b: 0.5 + abs(b)), "pow": (np.power, lambda b: b), "max": (np.maximum, None),
    "min": (np.minimum, None), "atan2": (np.arctan2, None), "fmod": (np.fmod, lambda b: 0.25 + abs(b)),
}

COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}

REDUCE = {
    "reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
    "reduce_prod": np.prod, "reduce_l1": lambda x, axis, keepdims: np.sum(abs(x), axis=axis, keepdims=keepdims),
    "reduce_l2": lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)),
    "reduce_sum_square": lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
    "reduce_log_sum_exp": lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims)),
}


def check(name, got, want, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"op {name}")


@pytest.fixture
def x(rng):
    return rng.uniform(-0.9, 0.9, (4, 33)).astype(np.float32)


@pytest.mark.parametrize("device", DEVICES)
def test_unary_ops(device, x):
    names = list(UNARY)
    inputs = [(UNARY[n][1] or (lambda v: v))(x).astype(np.float32) for n in names]

    @tl.kernel
    def every_unary(*xs):
        return tuple(getattr(tl, n)(v) for n, v in zip(names, xs))

    for n, got, a in zip(names, every_unary(*inputs, device=device), inputs):
        check(n, got, UNARY[n][0](a.astype(np.float64)))


@pytest.mark.parametrize("device", DEVICES)
def test_binary_ops_with_broadcasting(device, x, rng):
    names = list(BINARY)
    b = rng.uniform(-0.9, 0.9, (33,)).astype(np.float32)
    a_pos = abs(x) + 0.1  # pow's base
    pairs = [(a_pos if n == "pow" else x, ((BINARY[n][1] or (lambda v: v))(b)).astype(np.float32)) for n in names]

    @tl.kernel
    def every_binary(*xs):
        return tuple(getattr(tl, n)(xs[2 * i], xs[2 * i + 1]) for i, n in enumerate(names))

    flat = [v for p in pairs for v in p]
    for n, got, (a, bb) in zip(names, every_binary(*flat, device=device), pairs):
        check(n, got, BINARY[n][0](a.astype(np.float64), bb.astype(np.float64)))


@pytest.mark.parametrize("device", DEVICES)
def test_comparisons(device, rng):
    a = rng.integers(-3, 3, (5, 6)).astype(np.float32)
    b = rng.integers(-3, 3, (6,)).astype(np.float32)
    names = list(COMPARE)

    @tl.kernel
    def every_comparison(a, b):
        return tuple(getattr(tl, n)(a, b) for n in names)

    for n, got in zip(names, every_comparison(a, b, device=device)):
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, COMPARE[n](a, b), err_msg=f"op {n}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axes,keepdims", [([1], True), ([0], False), ([], False)])
def test_reductions(device, x, axes, keepdims):
    names = list(REDUCE)
    xx = x[:, :8] + 1.0  # positive, short rows: prod stays finite

    @tl.kernel
    def every_reduction(v):
        return tuple(getattr(tl, n)(v, axes=axes, keepdims=keepdims) for n in names)

    axis = tuple(axes) if axes else None
    for n, got in zip(names, every_reduction(xx, device=device)):
        check(n, got, REDUCE[n](xx.astype(np.float64), axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-5)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("device", DEVICES)
def test_ops_with_attributes_and_optional_inputs(device, rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    s = rng.standard_normal(8).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    w = rng.standard_normal((5, 8)).astype(np.float32)
    c = rng.standard_normal((4, 5)).astype(np.float32)
    q, k, v = (rng.standard_normal((1, 2, 6, 8)).astype(np.float32) for _ in range(3))  # [batch, heads, seq, d]

    @tl.kernel
    def attributed(x, s, b, w, c, q, k, v):
        return (tl.leaky_relu(x, alpha=0.2), tl.clip(x, min=-0.5, max=0.5), tl.log_softmax(x, axis=0),
                tl.layernorm(x, s, b, epsilon=1e-5), tl.rmsnorm(x, s), tl.layernorm(x),
                tl.gemm(x, w, c, alpha=0.5, beta=2.0, transB=True), tl.cumsum(x, axis=1),
                tl.argmax(x, axis=1, keepdims=False), tl.var(x, axes=[1], keepdims=False),
                tl.scaled_dot_product_attention(q, k, v), tl.scaled_dot_product_attention(q, k, v, causal=True))

    x64 = x.astype(np.float64)
    mean, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    scores = q.astype(np.float64) @ k.swapaxes(-1, -2) / np.sqrt(8)
    causal = np.where(np.tril(np.ones((6, 6), bool)), scores, -np.inf)
    want = [
        ("leaky_relu", np.where(x64 > 0, x64, 0.2 * x64)), ("clip", np.clip(x64, -0.5, 0.5)),
        ("log_softmax", np.log(np_softmax(x64, axis=0))),
        ("layernorm", (x64 - mean) / np.sqrt(var + 1e-5) * s + b),
        ("rmsnorm", x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-5) * s),
        ("layernorm without scale and bias", (x64 - mean) / np.sqrt(var + 1e-5)),
        ("gemm", 0.5 * x64 @ w.T + 2.0 * c), ("cumsum", np.cumsum(x64, axis=1)),
        ("argmax", np.argmax(x, axis=1)), ("var", x64.var(axis=1)),
        ("scaled_dot_product_attention", np_softmax(scores) @ v),
        ("scaled_dot_product_attention causal", np_softmax(causal) @ v),
    ]
    for (name, expected), got in zip(want, attributed(x, s, b, w, c, q, k, v, device=device)):
        if name == "argmax":
            np.testing.assert_array_equal(got, expected, err_msg=f"op {name}")
        else:
            check(name, got, expected, rtol=1e-4, atol=1e-5)
