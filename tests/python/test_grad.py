"""tl.grad and tl.value_and_grad: the API (argnums, has_aux, nesting inside a trace),
errors, and a GPT-style block's gradients against PyTorch autograd in f64. The gradients
of every op one by one are checked against finite differences in test_grad_ops.py."""

import numpy as np
import pytest

import unitile as tl

torch = pytest.importorskip("torch")


def test_value_and_grad_matmul_tanh(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))

    def f(a, b):
        return tl.sum(tl.tanh(a @ b))

    value, (ga, gb) = tl.value_and_grad(f, argnums=(0, 1))(a, b)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    loss = torch.tanh(ta @ tb).sum()
    loss.backward()
    assert value.shape == () and abs(float(value) - loss.item()) < 1e-12
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-12, atol=1e-12)
    # A single argnum gives the gradient itself, not a tuple.
    np.testing.assert_allclose(tl.grad(f, argnums=1)(a, b), tb.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_derived_matmul_gradient_equals_registered(rng):
    """The differentiator's gradient of C[i,j] += A[i,k] * B[k,j] is matmul_grad's."""
    a, b, dy = rng.standard_normal((3, 5)), rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    ga, gb = tl.grad(lambda a, b, dy: tl.sum(tl.matmul(a, b) * dy), argnums=(0, 1))(a, b, dy)
    ra, rb = tl.matmul_grad(a, b, dy)
    np.testing.assert_allclose(ga, ra, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, rb, rtol=1e-12, atol=1e-12)
    assert "vjp" not in tl.kernel(lambda a, b: a @ b).trace(a, b).text
    text = tl.grad(lambda a, b, dy: tl.sum(tl.matmul(a, b) * dy)).trace(a, b, dy).text
    assert "matmul_grad" not in text and "+= " in text


def test_has_aux_and_value(rng):
    x = rng.standard_normal((4,))

    def f(x):
        y = x * x
        return tl.sum(y), (y, tl.max(y))

    (value, (y, m)), g = tl.value_and_grad(f, has_aux=True)(x)
    np.testing.assert_allclose(value, np.sum(x * x), rtol=1e-12)
    np.testing.assert_allclose(y, x * x, rtol=1e-12)
    np.testing.assert_allclose(m, np.max(x * x), rtol=1e-12)
    np.testing.assert_allclose(g, 2 * x, rtol=1e-12)
    g2, aux = tl.grad(lambda x: (tl.sum(x * 3.0), x + 1.0), has_aux=True)(x)
    np.testing.assert_allclose(g2, np.full(4, 3.0))
    np.testing.assert_allclose(aux, x + 1)


def test_single_element_losses_of_any_rank(rng):
    x = rng.standard_normal((3,))
    value, g = tl.value_and_grad(lambda x: tl.sum(x * x, keepdims=True))(x)
    assert value.shape == (1,)
    np.testing.assert_allclose(g, 2 * x, rtol=1e-12)
    np.testing.assert_allclose(tl.grad(lambda x: tl.sum(x * x).reshape(1, 1))(x), 2 * x, rtol=1e-12)
    np.testing.assert_allclose(tl.grad(lambda x: tl.sum(x * x)[None, None, None])(x), 2 * x, rtol=1e-12)


def test_value_used_twice_and_unused_argument(rng):
    x, w = rng.standard_normal((3,)), rng.standard_normal((3,))
    gx, gw = tl.grad(lambda x, w: tl.sum(x * x * x + tl.exp(x)), argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, 3 * x * x + np.exp(x), rtol=1e-12)
    np.testing.assert_array_equal(gw, np.zeros(3))


def test_grad_inside_a_kernel(rng):
    """tl.grad on traced tensors adds the gradient nodes to the enclosing trace."""
    x = rng.standard_normal((5,))

    @tl.kernel
    def sgd_step(x):
        g = tl.grad(lambda x: tl.sum(tl.sin(x)))(x)
        return x - 0.1 * g

    np.testing.assert_allclose(sgd_step(x), x - 0.1 * np.cos(x), rtol=1e-12)


def test_gradient_on_sim_and_f32(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    g = tl.grad(lambda x: tl.mean(tl.softmax(x, axis=1) * x))(x, device="sim")
    tx = torch.tensor(x, requires_grad=True)
    (torch.softmax(tx, 1) * tx).mean().backward()
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_gpt_block_against_torch(rng):
    """Embedding, layernorm, causal attention over heads (slices, reshapes, transposes),
    gelu, a tied head and cross-entropy: every parameter's gradient as PyTorch's."""
    B, T, C, V, H = 2, 4, 8, 11, 2
    idx, tgt = rng.integers(0, V, (B, T)), rng.integers(0, V, (B * T,))
    params = [rng.standard_normal((V, C)) * 0.5, rng.standard_normal((T, C)) * 0.5,
              1 + 0.1 * rng.standard_normal(C), 0.1 * rng.standard_normal(C),
              rng.standard_normal((C, 3 * C)) * 0.3, rng.standard_normal((C, C)) * 0.3]

    def f(wte, wpe, ln_w, ln_b, wqkv, wo, idx, tgt):
        x = tl.embedding(idx, wte) + wpe
        qkv = tl.layernorm(x, ln_w, ln_b) @ wqkv
        q, k, v = [qkv[:, :, i * C:(i + 1) * C].reshape(B, T, H, C // H).transpose(0, 2, 1, 3) for i in range(3)]
        a = tl.scaled_dot_product_attention(q, k, v, causal=True).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + tl.gelu(a @ wo)
        return tl.cross_entropy((x @ wte.T).reshape(B * T, V), tgt)

    loss, grads = tl.value_and_grad(f, argnums=tuple(range(6)))(*params, idx, tgt)

    ts = [torch.tensor(p, requires_grad=True) for p in params]
    wte, wpe, ln_w, ln_b, wqkv, wo = ts
    x = wte[torch.tensor(idx)] + wpe
    qkv = torch.nn.functional.layer_norm(x, (C,), ln_w, ln_b) @ wqkv
    q, k, v = [qkv[:, :, i * C:(i + 1) * C].reshape(B, T, H, C // H).transpose(1, 2) for i in range(3)]
    s = (q @ k.transpose(-1, -2)) / np.sqrt(C // H)
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    a = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)
    x = x + torch.nn.functional.gelu(a @ wo)
    ref = torch.nn.functional.cross_entropy((x @ wte.T).reshape(B * T, V), torch.tensor(tgt))
    ref.backward()
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-12)
    for g, t in zip(grads, ts):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_errors(rng):
    x = rng.standard_normal((3,))
    # scatter_elements with reduction max: underivable ('max=' through an index), and its
    # registered gradient op refuses 'max'.
    with pytest.raises(tl.Error, match=r"test_grad.py:\d+: error: op:scatter_elements_grad: reduction 'max'"):
        tl.grad(lambda x, i, u: tl.reduce_sum(tl.scatter_elements(x, i, u, axis=0, reduction="max"),
                                              keepdims=False), argnums=2)(x, np.array([0, 2]), x[:2])
    with pytest.raises(tl.Error, match="the loss must be a single float value, got f64\\[3\\]"):
        tl.grad(lambda x: x * 2.0)(x)
    with pytest.raises(tl.Error, match="argument 1 is not an array"):
        tl.grad(lambda x, s: tl.sum(x) * s, argnums=1)(x, 2.0)
    with pytest.raises(tl.Error, match="has_aux=True the function must return a pair"):
        tl.grad(lambda x: tl.sum(x), has_aux=True)(x)
    with pytest.raises(TypeError, match="argnums"):
        tl.grad(lambda x: tl.sum(x), argnums=())
    with pytest.raises(tl.Error, match="cannot differentiate with respect to a i64 value"):
        tl.grad(lambda x, i: tl.sum(x) + tl.sum(i.astype(np.float64)), argnums=1)(x, np.arange(3))
