"""tl.grad and tl.value_and_grad on structured arguments (dicts, lists, tuples, nested):
argnums selects whole structures and their gradients come back in the same structure.
Checked against torch autograd and central finite differences in f64."""

import collections

import numpy as np
import pytest

import unitile as tl

torch = pytest.importorskip("torch")


def mlp(p, x, y):
    h = tl.tanh(x @ p["l1"]["w"] + p["l1"]["b"])
    out = h @ p["l2"][0] + p["l2"][1]
    return tl.sum((out - y) ** 2) * 0.5


def torch_mlp(p, x, y):
    h = torch.tanh(x @ p["l1"]["w"] + p["l1"]["b"])
    out = h @ p["l2"][0] + p["l2"][1]
    return ((out - y) ** 2).sum() * 0.5


def params(rng):
    return {"l1": {"w": rng.standard_normal((3, 5)), "b": rng.standard_normal(5)},
            "l2": [rng.standard_normal((5, 2)), rng.standard_normal(2)]}


def to_torch(tree):
    if isinstance(tree, dict):
        return {k: to_torch(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_torch(v) for v in tree)
    return torch.tensor(tree, requires_grad=True)


def torch_grads(tree):
    if isinstance(tree, dict):
        return {k: torch_grads(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(torch_grads(v) for v in tree)
    return tree.grad.numpy()


def assert_same_tree(got, want, rtol=1e-12, atol=1e-12, path="grads"):
    assert type(got) is type(want), f"{path}: {type(got).__name__} vs {type(want).__name__}"
    if isinstance(want, dict):
        assert list(got) == list(want), path
        for k in want:
            assert_same_tree(got[k], want[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_tree(g, w, rtol, atol, f"{path}[{i}]")
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=path)


def test_dict_of_parameters_against_torch(rng):
    p, x, y = params(rng), rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    tp = to_torch(p)
    loss = torch_mlp(tp, torch.tensor(x), torch.tensor(y))
    loss.backward()
    value, g = tl.value_and_grad(mlp)(p, x, y)
    assert float(value) == pytest.approx(loss.item(), rel=1e-12)
    assert_same_tree(g, torch_grads(tp))
    # The structure and the batch at once: a tuple of (dict, array).
    gp, gx = tl.grad(mlp, argnums=(0, 1))(p, x, y)
    assert_same_tree(gp, torch_grads(tp))
    tx = torch.tensor(x, requires_grad=True)
    torch_mlp(to_torch(p), tx, torch.tensor(y)).backward()
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_tuples_namedtuples_and_constants_against_finite_differences(rng):
    Layer = collections.namedtuple("Layer", "w b")
    layer = Layer(rng.standard_normal((3, 3)), rng.standard_normal(3))
    x = rng.standard_normal((2, 3))

    def f(layer, xs, settings):
        # settings: a structure of constants (not differentiated, part of the trace key)
        h = xs[0] @ layer.w + layer.b
        return tl.sum(tl.sin(h) * xs[1]) * settings["scale"]

    xs = (x, rng.standard_normal((2, 3)))
    settings = {"scale": 1.5}
    g_layer, g_xs = tl.grad(f, argnums=(0, 1))(layer, xs, settings)
    assert isinstance(g_layer, Layer) and isinstance(g_xs, tuple) and len(g_xs) == 2

    def loss(layer, xs):
        return float(np.sum(np.sin(xs[0] @ layer.w + layer.b) * xs[1]) * 1.5)

    eps = 1e-6
    for name, tree in (("layer", g_layer), ("xs", g_xs)):
        for j, grad in enumerate(tree):
            base = [np.array(v) for v in (layer if name == "layer" else xs)]
            fd = np.zeros_like(base[j])
            for idx in np.ndindex(base[j].shape):
                hi = [v.copy() for v in base]
                lo = [v.copy() for v in base]
                hi[j][idx] += eps
                lo[j][idx] -= eps
                args_hi = (Layer(*hi), xs) if name == "layer" else (layer, tuple(hi))
                args_lo = (Layer(*lo), xs) if name == "layer" else (layer, tuple(lo))
                fd[idx] = (loss(*args_hi) - loss(*args_lo)) / (2 * eps)
            assert np.all(np.abs(grad - fd) <= 1e-7 + 1e-5 * np.abs(fd)), f"{name}[{j}]"
    # Another constant is another trace: the gradient scales with it.
    g2 = tl.grad(f)(layer, xs, {"scale": 3.0})
    np.testing.assert_allclose(g2.w, 2 * g_layer.w, rtol=1e-12)


def test_has_aux_and_a_structure_inside_a_kernel(rng):
    p = {"w": rng.standard_normal((3,)), "v": [rng.standard_normal((3,))]}

    def f(p):
        y = p["w"] * p["v"][0]
        return tl.sum(y * y), y

    (value, aux), g = tl.value_and_grad(f, has_aux=True)(p)
    w, v = p["w"], p["v"][0]
    np.testing.assert_allclose(value, np.sum((w * v) ** 2), rtol=1e-12)
    np.testing.assert_allclose(aux, w * v, rtol=1e-12)
    np.testing.assert_allclose(g["w"], 2 * w * v * v, rtol=1e-12)
    np.testing.assert_allclose(g["v"][0], 2 * w * w * v, rtol=1e-12)

    @tl.kernel
    def sgd(w, v):
        grads = tl.grad(lambda q: tl.sum(q["w"] * q["w"] * q["v"]))({"w": w, "v": v})
        return w - 0.1 * grads["w"], v - 0.1 * grads["v"]

    nw, nv = sgd(w, v)
    np.testing.assert_allclose(nw, w - 0.2 * w * v, rtol=1e-12)
    np.testing.assert_allclose(nv, v - 0.1 * w * w, rtol=1e-12)


def test_aux_outputs_may_be_structures(rng):
    p = {"w": rng.standard_normal((3, 2))}
    x = rng.standard_normal((4, 3))

    def f(p, x):
        y = x @ p["w"]
        return tl.sum(y * y), {"y": y, "stats": [tl.max(y), tl.sum(y)], "note": "kept as is"}

    (value, aux), g = tl.value_and_grad(f, has_aux=True)(p, x)
    y = x @ p["w"]
    assert sorted(aux) == ["note", "stats", "y"] and isinstance(aux["stats"], list)
    assert aux["note"] == "kept as is"
    np.testing.assert_allclose(aux["y"], y, rtol=1e-12)
    np.testing.assert_allclose(aux["stats"][0], y.max(), rtol=1e-12)
    np.testing.assert_allclose(aux["stats"][1], y.sum(), rtol=1e-12)
    np.testing.assert_allclose(g["w"], 2 * x.T @ y, rtol=1e-12)
    # the plain path (no structured argument) too
    g_w, aux = tl.grad(lambda w, x: (tl.sum(x @ w), (x @ w, [tl.sum(w)])), has_aux=True)(p["w"], x)
    assert isinstance(aux, tuple) and isinstance(aux[1], list)
    np.testing.assert_allclose(aux[1][0], p["w"].sum(), rtol=1e-12)


def test_structures_with_bad_leaves_are_clear_errors(rng):
    def f(p):
        return tl.sum(p["w"] * p["k"])

    with pytest.raises(tl.Error, match=r"argument 0 is selected by argnums.*holds float 2.0, which is not an array"):
        tl.grad(f)({"w": rng.standard_normal(3), "k": 2.0})
    with pytest.raises(tl.Error, match="hold no arrays"):
        tl.grad(lambda p, x: tl.sum(x), argnums=0)({}, {"x": rng.standard_normal(2)}["x"])
