"""The library ops test_ops.py leaves out, from Python (tl.<name>) against NumPy on cpu and
opencl: activations with attributes, data movement, indexing, convolution and pooling,
normalization, matmul forms and attention, losses, optimizers. Each family is one traced
kernel per device. Last, a check that every forward op of the library is called from
one of the Python op tests, so a new op without one fails here."""

import pathlib
import re

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import unitile as tl

from conftest import RUN_DEVICES

DEVICES = [d for d in ("cpu", "opencl") if d in RUN_DEVICES]
RTOL, ATOL = 1e-4, 1e-5  # f32 kernels against f64 NumPy


def compare(got, want):
    assert len(got) == len(want)
    for g, (name, w) in zip(got, want):
        g = np.asarray(g)
        assert g.shape == np.shape(w), (name, g.shape, np.shape(w))
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"op {name}")
        else:
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"op {name}")


def f32(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(np.float32)


# --- elementwise and reductions with attributes -------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_activations_predicates_and_attributed_reductions(device, rng):
    x = f32(rng, 4, 9, low=-3, high=3)
    slope = f32(rng, 9)
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6], np.float32)
    special = np.array([np.inf, -np.inf, np.nan, 1.0, 0.0, -2.0], np.float32)
    a = rng.integers(-20, 20, (3, 5)).astype(np.int32)
    b = rng.integers(1, 6, (5,)).astype(np.int32) * np.array([1, -1, 1, -1, 1], np.int32)
    p, q = a > 0, b > 2

    @tl.kernel
    def family(x, slope, halves, special, a, b, p, q):
        return (tl.celu(x, alpha=0.7), tl.elu(x, alpha=0.5), tl.gelu_tanh(x),
                tl.hard_sigmoid(x, alpha=0.2, beta=0.5), tl.hardswish(x), tl.mish(x),
                tl.selu(x, alpha=1.6733, gamma=1.0507), tl.shrink(x, bias=0.1, lambd=0.3),
                tl.thresholded_relu(x, alpha=0.2), tl.round(halves), tl.isfinite(special), tl.isinf(special),
                tl.isnan(special), tl.prelu(x, slope), tl.identity(x),
                tl.reduce_log_sum(abs(x) + 0.1, axes=[1], keepdims=False), tl.std(x, axes=[1], keepdims=False, correction=1),
                tl.argmin(x, axis=1, keepdims=False), getattr(tl, "mod")(a, b), tl.cast(x, to="i32"),
                getattr(tl, "and")(p, q), getattr(tl, "or")(p, q), getattr(tl, "xor")(p, q), getattr(tl, "not")(p))

    d = x.astype(np.float64)
    want = [
        ("celu", np.maximum(d, 0) + np.minimum(0, 0.7 * (np.exp(d / 0.7) - 1))),
        ("elu", np.where(d > 0, d, 0.5 * (np.exp(d) - 1))),
        ("gelu_tanh", 0.5 * d * (1 + np.tanh(np.sqrt(2 / np.pi) * (d + 0.044715 * d ** 3)))),
        ("hard_sigmoid", np.clip(0.2 * d + 0.5, 0, 1)), ("hardswish", d * np.clip(d / 6 + 0.5, 0, 1)),
        ("mish", d * np.tanh(np.log1p(np.exp(d)))),
        ("selu", 1.0507 * np.where(d > 0, d, 1.6733 * (np.exp(d) - 1))),
        ("shrink", np.where(d < -0.3, d + 0.1, np.where(d > 0.3, d - 0.1, 0))),
        ("thresholded_relu", np.where(d > 0.2, d, 0)), ("round", np.round(halves)),
        ("isfinite", np.isfinite(special)), ("isinf", np.isinf(special)), ("isnan", np.isnan(special)),
        ("prelu", np.where(d > 0, d, slope * d)), ("identity", d),
        ("reduce_log_sum", np.log(np.sum(abs(d) + 0.1, axis=1))), ("std", np.std(d, axis=1, ddof=1)),
        ("argmin", np.argmin(x, axis=1)), ("mod", np.mod(a, b)), ("cast", x.astype(np.int32)),
        ("and", p & q), ("or", p | q), ("xor", p ^ q), ("not", ~p),
    ]
    compare(family(x, slope, halves, special, a, b, p, q, device=device), want)


# --- data movement ------------------------------------------------------------------------

def depth_to_space(x, bs, mode):
    b, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(b, bs, bs, c // bs ** 2, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(b, c // bs ** 2, bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(b, c // bs ** 2, h * bs, w * bs)


def space_to_depth(x, bs):
    b, c, h, w = x.shape
    t = x.reshape(b, c, h // bs, bs, w // bs, bs).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(b, c * bs * bs, h // bs, w // bs)


@pytest.mark.parametrize("device", DEVICES)
def test_data_movement(device, rng):
    x = f32(rng, 2, 4, 6)
    col = f32(rng, 4, 1)
    img = f32(rng, 1, 8, 2, 3)
    s = f32(rng, 2, 1, 6)
    m = f32(rng, 5, 5)

    @tl.kernel
    def family(x, col, img, s, m):
        left, right = tl.split(x, axis=2, split=[2, 4])
        return (tl.concat(x, x * 2, axis=1), tl.expand(col, shape=[3, 4, 5]), tl.flatten(x, axis=2),
                tl.flip(x, axes=[0, 2]), tl.pad(x, pads=[0, 1, 2, 1, 0, 1], value=0.5),
                tl.pad(x, pads=[0, 1, 2, 1, 0, 1], mode="reflect"), tl.pad(x, pads=[0, 1, 2, 1, 0, 1], mode="edge"),
                tl.depth_to_space(img, blocksize=2), tl.depth_to_space(img, blocksize=2, mode="CRD"),
                tl.space_to_depth(depth_to_space_input(img), blocksize=2), left, right,
                tl.squeeze(s, axes=[1]), tl.unsqueeze(x, axes=[0, 3]), tl.tile(x, repeats=[1, 2, 1]),
                tl.triu(m, k=1), tl.tril(m, k=-1), tl.slice(x, starts=[1, -1], ends=[3, 0], axes=[1, 2], steps=[1, -2]),
                tl.range(start=1, limit=10, delta=3, dtype="f32") + x[0, 0, :3])

    def depth_to_space_input(img):
        return img.reshape(1, 2, 4, 6)

    pads = ((0, 1), (1, 0), (2, 1))
    want = [
        ("concat", np.concatenate([x, x * 2], axis=1)), ("expand", np.broadcast_to(col, (3, 4, 5))),
        ("flatten", x.reshape(8, 6)), ("flip", x[::-1, :, ::-1]),
        ("pad", np.pad(x, pads, constant_values=0.5)), ("pad reflect", np.pad(x, pads, mode="reflect")),
        ("pad edge", np.pad(x, pads, mode="edge")), ("depth_to_space", depth_to_space(img, 2, "DCR")),
        ("depth_to_space CRD", depth_to_space(img, 2, "CRD")),
        ("space_to_depth", space_to_depth(img.reshape(1, 2, 4, 6), 2)),
        ("split 0", x[:, :, :2]), ("split 1", x[:, :, 2:]), ("squeeze", s[:, 0]),
        ("unsqueeze", np.expand_dims(x, (0, 3))), ("tile", np.tile(x, (1, 2, 1))), ("triu", np.triu(m, 1)), ("tril", np.tril(m, -1)),
        ("slice", x[:, 1:3, -1:0:-2]), ("range", np.arange(1, 10, 3) + x[0, 0, :3]),
    ]
    compare(family(x, col, img, s, m, device=device), want)


# --- indexing -----------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_indexing_ops(device, rng):
    x = f32(rng, 5, 6)
    i = np.array([[0, -1, 2], [5, 1, 1]], np.int64)
    j = rng.integers(0, 6, (5, 4)).astype(np.int32)
    k = np.array([[4, 0], [-1, 5], [2, 3]], np.int64)
    rows = np.array([[3], [0], [4]], np.int64)
    u = f32(rng, 5, 4)
    w = f32(rng, 3, 6)
    cls = rng.integers(0, 5, (2, 3)).astype(np.int64)

    @tl.kernel
    def family(x, i, j, k, rows, u, w, cls):
        values, positions = tl.topk(x, k=3)
        return (tl.gather(x, i, axis=1), tl.gather_elements(x, j, axis=1), tl.gather_nd(x, k),
                tl.index_select(x, i[1], dim=1), tl.embedding(cls, x),
                tl.scatter_elements(x, j, u, axis=1, reduction="add"), tl.scatter_nd(x, rows, w),
                tl.one_hot(cls, depth=5), values, positions)

    added = x.astype(np.float64)
    np.add.at(added, (np.arange(5)[:, None], j), u)
    written = x.copy()
    written[rows[:, 0]] = w
    order = np.argsort(-x, axis=1, kind="stable")[:, :3]
    want = [
        ("gather", np.take(x, i, axis=1)), ("gather_elements", np.take_along_axis(x, j, axis=1)),
        ("gather_nd", x[k[:, 0], k[:, 1]]), ("index_select", x[:, i[1]]), ("embedding", x[cls]),
        ("scatter_elements add", added), ("scatter_nd", written), ("one_hot", np.eye(5)[cls]),
        ("topk values", np.take_along_axis(x, order, axis=1)), ("topk indices", order),
    ]
    compare(family(x, i, j, k, rows, u, w, cls, device=device), want)


# --- convolution, pooling, normalization --------------------------------------------------

def conv2d(x, w, b, stride, pad, group):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cg, mg = x.shape[1] // group, w.shape[0] // group
    out = []
    for g in range(group):
        win = sliding_window_view(xp[:, g * cg:(g + 1) * cg], w.shape[2:], axis=(2, 3))[:, :, ::stride, ::stride]
        out.append(np.einsum("nchwij,mcij->nmhw", win, w[g * mg:(g + 1) * mg]))
    return np.concatenate(out, axis=1) + b[None, :, None, None]


def conv_transpose2d(x, w, stride):
    n, c, h, wd = x.shape
    k = w.shape[2]
    out = np.zeros((n, w.shape[1], (h - 1) * stride + k, (wd - 1) * stride + k))
    for i in range(h):
        for j in range(wd):
            out[:, :, i * stride:i * stride + k, j * stride:j * stride + k] += np.einsum("nc,cmij->nmij", x[:, :, i, j], w)
    return out


def normalize(x, axes, eps=1e-5):
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


@pytest.mark.parametrize("device", DEVICES)
def test_convolution_pooling_normalization(device, rng):
    x = f32(rng, 2, 4, 6, 6)
    w = f32(rng, 4, 2, 3, 3)
    b = f32(rng, 4)
    xt = f32(rng, 1, 2, 3, 3)
    wt = f32(rng, 2, 3, 3, 3)
    scale, shift, mean = f32(rng, 4), f32(rng, 4), f32(rng, 4)
    var = f32(rng, 4, low=0.5, high=1.5)

    @tl.kernel
    def family(x, w, b, xt, wt, scale, shift, mean, var):
        pooled = tl.max_pool(x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        y, batch_mean, batch_var, running_mean, running_var = tl.batchnorm_training(
            x, scale, shift, mean, var, epsilon=1e-5, momentum=0.1)
        return (tl.conv(x, w, b, strides=[2, 2], pads=[1, 1, 1, 1], group=2), tl.conv_transpose(xt, wt, strides=[2, 2]),
                tl.average_pool(x, kernel_shape=[2, 2], strides=[2, 2]), pooled, tl.global_average_pool(x),
                tl.global_max_pool(x), tl.batchnorm(x, scale, shift, mean, var, epsilon=1e-5), y, batch_mean,
                batch_var, running_mean, running_var, tl.groupnorm(x, scale, shift, num_groups=2),
                tl.instancenorm(x, scale, shift), tl.resize(x, mode="nearest", scales=[1.0, 1.0, 2.0, 2.0]))

    d = x.astype(np.float64)
    c = (slice(None), None, None)  # a per-channel vector against [N, C, H, W]
    padded = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    bm, bv = d.mean(axis=(0, 2, 3)), d.var(axis=(0, 2, 3))
    count = d.size / 4
    groups = normalize(d.reshape(2, 2, 2, 6, 6), (2, 3, 4)).reshape(d.shape)
    want = [
        ("conv", conv2d(d, w, b, 2, 1, 2)), ("conv_transpose", conv_transpose2d(xt.astype(np.float64), wt, 2)),
        ("average_pool", d.reshape(2, 4, 3, 2, 3, 2).mean(axis=(3, 5))),
        ("max_pool", sliding_window_view(padded, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(axis=(4, 5))),
        ("global_average_pool", d.mean(axis=(2, 3), keepdims=True)),
        ("global_max_pool", d.max(axis=(2, 3), keepdims=True)),
        ("batchnorm", (d - mean[c]) / np.sqrt(var[c] + 1e-5) * scale[c] + shift[c]),
        ("batchnorm_training Y", normalize(d, (0, 2, 3)) * scale[c] + shift[c]), ("BatchMean", bm),
        ("BatchVar", bv), ("RunningMeanOut", 0.9 * mean + 0.1 * bm),
        ("RunningVarOut", 0.9 * var + 0.1 * bv * count / (count - 1)),
        ("groupnorm", groups * scale[c] + shift[c]), ("instancenorm", normalize(d, (2, 3)) * scale[c] + shift[c]),
        ("resize nearest", d.repeat(2, axis=2).repeat(2, axis=3)),
    ]
    compare(family(x, w, b, xt, wt, scale, shift, mean, var, device=device), want)


# --- matmul forms, attention, losses ------------------------------------------------------

def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def rope(x, base=10000.0):
    n, d = x.shape[2], x.shape[3]
    angle = np.arange(n)[:, None] * base ** (-2 * np.arange(d // 2) / d)
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_attention_and_losses(device, rng):
    a, bt, c = f32(rng, 2, 3, 4), f32(rng, 2, 5, 4), f32(rng, 2, 4, 5)
    q, k, v = f32(rng, 2, 5, 8), f32(rng, 2, 5, 8), f32(rng, 2, 5, 8)
    r = f32(rng, 1, 2, 5, 8)
    logits = f32(rng, 5, 4, low=-2, high=2)
    target = rng.integers(0, 4, (5,)).astype(np.int64)
    u = f32(rng, 5, 4)

    @tl.kernel
    def family(a, bt, c, q, k, v, r, logits, target, u):
        return (tl.batch_matmul(a, bt, transB=True), tl.einsum(a, c, equation="bij,bjk->bik"),
                tl.multi_head_attention(q, k, v, num_heads=2), tl.rotary_embedding(r), tl.mse_loss(logits, u),
                tl.nll_loss(tl.log_softmax(logits, axis=1), target), tl.cross_entropy(logits, target))

    heads = [t.astype(np.float64).reshape(2, 5, 2, 4).transpose(0, 2, 1, 3) for t in (q, k, v)]
    mha = np_softmax(heads[0] @ heads[1].swapaxes(-1, -2) / 2.0) @ heads[2]
    logp = np.log(np_softmax(logits.astype(np.float64), axis=1))
    nll = -logp[np.arange(5), target].mean()
    want = [
        ("batch_matmul", a @ bt.swapaxes(1, 2)), ("einsum", np.einsum("bij,bjk->bik", a, c)),
        ("multi_head_attention", mha.transpose(0, 2, 1, 3).reshape(2, 5, 8)), ("rotary_embedding", rope(r)),
        ("mse_loss", np.mean((logits.astype(np.float64) - u) ** 2)), ("nll_loss", nll), ("cross_entropy", nll),
    ]
    compare(family(a, bt, c, q, k, v, r, logits, target, u, device=device), want)


# --- optimizers and dropout ---------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_optimizers_and_dropout(device, rng):
    p, g, m = f32(rng, 3, 4), f32(rng, 3, 4), f32(rng, 3, 4)
    vv = f32(rng, 3, 4, low=0.0, high=0.1)
    g2 = f32(rng, 5)

    @tl.kernel
    def family(p, g, m, vv, g2):
        sgd = tl.sgd(p, g, m, lr=0.1, momentum=0.9)
        adam = tl.adam(p, g, m, vv, lr=0.01, t=3, weight_decay=0.1)
        adamw = tl.adamw(p, g, m, vv, lr=0.01, t=3, weight_decay=0.1)
        clipped = tl.clip_grad_norm(g, g2, max_norm=0.5)
        dropped, mask = tl.dropout(p, ratio=0.5, seed=7, training_mode=True)
        return (*sgd[:2], *adam[:3], *adamw[:3], *clipped, dropped, mask)

    got = family(p, g, m, vv, g2, device=device)
    P, G, M, V = (t.astype(np.float64) for t in (p, g, m, vv))

    def adam_step(decoupled):
        grad = G if decoupled else G + 0.1 * P
        start = P * (1 - 0.01 * 0.1) if decoupled else P
        m1 = M + (grad - M) * 0.1
        v1 = V * 0.999 + 0.001 * grad * grad
        return start - 0.01 / (1 - 0.9 ** 3) * m1 / (np.sqrt(v1) / np.sqrt(1 - 0.999 ** 3) + 1e-8), m1, v1

    momentum = 0.9 * M + G
    total = np.sqrt((G ** 2).sum() + (g2.astype(np.float64) ** 2).sum())
    clip = min(1.0, 0.5 / (total + 1e-6))
    adam, adamw = adam_step(False), adam_step(True)
    want = [
        ("sgd P_new", P - 0.1 * momentum), ("sgd M_new", momentum),
        ("adam P_new", adam[0]), ("adam M_new", adam[1]), ("adam V_new", adam[2]),
        ("adamw P_new", adamw[0]), ("adamw M_new", adamw[1]), ("adamw V_new", adamw[2]),
        ("clip_grad_norm Y0", G * clip), ("clip_grad_norm Y1", g2 * clip), ("clip_grad_norm TotalNorm", total),
    ]
    compare(got[:-2], want)
    dropped, mask = got[-2:]
    assert mask.dtype == np.bool_ and 0 < mask.mean() < 1  # seeded, so the same on every run
    np.testing.assert_allclose(dropped, np.where(mask, p / 0.5, 0), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_onnx_extras(device, rng):
    """add_n, mean_n, hardmax, lp_normalization, mean_variance_normalization, eye_like."""
    a, b, c = f32(rng, 2, 3), f32(rng, 3), f32(rng, 2, 1)
    x = np.round(f32(rng, 3, 5, low=-2, high=2) * 2) / 2  # ties: the first maximum wins
    v = f32(rng, 2, 3, 2, 2)

    @tl.kernel
    def family(a, b, c, x, v):
        return (tl.add_n(a, b, c), tl.mean_n(a, b), tl.hardmax(x), tl.lp_normalization(x, p=1, axis=0),
                tl.mean_variance_normalization(v), tl.eye_like(x, k=1, dtype="i64"))

    got = family(a, b, c, x, v, device=device)
    A, B, C, X, Vv = (t.astype(np.float64) for t in (a, b, c, x, v))
    hard = np.zeros(X.shape)
    hard[np.arange(3), X.argmax(1)] = 1
    mu = Vv.mean((0, 2, 3), keepdims=True)
    mvn = (Vv - mu) / (np.sqrt(((Vv - mu) ** 2).mean((0, 2, 3), keepdims=True)) + 1e-9)
    compare(got, [("add_n", A + B + C), ("mean_n", (A + B) / 2), ("hardmax", hard),
                  ("lp_normalization", X / np.abs(X).sum(0, keepdims=True)),
                  ("mean_variance_normalization", mvn), ("eye_like", np.eye(3, 5, k=1, dtype=np.int64))])



@pytest.mark.parametrize("device", DEVICES)
def test_quantization(device, rng):
    """quantize_linear, dequantize_linear, dynamic_quantize_linear, matmul_integer and
    qlinear_matmul in one kernel, against NumPy (ONNX's definitions). X / scale stays away
    from rounding ties, so the integer results compare exactly."""
    scale = np.float32(0.05)
    x = ((rng.integers(-140, 140, (4, 6)) + rng.uniform(0.1, 0.4, (4, 6))) * scale).astype(np.float32)
    zp = np.array(128, np.uint8)
    a = rng.integers(0, 256, (3, 7)).astype(np.uint8)
    b = rng.integers(0, 256, (7, 5)).astype(np.uint8)
    az, bz = np.array(10, np.uint8), np.array(200, np.uint8)
    sa, sb, sy = (np.array(v, np.float32) for v in (0.03, 0.02, 0.7))
    yz = np.array(90, np.uint8)

    @tl.kernel
    def family(x, s, zp, a, b, az, bz, sa, sb, sy, yz):
        q = tl.quantize_linear(x, s, zp)
        return (q, tl.dequantize_linear(q, s, zp), *tl.dynamic_quantize_linear(x),
                tl.matmul_integer(a, b, az, bz), tl.qlinear_matmul(a, sa, az, b, sb, bz, sy, yz))

    got = family(x, np.array(scale), zp, a, b, az, bz, sa, sb, sy, yz, device=device)
    q = np.clip(np.rint(x / scale) + 128, 0, 255).astype(np.uint8)
    lo, hi = min(np.float32(0), x.min()), max(np.float32(0), x.max())
    dscale = np.float32((hi - lo) / np.float32(255))
    dzp = np.uint8(np.clip(np.rint(-lo / dscale), 0, 255))
    acc = (a.astype(np.int64) - 10) @ (b.astype(np.int64) - 200)
    mult = np.float32(np.float32(sa * sb) / sy)
    compare(got, [("quantize_linear", q),
                  ("dequantize_linear", (q.astype(np.float32) - 128) * scale),
                  ("dynamic_quantize_linear Y", np.clip(np.rint(x / dscale) + dzp, 0, 255).astype(np.uint8)),
                  ("dynamic_quantize_linear YScale", dscale),
                  ("dynamic_quantize_linear YZeroPoint", dzp),
                  ("matmul_integer", acc.astype(np.int32)),
                  ("qlinear_matmul", np.clip(np.rint(acc.astype(np.float32) * mult) + 90, 0, 255).astype(np.uint8))])



@pytest.mark.parametrize("device", DEVICES)
def test_onnx_more(device, rng):
    """lp_pool, global_lp_pool, lrn, cast_like, reverse_sequence, center_crop_pad, the
    windows and the seeded random ops (checked by their properties here; tests/ops checks
    their exact values)."""
    x = f32(rng, 2, 4, 5, 6)
    s = f32(rng, 5, 3, 2)
    lens = np.array([5, 0, 2], np.int64)
    p = rng.uniform(0, 1, (300, 40)).astype(np.float32)

    @tl.kernel
    def family(x, s, lens, p):
        return (tl.lp_pool(x, kernel_shape=[2, 3], strides=[1, 3], p=2), tl.global_lp_pool(x, p=1),
                tl.lrn(x, size=3, alpha=0.1), tl.cast_like(x, lens), tl.reverse_sequence(s, lens),
                tl.center_crop_pad(s, shape=[3, 5], axes=[0, 1]), tl.hann_window(size=6), tl.hamming_window(size=6),
                tl.blackman_window(size=6, periodic=0), tl.random_uniform_like(p, low=-1.0, high=3.0, seed=1),
                tl.random_normal_like(p, seed=2), tl.bernoulli(p, seed=3))

    got = family(x, s, lens, p, device=device)
    X = x.astype(np.float64)
    lp = np.sqrt(sliding_window_view(X ** 2, (2, 3), axis=(2, 3))[:, :, :, ::3].sum((-1, -2)))
    sq = np.stack([(X[:, max(0, c - 1):c + 2] ** 2).sum(1) for c in range(4)], 1)
    rev = s.copy()
    rev[:5, 0] = s[4::-1, 0]
    rev[:2, 2] = s[1::-1, 2]
    crop = np.pad(s[1:4], [(0, 0), (1, 1), (0, 0)])
    n = np.arange(6)
    compare(got[:9], [("lp_pool", lp), ("global_lp_pool", np.abs(X).sum((2, 3), keepdims=True)),
                      ("lrn", X / (1 + 0.1 / 3 * sq) ** 0.75), ("cast_like", x.astype(np.int64)),
                      ("reverse_sequence", rev), ("center_crop_pad", crop),
                      ("hann_window", 0.5 - 0.5 * np.cos(2 * np.pi * n / 6)),
                      ("hamming_window", 25 / 46 - 21 / 46 * np.cos(2 * np.pi * n / 6)),
                      ("blackman_window", 0.42 - 0.5 * np.cos(2 * np.pi * n / 5) + 0.08 * np.cos(4 * np.pi * n / 5))])
    uni, nor, ber = (np.asarray(g) for g in got[9:])
    assert uni.shape == nor.shape == ber.shape == p.shape
    assert -1 <= uni.min() and uni.max() < 3 and abs(uni.mean() - 1) < 0.05
    assert abs(nor.mean()) < 0.05 and abs(nor.std() - 1) < 0.05
    assert set(np.unique(ber)) <= {0, 1} and abs(ber.mean() - p.mean()) < 0.02
    assert abs(np.corrcoef(ber.ravel(), p.ravel())[0, 1]) > 0.3  # 1s follow the probabilities


def test_eager_calls_outputs_in_declared_order_and_ops_without_inputs():
    # Outputs come in the op's declared order (a node keeps them by port name, where
    # "Indices" < "Values" and "Y10" < "Y2"); an op without inputs runs eagerly too.
    values, indices = tl.topk(np.array([3, 9, 1, 7], np.float32), k=2)
    np.testing.assert_array_equal(values, [9, 7])
    np.testing.assert_array_equal(indices, [1, 3])
    pieces = tl.split(np.arange(12, dtype=np.float32), num_outputs=12)
    assert [int(p[0]) for p in pieces] == list(range(12))
    np.testing.assert_array_equal(tl.range(limit=5, dtype="i64"), np.arange(5))


# --- coverage -----------------------------------------------------------------------------

def test_every_library_op_is_called_from_a_python_op_test():
    """Every forward op of the library (gradient ops are checked through tl.grad in
    test_grad_ops.py) appears as tl.<name>( or getattr(tl, "<name>") in an op test."""
    here = pathlib.Path(__file__).parent
    text = "".join(p.read_text(encoding="utf-8") for p in
                   [*here.glob("test_ops*.py"), here / "test_bitwise_ops.py", here / "test_trace.py"])
    called = set(re.findall(r"tl\.(\w+)\(", text)) | set(re.findall(r'getattr\(tl, "(\w+)"\)', text))
    called |= set(re.findall(r'"(\w+)": ', text))  # test_ops.py's tables, called as getattr(tl, name)
    # tl.reshape and tl.transpose are NumPy's functions, over the tracer's own ops of those
    # names (test_trace.py checks them against NumPy), so the library's are not reached.
    shadowed = {"reshape", "transpose"}
    forward = [n for n in tl.ops() if tl._OPS[n]["library"] and not n.endswith("_grad")]
    missing = sorted(n for n in forward if n not in called | shadowed)
    assert not missing, f"library ops with no test from Python: {missing}"
