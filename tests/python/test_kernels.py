"""Kernels from .ut files and bare comprehensions, on every device, against NumPy."""

import os

import numpy as np
import pytest

import unitile as tl

SOURCE_DIR = os.environ.get("UNITILE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DESIGN = os.path.join(SOURCE_DIR, "examples", "design.ut")


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_load_runs_each_kernel_of_a_file(device, rng):
    m = tl.load(DESIGN)
    assert sorted(k.name for k in m) == ["MatrixMul", "Softmax"]
    a = rng.standard_normal((6, 9)).astype(np.float32)
    b = rng.standard_normal((9, 4)).astype(np.float32)
    np.testing.assert_allclose(m.MatrixMul(a, b, device=device), a @ b, rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    np.testing.assert_allclose(m["Softmax"](X=x, device=device), softmax(x), rtol=1e-5, atol=1e-6)


def test_comprehension_matmul(device, rng):
    mm = tl.comprehension("C[i,j] += A[i,k] * B[k,j]")
    assert mm.inputs == ["A", "B"] and mm.outputs == ["C"]
    a = rng.standard_normal((7, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(mm(a, b, device=device), a @ b, rtol=1e-5, atol=1e-5)


def test_comprehension_with_locals_and_scalars(device, rng):
    sm = tl.comprehension("""
        m[i] max= X[i,j]
        s[i] += exp(X[i,j] - m[i])
        Y[i,j] = exp(X[i,j] - m[i]) / s[i] * scale
    """)
    assert sm.outputs == ["Y"] and sm.params == ["scale"]
    x = rng.standard_normal((4, 10)).astype(np.float64)
    np.testing.assert_allclose(sm(x, scale=2.0, device=device), 2 * softmax(x), rtol=1e-12)


def test_compiled_kernels_are_kept_per_shape_and_device(rng):
    mm = tl.comprehension("C[i,j] += A[i,k] * B[k,j]")
    a = rng.standard_normal((4, 4)).astype(np.float32)
    k, _, _ = mm.kernel(a, a)
    mm(a, a)
    mm(a, a)
    assert k._k.compiled_count == 1
    mm(a, a, device="sim")
    assert k._k.compiled_count == 2
    b = rng.standard_normal((4, 4)).astype(np.float64)
    k64, _, _ = mm.kernel(b, b)
    assert k64 is not k  # another dtype is another kernel


def test_source_and_explain():
    mm = tl.comprehension("C[i,j] += A[i,k] * B[k,j]")
    a = np.ones((64, 64), np.float32)
    c = mm.compile(a, a, device="cpu")
    assert "ut_entry" in c.source() or "void" in c.source()
    text = c.explain()
    assert "schedule {" in text and "launch" in text
    assert "for " in c.loop_ir()


def test_chained_calls_stay_on_the_device(device, rng):
    mm = tl.comprehension("C[i,j] += A[i,k] * B[k,j]")
    scale = tl.comprehension("Y[i,j] = X[i,j] * alpha")
    a = rng.standard_normal((3, 3)).astype(np.float32)
    t = tl.tensor(a, device=device)
    r = scale(mm(t, t), alpha=0.5)
    assert isinstance(r, tl.Tensor) and r.device == device
    np.testing.assert_allclose(r.numpy(), 0.5 * (a @ a), rtol=1e-5, atol=1e-6)


def test_kernel_argument_errors(rng):
    mm = tl.load(DESIGN).MatrixMul
    a = rng.standard_normal((2, 3)).astype(np.float32)
    with pytest.raises(tl.Error, match="f64 but the kernel declares f32"):
        mm(a.astype(np.float64), a.T.copy())
    with pytest.raises(tl.Error, match="K"):
        mm(a, a)  # K: 3 vs 2
    with pytest.raises(TypeError, match="unexpected argument 'Q'"):
        mm(a, a.T, Q=1)
    with pytest.raises(tl.Error, match="cannot infer the extent of index 'q'"):
        tl.comprehension("C[q] = A[i]")(np.ones(3, np.float32))
