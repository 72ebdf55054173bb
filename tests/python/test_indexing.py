"""NumPy's indexing inside @tl.kernel against NumPy running the same Python: advanced
(integer array and tensor) indexing, writes (x[key] = v), augmented assignment and views,
the bitwise operators, and the errors for what cannot be traced (boolean masks)."""

import re

import numpy as np
import pytest

import unitile as tl

from conftest import RUN_DEVICES

HERE = __file__


def located(marker):
    with open(HERE, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return re.escape(f"{HERE}:{n}: error:")
    raise AssertionError(marker)


def same_as_numpy(function, *args, device="cpu"):
    """Run `function` traced on `device` and as plain NumPy on copies; compare exactly."""
    got = tl.kernel(function)(*[a.copy() for a in args], device=device)
    want = function(*[a.copy() for a in args])
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    assert len(got) == len(want)
    for n, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (n, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w, err_msg=f"result {n}")


def reads(x, i, j):
    # One array at the front, in the middle, at the end; two arrays broadcast together,
    # adjacent (their shape stays in place) and apart (it goes first); integers next to
    # arrays count as advanced; lists; None and slices mixed in; a 0-d tensor index.
    return (x[i], x[:, j], x[..., j], x[i, j], x[:, i, j], x[i, :, j], x[0, :, j], x[1:3, j, ::2],
            x[None, 1:3, j], x[i, None, j], x[[0, 2, 2]], x[[-1, 0], 2], x[1, 2, j], x[j[0]],
            x[[[0], [3]], [1, 4]], x[-2:, [[1, 0]], :2])


def test_advanced_reads_match_numpy(rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    i = np.array([[0, 3], [-1, 2]], np.int64)  # negative indices count from the end
    j = np.array([1, -2], np.int32)
    same_as_numpy(reads, x, i, j)


def test_advanced_reads_other_shapes_and_index_dtypes(rng):
    def f(x, i):
        return x[i], x[i, i], x[:, i], x[i][:, ::-1]

    for shape, idx_dtype in (((7, 7), np.int16), ((3, 3, 2), np.uint8), ((5, 5), np.int64)):
        x = rng.integers(-50, 50, shape).astype(np.int32)
        i = rng.integers(0, shape[0], (4,)).astype(idx_dtype)
        same_as_numpy(f, x, i)


def writes(x, v, rows, i, j):
    a = x.copy()
    a[1] = 2.0  # a number, broadcast
    b = x.copy()
    b[:, 1:3, ::2] = v[::2]  # a slice with a step, a broadcast value
    c = x.copy()
    c[-1, -2, -3] = 7  # one element, negative positions
    d = x.copy()
    d[i] = v  # integer arrays (2-D, negative entries)
    e = x.copy()
    e[:, j] = 0
    f = x.copy()
    f[i, :, j] = v[0]  # arrays apart: their broadcast shape goes first
    g = x.copy()
    g[[1, 1, 2]] = rows  # a repeated position gets the last value written
    h = x.copy()
    h[[0, 0, 3], 1] += v  # x[idx] += v reads once and writes: a repeat does NOT add twice
    k = x.copy()
    k[...] = v
    m = x.copy()
    m[None, 1, j[1]] = v[:1]  # None in the key, a 0-d tensor index
    return a, b, c, d, e, f, g, h, k, m


def write_args(rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    v = rng.standard_normal(6).astype(np.float32)
    rows = rng.standard_normal((3, 5, 6)).astype(np.float32)
    i = np.array([[0, 3], [-1, 2]], np.int64)
    j = np.array([1, -2], np.int32)
    return x, v, rows, i, j


def test_writes_match_numpy(rng):
    same_as_numpy(writes, *write_args(rng))


def test_augmented_assignment_writes_in_place_like_numpy(rng):
    def f(x, y, n):
        alias = x  # another name for the same tensor sees the writes, as in NumPy
        x += y  # broadcast
        x[0] *= 2
        x[1, 1:] -= x[2, :-1]
        n //= 2
        n <<= 1
        n[0] |= 1
        n ^= n[1]
        return alias, n

    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    n = rng.integers(-100, 100, (3, 4)).astype(np.int32)
    same_as_numpy(f, x, y, n)


def test_views_see_writes_both_ways(rng):
    def f(x):
        row = x[1]  # basic indexing is a view
        row[2:4] = 3.0  # writes into x
        col = x[:, 0]
        x[2, 0] = -1.0  # col, read after, sees it
        x[0] += 1
        t = x.T  # .T, .transpose and .reshape are views too
        t[1, 1:3] = 8.0
        flat = x.reshape(-1)
        flat[::7] -= 1
        x.transpose(1, 0)[0] *= 3
        return x, row, col, row[::2] * 2, x[1].copy(), t, flat

    same_as_numpy(f, rng.standard_normal((4, 5)).astype(np.float32))


def bits(a, b, s, m):
    return (a & b, a | b, a ^ b, ~a, a << s, a >> s, 3 << s, a & 0xF, 0xF0 | a, 1 ^ a, a >> 2,
            m & (b < 10), m | True, m ^ (a > 0), ~m, (a > 0) & (b < 5))


def bit_args(rng):
    a = rng.integers(-1000, 1000, (3, 4)).astype(np.int32)
    b = rng.integers(-1000, 1000, (4,)).astype(np.int64)
    s = rng.integers(0, 31, (3, 4)).astype(np.int32)
    return a, b, s, a > 0


def test_bitwise_operators_match_numpy(rng):
    same_as_numpy(bits, *bit_args(rng))

    def small(x, y):
        return x & y, x | 0x0F, ~x, x << 3, x >> y

    x = rng.integers(0, 255, (5,)).astype(np.uint8)
    same_as_numpy(small, x, np.array([1, 2, 3, 4, 7], np.uint8))


def program_on_device(x, v, rows, i, j, a, b, s, m):
    return (*reads(x, i, j)[:6], *writes(x, v, rows, i, j)[5:8], *bits(a, b, s, m)[:6])


@pytest.mark.parametrize("device", [d for d in ("opencl", "sim") if d in RUN_DEVICES])
def test_indexing_writes_and_bitwise_on_device(device, rng):
    # One kernel per device: reads, writes (repeated positions included) and bit operators.
    same_as_numpy(program_on_device, *write_args(rng), *bit_args(rng), device=device)


def test_boolean_mask_read_is_refused_with_the_alternative():
    @tl.kernel
    def f(x):
        return x[x > 0]  # MASK_READ

    with pytest.raises(tl.Error, match=located("MASK_READ") + r".*boolean mask.*tl\.where\(mask, x, 0\)"):
        f(np.ones(3, np.float32))


def test_boolean_mask_write_is_refused_with_the_alternative():
    @tl.kernel
    def f(x):
        x[np.array([True, False, True])] = 0  # MASK_WRITE
        return x

    with pytest.raises(tl.Error, match=located("MASK_WRITE") + r".*boolean mask.*tl\.where\(mask, value, x\)"):
        f(np.ones(3, np.float32))


@pytest.mark.parametrize("body, message", [
    (lambda x, i: x[i.astype(np.float32)], r"integer dtype, not f32"),
    (lambda x, i: x[[0, 4]], r"index 4 is out of range for dimension 0 of extent 4"),
    (lambda x, i: x[i, [[0, 1, 2]], :], r"could not be broadcast together with shapes \[2\] \[1, 3\]"),
    (lambda x, i: x[i, 0, 0, 0], r"too many indices \(4\) for a tensor of rank 3"),
    (lambda x, i: x[1.5], r"unsupported index 1\.5"),
])
def test_bad_indices_are_errors(body, message):
    with pytest.raises(tl.Error, match=message):
        tl.kernel(body)(np.ones((4, 5, 6), np.float32), np.array([0, 1], np.int32))


def test_bad_writes_are_errors():
    @tl.kernel
    def shape(x, v):
        x[0, :, [1, 2]] = v  # VALUE_SHAPE
        return x

    with pytest.raises(tl.Error, match=located("VALUE_SHAPE") + r".*value of shape \[2\].*indexed shape \[2, 5\]"):
        shape(np.ones((4, 5, 6), np.float32), np.ones(2, np.float32))

    @tl.kernel
    def kind(n):
        n += 0.5  # SAME_KIND
        return n

    with pytest.raises(tl.Error, match=located("SAME_KIND") + r".*cannot write the f64 result into a i32"):
        kind(np.ones(3, np.int32))

    @tl.kernel
    def grow(x, y):
        x += y  # GROW
        return x

    with pytest.raises(tl.Error, match=located("GROW") + r".*shape \[2, 3\].*not the shape \[3\]"):
        grow(np.ones(3, np.float32), np.ones((2, 3), np.float32))


def test_bitwise_operators_on_floats_are_errors():
    @tl.kernel
    def f(x):
        return x & 1  # FLOAT_AND

    with pytest.raises(tl.Error, match=located("FLOAT_AND") + r".*& needs integer or bool tensors, got f32"):
        f(np.ones(3, np.float32))

    @tl.kernel
    def g(x):
        return ~x  # FLOAT_NOT

    with pytest.raises(tl.Error, match=located("FLOAT_NOT") + r".*~ needs an integer or bool tensor"):
        g(np.ones(3, np.float64))


def test_python_float_with_an_integer_tensor_gives_float64():
    # NumPy: int32 array + 1.5 is float64 (the number is not truncated to the array's dtype).
    def f(n):
        return n + 1.5, n < 0.5, n * 2

    same_as_numpy(f, np.array([-1, 0, 1, 2], np.int32))


def test_gradients_flow_through_reads_and_writes():
    # gather_nd / gather and scatter_nd have gradients, so tl.grad works through indexing
    # and writes; checked against central differences of the NumPy program (f64).
    def loss(x):
        y = x * 1.0
        y[1, ::2] = 0.0
        y[[0, 2], 1] += 3.0
        return (y[[2, 0]][:, [1, 3]] ** 2).sum()

    x = np.arange(12, dtype=np.float64).reshape(3, 4) / 10
    eps = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        fd[i] = (loss(up) - loss(down)) / (2 * eps)
    np.testing.assert_allclose(tl.grad(loss)(x), fd, rtol=1e-6, atol=1e-7)
