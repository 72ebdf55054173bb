"""The GPT-2-style model in the Unitile DSL: its configuration, its parameters (names,
shapes, seeded initial values) and its loss, traced from `tl.<op>` calls.

Token and position embeddings, `layers` pre-LayerNorm blocks (causal self-attention with
one fused q/k/v projection, then a 4x GELU MLP, each added to the residual stream), a
final LayerNorm, and an output head tied to the token embedding. Parameter names and
layouts follow PyTorch's (Linear weights are [out_features, in_features]), so the same
.npz file loads into examples/gpt/torch_gpt.py."""

import dataclasses

import numpy as np

import unitile as tl

LAYERNORM_EPS = 1e-5


@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int
    seq: int = 64
    layers: int = 4
    d_model: int = 128
    heads: int = 4

    def __post_init__(self):
        for name in ("vocab", "seq", "layers", "d_model", "heads"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.d_model % self.heads:
            raise ValueError(f"--d-model ({self.d_model}) must be a multiple of --heads ({self.heads})")


def param_shapes(cfg):
    """Every parameter's name and shape, in a fixed order."""
    d = cfg.d_model
    shapes = {"wte": (cfg.vocab, d), "wpe": (cfg.seq, d)}
    for i in range(cfg.layers):
        p = f"h.{i}."
        shapes.update({
            p + "ln_1.weight": (d,), p + "ln_1.bias": (d,),
            p + "attn.c_attn.weight": (3 * d, d), p + "attn.c_attn.bias": (3 * d,),
            p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
            p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
            p + "mlp.c_fc.weight": (4 * d, d), p + "mlp.c_fc.bias": (4 * d,),
            p + "mlp.c_proj.weight": (d, 4 * d), p + "mlp.c_proj.bias": (d,),
        })
    shapes.update({"ln_f.weight": (d,), "ln_f.bias": (d,)})
    return shapes


def one_dimensional(params):
    """The names of the biases and LayerNorm scales (the 1-D parameters), which GPT-2
    training leaves out of weight decay."""
    return [name for name, value in params.items() if np.ndim(value) < 2]


def init_params(cfg, seed):
    """GPT-2's initialisation: weights N(0, 0.02) (the residual projections scaled by
    1/sqrt(2 layers)), biases 0, LayerNorm scales 1; float32, from `seed` alone."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith("bias"):
            value = np.zeros(shape)
        elif ".ln_" in name or name.startswith("ln_"):
            value = np.ones(shape)
        else:
            std = 0.02 / np.sqrt(2 * cfg.layers) if name.endswith("c_proj.weight") else 0.02
            value = rng.normal(0.0, std, size=shape)
        params[name] = value.astype(np.float32)
    return params


def check_params(params, cfg):
    """Raise ValueError naming the first parameter missing, extra or of the wrong shape."""
    want = param_shapes(cfg)
    for name, shape in want.items():
        if name not in params:
            raise ValueError(f"parameter '{name}' is missing")
        if tuple(params[name].shape) != shape:
            raise ValueError(f"parameter '{name}' has shape {tuple(params[name].shape)}, "
                             f"the configuration needs {shape}")
    extra = sorted(set(params) - set(want))
    if extra:
        raise ValueError(f"unexpected parameter '{extra[0]}' for this configuration")


def _linear(x, w, b=None):
    """x W^T (+ b) on the last axis, W in PyTorch's [out, in] layout: tl.linear on the
    rows. (The scheduler copies W transposed inside the kernel, `pretranspose`, so this is
    a register-blocked GEMM; the bias add runs on its tile as the epilogue.)"""
    lead = x.shape[:-1]
    x2 = tl.reshape(x, (-1, x.shape[-1]))
    y = tl.linear(x2, w, b) if b is not None else tl.linear(x2, w)
    return tl.reshape(y, (*lead, w.shape[0]))


def _block(p, x, cfg, i):
    b, t, d = x.shape
    hd = d // cfg.heads
    pre = f"h.{i}."
    h = tl.layernorm(x, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], epsilon=LAYERNORM_EPS)
    qkv = _linear(h, p[pre + "attn.c_attn.weight"], p[pre + "attn.c_attn.bias"])  # [b, t, 3d]
    heads = []
    for j in range(3):  # q, k, v: [b, heads, t, hd]
        part = qkv[:, :, j * d:(j + 1) * d]
        heads.append(tl.transpose(tl.reshape(part, (b, t, cfg.heads, hd)), (0, 2, 1, 3)))
    y = tl.scaled_dot_product_attention(heads[0], heads[1], heads[2], causal=1)
    y = tl.reshape(tl.transpose(y, (0, 2, 1, 3)), (b, t, d))
    x = x + _linear(y, p[pre + "attn.c_proj.weight"], p[pre + "attn.c_proj.bias"])
    h = tl.layernorm(x, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], epsilon=LAYERNORM_EPS)
    h = tl.gelu(_linear(h, p[pre + "mlp.c_fc.weight"], p[pre + "mlp.c_fc.bias"]))
    return x + _linear(h, p[pre + "mlp.c_proj.weight"], p[pre + "mlp.c_proj.bias"])


def logits(p, idx, cfg):
    """Logits [batch, seq, vocab] for token ids `idx` [batch, seq] (traced tensors)."""
    x = tl.embedding(idx, p["wte"]) + p["wpe"]  # [b, t, d] + [t, d]
    for i in range(cfg.layers):
        x = _block(p, x, cfg, i)
    x = tl.layernorm(x, p["ln_f.weight"], p["ln_f.bias"], epsilon=LAYERNORM_EPS)
    return _linear(x, p["wte"])  # the head shares the token embedding


def loss(p, idx, targets, cfg):
    """Mean cross entropy of the next-token predictions (a rank-0 tensor)."""
    b, t = idx.shape
    out = logits(p, idx, cfg)
    return tl.cross_entropy(tl.reshape(out, (b * t, cfg.vocab)), tl.reshape(targets, (b * t,)))


def forward_loss_kernel(cfg):
    """A @tl.kernel computing the loss from (idx, targets, *params in param_shapes order):
    the forward pass alone, for checking it against PyTorch and for evaluation."""
    names = list(param_shapes(cfg))

    def gpt_forward_loss(idx, targets, *flat):
        return loss(dict(zip(names, flat)), idx, targets, cfg)

    kernel = tl.kernel(gpt_forward_loss)

    def run(params, idx, targets, device=None):
        out = kernel(idx, targets, *[params[n] for n in names], device=device)
        return float(np.asarray(out))

    return run
