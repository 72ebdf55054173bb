"""The graph executor from Python (_core.GraphExecutor): a small MLP and a softmax /
layernorm chain on every device here against NumPy, fused against unfused, and the
memory plan's peak below the no-reuse total."""

import numpy as np
import pytest

import unitile as tl
from unitile import _core

MLP = """graph mlp(x: f32[8, 12], w1: f32[12, 32], b1: f32[32], w2: f32[32, 10]) {
  %0 = matmul(x, w1)
  %1 = add(%0, b1)
  %2 = relu(%1)
  %3 = matmul(%2, w2)
  %4 = softmax(%3) {axis = 1}
  return %4, %2
}
"""

NORMS = """graph norms(x: f32[5, 48], s: f32[48], b: f32[48]) {
  %m = reduce_max(x) {axes = [1], keepdims = true}
  %d = sub(x, %m)
  %e = exp(%d)
  %z = reduce_sum(%e) {axes = [1], keepdims = true}
  %p = div(%e, %z)
  %y = layernorm(%p, s, b) {axis = -1, epsilon = 1e-05}
  %t = tanh(%y)
  return %t
}
"""


def run(device, text, arrays, fuse):
    dev = _core.device(device)
    name, graph = _core.parse_graph(text)
    ex = _core.GraphExecutor(dev, graph, fuse=fuse, name=name)
    ins = [_core.DeviceTensor.from_array(dev, np.ascontiguousarray(a), False) for a in arrays]
    return ex, [t.numpy() for t in ex.run(ins)]


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_mlp_matches_numpy_fused_and_unfused(device, rng):
    x, w1, b1, w2 = (rng.standard_normal(s).astype(np.float32) for s in [(8, 12), (12, 32), (32,), (32, 10)])
    h = np.maximum(x @ w1 + b1, 0)
    want = softmax(h @ w2)
    fused_ex, fused = run(device, MLP, [x, w1, b1, w2], True)
    unfused_ex, unfused = run(device, MLP, [x, w1, b1, w2], False)
    assert fused_ex.kernel_count == 3, fused_ex.describe()
    assert unfused_ex.kernel_count == 5
    assert unfused_ex.peak_bytes < unfused_ex.no_reuse_bytes, unfused_ex.describe()
    for got in (fused, unfused):
        np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fused[0], unfused[0], rtol=1e-5, atol=1e-6)


def test_softmax_layernorm_chain_matches_numpy(device, rng):
    x = rng.standard_normal((5, 48)).astype(np.float32)
    s = rng.standard_normal(48).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    p = softmax(x)
    mu = p.mean(axis=1, keepdims=True)
    var = ((p - mu) ** 2).mean(axis=1, keepdims=True)
    want = np.tanh((p - mu) / np.sqrt(var + 1e-5) * s + b)
    fused_ex, fused = run(device, NORMS, [x, s, b], True)
    unfused_ex, unfused = run(device, NORMS, [x, s, b], False)
    assert fused_ex.kernel_count == 1, fused_ex.describe()
    assert fused_ex.peak_bytes == 0  # nothing crosses a kernel boundary
    assert unfused_ex.peak_bytes < unfused_ex.no_reuse_bytes, unfused_ex.describe()
    # The layernorm of a softmax row amplifies rounding: compare with a looser atol.
    np.testing.assert_allclose(fused[0], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(unfused[0], want, rtol=1e-4, atol=1e-4)


def test_graph_text_round_trip_and_errors():
    name, graph = _core.parse_graph(MLP)
    text = _core.graph_text(graph, name)
    assert "%2 = relu(%1) : f32[8, 32]" in text
    assert _core.graph_text(_core.parse_graph(text)[1], name) == text
    with pytest.raises(tl.Error, match=r"<graph>:2:12: error: unknown value '%9'"):
        _core.parse_graph("graph g(x: f32[2]) {\n  %0 = exp(%9)\n  return %0\n}\n")
