"""Cases of the matmul family: matmul (transposes, 1-D operands, broadcast batches),
batch_matmul, gemm (alpha, beta, broadcast C), linear (with and without bias), einsum
(contractions, diagonals, implicit output, ellipsis, three operands) against NumPy, and
the backward ops against PyTorch autograd in float64."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(5)


def rand(shape, dt=np.float32):
    if np.dtype(dt).kind == "i":
        return RNG.integers(-4, 5, size=shape).astype(dt)
    return RNG.uniform(-1, 1, size=shape).astype(dt)


def f64(x):
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def tr(x, t):
    return np.swapaxes(x, -1, -2) if t and x.ndim >= 2 else x


def matmul_ref(i, a):
    A, B = tr(f64(i["A"]), a.get("transA", 0)), tr(f64(i["B"]), a.get("transB", 0))
    return {"Y": np.matmul(A, B)}


def gemm_ref(i, a):
    A, B = tr(f64(i["A"]), a.get("transA", 0)), tr(f64(i["B"]), a.get("transB", 0))
    y = a.get("alpha", 1.0) * (A @ B)
    if "C" in i:
        y = y + a.get("beta", 1.0) * f64(i["C"])
    return {"Y": y}


def linear_ref(i, a):
    y = f64(i["X"]) @ f64(i["W"]).T
    if "B" in i:
        y = y + f64(i["B"])
    return {"Y": y}


def einsum_ref(eq):
    def ref(i, a):
        xs = [f64(i[f"X{n}"]) for n in range(len(i))]
        return {"Y": np.einsum(eq, *xs)}
    return ref


def cases():
    out = []
    # matmul: plain, transposes, vectors, broadcast batches, integers, f16
    for dt in (np.float32, np.float64):
        out.append(Case("matmul", {"A": rand((3, 5), dt), "B": rand((5, 7), dt)}, matmul_ref,
                        cross=dt == np.float32))
        out.append(Case("matmul", {"A": rand((2, 1, 3, 5), dt), "B": rand((4, 5, 7), dt)},
                        matmul_ref))
    for ta, tb in ((1, 0), (0, 1), (1, 1)):
        A = rand((2, 5, 3) if ta else (2, 3, 5))
        B = rand((7, 5) if tb else (5, 7))
        out.append(Case("matmul", {"A": A, "B": B}, matmul_ref, attrs={"transA": ta, "transB": tb}))
    out.append(Case("matmul", {"A": rand((5,)), "B": rand((3, 5, 7))}, matmul_ref))
    out.append(Case("matmul", {"A": rand((2, 3, 5)), "B": rand((5,))}, matmul_ref))
    out.append(Case("matmul", {"A": rand((9,), np.float64), "B": rand((9,), np.float64)}, matmul_ref))
    out.append(Case("matmul", {"A": rand((1, 4), np.float64), "B": rand((3, 4, 1), np.float64)},
                    matmul_ref))
    for dt in (np.int32, np.int64):
        out.append(Case("matmul", {"A": rand((3, 4), dt), "B": rand((4, 5), dt)},
                        lambda i, a: {"Y": np.matmul(i["A"], i["B"])}))
    out.append(Case("matmul", {"A": rand((3, 6), np.float16), "B": rand((6, 5), np.float16)},
                    matmul_ref, scale=2))
    # batch_matmul (torch.bmm)
    for dt in (np.float32, np.float64):
        out.append(Case("batch_matmul", {"A": rand((3, 4, 5), dt), "B": rand((3, 5, 6), dt)},
                        matmul_ref))
    out.append(Case("batch_matmul", {"A": rand((2, 5, 4)), "B": rand((2, 6, 5))}, matmul_ref,
                    attrs={"transA": 1, "transB": 1}))
    # gemm: every form of C, alpha and beta, transposes
    for dt in (np.float32, np.float64):
        out.append(Case("gemm", {"A": rand((3, 5), dt), "B": rand((5, 7), dt)}, gemm_ref))
        out.append(Case("gemm", {"A": rand((3, 5), dt), "B": rand((5, 7), dt), "C": rand((3, 7), dt)},
                        gemm_ref, attrs={"alpha": 0.5, "beta": -2.0}))
    for cshape in ((7,), (3, 1), (1, 7), ()):
        out.append(Case("gemm", {"A": rand((5, 3)), "B": rand((7, 5)), "C": rand(cshape)}, gemm_ref,
                        attrs={"transA": 1, "transB": 1, "beta": 0.25}))
    out.append(Case("gemm", {"A": rand((4, 6)), "B": rand((4, 5))}, gemm_ref,
                    attrs={"transA": 1, "alpha": 3.0}))
    # linear
    for dt in (np.float32, np.float64):
        out.append(Case("linear", {"X": rand((3, 5, 7), dt), "W": rand((4, 7), dt), "B": rand((4,), dt)},
                        linear_ref))
    out.append(Case("linear", {"X": rand((6, 7)), "W": rand((5, 7))}, linear_ref))
    out.append(Case("linear", {"X": rand((7,), np.float64), "W": rand((3, 7), np.float64),
                               "B": rand((3,), np.float64)}, linear_ref))
    # einsum
    ein = [
        ("bij,bjk->bik", [(2, 3, 5), (2, 5, 4)], np.float32),
        ("bij,bjk->bik", [(2, 3, 5), (2, 5, 4)], np.float64),
        ("ii->i", [(5, 5)], np.float32),
        ("ii", [(6, 6)], np.float64),
        ("ij->ji", [(3, 7)], np.float32),
        ("ij->", [(3, 7)], np.float64),
        ("i,i->", [(9,), (9,)], np.float32),
        ("i,j->ij", [(3,), (4,)], np.float32),
        ("ij,jk", [(3, 5), (5, 2)], np.float32),
        ("ba,ca", [(3, 5), (2, 5)], np.float64),
        ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)], np.float32),
        ("b...d,bd->b...", [(2, 3, 4, 5), (2, 5)], np.float32),
        ("bhnd,bhmd->bhnm", [(2, 3, 4, 5), (2, 3, 6, 5)], np.float32),
        ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)], np.float64),
        ("iij->j", [(3, 3, 4)], np.float32),
        ("ij,ij->i", [(4, 1), (4, 6)], np.float32),
        ("XY,Yz->Xz", [(3, 4), (4, 2)], np.float32),
        ("ij,jk->ik", [(3, 4), (4, 5)], np.int64),
    ]
    for eq, shapes, dt in ein:
        ins = {f"X{n}": rand(s, dt) for n, s in enumerate(shapes)}
        ref = einsum_ref(eq)
        if np.dtype(dt).kind == "i":
            ref = (lambda eq: lambda i, a: {"Y": np.einsum(eq, *[i[f"X{n}"] for n in range(len(i))])})(eq)
        out.append(Case("einsum", ins, ref, attrs={"equation": eq}, cross=eq == "bhnd,bhmd->bhnm"))
    return out + grad_cases()


# --- backward ops against PyTorch autograd ----------------------------------------------

def torch_grads(fn, inputs, grad_name, out_grad):
    """Gradients of fn(**tensors) w.r.t. every input, given the output gradient."""
    import torch
    ts = {k: torch.tensor(f64(v), requires_grad=True) for k, v in inputs.items()}
    y = fn(**ts)
    y.backward(torch.tensor(f64(out_grad)))
    return {"d" + k: t.grad.numpy() for k, t in ts.items()}


def matmul_grad_ref(i, a):
    import torch

    def f(A, B):
        A = A.transpose(-1, -2) if a.get("transA", 0) and A.dim() >= 2 else A
        B = B.transpose(-1, -2) if a.get("transB", 0) and B.dim() >= 2 else B
        return torch.matmul(A, B)
    return torch_grads(f, {"A": i["A"], "B": i["B"]}, "dY", i["dY"])


def gemm_grad_ref(i, a):
    def f(A, B, C=None):
        A = A.T if a.get("transA", 0) else A
        B = B.T if a.get("transB", 0) else B
        y = a.get("alpha", 1.0) * (A @ B)
        return y + a.get("beta", 1.0) * C if C is not None else y
    ins = {k: i[k] for k in ("A", "B", "C") if k in i}
    return torch_grads(f, ins, "dY", i["dY"])


def linear_grad_ref(i, a):
    import torch
    ins = {"X": i["X"], "W": i["W"], "B": np.zeros(i["W"].shape[0])}
    return torch_grads(lambda X, W, B: torch.nn.functional.linear(X, W, B), ins, "dY", i["dY"])


def einsum_grad_ref(eq):
    def ref(i, a):
        import torch
        xs = {k: v for k, v in i.items() if k != "dY"}
        ts = {k: torch.tensor(f64(v), requires_grad=True) for k, v in xs.items()}
        # torch.einsum does not broadcast labelled size-1 dimensions: expand them (the
        # expansion's gradient sums, as the op's must), ellipsis dimensions it handles.
        extent = {}
        for term, v in zip(eq.split("->")[0].split(","), xs.values()):
            if "." not in term:
                for c, n in zip(term, v.shape):
                    extent[c] = max(extent.get(c, 1), n)
        args = []
        for term, t in zip(eq.split("->")[0].split(","), ts.values()):
            args.append(t.expand(*[extent[c] for c in term]) if "." not in term else t)
        y = torch.einsum(eq, *args)
        y.backward(torch.tensor(f64(i["dY"])))
        return {"d" + k: t.grad.numpy() for k, t in ts.items()}
    return ref


def grad_cases():
    out = []
    mm = [((2, 1, 3, 5), (4, 5, 7), {}, np.float64),
          ((3, 5), (5, 7), {}, np.float32),
          ((2, 5, 3), (7, 5), {"transA": 1, "transB": 1}, np.float64),
          ((5,), (3, 5, 7), {}, np.float64),
          ((2, 3, 5), (5,), {}, np.float32),
          ((6,), (6,), {}, np.float64)]
    for sa, sb, attrs, dt in mm:
        A, B = rand(sa, dt), rand(sb, dt)
        y = matmul_ref({"A": A, "B": B}, attrs)["Y"]
        out.append(Case("matmul_grad", {"A": A, "B": B, "dY": rand(np.shape(y), dt)}, matmul_grad_ref,
                        attrs=attrs))
    out.append(Case("batch_matmul_grad", {"A": rand((3, 4, 5), np.float64), "B": rand((3, 6, 5), np.float64),
                                          "dY": rand((3, 4, 6), np.float64)}, matmul_grad_ref,
                    attrs={"transB": 1}))
    for cshape, attrs, dt in (((7,), {"alpha": 0.5, "beta": 2.0, "transA": 1}, np.float64),
                              ((3, 1), {"transB": 1}, np.float32),
                              (None, {"alpha": 1.5}, np.float64)):
        A = rand((5, 3) if attrs.get("transA") else (3, 5), dt)
        B = rand((7, 5) if attrs.get("transB") else (5, 7), dt)
        ins = {"A": A, "B": B}
        if cshape:
            ins["C"] = rand(cshape, dt)
        ins["dY"] = rand((3, 7), dt)
        out.append(Case("gemm_grad", ins, gemm_grad_ref, attrs=attrs))
    # einsum_grad: contractions, diagonals, a label only one operand has, broadcasting
    ein = [("bij,bjk->bik", [(2, 3, 5), (2, 5, 4)], np.float64),
           ("ij,jk", [(3, 5), (5, 2)], np.float32),
           ("ii->i", [(5, 5)], np.float64),
           ("iij->j", [(3, 3, 4)], np.float64),
           ("ij,k->ik", [(3, 4), (5,)], np.float64),
           ("ij,ij->i", [(4, 1), (4, 6)], np.float64),
           ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)], np.float64),
           ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)], np.float64)]
    for eq, shapes, dt in ein:
        ins = {f"X{n}": rand(sh, dt) for n, sh in enumerate(shapes)}
        y = np.einsum(eq, *[f64(v) for v in ins.values()])
        ins["dY"] = rand(np.shape(y), dt)
        out.append(Case("einsum_grad", ins, einsum_grad_ref(eq), attrs={"equation": eq}))
    for xs, dt in (((2, 3, 7), np.float64), ((7,), np.float64), ((4, 7), np.float32)):
        X, W = rand(xs, dt), rand((5, 7), dt)
        dY = rand(xs[:-1] + (5,), dt)
        out.append(Case("linear_grad", {"X": X, "W": W, "dY": dY}, linear_grad_ref))
    return out
