#!/usr/bin/env python3
"""`unitile bench --ops`: every library op at Transformer-sized shapes against PyTorch CPU
on the same data, in one run.

For each op of `unitile ops --json` that has a case below: random inputs are written as
.npy; Unitile runs them with `unitile run op:NAME --device cpu --repeat R` (device-timed
median of R runs after one warm-up, compilation excluded) and writes its outputs; PyTorch
runs the same arrays (median of R wall-clock runs after one warm-up, with
torch.set_num_threads(threads)). The outputs are compared first (|u - t| <= atol +
rtol|t|); a disagreement is `failed` and gets no ratio. ratio = torch_ms / unitile_ms, so
above 1 means Unitile is faster. Ops without a case here are listed as `no case`, so the
sweep always names every op.

A backward op's PyTorch side is autograd's backward pass on a graph built once (see
backward()), with gradients that autograd returns as views or aliases written out (see
materialise()); a view op's is a materialised copy (see copy()).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# Debian's torch does its GEMMs in OpenBLAS, whose own thread pool ignores
# torch.set_num_threads: it reads OPENBLAS_NUM_THREADS when the library loads, so --threads
# is applied to it here, before `import numpy`
# and `import torch` (both load it).
_early = argparse.ArgumentParser(add_help=False)
_early.add_argument("--threads", type=int, default=os.cpu_count() or 1)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(max(1, _early.parse_known_args()[0].threads)))

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - reported, not hidden
    sys.exit("bench --ops: PyTorch is not importable by " + sys.executable +
             " (Debian: apt-get install python3-torch; or set UNITILE_PYTHON)")

NB, S, H = 8, 512, 768  # batch, sequence and hidden size of GPT-2 small (--quick: 1, 256)
T = NB * S  # tokens


def unary(fn, domain="any"):
    return {"inputs": {"X": ("f32", (T, H), domain)}, "torch": lambda i, a: {"Y": fn(i["X"])}}


def binary(fn, domain="any"):
    # A bias-like broadcast, the common case in a Transformer.
    return {"inputs": {"A": ("f32", (T, H), domain), "B": ("f32", (H,), domain)},
            "torch": lambda i, a: {"C": fn(i["A"], i["B"])}}


def reduction(fn, domain="any"):
    # f32 sums of 768 terms: absolute error grows like sqrt(n) ulps of the terms.
    return {"inputs": {"X": ("f32", (T, H), domain)}, "attrs": {"axes": [-1], "keepdims": 1},
            "torch": lambda i, a: {"Y": fn(i["X"])}, "tol": (1e-4, 1e-3)}


def base_cases():
    """The first sweep's cases: elementwise, reductions, softmax, norms, matmul, transpose."""
    return {
        "abs": unary(torch.abs), "neg": unary(torch.neg), "exp": unary(torch.exp),
        "exp2": unary(torch.exp2), "expm1": unary(torch.expm1), "log": unary(torch.log, "pos"),
        "log2": unary(torch.log2, "pos"), "log1p": unary(torch.log1p, "pos"),
        "sqrt": unary(torch.sqrt, "pos"), "rsqrt": unary(torch.rsqrt, "pos"),
        "reciprocal": unary(torch.reciprocal, "pos"), "square": unary(torch.square),
        "sin": unary(torch.sin), "cos": unary(torch.cos), "tan": unary(torch.tan),
        "asin": unary(torch.asin), "acos": unary(torch.acos), "atan": unary(torch.atan),
        "sinh": unary(torch.sinh), "cosh": unary(torch.cosh), "tanh": unary(torch.tanh),
        "asinh": unary(torch.asinh), "acosh": unary(torch.acosh, "gt1"),
        "atanh": unary(torch.atanh), "erf": unary(torch.erf), "floor": unary(torch.floor),
        "ceil": unary(torch.ceil), "round": unary(torch.round), "trunc": unary(torch.trunc),
        "sign": unary(torch.sign), "isnan": unary(torch.isnan), "isinf": unary(torch.isinf),
        "isfinite": unary(torch.isfinite), "relu": unary(torch.relu),
        "sigmoid": unary(torch.sigmoid), "silu": unary(F.silu), "gelu": unary(F.gelu),
        "gelu_tanh": unary(lambda x: F.gelu(x, approximate="tanh")),
        "leaky_relu": unary(lambda x: F.leaky_relu(x, 0.01)), "elu": unary(F.elu),
        "selu": unary(F.selu), "celu": unary(F.celu), "softplus": unary(F.softplus),
        "softsign": unary(F.softsign), "hard_sigmoid": unary(lambda x: torch.clamp(0.2 * x + 0.5, 0, 1)),
        "hardswish": unary(F.hardswish), "mish": unary(F.mish),
        "add": binary(torch.add), "sub": binary(torch.sub), "mul": binary(torch.mul),
        "div": binary(torch.div, "nonzero"), "pow": binary(torch.pow, "pos"),
        "max": binary(torch.maximum), "min": binary(torch.minimum),
        "atan2": binary(torch.atan2, "nonzero"), "equal": binary(torch.eq),
        "less": binary(torch.lt), "greater_equal": binary(torch.ge),
        "reduce_sum": reduction(lambda x: x.sum(-1, keepdim=True)),
        "reduce_mean": reduction(lambda x: x.mean(-1, keepdim=True)),
        "reduce_max": reduction(lambda x: x.amax(-1, keepdim=True)),
        "reduce_min": reduction(lambda x: x.amin(-1, keepdim=True)),
        "reduce_l2": reduction(lambda x: x.norm(dim=-1, keepdim=True)),
        "reduce_sum_square": reduction(lambda x: (x * x).sum(-1, keepdim=True)),
        "reduce_log_sum_exp": reduction(lambda x: x.logsumexp(-1, keepdim=True)),
        "var": reduction(lambda x: x.var(-1, keepdim=True, correction=0)),
        "std": reduction(lambda x: x.std(-1, keepdim=True, correction=0)),
        "argmax": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"axis": -1, "keepdims": 0},
                   "torch": lambda i, a: {"Y": i["X"].argmax(-1)}},
        "relu_grad": {"inputs": {"X": ("f32", (T, H), "any"), "dY": ("f32", (T, H), "any")},
                      "torch": lambda i, a: {"dX": torch.ops.aten.threshold_backward(i["dY"], i["X"], 0)}},
        "gelu_grad": {"inputs": {"X": ("f32", (T, H), "any"), "dY": ("f32", (T, H), "any")},
                      "torch": lambda i, a: {"dX": torch.ops.aten.gelu_backward(i["dY"], i["X"])}},
        "softmax": {"inputs": {"X": ("f32", (12, S, S), "any")}, "attrs": {"axis": -1},
                    "torch": lambda i, a: {"Y": torch.softmax(i["X"], -1)}},
        "log_softmax": {"inputs": {"X": ("f32", (12, S, S), "any")}, "attrs": {"axis": -1},
                        "torch": lambda i, a: {"Y": torch.log_softmax(i["X"], -1)}},
        "layernorm": {"inputs": {"X": ("f32", (T, H), "any"), "Scale": ("f32", (H,), "any"),
                                 "B": ("f32", (H,), "any")}, "attrs": {"axis": -1},
                      "torch": lambda i, a: {"Y": F.layer_norm(i["X"], (H,), i["Scale"], i["B"], 1e-5)}},
        "rmsnorm": {"inputs": {"X": ("f32", (T, H), "any"), "Scale": ("f32", (H,), "any")},
                    "attrs": {"axis": -1},
                    "torch": lambda i, a: {"Y": i["X"] * torch.rsqrt((i["X"] * i["X"]).mean(-1, keepdim=True) + 1e-5) * i["Scale"]}},
        "matmul": {"inputs": {"A": ("f32", (T, H), "any"), "B": ("f32", (H, 4 * H), "any")},
                   "torch": lambda i, a: {"Y": i["A"] @ i["B"]}, "tol": (1e-4, 1e-4)},
        "transpose": {"inputs": {"X": ("f32", (NB, S, 12, 64), "any")}, "attrs": {"perm": [0, 2, 1, 3]},
                      "torch": lambda i, a: {"Y": i["X"].permute(0, 2, 1, 3).contiguous()}},
    }


V = 8192  # vocabulary / table rows for the gathers and losses (GPT-2's 50257 would need 1.6 GB)


def backward(forward, wrt, grads, outs):
    """A backward op's PyTorch side: autograd through `forward` (inputs by port, attrs) ->
    output tensor(s). The graph is built once on the first call (the comparison run,
    before the warm-up) and kept, so the timed calls run only the backward pass, as a
    training step's backward does."""
    cache = {}

    def run(i, a):
        if cache.get("inputs") is not i:
            leaves = {k: (v.detach().clone().requires_grad_(True) if k in wrt else v) for k, v in i.items()}
            ys = forward(leaves, a)
            cache.update(inputs=i, leaves=leaves, ys=ys if isinstance(ys, (list, tuple)) else (ys,))
        gs = torch.autograd.grad(cache["ys"], [cache["leaves"][k] for k in wrt], [i[g] for g in grads],
                                 retain_graph=True)
        seen = {x.storage().data_ptr() for x in i.values() if isinstance(x, torch.Tensor)}
        return {name: materialise(g, seen) for name, g in zip(outs, gs)}
    return run


def materialise(t, seen):
    """Autograd hands back views where it can: the gradient of reshape, squeeze, identity or
    add_n is the incoming gradient itself (the same tensor for every input of add_n), of
    concat a strided slice of it, of a sum an expansion with stride 0. Such a result costs
    PyTorch nothing and is not the gradient written out. Unitile's op writes each result,
    as a kernel in a training step must, so a view, or an alias of an input or of an
    earlier result, is copied here (inside the timed call); a gradient that autograd wrote
    into a buffer of its own is returned as it is. `seen` holds the storages of the inputs
    and of the results returned so far."""
    if not t.is_contiguous():
        t = t.contiguous()
    elif t.storage().data_ptr() in seen:
        t = t.clone()
    seen.add(t.storage().data_ptr())
    return t


def unary_grad(fn, domain="any"):
    return {"inputs": {"X": ("f32", (T, H), domain), "dY": ("f32", (T, H), "any")},
            "torch": backward(lambda i, a: fn(i["X"]), ["X"], ["dY"], ["dX"])}


def binary_grad(fn, domain="any"):
    # dB sums over the 4096 broadcast rows.
    return {"inputs": {"A": ("f32", (T, H), domain), "B": ("f32", (H,), domain),
                       "dC": ("f32", (T, H), "any")},
            "torch": backward(lambda i, a: fn(i["A"], i["B"]), ["A", "B"], ["dC"], ["dA", "dB"]),
            "tol": (1e-4, 1e-3)}


def reduction_grad(fn, domain="any"):
    return {"inputs": {"X": ("f32", (T, H), domain), "dY": ("f32", (T, 1), "any")},
            "attrs": {"axes": [-1], "keepdims": 1},
            "torch": backward(lambda i, a: fn(i["X"]), ["X"], ["dY"], ["dX"])}


def copy(fn):
    """A view op's PyTorch side made to materialise its result, as the Unitile op does (a
    library op writes its output; inside a graph both sides would make it a view)."""
    return lambda i, a: {"Y": fn(i["X"], a).contiguous().clone()}


def rope_tables(n, d, base=10000.0):
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv
    return torch.cos(ang).float(), torch.sin(ang).float()


ROPE = {}


def torch_rope(x):
    """Half-split rotary embedding with cached tables (as a model caches them)."""
    n, d = x.shape[-2], x.shape[-1]
    if (n, d) not in ROPE:
        ROPE[(n, d)] = rope_tables(n, d)
    c, s = ROPE[(n, d)]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


MASKS = {}


def torch_sdpa(q, k, v):
    """Causal attention in PyTorch ops (Debian's torch 1.13 has no
    F.scaled_dot_product_attention): softmax(q k^T / sqrt(d) + mask) v, the mask cached."""
    n, m = q.shape[-2], k.shape[-2]
    if (n, m) not in MASKS:
        MASKS[(n, m)] = torch.full((n, m), float("-inf")).triu(1)
    s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5) + MASKS[(n, m)]
    return torch.matmul(torch.softmax(s, -1), v)


def torch_mha(i, a):
    b, n, c = i["Q"].shape
    h = a["num_heads"]

    def heads(x):
        return x.reshape(b, -1, h, c // h).transpose(1, 2)
    y = torch_sdpa(heads(i["Q"]), heads(i["K"]), heads(i["V"]))
    return y.transpose(1, 2).reshape(b, n, c)


def torch_adam(i, a, decoupled):
    b1, b2, lr, eps, wd, t = a["beta1"], a["beta2"], a["lr"], a["eps"], a["weight_decay"], a["t"]
    p, g = i["P"], i["G"]
    if decoupled:
        p = p * (1 - lr * wd)
    m = i["M"].mul(b1).add_(g, alpha=1 - b1)
    v = i["V"].mul(b2).addcmul_(g, g, value=1 - b2)
    denom = (v / (1 - b2 ** t)).sqrt_().add_(eps)
    return {"P_new": p.addcdiv(m, denom, value=-lr / (1 - b1 ** t)), "M_new": m, "V_new": v}


def torch_clip(i, a):
    gs = [i["G0"], i["G1"]]
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in gs]))
    coef = torch.clamp(a["max_norm"] / (total + 1e-6), max=1.0)
    return {"Y0": gs[0] * coef, "Y1": gs[1] * coef, "TotalNorm": total}


def space_to_depth(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)


def batchnorm_training(i, a):
    y, mean, invstd = torch.ops.aten.native_batch_norm(i["X"], i["Scale"], i["B"], i["RunningMean"].clone(),
                                                        i["RunningVar"].clone(), True, 0.1, 1e-5)
    var = 1 / (invstd * invstd) - 1e-5
    count = i["X"].numel() / i["X"].shape[1]
    return {"Y": y, "BatchMean": mean, "BatchVar": var,
            "RunningMeanOut": 0.9 * i["RunningMean"] + 0.1 * mean,
            "RunningVarOut": 0.9 * i["RunningVar"] + 0.1 * var * count / (count - 1)}




def extended_cases():
    """Cases of the ops the first sweep had none for: the rest of the elementwise and
    reduction ops, the matmul family, attention, normalization, convolution and pooling,
    data movement, indexing, losses, optimizers, and the backward ops (PyTorch autograd's
    backward pass on a graph built once)."""
    b = binary
    IMG = (NB, 64, 56, 56)  # a ResNet-stage activation, for the conv-net ops
    QKV = (min(NB, 2), 12, S, 64)  # attention: batch 2, 12 heads, S tokens, head size 64
    B2 = min(NB, 2)
    c = {
        "and": {"inputs": {"A": ("bool", (T, H), "mask"), "B": ("bool", (H,), "mask")},
                "torch": lambda i, a: {"C": torch.logical_and(i["A"], i["B"])}},
        "or": {"inputs": {"A": ("bool", (T, H), "mask"), "B": ("bool", (H,), "mask")},
               "torch": lambda i, a: {"C": torch.logical_or(i["A"], i["B"])}},
        "xor": {"inputs": {"A": ("bool", (T, H), "mask"), "B": ("bool", (H,), "mask")},
                "torch": lambda i, a: {"C": torch.logical_xor(i["A"], i["B"])}},
        "not": {"inputs": {"X": ("bool", (T, H), "mask")}, "torch": lambda i, a: {"Y": torch.logical_not(i["X"])}},
        "not_equal": b(torch.ne), "less_equal": b(torch.le), "greater": b(torch.gt),
        "fmod": b(torch.fmod, "nonzero"), "mod": b(torch.remainder, "nonzero"),
        "prelu": b(F.prelu),
        "bitwise_and": {"inputs": {"A": ("i32", (T, H), "int"), "B": ("i32", (H,), "int")},
                        "torch": lambda i, a: {"C": torch.bitwise_and(i["A"], i["B"])}},
        "bitwise_or": {"inputs": {"A": ("i32", (T, H), "int"), "B": ("i32", (H,), "int")},
                       "torch": lambda i, a: {"C": torch.bitwise_or(i["A"], i["B"])}},
        "bitwise_xor": {"inputs": {"A": ("i32", (T, H), "int"), "B": ("i32", (H,), "int")},
                        "torch": lambda i, a: {"C": torch.bitwise_xor(i["A"], i["B"])}},
        "bitwise_not": {"inputs": {"X": ("i32", (T, H), "int")},
                        "torch": lambda i, a: {"Y": torch.bitwise_not(i["X"])}},
        "bit_shift": {"inputs": {"A": ("i32", (T, H), "int"), "B": ("i32", (H,), ("idx", 8))},
                      "attrs": {"direction": "LEFT"},
                      "torch": lambda i, a: {"C": torch.bitwise_left_shift(i["A"], i["B"])}},
        "clip": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"min": -0.5, "max": 0.5},
                 "torch": lambda i, a: {"Y": torch.clamp(i["X"], -0.5, 0.5)}},
        "shrink": unary(lambda x: F.hardshrink(x, 0.5)),
        "thresholded_relu": unary(lambda x: F.threshold(x, 1.0, 0.0)),
        "where": {"inputs": {"Cond": ("bool", (T, H), "mask"), "A": ("f32", (T, H), "any"),
                             "B": ("f32", (H,), "any")},
                  "torch": lambda i, a: {"Y": torch.where(i["Cond"], i["A"], i["B"])}},
        "argmin": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"axis": -1, "keepdims": 0},
                   "torch": lambda i, a: {"Y": i["X"].argmin(-1)}},
        "reduce_l1": reduction(lambda x: x.abs().sum(-1, keepdim=True)),
        "reduce_log_sum": reduction(lambda x: x.sum(-1, keepdim=True).log(), "pos"),
        "reduce_prod": reduction(lambda x: x.prod(-1, keepdim=True), "near1"),
        "cumsum": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"axis": -1},
                   "torch": lambda i, a: {"Y": torch.cumsum(i["X"], -1)}, "tol": (1e-4, 1e-3)},
        # --- matmul family and attention ---
        "batch_matmul": {"inputs": {"A": ("f32", (NB * 12, S, 64), "any"), "B": ("f32", (NB * 12, 64, S), "any")},
                         "torch": lambda i, a: {"Y": torch.bmm(i["A"], i["B"])}, "tol": (1e-4, 1e-4)},
        "gemm": {"inputs": {"A": ("f32", (T, H), "any"), "B": ("f32", (3 * H, H), "any"),
                            "C": ("f32", (3 * H,), "any")}, "attrs": {"transB": 1},
                 "torch": lambda i, a: {"Y": torch.addmm(i["C"], i["A"], i["B"].t())}, "tol": (1e-4, 1e-4)},
        "linear": {"inputs": {"X": ("f32", (NB, S, H), "any"), "W": ("f32", (3 * H, H), "any"),
                              "B": ("f32", (3 * H,), "any")},
                   "torch": lambda i, a: {"Y": F.linear(i["X"], i["W"], i["B"])}, "tol": (1e-4, 1e-4)},
        "einsum": {"inputs": {"X0": ("f32", QKV, "any"), "X1": ("f32", QKV, "any")},
                   "attrs": {"equation": "bhnd,bhmd->bhnm"},
                   "torch": lambda i, a: {"Y": torch.einsum("bhnd,bhmd->bhnm", i["X0"], i["X1"])},
                   "tol": (1e-4, 1e-4)},
        "scaled_dot_product_attention": {
            "inputs": {"Q": ("f32", QKV, "any"), "K": ("f32", QKV, "any"), "V": ("f32", QKV, "any")},
            "attrs": {"causal": 1}, "tol": (1e-4, 1e-4),
            "torch": lambda i, a: {"Y": torch_sdpa(i["Q"], i["K"], i["V"])}},
        "multi_head_attention": {
            "inputs": {"Q": ("f32", (B2, S, H), "any"), "K": ("f32", (B2, S, H), "any"),
                       "V": ("f32", (B2, S, H), "any")},
            "attrs": {"num_heads": 12, "causal": 1}, "tol": (1e-4, 1e-4),
            "torch": lambda i, a: {"Y": torch_mha(i, a)}},
        "rotary_embedding": {"inputs": {"X": ("f32", (NB, 12, S, 64), "any")},
                             "torch": lambda i, a: {"Y": torch_rope(i["X"])}, "tol": (1e-4, 1e-4)},
        # --- normalization ---
        "batchnorm": {"inputs": {"X": ("f32", IMG, "any"), "Scale": ("f32", (64,), "any"),
                                 "B": ("f32", (64,), "any"), "Mean": ("f32", (64,), "any"),
                                 "Var": ("f32", (64,), "pos")},
                      "torch": lambda i, a: {"Y": F.batch_norm(i["X"], i["Mean"], i["Var"], i["Scale"], i["B"],
                                                               training=False)}},
        "batchnorm_training": {"inputs": {"X": ("f32", IMG, "any"), "Scale": ("f32", (64,), "any"),
                                          "B": ("f32", (64,), "any"), "RunningMean": ("f32", (64,), "any"),
                                          "RunningVar": ("f32", (64,), "pos")},
                               "torch": batchnorm_training, "tol": (1e-4, 1e-4)},
        "groupnorm": {"inputs": {"X": ("f32", IMG, "any"), "Scale": ("f32", (64,), "any"),
                                 "B": ("f32", (64,), "any")}, "attrs": {"num_groups": 32},
                      "torch": lambda i, a: {"Y": F.group_norm(i["X"], 32, i["Scale"], i["B"])}, "tol": (1e-4, 1e-4)},
        "instancenorm": {"inputs": {"X": ("f32", IMG, "any"), "Scale": ("f32", (64,), "any"),
                                    "B": ("f32", (64,), "any")},
                         "torch": lambda i, a: {"Y": F.instance_norm(i["X"], weight=i["Scale"], bias=i["B"])},
                         "tol": (1e-4, 1e-4)},
        # --- convolution and pooling ---
        "conv": {"inputs": {"X": ("f32", (NB, 3, 224, 224), "any"), "W": ("f32", (H, 3, 16, 16), "any"),
                            "B": ("f32", (H,), "any")}, "attrs": {"strides": [16, 16]},  # ViT patches
                 "torch": lambda i, a: {"Y": F.conv2d(i["X"], i["W"], i["B"], stride=16)}, "tol": (1e-4, 1e-3)},
        "conv_transpose": {"inputs": {"X": ("f32", (NB, 64, 28, 28), "any"), "W": ("f32", (64, 32, 4, 4), "any")},
                           "attrs": {"strides": [2, 2], "pads": [1, 1, 1, 1]}, "tol": (1e-4, 1e-3),
                           "torch": lambda i, a: {"Y": F.conv_transpose2d(i["X"], i["W"], stride=2, padding=1)}},
        "max_pool": {"inputs": {"X": ("f32", (NB, 64, 112, 112), "any")},
                     "attrs": {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
                     "torch": lambda i, a: {"Y": F.max_pool2d(i["X"], 3, 2, 1)}},
        "average_pool": {"inputs": {"X": ("f32", (NB, 64, 112, 112), "any")},
                         "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]},
                         "torch": lambda i, a: {"Y": F.avg_pool2d(i["X"], 2, 2)}},
        "global_average_pool": {"inputs": {"X": ("f32", (NB, H, 14, 14), "any")},
                                "torch": lambda i, a: {"Y": i["X"].mean((2, 3), keepdim=True)}},
        "global_max_pool": {"inputs": {"X": ("f32", (NB, H, 14, 14), "any")},
                            "torch": lambda i, a: {"Y": i["X"].amax((2, 3), keepdim=True)}},
        "resize": {"inputs": {"X": ("f32", IMG, "any")}, "attrs": {"scales": [1, 1, 2, 2], "mode": "linear"},
                   "torch": lambda i, a: {"Y": F.interpolate(i["X"], scale_factor=2, mode="bilinear")}},
        # --- data movement (view ops against a materialised PyTorch copy, see copy()) ---
        "reshape": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"shape": [NB, S, H]},
                    "torch": copy(lambda x, a: x.reshape(NB, S, H))},
        "flatten": {"inputs": {"X": ("f32", (NB, S, H), "any")}, "attrs": {"axis": 2},
                    "torch": copy(lambda x, a: x.reshape(T, H))},
        "squeeze": {"inputs": {"X": ("f32", (T, 1, H), "any")}, "attrs": {"axes": [1]},
                    "torch": copy(lambda x, a: x.squeeze(1))},
        "unsqueeze": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"axes": [1]},
                      "torch": copy(lambda x, a: x.unsqueeze(1))},
        "identity": {"inputs": {"X": ("f32", (T, H), "any")}, "torch": copy(lambda x, a: x)},
        "expand": {"inputs": {"X": ("f32", (1, S, H), "any")}, "attrs": {"shape": [NB, S, H]},
                   "torch": copy(lambda x, a: x.expand(NB, S, H))},
        "slice": {"inputs": {"X": ("f32", (NB, S, H), "any")},
                  "attrs": {"starts": [1], "ends": [S], "axes": [1], "steps": [2]},
                  "torch": copy(lambda x, a: x[:, 1::2])},
        "split": {"inputs": {"X": ("f32", (T, 3 * H), "any")}, "attrs": {"axis": -1, "num_outputs": 3},
                  "torch": lambda i, a: {f"Y{k}": y.contiguous() for k, y in enumerate(i["X"].split(H, -1))}},
        "concat": {"inputs": {"X0": ("f32", (T, H), "any"), "X1": ("f32", (T, H), "any")}, "attrs": {"axis": -1},
                   "torch": lambda i, a: {"Y": torch.cat([i["X0"], i["X1"]], -1)}},
        "tile": {"inputs": {"X": ("f32", (S, H), "any")}, "attrs": {"repeats": [NB, 1]},
                 "torch": lambda i, a: {"Y": i["X"].repeat(NB, 1)}},
        "flip": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"axes": [0]},
                 "torch": lambda i, a: {"Y": torch.flip(i["X"], [0])}},
        "pad": {"inputs": {"X": ("f32", (NB, S, H), "any")}, "attrs": {"pads": [0, 0, 0, 0, 16, 0]},
                "torch": lambda i, a: {"Y": F.pad(i["X"], (0, 0, 0, 16))}},
        "triu": {"inputs": {"X": ("f32", (12, S, S), "any")}, "attrs": {"k": 1},
                 "torch": lambda i, a: {"Y": torch.triu(i["X"], 1)}},
        "tril": {"inputs": {"X": ("f32", (12, S, S), "any")}, "attrs": {"k": 0},
                 "torch": lambda i, a: {"Y": torch.tril(i["X"])}},
        "depth_to_space": {"inputs": {"X": ("f32", (NB, 256, 32, 32), "any")},
                           "attrs": {"blocksize": 2, "mode": "CRD"},
                           "torch": lambda i, a: {"Y": F.pixel_shuffle(i["X"], 2)}},
        "space_to_depth": {"inputs": {"X": ("f32", (NB, 64, 64, 64), "any")}, "attrs": {"blocksize": 2},
                           "torch": lambda i, a: {"Y": space_to_depth(i["X"], 2)}},
        "cast": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"to": "f16"},
                 "torch": lambda i, a: {"Y": i["X"].half()}, "tol": (1e-3, 1e-3)},
        "range": {"inputs": {}, "attrs": {"start": 0.0, "limit": float(T * H), "delta": 1.0, "dtype": "f32"},
                  "torch": lambda i, a: {"Y": torch.arange(0, T * H, 1, dtype=torch.float32)}},
        # --- indexing ---
        "gather": {"inputs": {"X": ("f32", (V, H), "any"), "Idx": ("i64", (NB, S), ("idx", V))},
                   "attrs": {"axis": 0}, "torch": lambda i, a: {"Y": i["X"][i["Idx"]]}},
        "embedding": {"inputs": {"Idx": ("i64", (NB, S), ("idx", V)), "W": ("f32", (V, H), "any")},
                      "torch": lambda i, a: {"Y": F.embedding(i["Idx"], i["W"])}},
        "index_select": {"inputs": {"X": ("f32", (V, H), "any"), "Idx": ("i64", (T,), ("idx", V))},
                         "attrs": {"dim": 0}, "torch": lambda i, a: {"Y": torch.index_select(i["X"], 0, i["Idx"])}},
        "gather_elements": {"inputs": {"X": ("f32", (T, H), "any"), "Idx": ("i64", (T, 64), ("idx", H))},
                            "attrs": {"axis": 1}, "torch": lambda i, a: {"Y": torch.gather(i["X"], 1, i["Idx"])}},
        "gather_nd": {"inputs": {"X": ("f32", (V, H), "any"), "Idx": ("i64", (T, 1), ("idx", V))},
                      "torch": lambda i, a: {"Y": i["X"][i["Idx"][:, 0]]}},
        "scatter_elements": {"inputs": {"X": ("f32", (T, H), "any"), "Idx": ("i64", (T, 64), ("idx", H)),
                                        "U": ("f32", (T, 64), "any")}, "attrs": {"axis": 1, "reduction": "add"},
                             "torch": lambda i, a: {"Y": torch.scatter_add(i["X"], 1, i["Idx"], i["U"])},
                             "tol": (1e-4, 1e-4)},
        "scatter_nd": {"inputs": {"X": ("f32", (V, H), "any"), "Idx": ("i64", (S, 1), ("idx", V)),
                                  "U": ("f32", (S, H), "any")}, "attrs": {"reduction": "add"},
                       "torch": lambda i, a: {"Y": i["X"].index_add(0, i["Idx"][:, 0], i["U"])},
                       "tol": (1e-4, 1e-4)},
        "one_hot": {"inputs": {"Idx": ("i64", (T,), ("idx", 1024))}, "attrs": {"depth": 1024},
                    "torch": lambda i, a: {"Y": F.one_hot(i["Idx"], 1024).float()}},
        "topk": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"k": 8},
                 "torch": lambda i, a: dict(zip(("Values", "Indices"), torch.topk(i["X"], 8)))},
        # --- losses and optimizers ---
        "cross_entropy": {"inputs": {"X": ("f32", (T, V), "any"), "T": ("i64", (T,), ("idx", V))},
                          "torch": lambda i, a: {"Y": F.cross_entropy(i["X"], i["T"])}, "tol": (1e-4, 1e-4)},
        "nll_loss": {"inputs": {"X": ("f32", (T, V), "any"), "T": ("i64", (T,), ("idx", V))},
                     "torch": lambda i, a: {"Y": F.nll_loss(i["X"], i["T"])}, "tol": (1e-4, 1e-4)},
        "mse_loss": {"inputs": {"A": ("f32", (T, H), "any"), "B": ("f32", (T, H), "any")},
                     "torch": lambda i, a: {"Y": F.mse_loss(i["A"], i["B"])}, "tol": (1e-4, 1e-4)},
        "sgd": {"inputs": {"P": ("f32", (4 * H, H), "any"), "G": ("f32", (4 * H, H), "any"),
                           "M": ("f32", (4 * H, H), "any")}, "attrs": {"lr": 0.01, "momentum": 0.9},
                "torch": lambda i, a: (lambda m: {"P_new": i["P"] - 0.01 * m, "M_new": m})(i["M"] * 0.9 + i["G"])},
        "adam": {"inputs": {"P": ("f32", (4 * H, H), "any"), "G": ("f32", (4 * H, H), "any"),
                            "M": ("f32", (4 * H, H), "any"), "V": ("f32", (4 * H, H), "pos")},
                 "attrs": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0, "t": 3},
                 "torch": lambda i, a: torch_adam(i, a, False)},
        "adamw": {"inputs": {"P": ("f32", (4 * H, H), "any"), "G": ("f32", (4 * H, H), "any"),
                             "M": ("f32", (4 * H, H), "any"), "V": ("f32", (4 * H, H), "pos")},
                  "attrs": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "t": 3},
                  "torch": lambda i, a: torch_adam(i, a, True)},
        "clip_grad_norm": {"inputs": {"G0": ("f32", (4 * H, H), "any"), "G1": ("f32", (H, 4 * H), "any")},
                           # 4.7M squares summed in f32: Unitile's sequential accumulation is
                           # 6e-4 off in relative terms (PyTorch sums pairwise), hence rtol 1e-3.
                           "attrs": {"max_norm": 1.0}, "torch": torch_clip, "tol": (1e-3, 1e-4)},
    }
    # --- backward ops ---
    base = base_cases()
    for name in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu_tanh", "erf", "softplus",
                 "mish", "elu", "leaky_relu", "hardswish", "square", "sin", "cos", "abs", "neg", "reciprocal"):
        fwd = base[name]["torch"]
        domain = base[name]["inputs"]["X"][2]
        c[name + "_grad"] = unary_grad(lambda x, fwd=fwd: fwd({"X": x}, {})["Y"], domain)
    for name, fn in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div),
                     ("max", torch.maximum), ("pow", torch.pow)):
        c[name + "_grad"] = binary_grad(fn, "pos" if name in ("div", "pow") else "any")
    for name, fn in (("reduce_sum", lambda x: x.sum(-1, keepdim=True)),
                     ("reduce_mean", lambda x: x.mean(-1, keepdim=True)),
                     ("reduce_max", lambda x: x.amax(-1, keepdim=True)),
                     ("reduce_sum_square", lambda x: (x * x).sum(-1, keepdim=True)),
                     ("reduce_log_sum_exp", lambda x: x.logsumexp(-1, keepdim=True)),
                     ("var", lambda x: x.var(-1, keepdim=True, correction=0))):
        c[name + "_grad"] = reduction_grad(fn)
    c["matmul_grad"] = {"inputs": {"A": ("f32", (T, H), "any"), "B": ("f32", (H, 4 * H), "any"),
                                   "dY": ("f32", (T, 4 * H), "any")}, "tol": (1e-4, 1e-3),
                        "torch": backward(lambda i, a: i["A"] @ i["B"], ["A", "B"], ["dY"], ["dA", "dB"])}
    c["linear_grad"] = {"inputs": {"X": ("f32", (T, H), "any"), "W": ("f32", (4 * H, H), "any"),
                                   "dY": ("f32", (T, 4 * H), "any")}, "tol": (1e-4, 1e-3),
                        "torch": backward(lambda i, a: F.linear(i["X"], i["W"], i["B0"]), ["X", "W", "B0"], ["dY"],
                                          ["dX", "dW", "dB"])}
    c["batch_matmul_grad"] = {"inputs": {"A": ("f32", (NB * 12, S, 64), "any"), "B": ("f32", (NB * 12, 64, S), "any"),
                                         "dY": ("f32", (NB * 12, S, S), "any")}, "tol": (1e-4, 1e-3),
                              "torch": backward(lambda i, a: torch.bmm(i["A"], i["B"]), ["A", "B"], ["dY"],
                                                ["dA", "dB"])}
    # PyTorch's own backward kernels of softmax and log_softmax, from the forward output.
    c["softmax_grad"] = {
        "inputs": {"Y": ("f32", (12, S, S), "prob"), "dY": ("f32", (12, S, S), "any")},
        "attrs": {"axis": -1},
        "torch": lambda i, a: {"dX": torch._softmax_backward_data(i["dY"], i["Y"], -1, torch.float32)}}
    c["log_softmax_grad"] = {
        "inputs": {"Y": ("f32", (12, S, S), "logprob"), "dY": ("f32", (12, S, S), "any")},
        "attrs": {"axis": -1}, "tol": (1e-4, 1e-4),
        "torch": lambda i, a: {"dX": torch._log_softmax_backward_data(i["dY"], i["Y"], -1, torch.float32)}}
    c["layernorm_grad"] = {"inputs": {"X": ("f32", (T, H), "any"), "Scale": ("f32", (H,), "any"),
                                      "dY": ("f32", (T, H), "any")}, "tol": (1e-4, 1e-3),
                           "torch": backward(lambda i, a: F.layer_norm(i["X"], (H,), i["Scale"], i["B0"]),
                                             ["X", "Scale", "B0"], ["dY"], ["dX", "dScale", "dB"])}
    c["rmsnorm_grad"] = {"inputs": {"X": ("f32", (T, H), "any"), "Scale": ("f32", (H,), "any"),
                                    "dY": ("f32", (T, H), "any")}, "tol": (1e-4, 1e-3),
                         "torch": backward(lambda i, a: i["X"] * torch.rsqrt((i["X"] * i["X"]).mean(-1, keepdim=True)
                                                                              + 1e-5) * i["Scale"],
                                           ["X", "Scale"], ["dY"], ["dX", "dScale"])}
    c["scaled_dot_product_attention_grad"] = {
        "inputs": {"Q": ("f32", QKV, "any"), "K": ("f32", QKV, "any"), "V": ("f32", QKV, "any"),
                   "dY": ("f32", QKV, "any")}, "attrs": {"causal": 1}, "tol": (1e-4, 1e-3),
        "torch": backward(lambda i, a: torch_sdpa(i["Q"], i["K"], i["V"]),
                          ["Q", "K", "V"], ["dY"], ["dQ", "dK", "dV"])}
    c["cross_entropy_grad"] = {"inputs": {"X": ("f32", (T, V), "any"), "T": ("i64", (T,), ("idx", V)),
                                          "dY": ("f32", (), "any")},
                               "torch": backward(lambda i, a: F.cross_entropy(i["X"], i["T"]), ["X"], ["dY"], ["dX"])}
    c["embedding_grad"] = {"inputs": {"Idx": ("i64", (NB, S), ("idx", V)), "W": ("f32", (V, H), "any"),
                                      "dY": ("f32", (NB, S, H), "any")}, "tol": (1e-4, 1e-4),
                           "torch": backward(lambda i, a: F.embedding(i["Idx"], i["W"]), ["W"], ["dY"], ["dW"])}
    c["conv_grad"] = {"inputs": {"X": ("f32", (NB, 3, 224, 224), "any"), "W": ("f32", (H, 3, 16, 16), "any"),
                                 "dY": ("f32", (NB, H, 14, 14), "any")}, "attrs": {"strides": [16, 16]},
                      "tol": (1e-4, 1e-3),
                      "torch": backward(lambda i, a: F.conv2d(i["X"], i["W"], i["B0"], stride=16), ["X", "W", "B0"],
                                        ["dY"], ["dX", "dW", "dB"])}
    c["max_pool_grad"] = {"inputs": {"X": ("f32", (NB, 64, 112, 112), "any"), "dY": ("f32", (NB, 64, 56, 56), "any")},
                          "attrs": {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
                          "torch": backward(lambda i, a: F.max_pool2d(i["X"], 3, 2, 1), ["X"], ["dY"], ["dX"])}
    c.update(coverage_cases(c))
    return c


def onnx_more_cases():
    """Cases of the quantization ops and the second batch of ONNX ops. PyTorch's side of
    the quantization ops is its eager arithmetic (round half to even, clamp), the same
    formula as ONNX's; torch.quantize_per_tensor multiplies by 1/scale, which can round
    the other way. The random ops have no case: no PyTorch call draws the same values."""
    IMG = (NB, 64, 56, 56)
    q = lambda x, s, z: torch.clamp(torch.round(x / s) + z.float(), 0, 255).to(torch.uint8)

    def dyn(i, a):
        x = i["X"]
        lo, hi = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
        s = (hi - lo) / 255
        z = torch.clamp(torch.round(-lo / s), 0, 255).to(torch.uint8)
        return {"Y": q(x, s, z), "YScale": s, "YZeroPoint": z}

    def rev(i, a):
        y = i["X"].clone()
        for b, n in enumerate(i["SequenceLens"].tolist()):
            y[:n, b] = i["X"][:n, b].flip(0)
        return {"Y": y}

    mm = (512, H, H)
    return {
        "quantize_linear": {"inputs": {"X": ("f32", (T, H), "any"), "Scale": ("f32", (), "pos"),
                                       "ZeroPoint": ("u8", (), "u8")},
                            "torch": lambda i, a: {"Y": q(i["X"], i["Scale"], i["ZeroPoint"])}},
        "dequantize_linear": {"inputs": {"X": ("u8", (T, H), "u8"), "Scale": ("f32", (), "pos"),
                                         "ZeroPoint": ("u8", (), "u8")},
                              "torch": lambda i, a: {"Y": (i["X"].float() - i["ZeroPoint"].float()) * i["Scale"]}},
        "dynamic_quantize_linear": {"inputs": {"X": ("f32", (T, H), "any")}, "torch": dyn},
        "matmul_integer": {"inputs": {"A": ("u8", mm[:2], "u8"), "B": ("u8", mm[1:], "u8"),
                                      "AZeroPoint": ("u8", (), "u8"), "BZeroPoint": ("u8", (), "u8")},
                           "torch": lambda i, a: {"Y": ((i["A"].int() - i["AZeroPoint"].int())
                                                        @ (i["B"].int() - i["BZeroPoint"].int()))}},
        "lp_pool": {"inputs": {"X": ("f32", IMG, "any")}, "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]},
                    "torch": lambda i, a: {"Y": F.lp_pool2d(i["X"], 2, 2, 2)}},
        "lp_pool_grad": {"inputs": {"X": ("f32", IMG, "any"), "dY": ("f32", (NB, 64, 28, 28), "any")},
                         "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]}, "tol": (1e-4, 1e-4),
                         "torch": backward(lambda i, a: F.lp_pool2d(i["X"], 2, 2, 2), ["X"], ["dY"], ["dX"])},
        "global_lp_pool": {"inputs": {"X": ("f32", IMG, "any")},
                           "torch": lambda i, a: {"Y": (i["X"] * i["X"]).sum((2, 3), keepdim=True).sqrt()}},
        "global_lp_pool_grad": {"inputs": {"X": ("f32", IMG, "any"), "dY": ("f32", (NB, 64, 1, 1), "any")},
                                "tol": (1e-4, 1e-4),
                                "torch": backward(lambda i, a: (i["X"] * i["X"]).sum((2, 3), keepdim=True).sqrt(),
                                                  ["X"], ["dY"], ["dX"])},
        "lrn": {"inputs": {"X": ("f32", IMG, "any")}, "attrs": {"size": 5},
                "torch": lambda i, a: {"Y": F.local_response_norm(i["X"], 5)}},
        "lrn_grad": {"inputs": {"X": ("f32", IMG, "any"), "dY": ("f32", IMG, "any")}, "attrs": {"size": 5},
                     "tol": (1e-4, 1e-4),
                     "torch": backward(lambda i, a: F.local_response_norm(i["X"], 5), ["X"], ["dY"], ["dX"])},
        "cast_like": {"inputs": {"X": ("f32", (T, H), "any"), "Target": ("f64", (1,), "any")},
                      "torch": lambda i, a: {"Y": i["X"].double()}},
        "reverse_sequence": {"inputs": {"X": ("f32", (S, NB, H), "any"), "SequenceLens": ("i64", (NB,), ("idx", S))},
                             "torch": rev},
        "center_crop_pad": {"inputs": {"X": ("f32", IMG, "any")}, "attrs": {"shape": [48, 64], "axes": [2, 3]},
                            "torch": lambda i, a: {"Y": F.pad(i["X"], [4, 4, -4, -4])}},
        "hann_window": {"inputs": {}, "attrs": {"size": 1 << 20},
                        "torch": lambda i, a: {"Y": torch.hann_window(1 << 20)}},
        "hamming_window": {"inputs": {}, "attrs": {"size": 1 << 20},
                           "torch": lambda i, a: {"Y": torch.hamming_window(1 << 20, True, 25 / 46, 21 / 46)}},
        "blackman_window": {"inputs": {}, "attrs": {"size": 1 << 20},
                            "torch": lambda i, a: {"Y": torch.blackman_window(1 << 20)}},
    }


def torch_rope_grad(dy):
    """rotary_embedding's backward: the inverse rotation (the op is linear in X)."""
    n, d = dy.shape[-2], dy.shape[-1]
    if (n, d) not in ROPE:
        ROPE[(n, d)] = rope_tables(n, d)
    c, s = ROPE[(n, d)]
    d1, d2 = dy[..., : d // 2], dy[..., d // 2:]
    return torch.cat([d1 * c + d2 * s, d2 * c - d1 * s], dim=-1)


def coverage_cases(c):
    """Cases of the ops the bf16ops sweep still lacked (backward ops, the ONNX additions),
    at the same shapes as their forward cases. dropout alone has none: its mask is
    Unitile's own counter hash, which no PyTorch call reproduces (dropout_grad takes the
    mask as an input, so it is compared)."""
    IMG = (NB, 64, 56, 56)
    QKV = (min(NB, 2), 12, S, 64)
    B2 = min(NB, 2)
    base = base_cases()
    out = {}
    fwd = dict(base)
    fwd.update(c)
    # Unary backward ops: autograd of the forward case's PyTorch function.
    for name in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan", "exp2", "expm1",
                 "log1p", "log2", "celu", "selu", "softsign", "hard_sigmoid", "shrink", "thresholded_relu",
                 "clip", "identity"):
        case = fwd[name]
        f, attrs = case["torch"], case.get("attrs", {})
        g = unary_grad(lambda x, f=f, attrs=attrs: f({"X": x}, attrs)["Y"], case["inputs"]["X"][2])
        if attrs:
            g["attrs"] = attrs
        out[name + "_grad"] = g
    out["cast_grad"] = {"inputs": {"X": ("f32", (T, H), "any"), "dY": ("f64", (T, H), "any")}, "attrs": {"to": "f64"},
                        "torch": backward(lambda i, a: i["X"].double(), ["X"], ["dY"], ["dX"])}
    for name, fn, domain in (("atan2", torch.atan2, "nonzero"), ("fmod", torch.fmod, "nonzero"),
                             ("mod", torch.remainder, "nonzero"), ("min", torch.minimum, "any"),
                             ("prelu", F.prelu, "any")):
        out[name + "_grad"] = binary_grad(fn, domain)
    for name, fn, domain in (("reduce_l1", lambda x: x.abs().sum(-1, keepdim=True), "any"),
                             ("reduce_l2", lambda x: x.norm(dim=-1, keepdim=True), "any"),
                             ("reduce_log_sum", lambda x: x.sum(-1, keepdim=True).log(), "pos"),
                             ("reduce_min", lambda x: x.amin(-1, keepdim=True), "any"),
                             ("reduce_prod", lambda x: x.prod(-1, keepdim=True), "near1"),
                             ("std", lambda x: x.std(-1, keepdim=True, correction=0), "any")):
        out[name + "_grad"] = reduction_grad(fn, domain)
    # Data movement: the backward of a view is a copy, sum or scatter of dY.
    def view_grad(x_shape, y_shape, fn, attrs):
        return {"inputs": {"X": ("f32", x_shape, "any"), "dY": ("f32", y_shape, "any")}, "attrs": attrs,
                "torch": backward(lambda i, a: fn(i["X"]), ["X"], ["dY"], ["dX"])}
    out["reshape_grad"] = view_grad((T, H), (NB, S, H), lambda x: x.reshape(NB, S, H), {"shape": [NB, S, H]})
    out["flatten_grad"] = view_grad((NB, S, H), (T, H), lambda x: x.reshape(T, H), {"axis": 2})
    out["squeeze_grad"] = view_grad((T, 1, H), (T, H), lambda x: x.squeeze(1), {"axes": [1]})
    out["unsqueeze_grad"] = view_grad((T, H), (T, 1, H), lambda x: x.unsqueeze(1), {"axes": [1]})
    out["expand_grad"] = view_grad((1, S, H), (NB, S, H), lambda x: x.expand(NB, S, H), {"shape": [NB, S, H]})
    out["slice_grad"] = view_grad((NB, S, H), (NB, len(range(1, S, 2)), H), lambda x: x[:, 1::2],
                                  {"starts": [1], "ends": [S], "axes": [1], "steps": [2]})
    out["transpose_grad"] = view_grad((NB, S, 12, 64), (NB, 12, S, 64), lambda x: x.permute(0, 2, 1, 3),
                                      {"perm": [0, 2, 1, 3]})
    out["flip_grad"] = view_grad((T, H), (T, H), lambda x: torch.flip(x, [0]), {"axes": [0]})
    out["tile_grad"] = view_grad((S, H), (T, H), lambda x: x.repeat(NB, 1), {"repeats": [NB, 1]})
    out["pad_grad"] = view_grad((NB, S, H), (NB, S + 16, H), lambda x: F.pad(x, (0, 0, 0, 16)),
                                {"pads": [0, 0, 0, 0, 16, 0]})
    out["tril_grad"] = view_grad((12, S, S), (12, S, S), lambda x: torch.tril(x), {"k": 0})
    out["triu_grad"] = view_grad((12, S, S), (12, S, S), lambda x: torch.triu(x, 1), {"k": 1})
    out["depth_to_space_grad"] = view_grad((NB, 256, 32, 32), (NB, 64, 64, 64), lambda x: F.pixel_shuffle(x, 2),
                                           {"blocksize": 2, "mode": "CRD"})
    out["space_to_depth_grad"] = view_grad((NB, 64, 64, 64), (NB, 256, 32, 32), lambda x: space_to_depth(x, 2),
                                           {"blocksize": 2})
    out["resize_grad"] = view_grad(IMG, (NB, 64, 112, 112),
                                   lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
                                   {"scales": [1, 1, 2, 2], "mode": "linear"})
    out["average_pool_grad"] = view_grad((NB, 64, 112, 112), (NB, 64, 56, 56), lambda x: F.avg_pool2d(x, 2, 2),
                                         {"kernel_shape": [2, 2], "strides": [2, 2]})
    out["global_average_pool_grad"] = view_grad((NB, H, 14, 14), (NB, H, 1, 1),
                                                lambda x: x.mean((2, 3), keepdim=True), {})
    out["global_max_pool_grad"] = view_grad((NB, H, 14, 14), (NB, H, 1, 1),
                                            lambda x: x.amax((2, 3), keepdim=True), {})
    out["cumsum_grad"] = {"inputs": {"dY": ("f32", (T, H), "any")}, "attrs": {"axis": -1}, "tol": (1e-4, 1e-3),
                          "torch": lambda i, a: {"dX": i["dY"].flip(-1).cumsum(-1).flip(-1)}}
    out["concat_grad"] = {"inputs": {"X0": ("f32", (T, H), "any"), "X1": ("f32", (T, H), "any"),
                                     "dY": ("f32", (T, 2 * H), "any")}, "attrs": {"axis": -1},
                          "torch": backward(lambda i, a: torch.cat([i["X0"], i["X1"]], -1), ["X0", "X1"], ["dY"],
                                            ["dX0", "dX1"])}
    out["split_grad"] = {"inputs": {"X": ("f32", (T, 3 * H), "any"), "dY0": ("f32", (T, H), "any"),
                                    "dY1": ("f32", (T, H), "any"), "dY2": ("f32", (T, H), "any")},
                         "attrs": {"axis": -1, "num_outputs": 3},
                         "torch": backward(lambda i, a: i["X"].split(H, -1), ["X"], ["dY0", "dY1", "dY2"], ["dX"])}
    out["where_grad"] = {"inputs": {"Cond": ("bool", (T, H), "mask"), "A": ("f32", (T, H), "any"),
                                    "B": ("f32", (H,), "any"), "dY": ("f32", (T, H), "any")}, "tol": (1e-4, 1e-3),
                         "torch": backward(lambda i, a: torch.where(i["Cond"], i["A"], i["B"]), ["A", "B"], ["dY"],
                                           ["dA", "dB"])}
    # Indexing: the backward of a gather is a scatter-add of dY.
    out["gather_grad"] = {"inputs": {"X": ("f32", (V, H), "any"), "Idx": ("i64", (NB, S), ("idx", V)),
                                     "dY": ("f32", (NB, S, H), "any")}, "attrs": {"axis": 0}, "tol": (1e-4, 1e-4),
                          "torch": backward(lambda i, a: i["X"][i["Idx"]], ["X"], ["dY"], ["dX"])}
    out["index_select_grad"] = {"inputs": {"X": ("f32", (V, H), "any"), "Idx": ("i64", (T,), ("idx", V)),
                                           "dY": ("f32", (T, H), "any")}, "attrs": {"dim": 0}, "tol": (1e-4, 1e-4),
                                "torch": backward(lambda i, a: torch.index_select(i["X"], 0, i["Idx"]), ["X"],
                                                  ["dY"], ["dX"])}
    out["gather_elements_grad"] = {"inputs": {"X": ("f32", (T, H), "any"), "Idx": ("i64", (T, 64), ("idx", H)),
                                              "dY": ("f32", (T, 64), "any")}, "attrs": {"axis": 1},
                                   "tol": (1e-4, 1e-4),
                                   "torch": backward(lambda i, a: torch.gather(i["X"], 1, i["Idx"]), ["X"], ["dY"],
                                                     ["dX"])}
    out["gather_nd_grad"] = {"inputs": {"X": ("f32", (V, H), "any"), "Idx": ("i64", (T, 1), ("idx", V)),
                                        "dY": ("f32", (T, H), "any")}, "tol": (1e-4, 1e-4),
                             "torch": backward(lambda i, a: i["X"][i["Idx"][:, 0]], ["X"], ["dY"], ["dX"])}
    out["scatter_elements_grad"] = {
        "inputs": {"X": ("f32", (T, H), "any"), "Idx": ("i64", (T, 64), ("idx", H)), "U": ("f32", (T, 64), "any"),
                   "dY": ("f32", (T, H), "any")}, "attrs": {"axis": 1, "reduction": "add"},
        "torch": backward(lambda i, a: torch.scatter_add(i["X"], 1, i["Idx"], i["U"]), ["X", "U"], ["dY"],
                          ["dX", "dU"])}
    out["scatter_nd_grad"] = {
        "inputs": {"X": ("f32", (V, H), "any"), "Idx": ("i64", (S, 1), ("idx", V)), "U": ("f32", (S, H), "any"),
                   "dY": ("f32", (V, H), "any")}, "attrs": {"reduction": "add"},
        "torch": backward(lambda i, a: i["X"].index_add(0, i["Idx"][:, 0], i["U"]), ["X", "U"], ["dY"],
                          ["dX", "dU"])}
    out["topk_grad"] = {"inputs": {"X": ("f32", (T, H), "any"), "Indices": ("i64", (T, 8), ("distinct", H)),
                                   "dValues": ("f32", (T, 8), "any")}, "attrs": {"k": 8},
                        "torch": lambda i, a: {"dX": torch.zeros_like(i["X"]).scatter_add_(1, i["Indices"],
                                                                                          i["dValues"])}}
    # Normalization, matmul family, attention, losses.
    norm_in = {"X": ("f32", IMG, "any"), "Scale": ("f32", (64,), "any"), "dY": ("f32", IMG, "any")}
    out["batchnorm_grad"] = {
        "inputs": {"X": ("f32", IMG, "any"), "Scale": ("f32", (64,), "any"), "Mean": ("f32", (64,), "any"),
                   "Var": ("f32", (64,), "pos"), "dY": ("f32", IMG, "any")}, "tol": (1e-4, 1e-3),
        "torch": backward(lambda i, a: F.batch_norm(i["X"], i["Mean"], i["Var"], i["Scale"], i["B0"],
                                                    training=False), ["X", "Scale", "B0"], ["dY"], ["dX", "dScale", "dB"])}
    out["batchnorm_training_grad"] = {
        "inputs": dict(norm_in), "tol": (1e-4, 1e-3),
        "torch": backward(lambda i, a: F.batch_norm(i["X"], None, None, i["Scale"], i["B0"], training=True),
                          ["X", "Scale", "B0"], ["dY"], ["dX", "dScale", "dB"])}
    out["groupnorm_grad"] = {
        "inputs": dict(norm_in), "attrs": {"num_groups": 32}, "tol": (1e-4, 1e-3),
        "torch": backward(lambda i, a: F.group_norm(i["X"], 32, i["Scale"], i["B0"]), ["X", "Scale", "B0"], ["dY"],
                          ["dX", "dScale", "dB"])}
    out["instancenorm_grad"] = {
        "inputs": dict(norm_in), "tol": (1e-4, 1e-3),
        "torch": backward(lambda i, a: F.instance_norm(i["X"], weight=i["Scale"], bias=i["B0"]), ["X", "Scale", "B0"],
                          ["dY"], ["dX", "dScale", "dB"])}
    out["gemm_grad"] = {
        "inputs": {"A": ("f32", (T, H), "any"), "B": ("f32", (3 * H, H), "any"), "C": ("f32", (3 * H,), "any"),
                   "dY": ("f32", (T, 3 * H), "any")}, "attrs": {"transB": 1}, "tol": (1e-4, 1e-3),
        "torch": backward(lambda i, a: torch.addmm(i["C"], i["A"], i["B"].t()), ["A", "B", "C"], ["dY"],
                          ["dA", "dB", "dC"])}
    out["einsum_grad"] = {
        "inputs": {"X0": ("f32", QKV, "any"), "X1": ("f32", QKV, "any"), "dY": ("f32", QKV[:3] + (S,), "any")},
        "attrs": {"equation": "bhnd,bhmd->bhnm"}, "tol": (1e-4, 1e-3),
        "torch": backward(lambda i, a: torch.einsum("bhnd,bhmd->bhnm", i["X0"], i["X1"]), ["X0", "X1"], ["dY"],
                          ["dX0", "dX1"])}
    out["multi_head_attention_grad"] = {
        "inputs": {"Q": ("f32", (B2, S, H), "any"), "K": ("f32", (B2, S, H), "any"), "V": ("f32", (B2, S, H), "any"),
                   "dY": ("f32", (B2, S, H), "any")}, "attrs": {"num_heads": 12, "causal": 1}, "tol": (1e-4, 1e-3),
        "torch": backward(torch_mha, ["Q", "K", "V"], ["dY"], ["dQ", "dK", "dV"])}
    out["rotary_embedding_grad"] = {"inputs": {"dY": ("f32", (NB, 12, S, 64), "any")}, "tol": (1e-4, 1e-4),
                                    "torch": lambda i, a: {"dX": torch_rope_grad(i["dY"])}}
    out["conv_transpose_grad"] = {
        "inputs": {"X": ("f32", (B2, 64, 28, 28), "any"), "W": ("f32", (64, 32, 4, 4), "any"),
                   "dY": ("f32", (B2, 32, 56, 56), "any")}, "attrs": {"strides": [2, 2], "pads": [1, 1, 1, 1]},
        "tol": (1e-4, 1e-3),
        "torch": backward(lambda i, a: F.conv_transpose2d(i["X"], i["W"], i["B0"], stride=2, padding=1),
                          ["X", "W", "B0"], ["dY"], ["dX", "dW", "dB"])}
    out["nll_loss_grad"] = {"inputs": {"X": ("f32", (T, V), "any"), "T": ("i64", (T,), ("idx", V)),
                                       "dY": ("f32", (), "any")},
                            "torch": backward(lambda i, a: F.nll_loss(i["X"], i["T"]), ["X"], ["dY"], ["dX"])}
    out["mse_loss_grad"] = {"inputs": {"A": ("f32", (T, H), "any"), "B": ("f32", (T, H), "any"),
                                       "dY": ("f32", (), "any")},
                            "torch": backward(lambda i, a: F.mse_loss(i["A"], i["B"]), ["A", "B"], ["dY"], ["dA", "dB"])}
    out["dropout_grad"] = {"inputs": {"dY": ("f32", (T, H), "any"), "Mask": ("bool", (T, H), "mask")},
                           "attrs": {"ratio": 0.1, "training_mode": 1},
                           "torch": lambda i, a: {"dX": i["dY"] * i["Mask"] / 0.9}}
    # ONNX additions.
    three = {"X0": ("f32", (T, H), "any"), "X1": ("f32", (T, H), "any"), "X2": ("f32", (T, H), "any")}
    out["add_n"] = {"inputs": dict(three), "torch": lambda i, a: {"Y": i["X0"] + i["X1"] + i["X2"]}}
    out["mean_n"] = {"inputs": dict(three), "torch": lambda i, a: {"Y": (i["X0"] + i["X1"] + i["X2"]) / 3}}
    out["add_n_grad"] = {"inputs": dict(three, dY=("f32", (T, H), "any")),
                         "torch": backward(lambda i, a: i["X0"] + i["X1"] + i["X2"], ["X0", "X1", "X2"], ["dY"],
                                           ["dX0", "dX1", "dX2"])}
    out["mean_n_grad"] = {"inputs": dict(three, dY=("f32", (T, H), "any")),
                          "torch": backward(lambda i, a: (i["X0"] + i["X1"] + i["X2"]) / 3, ["X0", "X1", "X2"],
                                            ["dY"], ["dX0", "dX1", "dX2"])}
    out["hardmax"] = {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"axis": -1},
                      "torch": lambda i, a: {"Y": F.one_hot(i["X"].argmax(-1), H).float()}}
    out["eye_like"] = {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"k": 0},
                       "torch": lambda i, a: {"Y": torch.eye(T, H)}}
    out["lp_normalization"] = {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"axis": -1, "p": 2},
                               "torch": lambda i, a: {"Y": F.normalize(i["X"], p=2.0, dim=-1)}}
    out["mean_variance_normalization"] = {
        "inputs": {"X": ("f32", IMG, "any")}, "tol": (1e-4, 1e-4),
        "torch": lambda i, a: {"Y": (i["X"] - i["X"].mean((0, 2, 3), keepdim=True)) /
                               (i["X"].var((0, 2, 3), keepdim=True, correction=0).sqrt() + 1e-9)}}
    return out


# Backward cases that take a zero bias the op has no port for (linear_grad's, layernorm's,
# conv's dB): PyTorch gets it as B0, made here so Unitile is not given it.
BIAS_FOR = {"linear_grad": ("W", 0), "layernorm_grad": ("Scale", 0), "conv_grad": ("W", 0),
            "conv_transpose_grad": ("W", 1), "batchnorm_grad": ("Scale", 0), "batchnorm_training_grad": ("Scale", 0),
            "groupnorm_grad": ("Scale", 0), "instancenorm_grad": ("Scale", 0)}


def sample(rng, dtype, shape, domain):
    if dtype == "bool":
        return rng.uniform(size=shape) < 0.5
    if isinstance(domain, tuple) and domain[0] == "distinct":  # per row, no index twice
        return np.argsort(rng.uniform(size=shape[:-1] + (domain[1],)), -1)[..., :shape[-1]].astype(np.int64)
    if isinstance(domain, tuple) and domain[0] == "idx":
        return rng.integers(0, domain[1], size=shape).astype({"i64": np.int64, "i32": np.int32}[dtype])
    if dtype in ("u8", "i8"):
        lo, hi = (0, 256) if dtype == "u8" else (-128, 128)
        return rng.integers(lo, hi, size=shape).astype({"u8": np.uint8, "i8": np.int8}[dtype])
    if domain == "int":
        return rng.integers(-1000, 1000, size=shape).astype({"i64": np.int64, "i32": np.int32}[dtype])
    x = rng.uniform(-1, 1, size=shape)
    if domain == "near1":
        x = rng.uniform(0.999, 1.001, size=shape)
    elif domain in ("prob", "logprob"):  # softmax / log_softmax rows
        e = np.exp(rng.uniform(-4, 4, size=shape))
        x = e / e.sum(-1, keepdims=True)
        x = np.log(x) if domain == "logprob" else x
    elif domain == "pos":
        x = rng.uniform(0.05, 3, size=shape)
    elif domain == "gt1":
        x = rng.uniform(1.05, 4, size=shape)
    elif domain == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    return x.astype({"f32": np.float32, "f64": np.float64}[dtype])


CASES = {}


def torch_time(fn, inputs, attrs, repeat):
    fn(inputs, attrs)  # warm-up
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(inputs, attrs)
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def attr_text(v):
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(str(x) for x in v) + "]"
    return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unitile", required=True)
    ap.add_argument("--ops", default="", help="only these ops (comma-separated)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true",
                    help="batch 1 and sequence 256 instead of 8 and 512 (tokens 256, not 4096)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    listing = subprocess.run([args.unitile, "ops", "--json"], capture_output=True, text=True)
    if listing.returncode != 0:
        sys.exit("bench --ops: `unitile ops --json` failed: " + listing.stderr.strip())
    names = [o["name"] for o in json.loads(listing.stdout)]
    wanted = [n for n in args.ops.split(",") if n]
    for n in wanted:
        if n not in names:
            sys.exit(f"bench --ops: no library op named '{n}'")
    names = wanted or names

    global NB, S, T
    if args.quick:
        NB, S = 1, 256
        T = NB * S
    CASES.update(base_cases())
    CASES.update(extended_cases())
    CASES.update(onnx_more_cases())
    torch.set_num_threads(args.threads)
    env = dict(os.environ, UNITILE_NUM_THREADS=str(args.threads))
    rng = np.random.default_rng(0)
    records = []
    print(f"bench --ops: {len(names)} ops, {args.threads} thread(s), median of {args.repeat}",
          file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            case = CASES.get(name)
            rec = {"op": name, "threads": args.threads}
            if case is None:
                rec["status"] = "no case"
                records.append(rec)
                continue
            attrs = case.get("attrs", {})
            arrays = {}
            cmd = [args.unitile, "run", f"op:{name}", "--device", "cpu", "--repeat", str(args.repeat),
                   "--output-dir", os.path.join(tmp, name)]
            for port, (dt, shape, domain) in case["inputs"].items():
                arrays[port] = sample(rng, dt, shape, domain)
                path = os.path.join(tmp, f"{name}_{port}.npy")
                np.save(path, arrays[port])
                cmd += ["--input", f"{port}={path}"]
            for k, v in attrs.items():
                cmd += ["--attr", f"{k}={attr_text(v)}"]
            rec["shapes"] = {p: list(a.shape) for p, a in arrays.items()}
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                first = (p.stderr.strip().splitlines() or ["?"])[0]
                rec["status"] = first if first.startswith("error") else "error: " + first
                records.append(rec)
                print(f"  {name}: {rec['status']}", file=sys.stderr)
                continue
            m = re.search(r"median_ms=([0-9.e+-]+)", p.stdout)
            rec["unitile_ms"] = float(m.group(1))
            tin = {k: torch.from_numpy(v) for k, v in arrays.items()}
            if name in BIAS_FOR:
                port, axis = BIAS_FOR[name]
                tin["B0"] = torch.zeros(arrays[port].shape[axis])
            want = case["torch"](tin, attrs)
            rtol, atol = case.get("tol", (1e-4, 1e-5))
            status = "ok"
            for out, w in want.items():
                path = os.path.join(tmp, name, f"{out}.npy")
                if not os.path.exists(path):
                    status = f"failed: the op wrote no output named {out}"
                    continue
                got = np.load(path)
                w = w.numpy()
                if got.shape != w.shape and got.size == w.size:
                    got = got.reshape(w.shape)
                if got.dtype == np.bool_ or w.dtype == np.bool_ or w.dtype.kind == "i":
                    ok = np.array_equal(got.astype(w.dtype), w)
                else:
                    ok = np.allclose(got, w, rtol=rtol, atol=atol, equal_nan=True)
                if not ok:
                    status = f"failed: {out} differs from PyTorch"
            rec["status"] = status
            if status == "ok":
                rec["torch_ms"] = torch_time(case["torch"], tin, attrs, args.repeat)
                rec["ratio"] = rec["torch_ms"] / rec["unitile_ms"]
            records.append(rec)
            print(f"  {name}: {status}" + (f" {rec['ratio']:.2f}x" if "ratio" in rec else ""),
                  file=sys.stderr)

    print(f"| op | shapes | unitile ms | torch ms | ratio | status |")
    print("|---|---|---|---|---|---|")
    for r in records:
        shapes = " ".join("x".join(map(str, s)) for s in r.get("shapes", {}).values())
        u = f"{r['unitile_ms']:.3f}" if "unitile_ms" in r else ""
        t = f"{r['torch_ms']:.3f}" if "torch_ms" in r else ""
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else ""
        print(f"| {r['op']} | {shapes} | {u} | {t} | {ratio} | {r['status']} |")
    timed = [r for r in records if "ratio" in r]
    if timed:
        geo = float(np.exp(np.mean(np.log([r["ratio"] for r in timed]))))
        below = [r["op"] for r in timed if r["ratio"] < 1.0]
        print(f"\n{len(timed)} ops timed, geometric mean ratio {geo:.2f}; below 1.0x: "
              f"{', '.join(below) if below else 'none'}")
    missing = [r["op"] for r in records if r["status"] == "no case"]
    if missing:
        print(f"{len(missing)} ops have no bench case yet: {', '.join(missing)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 1 if any(r["status"].startswith(("failed", "error")) for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
