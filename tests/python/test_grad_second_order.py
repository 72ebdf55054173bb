"""Second-order gradients: tl.grad of a function that itself calls tl.grad. The first
gradient's nodes (derived vjp kernels, registered <op>_grad ops) are differentiated like
any other node, so grad of grad works wherever those kernels can be differentiated;
where they cannot (max= reductions in cross_entropy_grad, reduce_max_grad), the error
names the op and why. Checked in f64 against analytic forms, central finite differences
and torch's double backward."""

import numpy as np
import pytest

import unitile as tl

torch = pytest.importorskip("torch")


def central_differences(f, x, eps=1e-6):
    fd = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        fd[idx] = (f(hi) - f(lo)) / (2 * eps)
    return fd


def assert_close_to_fd(got, fd):
    assert np.all(np.abs(got - fd) <= 1e-7 + 1e-5 * np.abs(fd)), np.max(np.abs(got - fd))


def test_elementwise_hessian_vector_product(rng):
    x, v = rng.standard_normal(5), rng.standard_normal(5)

    def f(x):
        return tl.sum(x * x * x + tl.sin(x) * x)

    def directional(x, v):  # <grad f(x), v>, whose gradient is H v
        return tl.sum(tl.grad(f)(x) * v)

    want = (6 * x + 2 * np.cos(x) - x * np.sin(x)) * v  # the Hessian is diagonal
    np.testing.assert_allclose(tl.grad(directional)(x, v), want, rtol=1e-12, atol=1e-12)
    # grad of grad of grad: the third derivative of x^3 + x sin x
    def second(x, v):
        return tl.sum(tl.grad(directional)(x, v) * v)
    want3 = (6 - 3 * np.sin(x) - x * np.cos(x)) * v * v
    np.testing.assert_allclose(tl.grad(second)(x, v), want3, rtol=1e-10, atol=1e-12)


def test_contraction_against_finite_differences(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))

    def h(a, b):
        return tl.sum(tl.tanh(a @ b))

    def gradient_norm(a, b):  # |dh/da|^2 + |dh/db|^2
        ga, gb = tl.grad(h, argnums=(0, 1))(a, b)
        return tl.sum(ga * ga) + tl.sum(gb * gb)

    def gradient_norm_np(a, b):
        s = 1 - np.tanh(a @ b) ** 2
        return np.sum((s @ b.T) ** 2) + np.sum((a.T @ s) ** 2)

    ga, gb = tl.grad(gradient_norm, argnums=(0, 1))(a, b)
    assert_close_to_fd(ga, central_differences(lambda a_: gradient_norm_np(a_, b), a))
    assert_close_to_fd(gb, central_differences(lambda b_: gradient_norm_np(a, b_), b))


@pytest.mark.parametrize("name", ["softmax", "layernorm", "gelu", "mse"])
def test_registered_and_derived_ops_against_torch_double_backward(rng, name):
    a, w = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    ours = {"softmax": lambda t, w: tl.softmax(t, axis=-1), "layernorm": lambda t, w: tl.layernorm(t),
            "gelu": lambda t, w: tl.gelu(t), "mse": lambda t, w: tl.mse_loss(t, w * 0.5)}[name]
    theirs = {"softmax": lambda t: torch.softmax(t, -1),
              "layernorm": lambda t: torch.nn.functional.layer_norm(t, (4,)),
              "gelu": torch.nn.functional.gelu,
              "mse": lambda t: torch.nn.functional.mse_loss(t, torch.tensor(w) * 0.5)}[name]

    def first(a, w):
        return tl.sum(ours(a, w) * w)

    def second(a, w):
        g = tl.grad(first)(a, w)
        return tl.sum(g * g)

    ta = torch.tensor(a, requires_grad=True)
    (g1,) = torch.autograd.grad((theirs(ta) * torch.tensor(w)).sum(), ta, create_graph=True)
    (want,) = torch.autograd.grad((g1 * g1).sum(), ta)
    np.testing.assert_allclose(tl.grad(second)(a, w), want.numpy(), rtol=1e-9, atol=1e-12)


def test_a_gradient_op_that_cannot_be_differentiated_is_a_clear_error(rng):
    logits, target = rng.standard_normal((3, 5)), np.array([1, 0, 4], dtype=np.int64)

    def loss(a, t):
        return tl.cross_entropy(a, t)

    def curvature(a, t):
        g = tl.grad(loss)(a, t)
        return tl.sum(g * g)

    with pytest.raises(tl.Error, match=r"op:cross_entropy_grad has no gradient: it cannot be derived from its kernel "
                                       r"\(.*'max=' reduction\) and no gradient op is registered"):
        tl.grad(curvature)(logits, target)
