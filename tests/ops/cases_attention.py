"""Cases of the attention ops: scaled dot-product attention (plain, causal, boolean and
additive masks with broadcasting, grouped-query heads, explicit scale, N != M),
multi-head attention in the [B, N, H*D] layout, rotary embeddings (half-split and
interleaved, position ids, partial rotary_dim, both layouts) against NumPy, and the
backward ops against PyTorch autograd in float64."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(2024)


def rand(shape, dt=np.float32, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dt)


def f64(x):
    return x.astype(np.float64)


def sdpa_np(q, k, v, mask, causal, scale):
    """softmax(q k^T scale + mask) v on [B, H, N, D], K/V heads repeated for GQA; a row
    with every key masked gives zeros."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("bhnd,bhmd->bhnm", q, k) * (scale or 1 / np.sqrt(q.shape[-1]))
    keep = np.ones(s.shape, bool)
    if causal:
        keep &= np.tril(np.ones(s.shape[-2:], bool))
    if mask is not None:
        if mask.dtype == np.bool_:
            keep &= mask
        else:
            s = s + f64(mask)
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.where(keep, np.exp(s - np.where(np.isinf(m), 0, m)), 0)
    p = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return np.einsum("bhnm,bhme->bhne", p, v)


def sdpa_ref(i, a):
    return {"Y": sdpa_np(f64(i["Q"]), f64(i["K"]), f64(i["V"]), i.get("Mask"), a.get("causal", 0),
                         a.get("scale", 0))}


def mha_ref(i, a):
    h = a["num_heads"]
    hk = a.get("num_kv_heads", 0) or h

    def split(x, heads):
        b, n, c = x.shape
        return f64(x).reshape(b, n, heads, c // heads).transpose(0, 2, 1, 3)
    y = sdpa_np(split(i["Q"], h), split(i["K"], hk), split(i["V"], hk), i.get("Mask"),
                a.get("causal", 0), a.get("scale", 0))
    b, _, n, dv = y.shape
    return {"Y": y.transpose(0, 2, 1, 3).reshape(b, n, h * dv)}


def rope_np(x, pos_ids, a, inverse=False):
    x = f64(x)
    if a.get("layout", "bhnd") == "bnhd":
        x = x.transpose(0, 2, 1, 3)
    b, h, n, d = x.shape
    rd = a.get("rotary_dim", 0) or d
    inv = a.get("base", 10000.0) ** (-np.arange(0, rd, 2) / rd)  # [rd/2]
    pos = np.arange(n)[None, :] if pos_ids is None else pos_ids.reshape(-1, n)
    ang = pos[:, None, :, None].astype(np.float64) * inv  # [B or 1, 1, N, rd/2]
    if inverse:
        ang = -ang
    c, s = np.cos(ang), np.sin(ang)
    y = x.copy()
    r = x[..., :rd]
    if a.get("interleaved", 0):
        x1, x2 = r[..., 0::2], r[..., 1::2]
        y[..., 0:rd:2] = x1 * c - x2 * s
        y[..., 1:rd:2] = x2 * c + x1 * s
    else:
        x1, x2 = r[..., :rd // 2], r[..., rd // 2:]
        y[..., :rd // 2] = x1 * c - x2 * s
        y[..., rd // 2:rd] = x2 * c + x1 * s
    if a.get("layout", "bhnd") == "bnhd":
        y = y.transpose(0, 2, 1, 3)
    return y


def cases():
    out = []
    sd = "scaled_dot_product_attention"
    for dt in (np.float32, np.float64):
        q, k, v = rand((2, 3, 5, 4), dt), rand((2, 3, 7, 4), dt), rand((2, 3, 7, 6), dt)
        out.append(Case(sd, {"Q": q, "K": k, "V": v}, sdpa_ref))
        out.append(Case(sd, {"Q": rand((2, 3, 6, 4), dt), "K": rand((2, 3, 6, 4), dt),
                             "V": rand((2, 3, 6, 4), dt)}, sdpa_ref, attrs={"causal": 1},
                        cross=dt == np.float32))
    # grouped-query, causal with N < M, boolean mask broadcast over heads, additive mask
    out.append(Case(sd, {"Q": rand((1, 4, 5, 3)), "K": rand((1, 2, 9, 3)), "V": rand((1, 2, 9, 5))},
                    sdpa_ref, attrs={"causal": 1, "scale": 0.7}))
    bmask = RNG.uniform(size=(2, 1, 5, 7)) < 0.7
    bmask[..., 0] = True  # no row fully masked
    out.append(Case(sd, {"Q": rand((2, 4, 5, 3)), "K": rand((2, 1, 7, 3)), "V": rand((2, 1, 7, 3)),
                         "Mask": bmask}, sdpa_ref))
    out.append(Case(sd, {"Q": rand((2, 2, 5, 3), np.float64), "K": rand((2, 2, 7, 3), np.float64),
                         "V": rand((2, 2, 7, 3), np.float64), "Mask": rand((5, 7), np.float64, -3, 0)},
                    sdpa_ref, attrs={"causal": 1}))
    full = np.ones((1, 1, 3, 4), bool)
    full[0, 0, 1, :] = False  # a fully masked row: zero output
    out.append(Case(sd, {"Q": rand((1, 1, 3, 2)), "K": rand((1, 1, 4, 2)), "V": rand((1, 1, 4, 2)),
                         "Mask": full}, sdpa_ref, label="-masked-row"))
    out.append(Case(sd, {"Q": rand((1, 2, 9, 8), np.float16), "K": rand((1, 2, 9, 8), np.float16),
                         "V": rand((1, 2, 9, 8), np.float16)}, sdpa_ref, attrs={"causal": 1}, scale=2))
    # multi-head attention layout
    for dt in (np.float32, np.float64):
        out.append(Case("multi_head_attention", {"Q": rand((2, 5, 12), dt), "K": rand((2, 7, 12), dt),
                                                 "V": rand((2, 7, 8), dt)}, mha_ref,
                        attrs={"num_heads": 4}))
    out.append(Case("multi_head_attention", {"Q": rand((2, 5, 12)), "K": rand((2, 5, 6)),
                                             "V": rand((2, 5, 4))}, mha_ref,
                    attrs={"num_heads": 4, "num_kv_heads": 2, "causal": 1}))
    # rotary embedding
    rope = "rotary_embedding"
    for dt in (np.float32, np.float64):
        out.append(Case(rope, {"X": rand((2, 3, 5, 8), dt)},
                        lambda i, a: {"Y": rope_np(i["X"], None, a)}, cross=dt == np.float32))
    ids = RNG.integers(0, 50, size=(2, 5)).astype(np.int64)
    for attrs in ({"interleaved": 1}, {"layout": "bnhd", "rotary_dim": 4},
                  {"interleaved": 1, "layout": "bnhd", "base": 500.0, "rotary_dim": 6}):
        x = rand((2, 5, 3, 10) if attrs.get("layout") == "bnhd" else (2, 3, 5, 10))
        out.append(Case(rope, {"X": x, "PositionIds": ids},
                        lambda i, a: {"Y": rope_np(i["X"], i["PositionIds"], a)}, attrs=attrs))
    out.append(Case(rope, {"X": rand((1, 2, 7, 6), np.float64), "PositionIds": np.arange(3, 10)},
                    lambda i, a: {"Y": rope_np(i["X"], i["PositionIds"], a)}))
    return out + grad_cases()


# --- backward ops against PyTorch autograd ----------------------------------------------

def sdpa_torch(q, k, v, mask, a):
    import torch
    group = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = q @ kk.transpose(-1, -2) * (a.get("scale", 0) or 1 / np.sqrt(q.shape[-1]))
    keep = torch.ones(s.shape, dtype=torch.bool)
    if a.get("causal", 0):
        keep = keep & torch.ones(s.shape[-2:], dtype=torch.bool).tril()
    if mask is not None:
        if mask.dtype == np.bool_:
            keep = keep & torch.tensor(mask)
        else:
            s = s + torch.tensor(f64(mask))
    s = s.masked_fill(~keep, -float("inf"))
    return torch.softmax(s, -1) @ vv


def sdpa_grad_ref(i, a):
    import torch
    ts = {k: torch.tensor(f64(i[k]), requires_grad=True) for k in ("Q", "K", "V")}
    y = sdpa_torch(ts["Q"], ts["K"], ts["V"], i.get("Mask"), a)
    y.backward(torch.tensor(f64(i["dY"])))
    return {"d" + n: t.grad.numpy() for n, t in ts.items()}


def mha_grad_ref(i, a):
    import torch
    h = a["num_heads"]
    hk = a.get("num_kv_heads", 0) or h
    ts = {k: torch.tensor(f64(i[k]), requires_grad=True) for k in ("Q", "K", "V")}

    def split(x, heads):
        b, n, c = x.shape
        return x.reshape(b, n, heads, c // heads).transpose(1, 2)
    y = sdpa_torch(split(ts["Q"], h), split(ts["K"], hk), split(ts["V"], hk), i.get("Mask"), a)
    b, _, n, dv = y.shape
    y.transpose(1, 2).reshape(b, n, h * dv).backward(torch.tensor(f64(i["dY"])))
    return {"d" + n: t.grad.numpy() for n, t in ts.items()}


def rope_grad_ref(i, a):
    # The rotation is linear and orthogonal: its gradient is the rotation by -angle, checked
    # through autograd of the forward as a matrix product.
    import torch
    x = torch.zeros(i["dY"].shape, dtype=torch.float64, requires_grad=True)
    basis = np.eye(i["dY"].size).reshape((-1,) + i["dY"].shape)
    cols = np.stack([rope_np(e, i.get("PositionIds"), a).reshape(-1) for e in basis], axis=1)
    y = torch.tensor(cols) @ x.reshape(-1)
    y.backward(torch.tensor(f64(i["dY"]).reshape(-1)))
    return {"dX": x.grad.numpy()}


def grad_cases():
    out = []
    g = "scaled_dot_product_attention_grad"
    out.append(Case(g, {"Q": rand((2, 3, 5, 4), np.float64), "K": rand((2, 3, 7, 4), np.float64),
                        "V": rand((2, 3, 7, 6), np.float64), "dY": rand((2, 3, 5, 6), np.float64)},
                    sdpa_grad_ref))
    out.append(Case(g, {"Q": rand((1, 4, 6, 3)), "K": rand((1, 2, 6, 3)), "V": rand((1, 2, 6, 5)),
                        "dY": rand((1, 4, 6, 5))}, sdpa_grad_ref, attrs={"causal": 1}, scale=4))
    bmask = RNG.uniform(size=(5, 7)) < 0.7
    bmask[:, 0] = True
    out.append(Case(g, {"Q": rand((2, 2, 5, 3), np.float64), "K": rand((2, 1, 7, 3), np.float64),
                        "V": rand((2, 1, 7, 3), np.float64), "Mask": bmask,
                        "dY": rand((2, 2, 5, 3), np.float64)}, sdpa_grad_ref, attrs={"scale": 0.4}))
    out.append(Case(g, {"Q": rand((1, 2, 4, 3), np.float64), "K": rand((1, 2, 5, 3), np.float64),
                        "V": rand((1, 2, 5, 2), np.float64), "Mask": rand((1, 2, 4, 5), np.float64, -2, 0),
                        "dY": rand((1, 2, 4, 2), np.float64)}, sdpa_grad_ref))
    out.append(Case("multi_head_attention_grad", {"Q": rand((2, 5, 12), np.float64), "K": rand((2, 6, 6), np.float64),
                                                  "V": rand((2, 6, 4), np.float64),
                                                  "dY": rand((2, 5, 8), np.float64)},
                    mha_grad_ref, attrs={"num_heads": 4, "num_kv_heads": 2, "causal": 1}))
    out.append(Case("multi_head_attention_grad", {"Q": rand((1, 4, 6)), "K": rand((1, 4, 6)), "V": rand((1, 4, 6)),
                                                  "dY": rand((1, 4, 6))},
                    mha_grad_ref, attrs={"num_heads": 3}, scale=4))
    ids = RNG.integers(0, 30, size=(4,)).astype(np.int64)
    out.append(Case("rotary_embedding_grad", {"dY": rand((1, 2, 4, 6), np.float64)}, rope_grad_ref))
    out.append(Case("rotary_embedding_grad", {"dY": rand((1, 4, 2, 6)), "PositionIds": ids}, rope_grad_ref,
                    attrs={"interleaved": 1, "layout": "bnhd", "rotary_dim": 4}))
    return out
