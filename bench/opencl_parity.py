#!/usr/bin/env python3
"""OpenCL (PoCL) against cpu on the same kernels: each kernel runs with
`unitile run --device cpu,opencl --repeat R` ROUNDS times; the median of each round's
device-timed medians is reported, with speed ratio = cpu time / opencl time (>= 1 means
opencl is as fast or faster); the last column is the same ratio of the minimum times over
all rounds (less exposed to other load). Prints a Markdown table for docs/PERFORMANCE.md.

    bench/opencl_parity.py [--unitile build/bin/unitile] [--rounds 5] [--repeat 20]
                           [--only SUBSTRING]

A file of "op:NAME" is a library op; its shapes are the inputs' (--shape X=1024x1024).

--large runs every kernel on four times the rows (or the sequence), 0.3-6 ms a launch
instead of 0.2-1.6 ms: on two or more cores PoCL wakes its sleeping worker threads per
launch, a cost that short launches do not amortize (docs/PERFORMANCE.md).
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, file, kernel, shapes, extra args, sed substitutions for the dtype templates
KERNELS = [
    ("matmul 256", "examples/design.ut", "MatrixMul", "M=256,K=256,N=256", [], None),
    ("matmul 512", "examples/design.ut", "MatrixMul", "M=512,K=512,N=512", [], None),
    ("softmax 1024x1024", "examples/design.ut", "Softmax", "N=1024,D=1024", [], None),
    ("layernorm 1024x1024", "tests/lit/diff/layernorm.ut", "LayerNorm", "N=1024,D=1024",
     ["--param", "eps=1e-5"], {"DTYPE": "f32", "ACC": "f32"}),
    ("attention 256x64", "examples/attention.ut", "Attention", "N=256,D=64", [], None),
    ("elementwise chain 1024x1024", "tests/lit/diff/elementwise-broadcast.ut", "BroadcastChain",
     "M=1024,N=1024", [], {"DTYPE": "f32"}),
    ("op:matmul 384x512x256", "op:matmul", None, "A=384x512,B=512x256", [], None),
    ("op:softmax 1024x1024", "op:softmax", None, "X=1024x1024", [], None),
    ("op:layernorm 1024x1024", "op:layernorm", None, "X=1024x1024,Scale=1024,B=1024", [], None),
    ("op:gelu 1024x1024", "op:gelu", None, "X=1024x1024", [], None),
    ("op:scaled_dot_product_attention 1x4x256x64", "op:scaled_dot_product_attention", None,
     "Q=1x4x256x64,K=1x4x256x64,V=1x4x256x64", [], None),
]


# --large: the same kernels with four times the rows (or sequence length).
LARGE = {
    "matmul 256": ("matmul 1024x256x256", "M=1024,K=256,N=256"),
    "matmul 512": ("matmul 2048x512x512", "M=2048,K=512,N=512"),
    "softmax 1024x1024": ("softmax 4096x1024", "N=4096,D=1024"),
    "layernorm 1024x1024": ("layernorm 4096x1024", "N=4096,D=1024"),
    "attention 256x64": ("attention 1024x64", "N=1024,D=64"),
    "elementwise chain 1024x1024": ("elementwise chain 4096x1024", "M=4096,N=1024"),
    "op:matmul 384x512x256": ("op:matmul 1536x512x256", "A=1536x512,B=512x256"),
    "op:softmax 1024x1024": ("op:softmax 4096x1024", "X=4096x1024"),
    "op:layernorm 1024x1024": ("op:layernorm 4096x1024", "X=4096x1024,Scale=1024,B=1024"),
    "op:gelu 1024x1024": ("op:gelu 4096x1024", "X=4096x1024"),
    "op:scaled_dot_product_attention 1x4x256x64": ("op:scaled_dot_product_attention 1x4x1024x64",
                                                   "Q=1x4x1024x64,K=1x4x1024x64,V=1x4x1024x64"),
}


def source(path, subst, tmp):
    if path.startswith("op:"):
        return path
    if not subst:
        return os.path.join(ROOT, path)
    text = open(os.path.join(ROOT, path)).read()
    for k, v in subst.items():
        text = text.replace(k, v)
    out = os.path.join(tmp, os.path.basename(path))
    open(out, "w").write(text)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unitile", default=os.path.join(ROOT, "build", "bin", "unitile"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default="", help="only the kernels whose name contains this")
    ap.add_argument("--large", action="store_true", help="four times the rows (see above)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="opencl-parity-")
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| kernel | cpu median ms | opencl median ms | opencl speed vs cpu | same, of the minimums |")
    print("|---|---|---|---|---|")
    for name, path, kernel, shapes, extra, subst in KERNELS:
        if args.large:
            name, shapes = LARGE[name]
        if args.only not in name:
            continue
        f = source(path, subst, tmp)
        kernel_args = ["--kernel", kernel] if kernel else []
        times = {"cpu": [], "opencl": []}
        mins = {"cpu": [], "opencl": []}
        for _ in range(args.rounds):
            out = subprocess.run([args.unitile, "run", f] + kernel_args + ["--device", "cpu,opencl",
                                  "--shape", shapes, "--repeat", str(args.repeat)] + extra,
                                 capture_output=True, text=True, check=True).stdout
            device = None
            for line in out.splitlines():
                if line.startswith("device "):
                    device = line.split()[1]
                m = re.match(r"timing: runs=\d+ median_ms=([0-9.e+-]+) min_ms=([0-9.e+-]+)", line)
                if m:
                    times[device].append(float(m.group(1)))
                    mins[device].append(float(m.group(2)))
        cpu, ocl = statistics.median(times["cpu"]), statistics.median(times["opencl"])
        ratio_min = min(mins["cpu"]) / min(mins["opencl"])
        print(f"| {name} | {cpu:.4g} | {ocl:.4g} | {cpu / ocl:.2f}x | {ratio_min:.2f}x |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
