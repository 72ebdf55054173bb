"""Cases of the ops a Transformer runs in reduced precision, in bf16 and f16: elementwise
arithmetic and activations, reductions, softmax/log_softmax/layernorm/rmsnorm, the
matmul family, attention, conv and pooling, losses, cast and data movement, and the
backward ops of a training step's hot path. Inputs are drawn in f32 and rounded to the
dtype (bf16 as uint16 bits, see harness.py); the references are the family files' own,
run on the same rounded values widened to f32 and computing in f64, their outputs rounded
to the dtype. f16 has a smaller set (exp, add, reduce_sum, rmsnorm, linear, rotary
embedding, cast) beside the f16 cases the family files already hold (matmul, softmax,
layernorm, sdpa, conv, cast to f16). Shapes are small: every case compiles a kernel per
device, and each op/dtype pair's first case also compiles on opencl."""
import numpy as np

import cases_attention as att
import cases_conv as cv
import cases_data_movement as dm
import cases_elementwise as ew
import cases_losses as ls
import cases_matmul as mm
import cases_normalization as nm
import cases_reduction as rd
from harness import Case, as_dtype

RNG = np.random.default_rng(1616)
F32 = np.float32


def rand(shape, dt, lo=-1.0, hi=1.0):
    return as_dtype(RNG.uniform(lo, hi, size=shape).astype(F32), dt)


# Elementwise ops in both reduced dtypes, and more of them in bf16 (the training dtype).
UNARY_BOTH = ("exp",)
UNARY_BF16 = ("gelu", "relu", "silu", "rsqrt", "tanh", "sigmoid")
BINARY_BOTH = ("add",)
BINARY_BF16 = ("mul", "div")


def elementwise(dt):
    out = []
    for name in UNARY_BOTH + (UNARY_BF16 if dt == "bf16" else ()):
        ref, domain, _ = ew.UNARY[name]
        x = as_dtype(ew.sample((3, 37), F32, domain), dt)
        out.append(Case(name, {"X": x}, lambda i, a, ref=ref: {"Y": ref(i["X"].astype(np.float64), a)}))
    for name in BINARY_BOTH + (BINARY_BF16 if dt == "bf16" else ()):
        ref, domain = ew.BINARY[name]
        a = as_dtype(ew.sample((4, 1, 5), F32, "pos" if domain == "pospow" else domain), dt)
        b = as_dtype(ew.sample((3, 1), F32, "any" if domain == "pospow" else domain), dt)
        out.append(Case(name, {"A": a, "B": b},
                        lambda i, at, ref=ref: {"C": ref(i["A"].astype(np.float64), i["B"].astype(np.float64))}))
    if dt == "bf16":
        c = RNG.uniform(size=(4, 1)) > 0.5
        out.append(Case("where", {"Cond": c, "A": rand((4, 6), dt), "B": rand((6,), dt)},
                        lambda i, at: {"Y": np.where(i["Cond"], i["A"], i["B"])}))
    return out


def reductions(dt):
    # Sums of 35 terms: the kernel accumulates in f32, so only the final rounding shows.
    names = ("reduce_sum",)
    if dt == "bf16":
        names += ("reduce_max", "var")
    out = []
    for name in names:
        x = rand((3, 5, 7), dt)
        out.append(Case(name, {"X": x}, rd.ref_for(rd.REDUCE[name]),
                        attrs={"axes": [0, 2], "keepdims": False}, scale=2))
    if dt == "bf16":
        x = as_dtype(np.round(RNG.uniform(-2, 2, size=(4, 5, 6)) * 2) / 2, dt)  # ties included
        out.append(Case("argmax", {"X": x},
                        lambda i, a: {"Y": np.argmax(i["X"], axis=1, keepdims=True).astype(np.int64)},
                        attrs={"axis": 1, "keepdims": True}))
        out.append(Case("cumsum", {"X": rand((5, 8), dt)},
                        lambda i, a: {"Y": np.cumsum(i["X"].astype(np.float64), axis=1)},
                        attrs={"axis": 1}, scale=2))
    return out


def normalization(dt):
    out = [Case("rmsnorm", {"X": rand((4, 33), dt, -2, 2), "Scale": rand((33,), dt)}, nm.rmsnorm_ref)]
    if dt == "bf16":
        out += [Case("log_softmax", {"X": rand((3, 5, 7), dt, -4, 4)}, nm.log_softmax_ref, attrs={"axis": 1}),
                Case("softmax", {"X": rand((4, 9), dt, -4, 4)}, nm.softmax_ref),
                Case("layernorm", {"X": rand((4, 33), dt, -2, 2), "Scale": rand((33,), dt),
                                   "B": rand((33,), dt)}, nm.layernorm_ref, scale=2)]
    return out


def matmul(dt):
    # K = 24: the f32 accumulation is exact enough that only the output rounding shows.
    out = [Case("linear", {"X": rand((2, 3, 24), dt), "W": rand((5, 24), dt), "B": rand((5,), dt)},
                mm.linear_ref, scale=2),
           ]
    if dt == "bf16":
        out += [Case("matmul", {"A": rand((2, 1, 3, 24), dt), "B": rand((4, 24, 7), dt)}, mm.matmul_ref,
                     scale=2),
                Case("batch_matmul", {"A": rand((3, 4, 24), dt), "B": rand((3, 24, 6), dt)}, mm.matmul_ref,
                     scale=2)]
    return out


def attention(dt):
    rope = lambda i, a: {"Y": att.rope_np(i["X"], None, a)}  # noqa: E731
    out = [Case("rotary_embedding", {"X": rand((1, 2, 5, 8), dt)}, rope)]
    if dt == "bf16":
        out.append(Case("multi_head_attention", {"Q": rand((2, 5, 12), dt), "K": rand((2, 7, 6), dt),
                                         "V": rand((2, 7, 4), dt)}, att.mha_ref,
                attrs={"num_heads": 4, "num_kv_heads": 2}, scale=2))
        out.append(Case("scaled_dot_product_attention",
                        {"Q": rand((1, 2, 9, 8), dt), "K": rand((1, 2, 9, 8), dt), "V": rand((1, 2, 9, 8), dt)},
                        att.sdpa_ref, attrs={"causal": 1}, scale=2))
    return out


def conv_pool(dt):
    out = []
    if dt == "bf16":
        x, w, b = rand((1, 2, 6, 5), dt), rand((3, 2, 3, 3), dt), rand((3,), dt)
        out.append(Case("conv", {"X": x, "W": w, "B": b},
                        lambda i, a: {"Y": cv.np_conv(i["X"], i["W"], i.get("B"), a)},
                        attrs={"pads": [1, 1, 1, 1]}, scale=2))
        out.append(Case("max_pool", {"X": rand((2, 3, 7, 6), dt)},
                        lambda i, a: {"Y": cv.pool("np", i["X"], a, False)},
                        attrs={"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 1, 1, 0]}))
    return out


def losses(dt):
    if dt != "bf16":
        return []
    x = rand((6, 11), dt, -3, 3)
    t = ls.targets((6,), 11)
    return [Case("cross_entropy", {"X": x, "T": t},
                 lambda i, a: {"Y": ls.np_class_loss(i["X"], i["T"], None, a, True)},
                 attrs={"label_smoothing": 0.1}, scale=2)]


def data_movement(dt):
    if dt != "bf16":
        return []
    idx = RNG.integers(0, 7, (2, 3)).astype(np.int64)
    return [Case("transpose", {"X": rand((2, 3, 5, 4), dt)},
                 dm.fwd(lambda i, a: np.transpose(i["X"], a["perm"])), {"perm": [0, 2, 1, 3]}),
            Case("concat", {"X0": rand((3, 2), dt), "X1": rand((3, 5), dt)},
                 dm.fwd(lambda i, a: np.concatenate([i["X0"], i["X1"]], axis=1)), {"axis": 1}),
            Case("gather", {"X": rand((7, 4), dt), "Idx": idx},
                 lambda i, a: {"Y": np.take(i["X"], i["Idx"], axis=0)}, {"axis": 0}),
            Case("embedding", {"Idx": RNG.integers(0, 11, (2, 5)).astype(np.int64), "W": rand((11, 3), dt)},
                 lambda i, a: {"Y": i["W"][i["Idx"]]})]


def casts():
    """bf16 <-> f32 and f16 -> f32 (f32 -> f16 is in cases_data_movement)."""
    xs = RNG.uniform(-20, 20, size=(3, 5)).astype(F32)
    to32 = dm.fwd(lambda i, a: i["X"].astype(F32))
    return [Case("cast", {"X": as_dtype(xs, "bf16")}, to32, {"to": "f32"}),
            Case("cast", {"X": as_dtype(xs, "f16")}, to32, {"to": "f32"}),
            Case("cast", {"X": xs}, dm.fwd(lambda i, a: i["X"]), {"to": "bf16"}, label="-to-bf16")]


def grads():
    """The backward ops a bf16 training step runs most, against PyTorch autograd in f64 on
    the rounded inputs."""
    dt = "bf16"
    out = []
    x, dy = as_dtype(ew.sample((3, 37), F32, "wide"), dt), rand((3, 37), dt)
    out.append(Case("gelu_grad", {"X": x, "dY": dy}, ew.grad_ref_unary(ew.torch_unary()["gelu"])))
    y = as_dtype(nm.softmax_ref({"X": RNG.uniform(-4, 4, (3, 5, 7))}, {})["Y"], dt)
    out.append(Case("softmax_grad", {"Y": y, "dY": rand((3, 5, 7), dt)}, nm.softmax_grad_ref(False), scale=2))
    out.append(Case("layernorm_grad", {"X": rand((4, 9), dt, -2, 2), "Scale": rand((9,), dt),
                                       "dY": rand((4, 9), dt)}, nm.affine_norm_grad_ref("layernorm"), scale=4))
    A, B = rand((3, 24), dt), rand((24, 7), dt)
    out.append(Case("matmul_grad", {"A": A, "B": B, "dY": rand((3, 7), dt)}, mm.matmul_grad_ref, scale=2))
    return out


def cases():
    out = []
    for dt in ("bf16", "f16"):
        for family in (elementwise, reductions, normalization, matmul, attention, conv_pool, losses,
                       data_movement):
            out += family(dt)
    return out + casts() + grads()
