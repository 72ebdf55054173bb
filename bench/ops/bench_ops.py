#!/usr/bin/env python3
"""`unitile bench --ops`: every library op at Transformer-sized shapes against PyTorch CPU
on the same data, in one run.

For each op of `unitile ops --json` that has a case below: random inputs are written as
.npy; Unitile runs them with `unitile run op:NAME --device cpu --repeat R` (device-timed
median of R runs after one warm-up, compilation excluded) and writes its outputs; PyTorch
runs the same arrays (median of R wall-clock runs after one warm-up, with
torch.set_num_threads(threads)). The outputs are compared first (|u - t| <= atol +
rtol|t|); a disagreement is `failed` and gets no ratio. ratio = torch_ms / unitile_ms, so
above 1 means Unitile is faster. Ops without a case here are listed as `no case`, so the
sweep always names every op.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - reported, not hidden
    sys.exit("bench --ops: PyTorch is not importable by " + sys.executable +
             " (Debian: apt-get install python3-torch; or set UNITILE_PYTHON)")

T, H = 4096, 768  # tokens (batch 8 x sequence 512) and hidden size of GPT-2 small


def unary(fn, domain="any"):
    return {"inputs": {"X": ("f32", (T, H), domain)}, "torch": lambda i, a: {"Y": fn(i["X"])}}


def binary(fn, domain="any"):
    # A bias-like broadcast, the common case in a Transformer.
    return {"inputs": {"A": ("f32", (T, H), domain), "B": ("f32", (H,), domain)},
            "torch": lambda i, a: {"C": fn(i["A"], i["B"])}}


def reduction(fn, domain="any"):
    # f32 sums of 768 terms: absolute error grows like sqrt(n) ulps of the terms.
    return {"inputs": {"X": ("f32", (T, H), domain)}, "attrs": {"axes": [-1], "keepdims": 1},
            "torch": lambda i, a: {"Y": fn(i["X"])}, "tol": (1e-4, 1e-3)}


CASES = {
    "abs": unary(torch.abs), "neg": unary(torch.neg), "exp": unary(torch.exp),
    "exp2": unary(torch.exp2), "expm1": unary(torch.expm1), "log": unary(torch.log, "pos"),
    "log2": unary(torch.log2, "pos"), "log1p": unary(torch.log1p, "pos"),
    "sqrt": unary(torch.sqrt, "pos"), "rsqrt": unary(torch.rsqrt, "pos"),
    "reciprocal": unary(torch.reciprocal, "pos"), "square": unary(torch.square),
    "sin": unary(torch.sin), "cos": unary(torch.cos), "tan": unary(torch.tan),
    "asin": unary(torch.asin), "acos": unary(torch.acos), "atan": unary(torch.atan),
    "sinh": unary(torch.sinh), "cosh": unary(torch.cosh), "tanh": unary(torch.tanh),
    "asinh": unary(torch.asinh), "acosh": unary(torch.acosh, "gt1"),
    "atanh": unary(torch.atanh), "erf": unary(torch.erf), "floor": unary(torch.floor),
    "ceil": unary(torch.ceil), "round": unary(torch.round), "trunc": unary(torch.trunc),
    "sign": unary(torch.sign), "isnan": unary(torch.isnan), "isinf": unary(torch.isinf),
    "isfinite": unary(torch.isfinite), "relu": unary(torch.relu),
    "sigmoid": unary(torch.sigmoid), "silu": unary(F.silu), "gelu": unary(F.gelu),
    "gelu_tanh": unary(lambda x: F.gelu(x, approximate="tanh")),
    "leaky_relu": unary(lambda x: F.leaky_relu(x, 0.01)), "elu": unary(F.elu),
    "selu": unary(F.selu), "celu": unary(F.celu), "softplus": unary(F.softplus),
    "softsign": unary(F.softsign), "hard_sigmoid": unary(lambda x: torch.clamp(0.2 * x + 0.5, 0, 1)),
    "hardswish": unary(F.hardswish), "mish": unary(F.mish),
    "add": binary(torch.add), "sub": binary(torch.sub), "mul": binary(torch.mul),
    "div": binary(torch.div, "nonzero"), "pow": binary(torch.pow, "pos"),
    "max": binary(torch.maximum), "min": binary(torch.minimum),
    "atan2": binary(torch.atan2, "nonzero"), "equal": binary(torch.eq),
    "less": binary(torch.lt), "greater_equal": binary(torch.ge),
    "reduce_sum": reduction(lambda x: x.sum(-1, keepdim=True)),
    "reduce_mean": reduction(lambda x: x.mean(-1, keepdim=True)),
    "reduce_max": reduction(lambda x: x.amax(-1, keepdim=True)),
    "reduce_min": reduction(lambda x: x.amin(-1, keepdim=True)),
    "reduce_l2": reduction(lambda x: x.norm(dim=-1, keepdim=True)),
    "reduce_sum_square": reduction(lambda x: (x * x).sum(-1, keepdim=True)),
    "reduce_log_sum_exp": reduction(lambda x: x.logsumexp(-1, keepdim=True)),
    "var": reduction(lambda x: x.var(-1, keepdim=True, correction=0)),
    "std": reduction(lambda x: x.std(-1, keepdim=True, correction=0)),
    "argmax": {"inputs": {"X": ("f32", (T, H), "any")}, "attrs": {"axis": -1, "keepdims": 0},
               "torch": lambda i, a: {"Y": i["X"].argmax(-1)}},
    "relu_grad": {"inputs": {"X": ("f32", (T, H), "any"), "dY": ("f32", (T, H), "any")},
                  "torch": lambda i, a: {"dX": torch.ops.aten.threshold_backward(i["dY"], i["X"], 0)}},
    "gelu_grad": {"inputs": {"X": ("f32", (T, H), "any"), "dY": ("f32", (T, H), "any")},
                  "torch": lambda i, a: {"dX": torch.ops.aten.gelu_backward(i["dY"], i["X"])}},
    "softmax": {"inputs": {"X": ("f32", (12, 512, 512), "any")}, "attrs": {"axis": -1},
                "torch": lambda i, a: {"Y": torch.softmax(i["X"], -1)}},
    "log_softmax": {"inputs": {"X": ("f32", (12, 512, 512), "any")}, "attrs": {"axis": -1},
                    "torch": lambda i, a: {"Y": torch.log_softmax(i["X"], -1)}},
    "layernorm": {"inputs": {"X": ("f32", (T, H), "any"), "Scale": ("f32", (H,), "any"),
                             "B": ("f32", (H,), "any")}, "attrs": {"axis": -1},
                  "torch": lambda i, a: {"Y": F.layer_norm(i["X"], (H,), i["Scale"], i["B"], 1e-5)}},
    "rmsnorm": {"inputs": {"X": ("f32", (T, H), "any"), "Scale": ("f32", (H,), "any")},
                "attrs": {"axis": -1},
                "torch": lambda i, a: {"Y": i["X"] * torch.rsqrt((i["X"] * i["X"]).mean(-1, keepdim=True) + 1e-5) * i["Scale"]}},
    "matmul": {"inputs": {"A": ("f32", (T, H), "any"), "B": ("f32", (H, 4 * H), "any")},
               "torch": lambda i, a: {"C": i["A"] @ i["B"]}, "tol": (1e-4, 1e-4)},
    "transpose": {"inputs": {"X": ("f32", (8, 512, 12, 64), "any")}, "attrs": {"perm": [0, 2, 1, 3]},
                  "torch": lambda i, a: {"Y": i["X"].permute(0, 2, 1, 3).contiguous()}},
}


def sample(rng, dtype, shape, domain):
    x = rng.uniform(-1, 1, size=shape)
    if domain == "pos":
        x = rng.uniform(0.05, 3, size=shape)
    elif domain == "gt1":
        x = rng.uniform(1.05, 4, size=shape)
    elif domain == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    return x.astype({"f32": np.float32, "f64": np.float64}[dtype])


def torch_time(fn, inputs, attrs, repeat):
    fn(inputs, attrs)  # warm-up
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(inputs, attrs)
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def attr_text(v):
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(str(x) for x in v) + "]"
    return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unitile", required=True)
    ap.add_argument("--ops", default="", help="only these ops (comma-separated)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="shapes 16x smaller in the first dimension")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    listing = subprocess.run([args.unitile, "ops", "--json"], capture_output=True, text=True)
    if listing.returncode != 0:
        sys.exit("bench --ops: `unitile ops --json` failed: " + listing.stderr.strip())
    names = [o["name"] for o in json.loads(listing.stdout)]
    wanted = [n for n in args.ops.split(",") if n]
    for n in wanted:
        if n not in names:
            sys.exit(f"bench --ops: no library op named '{n}'")
    names = wanted or names

    torch.set_num_threads(args.threads)
    env = dict(os.environ, UNITILE_NUM_THREADS=str(args.threads))
    rng = np.random.default_rng(0)
    records = []
    print(f"bench --ops: {len(names)} ops, {args.threads} thread(s), median of {args.repeat}",
          file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            case = CASES.get(name)
            rec = {"op": name, "threads": args.threads}
            if case is None:
                rec["status"] = "no case"
                records.append(rec)
                continue
            attrs = case.get("attrs", {})
            arrays = {}
            cmd = [args.unitile, "run", f"op:{name}", "--device", "cpu", "--repeat", str(args.repeat),
                   "--output-dir", os.path.join(tmp, name)]
            for port, (dt, shape, domain) in case["inputs"].items():
                if args.quick and len(shape) >= 2:
                    shape = (max(1, shape[0] // 16),) + tuple(shape[1:])
                arrays[port] = sample(rng, dt, shape, domain)
                path = os.path.join(tmp, f"{name}_{port}.npy")
                np.save(path, arrays[port])
                cmd += ["--input", f"{port}={path}"]
            for k, v in attrs.items():
                cmd += ["--attr", f"{k}={attr_text(v)}"]
            rec["shapes"] = {p: list(a.shape) for p, a in arrays.items()}
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                first = (p.stderr.strip().splitlines() or ["?"])[0]
                rec["status"] = first if first.startswith("error") else "error: " + first
                records.append(rec)
                print(f"  {name}: {rec['status']}", file=sys.stderr)
                continue
            m = re.search(r"median_ms=([0-9.e+-]+)", p.stdout)
            rec["unitile_ms"] = float(m.group(1))
            tin = {k: torch.from_numpy(v) for k, v in arrays.items()}
            want = case["torch"](tin, attrs)
            rtol, atol = case.get("tol", (1e-4, 1e-5))
            status = "ok"
            for out, w in want.items():
                got = np.load(os.path.join(tmp, name, f"{out}.npy"))
                w = w.numpy()
                if got.shape != w.shape and got.size == w.size:
                    got = got.reshape(w.shape)
                if got.dtype == np.bool_ or w.dtype == np.bool_ or w.dtype.kind == "i":
                    ok = np.array_equal(got.astype(w.dtype), w)
                else:
                    ok = np.allclose(got, w, rtol=rtol, atol=atol, equal_nan=True)
                if not ok:
                    status = f"failed: {out} differs from PyTorch"
            rec["status"] = status
            if status == "ok":
                rec["torch_ms"] = torch_time(case["torch"], tin, attrs, args.repeat)
                rec["ratio"] = rec["torch_ms"] / rec["unitile_ms"]
            records.append(rec)
            print(f"  {name}: {status}" + (f" {rec['ratio']:.2f}x" if "ratio" in rec else ""),
                  file=sys.stderr)

    print(f"| op | shapes | unitile ms | torch ms | ratio | status |")
    print("|---|---|---|---|---|---|")
    for r in records:
        shapes = " ".join("x".join(map(str, s)) for s in r.get("shapes", {}).values())
        u = f"{r['unitile_ms']:.3f}" if "unitile_ms" in r else ""
        t = f"{r['torch_ms']:.3f}" if "torch_ms" in r else ""
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else ""
        print(f"| {r['op']} | {shapes} | {u} | {t} | {ratio} | {r['status']} |")
    timed = [r for r in records if "ratio" in r]
    if timed:
        geo = float(np.exp(np.mean(np.log([r["ratio"] for r in timed]))))
        below = [r["op"] for r in timed if r["ratio"] < 1.0]
        print(f"\n{len(timed)} ops timed, geometric mean ratio {geo:.2f}; below 1.0x: "
              f"{', '.join(below) if below else 'none'}")
    missing = [r["op"] for r in records if r["status"] == "no case"]
    if missing:
        print(f"{len(missing)} ops have no bench case yet: {', '.join(missing)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 1 if any(r["status"].startswith(("failed", "error")) for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
