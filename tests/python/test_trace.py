"""@tl.kernel: NumPy-like functions traced into one kernel, on every device, against NumPy."""

import numpy as np
import pytest

import unitile as tl

import founding_example
from conftest import RUN_DEVICES


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention_reference(q, k, v):
    return softmax(q @ k.T / np.sqrt(q.shape[-1])) @ v


def test_founding_example_runs_as_written(device, rng):
    q, k, v = (rng.standard_normal((16, 8)).astype(np.float32) for _ in range(3))
    out = founding_example.attention(q, k, v, device=device)
    assert isinstance(out, np.ndarray) and out.shape == (16, 8) and out.dtype == np.float32
    np.testing.assert_allclose(out, attention_reference(q, k, v), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", [d for d in tl.devices() if d not in RUN_DEVICES])
def test_founding_example_runs_on_the_other_devices(device, rng):
    # The devices the rest of the suite skips for time (the qemu-run cross CPUs, a GPU
    # where there is one): the founding example alone, so it runs on every device listed.
    test_founding_example_runs_as_written(device, rng)


def test_founding_example_is_one_kernel_with_source_and_schedule(rng):
    q, k, v = (rng.standard_normal((16, 8)).astype(np.float32) for _ in range(3))
    compiled = founding_example.attention.compile(q, k, v)
    assert "out0" in compiled.source()
    assert "schedule {" in compiled.explain()
    text = founding_example.attention.trace(q, k, v).text
    assert text.count("kernel ") == 1 and "out0" in text


def test_traced_kernels_are_kept_per_dtype_and_shape(rng):
    @tl.kernel
    def double(x):
        return x * 2

    a = rng.standard_normal((3, 4)).astype(np.float32)
    assert double.trace(a) is double.trace(a + 1)
    assert double.trace(a) is not double.trace(a.astype(np.float64))
    assert double.trace(a) is not double.trace(a[:2])


@tl.kernel
def _mlp_layer(x, w, b):
    return tl.relu(x @ w + b)


@tl.kernel
def _two_layers(x, w1, b1, w2, b2):
    return _mlp_layer(_mlp_layer(x, w1, b1), w2, b2)  # kernels calling kernels: inlined


def test_kernels_call_kernels(device, rng):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    w1, b1 = rng.standard_normal((6, 7)).astype(np.float32), rng.standard_normal(7).astype(np.float32)
    w2, b2 = rng.standard_normal((7, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    relu = lambda z: np.maximum(z, 0)  # noqa: E731
    want = relu(relu(x @ w1 + b1) @ w2 + b2)
    np.testing.assert_allclose(_two_layers(x, w1, b1, w2, b2, device=device), want, rtol=1e-4, atol=1e-5)
    assert _two_layers.trace(x, w1, b1, w2, b2).text.count("kernel ") == 1


def test_numpy_style_arithmetic_and_broadcasting(device, rng):
    @tl.kernel
    def f(a, b, c):
        return (a + b) * 2 - c / 4 + 1, -a, abs(b - 0.5), a ** 2, 1 / (1 + tl.exp(-c))

    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    c = rng.standard_normal((4, 1)).astype(np.float32)
    got = f(a, b, c, device=device)
    want = ((a + b) * 2 - c / 4 + 1, -a, abs(b - 0.5), a ** 2, 1 / (1 + np.exp(-c)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_dtype_promotion_like_numpy(rng):
    @tl.kernel
    def f(a, b):
        return a + b, a / b

    a = rng.integers(1, 5, (3,)).astype(np.int32)
    b = rng.standard_normal(3).astype(np.float64)
    s, q = f(a, b)
    assert s.dtype == np.float64 and q.dtype == np.float64
    np.testing.assert_allclose(s, a + b)
    i, j = f(a, a)
    assert i.dtype == np.int32 and j.dtype == np.float64  # integers divide into float64
    np.testing.assert_allclose(j, a / a)


def test_integer_floor_division_and_modulo_like_python(device):
    @tl.kernel
    def f(a, b):
        return a // b, a % b, a // 3, 7 // b

    a = np.array([7, -7, 7, -7, 6, -6, 0, 1], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 5, -4], np.int32)
    q, r, q3, r7 = f(a, b, device=device)
    assert q.dtype == np.int32
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)
    np.testing.assert_array_equal(q3, a // 3)
    np.testing.assert_array_equal(r7, 7 // b)


def test_indexing_slicing_transpose_reshape(device, rng):
    @tl.kernel
    def f(x):
        return x[1], x[:, ::2], x[..., -1], x[None, 1:3, 2], x.T, x.reshape(2, -1), x.transpose(1, 0)[0]

    x = rng.standard_normal((4, 6)).astype(np.float32)
    got = f(x, device=device)
    want = (x[1], x[:, ::2], x[..., -1], x[None, 1:3, 2], x.T, x.reshape(2, -1), x.transpose(1, 0)[0])
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_eager_op_with_and_without_an_optional_input(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    np.testing.assert_allclose(tl.linear(x, w, b), x @ w.T + b, rtol=1e-5)
    np.testing.assert_allclose(tl.linear(x, w), x @ w.T, rtol=1e-5)  # not the 3-input kernel again


def test_slicing_a_prefix_of_an_axis(device, rng):
    # A slice starting at 0 that is shorter than the axis (q of a fused q/k/v projection).
    @tl.kernel
    def f(x):
        return x[:, 0:2], x[:, :, :3], x[:3]

    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    for g, w in zip(f(x, device=device), (x[:, 0:2], x[:, :, :3], x[:3])):
        np.testing.assert_array_equal(g, w)


def test_shape_and_dtype_are_visible_while_tracing(rng):
    seen = {}

    @tl.kernel
    def f(x):
        seen["shape"], seen["dtype"], seen["ndim"] = x.shape, x.dtype, x.ndim
        return x.astype(np.float64) * x.shape[0]

    x = rng.standard_normal((3, 2)).astype(np.float32)
    out = f(x)
    assert seen == {"shape": (3, 2), "dtype": np.float32, "ndim": 2}
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, x.astype(np.float64) * 3)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), True), (-1, False)])
def test_reductions_with_axis_and_keepdims(device, rng, axis, keepdims):
    @tl.kernel
    def f(x):
        return (x.sum(axis=axis, keepdims=keepdims), tl.mean(x, axis=axis, keepdims=keepdims),
                x.max(axis=axis, keepdims=keepdims), tl.min(x, axis=axis, keepdims=keepdims))

    x = rng.standard_normal((3, 5)).astype(np.float32)
    got = f(x, device=device)
    want = (x.sum(axis=axis, keepdims=keepdims), x.mean(axis=axis, keepdims=keepdims),
            x.max(axis=axis, keepdims=keepdims), x.min(axis=axis, keepdims=keepdims))
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_matmul_forms_like_numpy(device, rng):
    @tl.kernel
    def f(a, b, v, batch):
        return a @ b, a @ v, v @ b, batch @ b, tl.matmul(batch, batch.transpose(0, 2, 1))

    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    v = rng.standard_normal(4).astype(np.float32)
    batch = rng.standard_normal((2, 3, 4)).astype(np.float32)
    got = f(a, b, v, batch, device=device)
    want = (a @ b, a @ v, v @ b, batch @ b, batch @ batch.transpose(0, 2, 1))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_where_and_comparisons(device, rng):
    @tl.kernel
    def f(x):
        return tl.where(x > 0, x, x * 0.1), (x < 0) | (x > 0.5)

    x = rng.standard_normal((4, 4)).astype(np.float32)
    y, m = f(x, device=device)
    np.testing.assert_allclose(y, np.where(x > 0, x, x * 0.1), rtol=1e-6)
    np.testing.assert_array_equal(m, (x < 0) | (x > 0.5))


def test_library_ops_are_functions_and_run_eagerly(device, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(tl.relu(x, device=device), np.maximum(x, 0))
    np.testing.assert_allclose(tl.softmax(x, axis=0, device=device), softmax(x, axis=0), rtol=1e-5, atol=1e-6)
    # library ops keep their own (ONNX) defaults: reduce_sum keeps dims
    np.testing.assert_allclose(tl.reduce_sum(x, axes=[1], device=device), x.sum(axis=1, keepdims=True), rtol=1e-5,
                               atol=1e-6)
    assert "relu" in tl.ops() and "matmul" in tl.ops()


def test_chained_traced_calls_stay_on_the_device(device, rng):
    @tl.kernel
    def scale(x):
        return x * 3

    x = tl.tensor(rng.standard_normal((2, 3)).astype(np.float32), device=device)
    y = scale(scale(x))
    assert isinstance(y, tl.Tensor) and y.device == device
    np.testing.assert_allclose(y.numpy(), x.numpy() * 9, rtol=1e-6)
