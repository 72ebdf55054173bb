"""Every differentiable op's gradient through tl.grad against central finite differences
in f64, whichever way append_gradients gets it (derived from the op's comprehensions or
the registered <op>_grad).

Ops are checked in batches: one traced function computes each case's loss
sum(sin(0.7 * out + 0.3)) over its float outputs (a cotangent that varies per element),
and one kernel computes all the gradients, so compiling stays cheap. The finite
differences run the batch's forward kernel with one element of one input of every case
moved by +-eps at a time (each case has its own loss output, so cases do not mix).
Tolerance: |grad - fd| <= 1e-7 + 1e-5 |fd|, eps = 1e-6 (truncation ~eps^2, rounding
~1e-16 / eps). Inputs keep away from kinks (relu at 0, ties of max) by construction."""

import inspect

import numpy as np
import pytest

import unitile as tl
from unitile import _autodiff

RTOL, ATOL, EPS = 1e-5, 1e-7, 1e-6


@pytest.fixture(autouse=True)
def one_kernel(monkeypatch):
    """The gradient graphs run as one kernel here, not on the graph executor: the same
    gradients at a fraction of the compiling (the executor is exercised by test_grad.py)."""
    monkeypatch.setattr(_autodiff, "_EXECUTOR", False)


def gen(rng, shape, kind):
    if kind == "n":  # normal
        return rng.standard_normal(shape)
    if kind == "p":  # positive
        return rng.uniform(0.5, 2.0, shape)
    if kind == "u":  # inside (-1, 1)
        return rng.uniform(-0.8, 0.8, shape)
    if kind == "g1":  # above 1
        return rng.uniform(1.2, 2.5, shape)
    if kind == "b":  # bool mask
        return rng.uniform(size=shape) < 0.5
    if kind == "perm":  # distinct values (no ties for max/sort)
        return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.37 - 1.0
    if kind.startswith("i"):  # indices in [0, K)
        return rng.integers(0, int(kind[1:]), shape)
    raise ValueError(kind)


class Case:
    def __init__(self, name, fn, inputs, op=None):
        self.name, self.fn, self.inputs = name, fn, inputs  # inputs: [(shape, kind)]
        self.op = op or name


def U(op, in_shape=(2, 3), kind="n", **attrs):
    """A unary op on one input."""
    return Case(f"{op}{attrs or ''}", lambda x: getattr(tl, op)(x, **attrs), [(in_shape, kind)], op)


def B(op, a=(2, 3), b=(3,), ka="n", kb="n", **attrs):
    return Case(f"{op}{a}{b}{attrs or ''}", lambda x, y: getattr(tl, op)(x, y, **attrs), [(a, ka), (b, kb)], op)


CASES = [
    # --- elementwise: unary math and activations -----------------------------------------
    *[U(op) for op in ["abs", "asinh", "atan", "celu", "cos", "cosh", "elu", "erf", "exp", "exp2", "expm1",
                       "gelu", "gelu_tanh", "hard_sigmoid", "hardswish", "identity", "leaky_relu", "mish",
                       "neg", "relu", "selu", "shrink", "sigmoid", "silu", "sin", "sinh", "softplus",
                       "softsign", "square", "tanh", "thresholded_relu"]],
    *[U(op, kind="u") for op in ["acos", "asin", "atanh", "tan"]],
    *[U(op, kind="p") for op in ["log", "log1p", "log2", "reciprocal", "rsqrt", "sqrt"]],
    U("acosh", kind="g1"),
    U("clip", min=-0.5, max=0.5),
    U("elu", alpha=0.7),
    U("leaky_relu", alpha=0.2),
    # --- elementwise: binary with broadcasting -------------------------------------------
    *[B(op) for op in ["add", "sub", "mul", "max", "min", "atan2"]],
    B("add", (2, 1, 3), (4, 1)),
    B("div", kb="p"),
    B("pow", ka="p"),
    B("prelu", (2, 3), (3,)),
    Case("where", lambda c, a, b: tl.where(c, a, b), [((2, 3), "b"), ((2, 3), "n"), ((3,), "n")]),
    B("add_n", (2, 3), (3,)),
    Case("mean_n", lambda a, b, c: tl.mean_n(a, b, c), [((2, 3), "n"), ((3,), "n"), ((2, 1), "n")]),
    B("mod", kb="p"),
    B("fmod", kb="p"),
    B("mse_loss", (2, 3), (2, 3)),
    B("mse_loss", (2, 3), (2, 3), reduction="none"),
    # --- contractions --------------------------------------------------------------------
    B("matmul", (2, 3), (3, 4)),
    B("matmul", (2, 2, 3), (3, 4)),
    B("matmul", (3,), (3, 2)),
    Case("matmul_transB", lambda a, b: tl._trace.call("matmul", [a, b], {"transB": True}),
         [((2, 3), "n"), ((4, 3), "n")], op="matmul"),
    B("batch_matmul", (2, 3, 4), (2, 4, 2)),
    Case("gemm", lambda a, b, c: tl.gemm(a, b, c, alpha=0.5, beta=2.0, transA=True),
         [((3, 2), "n"), ((3, 4), "n"), ((4,), "n")]),
    Case("linear", lambda x, w, b: tl.linear(x, w, b), [((2, 3), "n"), ((4, 3), "n"), ((4,), "n")]),
    Case("einsum", lambda a, b: tl.einsum(a, b, equation="bij,bjk->bik"), [((2, 2, 3), "n"), ((2, 3, 2), "n")]),
    Case("einsum_trace", lambda a: tl.einsum(a, equation="ii->"), [((3, 3), "n")], op="einsum"),
    # --- reductions ----------------------------------------------------------------------
    U("reduce_sum", (2, 3, 2), axes=[1]),
    U("reduce_sum", (2, 3), keepdims=False),
    U("reduce_mean", (2, 3, 2), axes=[0, 2], keepdims=False),
    U("reduce_max", (2, 3), "perm", axes=[1]),
    U("reduce_prod", (2, 3), axes=[1]),
    U("reduce_min", (2, 3), "perm", axes=[0]),
    U("reduce_l1", (2, 3), axes=[1]),
    U("reduce_l2", (2, 3), axes=[1]),
    U("reduce_log_sum", (2, 3), "p", axes=[1]),
    U("reduce_log_sum_exp", (2, 3), axes=[1]),
    U("reduce_sum_square", (2, 3), axes=[0]),
    U("std", (2, 4), axes=[1], correction=1),
    U("var", (2, 4), axes=[1]),
    U("cumsum", (2, 4), axis=1),
    U("cumsum", (2, 4), axis=1, exclusive=True, reverse=True),
    # --- normalization -------------------------------------------------------------------
    U("softmax", (2, 4), axis=1),
    U("softmax", (3, 2), axis=0),
    U("log_softmax", (2, 4)),
    Case("layernorm", lambda x, s, b: tl.layernorm(x, s, b), [((2, 4), "n"), ((4,), "n"), ((4,), "n")]),
    Case("layernorm_axis", lambda x: tl.layernorm(x, axis=1), [((2, 2, 3), "n")], op="layernorm"),
    Case("rmsnorm", lambda x, s: tl.rmsnorm(x, s), [((2, 4), "n"), ((4,), "n")]),
    Case("groupnorm", lambda x, s, b: tl.groupnorm(x, s, b, num_groups=2),
         [((2, 4, 3), "n"), ((4,), "n"), ((4,), "n")]),
    Case("instancenorm", lambda x, s, b: tl.instancenorm(x, s, b), [((2, 2, 3), "n"), ((2,), "n"), ((2,), "n")]),
    Case("batchnorm", lambda x, s, b, m, v: tl.batchnorm(x, s, b, m, v),
         [((2, 3, 2), "n"), ((3,), "n"), ((3,), "n"), ((3,), "n"), ((3,), "p")]),
    Case("batchnorm_training", lambda x, s, b, m, v: tl.batchnorm_training(x, s, b, m, v)[0],
         [((3, 2, 2), "n"), ((2,), "n"), ((2,), "n"), ((2,), "n"), ((2,), "p")]),
    # --- losses --------------------------------------------------------------------------
    Case("cross_entropy", lambda x, t: tl.cross_entropy(x, t), [((3, 4), "n"), ((3,), "i4")]),
    Case("cross_entropy_smooth_sum", lambda x, t: tl.cross_entropy(x, t, label_smoothing=0.1, reduction="sum"),
         [((3, 4), "n"), ((3,), "i4")], op="cross_entropy"),
    Case("nll_loss", lambda x, t: tl.nll_loss(x, t), [((3, 4), "n"), ((3,), "i4")]),
    # --- attention -----------------------------------------------------------------------
    Case("sdpa_causal", lambda q, k, v: tl.scaled_dot_product_attention(q, k, v, causal=True),
         [((1, 2, 3, 2), "n"), ((1, 2, 3, 2), "n"), ((1, 2, 3, 2), "n")], op="scaled_dot_product_attention"),
    Case("sdpa_gqa_scale", lambda q, k, v: tl.scaled_dot_product_attention(q, k, v, scale=0.3),
         [((1, 2, 2, 2), "n"), ((1, 1, 3, 2), "n"), ((1, 1, 3, 2), "n")], op="scaled_dot_product_attention"),
    Case("multi_head_attention", lambda q, k, v: tl.multi_head_attention(q, k, v, num_heads=2, causal=True),
         [((1, 3, 4), "n"), ((1, 3, 4), "n"), ((1, 3, 4), "n")]),
    U("rotary_embedding", (1, 1, 3, 4)),
    # --- data movement -------------------------------------------------------------------
    Case("concat", lambda a, b: tl.concat(a, b, axis=1), [((2, 2), "n"), ((2, 3), "n")]),
    Case("split", lambda x: tl.split(x, axis=1, split=[1, 2]), [((2, 3), "n")]),
    U("expand", (3, 1), shape=[2, 3, 2]),
    U("flatten", (2, 2, 3), axis=2),
    U("flip", (2, 3), axes=[1]),
    U("pad", (2, 3), pads=[1, 0, 0, 2]),
    U("pad", (2, 3), pads=[0, 1, 0, 1], mode="reflect"),
    U("pad", (2, 3), pads=[1, 1, 1, 1], mode="edge"),
    U("squeeze", (2, 1, 3)),
    U("unsqueeze", (2, 3), axes=[0, 2]),
    U("tile", (2, 3), repeats=[2, 1]),
    U("tril", (3, 3)),
    U("triu", (3, 3), k=1),
    U("depth_to_space", (1, 4, 1, 2), blocksize=2),
    U("space_to_depth", (1, 1, 2, 4), blocksize=2),
    Case("reshape", lambda x: x.reshape(3, 2), [((2, 3), "n")]),
    Case("transpose", lambda x: x.transpose(1, 0, 2), [((2, 3, 2), "n")]),
    Case("slice", lambda x: x[1:, ::2], [((3, 5), "n")]),
    Case("slice_squeeze_negative_step", lambda x: x[:, 2, ::-1], [((2, 3, 4), "n")], op="slice"),
    # --- indexing ------------------------------------------------------------------------
    Case("embedding", lambda i, w: tl.embedding(i, w), [((2, 3), "i4"), ((4, 2), "n")]),
    Case("gather", lambda x, i: tl.gather(x, i, axis=1), [((2, 4), "n"), ((3,), "i4")]),
    Case("gather_elements", lambda x, i: tl.gather_elements(x, i, axis=1), [((2, 3), "n"), ((2, 2), "i3")]),
    Case("gather_nd", lambda x, i: tl.gather_nd(x, i), [((3, 2), "n"), ((2, 1), "i3")]),
    Case("index_select", lambda x, i: tl.index_select(x, i, dim=0), [((3, 2), "n"), ((4,), "i3")]),
    # scatters: one update per row (reduction none: no position written twice), or add
    Case("scatter_elements", lambda x, i, u: tl.scatter_elements(x, i, u, axis=1),
         [((2, 4), "n"), ((2, 1), "i4"), ((2, 1), "n")]),
    Case("scatter_elements_add", lambda x, i, u: tl.scatter_elements(x, i, u, axis=0, reduction="add"),
         [((3, 2), "n"), ((4, 2), "i3"), ((4, 2), "n")], op="scatter_elements"),
    Case("scatter_nd", lambda x, i, u: tl.scatter_nd(x, i, u), [((4, 3), "n"), ((1, 1), "i4"), ((1, 3), "n")]),
    Case("scatter_nd_add", lambda x, i, u: tl.scatter_nd(x, i, u, reduction="add"),
         [((4, 3), "n"), ((3, 1), "i4"), ((3, 3), "n")], op="scatter_nd"),
    U("topk", (2, 5), "perm", k=2),
    # --- convolution and pooling ---------------------------------------------------------
    Case("conv", lambda x, w, b: tl.conv(x, w, b, pads=[1, 0]), [((1, 2, 4), "n"), ((3, 2, 2), "n"), ((3,), "n")]),
    Case("conv_transpose", lambda x, w: tl.conv_transpose(x, w, strides=[2]), [((1, 2, 3), "n"), ((2, 1, 2), "n")]),
    U("average_pool", (1, 1, 4, 4), kernel_shape=[2, 2], strides=[2, 2]),
    U("max_pool", (1, 1, 4, 4), "perm", kernel_shape=[2, 2], strides=[1, 2]),
    U("global_average_pool", (1, 2, 3)),
    U("global_max_pool", (1, 2, 3), "perm"),
    U("lp_pool", (1, 2, 4, 5), kernel_shape=[2, 3], strides=[2, 1], pads=[1, 1, 0, 1], p=3),
    U("lp_pool", (1, 1, 5), kernel_shape=[2], p=1),
    U("global_lp_pool", (1, 2, 3, 2), p=2),
    U("lrn", (2, 5, 3), size=4, alpha=0.5, beta=0.6, bias=1.3),
    U("resize", (1, 1, 2, 3), mode="linear", sizes=[1, 1, 3, 5]),
    U("resize", (1, 1, 2, 3), mode="nearest", scales=[1.0, 1.0, 2.0, 2.0]),
    # --- training ------------------------------------------------------------------------
    Case("dropout", lambda x: tl.dropout(x, ratio=0.3, training_mode=True, seed=3)[0], [((2, 4), "n")]),
]

# Ops reachable through the tracer under their own name only through the graph's ops
# (reshape, slice, transpose, cast), checked above (cast: test_cast_gradient).
COVERED_ELSEWHERE = {"cast"}


def _case_loss(out):
    outs = out if isinstance(out, tuple) else (out,)
    total = None
    for o in outs:
        if o.dtype.kind != "f":
            continue
        term = tl.sum(tl.sin(o * 0.7 + 0.3))
        total = term if total is None else total + term
    return total


def _batches(size=16):
    return [CASES[i:i + size] for i in range(0, len(CASES), size)]


def _arrays(cases, seed):
    rng = np.random.default_rng(seed)
    arrays, owner = [], []
    for c, case in enumerate(cases):
        for shape, kind in case.inputs:
            arrays.append(gen(rng, shape, kind))
            owner.append(c)
    return arrays, owner


def _functions(cases):
    counts = [len(c.inputs) for c in cases]

    def per_case(*xs):
        losses, at = [], 0
        for case, n in zip(cases, counts):
            losses.append(_case_loss(case.fn(*xs[at:at + n])))
            at += n
        return tuple(losses)

    def total(*xs):
        losses = per_case(*xs)
        out = losses[0]
        for l in losses[1:]:
            out = out + l
        return out

    return per_case, total


@pytest.mark.parametrize("batch", range(len(_batches())))
def test_gradients_match_finite_differences(batch):
    cases = _batches()[batch]
    arrays, owner = _arrays(cases, 100 + batch)
    floats = [i for i, a in enumerate(arrays) if a.dtype == np.float64]
    per_case, total = _functions(cases)
    forward = tl.kernel(per_case, name=f"fd_batch{batch}")
    grads = tl.grad(total, argnums=tuple(floats))(*arrays, device="cpu")
    # One element of one input of every case per round, each case's loss on its own.
    schedule = [[(i, e) for i in floats if owner[i] == c for e in range(arrays[i].size)] for c in range(len(cases))]
    fd = {i: np.zeros_like(arrays[i]) for i in floats}
    for r in range(max(len(s) for s in schedule)):
        moves = [s[r] for s in schedule if r < len(s)]
        values = []
        for sign in (1, -1):
            xs = [a.copy() for a in arrays]
            for i, e in moves:
                xs[i].flat[e] += sign * EPS
            v = forward(*xs, device="cpu")
            values.append(v if isinstance(v, (tuple, list)) else (v,))  # a batch of one case
        for i, e in moves:
            c = owner[i]
            fd[i].flat[e] = (float(values[0][c]) - float(values[1][c])) / (2 * EPS)
    failures = []
    for i, g in zip(floats, grads):
        case = cases[owner[i]]
        port = [j for j in floats if owner[j] == owner[i]].index(i)
        err = np.abs(g - fd[i]) - (ATOL + RTOL * np.abs(fd[i]))
        if g.shape != arrays[i].shape or np.any(err > 0):
            failures.append(f"{case.name} input {port}: grad {np.ravel(g)[:6]} vs fd {np.ravel(fd[i])[:6]}")
    assert not failures, "\n".join(failures)


def test_every_op_with_a_gradient_is_covered():
    covered = {case.op for case in CASES} | COVERED_ELSEWHERE
    gradient_ops = {op for op in tl.ops() if op + "_grad" in tl.ops() and not op.endswith("_grad")}
    missing = sorted(gradient_ops - covered)
    assert not missing, f"ops with a gradient op but no finite-difference case: {missing}"


def test_cast_gradient():
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    g = tl.grad(lambda x: tl.sum(x.astype(np.float32) * np.float32(3.0)))(x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, np.full((2, 3), 3.0))
    gi = tl.grad(lambda x: tl.sum(x * x.astype(np.int64).astype(np.float64)))(x)  # through an int: no gradient
    np.testing.assert_array_equal(gi, x.astype(np.int64).astype(np.float64))


def test_sim_agrees_with_cpu():
    """A subset on the sim device: its gradients equal cpu's (which the finite
    differences check), so the derived kernels run the same on the reference device."""
    names = {"tanh", "layernorm", "matmul(2, 2, 3)(3, 4)", "softmax{'axis': 1}", "cross_entropy", "add(2, 1, 3)(4, 1)",
             "sdpa_causal", "embedding", "slice", "reduce_max{'axes': [1]}"}
    cases = [c for c in CASES if c.name in names]
    assert len(cases) == len(names), sorted(names - {c.name for c in cases})
    arrays, _ = _arrays(cases, 7)
    floats = tuple(i for i, a in enumerate(arrays) if a.dtype == np.float64)
    _, total = _functions(cases)
    g = tl.grad(total, argnums=floats)
    for a, b in zip(g(*arrays, device="cpu"), g(*arrays, device="sim")):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
