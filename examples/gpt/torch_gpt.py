"""The PyTorch reference of examples/gpt/model.py: the same GPT-2-style model with the
same parameter names and layouts (so the same .npz loads into both), exact (erf) GELU,
LayerNorm eps 1e-5, and torch.optim.AdamW (decoupled weight decay) to train it."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from model import LAYERNORM_EPS, param_shapes


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        # softmax(q k^T / sqrt(hd) with the future masked out) v (Debian's torch 1.13
        # has no F.scaled_dot_product_attention)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        y = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))  # approximate='none': the erf form


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=LAYERNORM_EPS)
        self.attn = Attention(d, heads)
        self.ln_2 = nn.LayerNorm(d, eps=LAYERNORM_EPS)
        self.mlp = MLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Parameter(torch.zeros(cfg.vocab, cfg.d_model))
        self.wpe = nn.Parameter(torch.zeros(cfg.seq, cfg.d_model))
        self.h = nn.ModuleList(Block(cfg.d_model, cfg.heads) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=LAYERNORM_EPS)

    def forward(self, idx, targets):
        x = F.embedding(idx, self.wte) + self.wpe
        for block in self.h:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte)  # tied head
        return F.cross_entropy(logits.reshape(-1, self.cfg.vocab), targets.reshape(-1))

    def load_numpy(self, params):
        """Copy a dict of NumPy arrays (names as model.param_shapes) into the parameters."""
        own = dict(self.named_parameters())
        if set(own) != set(param_shapes(self.cfg)):
            raise AssertionError("torch_gpt's parameter names drifted from model.param_shapes")
        with torch.no_grad():
            for name, p in own.items():
                p.copy_(torch.from_numpy(np.asarray(params[name])))
        return self

    def numpy_params(self):
        return {n: p.detach().cpu().numpy().copy() for n, p in self.named_parameters()}

    def numpy_grads(self):
        return {n: p.grad.detach().cpu().numpy().copy() for n, p in self.named_parameters()}


def make(cfg, params, dtype=torch.float32):
    return GPT(cfg).to(dtype).load_numpy(params)


class Trainer:
    """The PyTorch side of a training run: the model on `params` and torch.optim.AdamW
    (decoupled weight decay, on every parameter like tl.optim.AdamW's, except those named
    in `no_decay`: a param group of their own with weight_decay 0), with optional
    clipping by global norm. `step(x, y)` returns the loss before the update."""

    def __init__(self, cfg, params, lr, weight_decay, betas=(0.9, 0.999), eps=1e-8, clip_norm=None,
                 dtype=torch.float32, no_decay=()):
        self.model = make(cfg, params, dtype)
        named = dict(self.model.named_parameters())
        unknown = set(no_decay) - set(named)
        if unknown:
            raise ValueError(f"no_decay names unknown parameters: {sorted(unknown)}")
        groups = [{"params": [p for n, p in named.items() if n not in no_decay]}]
        if no_decay:
            groups.append({"params": [named[n] for n in no_decay], "weight_decay": 0.0})
        self.optimizer = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self.clip_norm = clip_norm

    def step(self, x, y, lr=None):
        if lr is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.model(torch.from_numpy(x), torch.from_numpy(y))
        loss.backward()
        if self.clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        self.optimizer.step()
        return loss.item()
