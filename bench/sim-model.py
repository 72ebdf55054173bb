#!/usr/bin/env python3
"""Validate the sim chip model against the host CPU.

For each kernel of bench/sim-model.ut: the time the cpu device measures
(`unitile run --device cpu --repeat N`, the median) and the time the sim chip model
estimates for the same Loop IR under the detected host HCD
(`unitile run --device sim --hcd HOST.toml --report-warm --report-json`, warm caches
because --repeat measures warm runs). Prints both, their ratio per kernel, and the
geometric mean of the ratios and of the error factor max(r, 1/r).

Usage: bench/sim-model.py [--unitile build/bin/unitile] [--repeat 20] [--json OUT]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS_FILE = os.path.join(HERE, "sim-model.ut")

# (kernel, shape bindings, params): sizes large enough that a run takes well over the
# launch overhead, small enough that the traced interpreter takes seconds.
CASES = [
    ("Add", "N=4194304", ""),
    ("Axpy", "N=4194304", "alpha=2"),
    ("Exp", "N=1048576", ""),
    ("RowSum", "M=2048,N=2048", ""),
    ("ColSum", "M=2048,N=2048", ""),
    ("Transpose", "M=2048,N=2048", ""),
    ("Gemv", "M=2048,N=2048", ""),
    ("MatMul", "M=256,K=256,N=256", ""),
    ("BatchedMatMul", "Bt=4,M=128,K=128,N=128", ""),
    ("Softmax", "M=1024,N=1024", ""),
    ("LayerNorm", "M=1024,N=1024", ""),
    ("Conv2d", "C=16,H=66,W=66,F=16,R=3,S=3", ""),
]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(HERE)
    ap.add_argument("--unitile", default=os.path.join(root, "build", "bin", "unitile"))
    ap.add_argument("--repeat", type=int, default=20, help="timed cpu runs per kernel (median)")
    ap.add_argument("--json", help="write every number to this file")
    ap.add_argument("--only", help="comma-separated kernel names")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="unitile-sim-model-")
    host = os.path.join(tmp, "host-cpu.toml")
    with open(host, "w") as f:
        f.write(run([args.unitile, "devices", "--print-hcd", "host-cpu"]))

    rows = []
    only = set(args.only.split(",")) if args.only else None
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'kernel':<14} {'shape':<30} {'estimate_ms':>12} {'median_ms':>10} {'min_ms':>10} "
          f"{'est/median':>10} {'est/min':>8}  bound")
    for kernel, shape, params in CASES:
        if only and kernel not in only:
            continue
        common = [KERNELS_FILE, "--kernel", kernel, "--shape", shape]
        if params:
            common += ["--param", params]
        out = run([args.unitile, "run", *common, "--device", "cpu", "--repeat", str(args.repeat)])
        m = re.search(r"median_ms=([0-9.e+-]+) min_ms=([0-9.e+-]+)", out)
        measured, fastest = float(m.group(1)) * 1e-3, float(m.group(2)) * 1e-3
        report = os.path.join(tmp, kernel + ".json")
        run([args.unitile, "run", *common, "--device", "sim", "--hcd", host, "--report-warm",
             "--report-json", report])
        with open(report) as f:
            rep = json.load(f)["kernels"][0]
        est = rep["time_s"]
        bounds = ",".join(sorted({l["bound"] for l in rep["launches"]}))
        ratio = est / measured
        rows.append({"kernel": kernel, "shape": shape, "estimate_s": est, "measured_s": measured,
                     "measured_min_s": fastest, "ratio": ratio, "ratio_min": est / fastest,
                     "bound": bounds, "report": rep})
        print(f"{kernel:<14} {shape:<30} {est*1e3:12.4g} {measured*1e3:10.4g} {fastest*1e3:10.4g} "
              f"{ratio:10.3f} {est/fastest:8.3f}  {bounds}", flush=True)

    if not rows:
        sys.exit("no kernel ran")
    logs = [math.log(r["ratio"]) for r in rows]
    geo = math.exp(sum(logs) / len(logs))
    err = math.exp(sum(abs(x) for x in logs) / len(logs))
    within2 = sum(1 for r in rows if 0.5 <= r["ratio"] <= 2)
    geo_min = math.exp(sum(math.log(r["ratio_min"]) for r in rows) / len(rows))
    print(f"geometric mean est/median = {geo:.3f} (est/min {geo_min:.3f}); geometric mean error factor "
          f"max(r,1/r) = {err:.3f}; {within2}/{len(rows)} within 2x of the median")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"geomean_ratio": geo, "geomean_ratio_min": geo_min, "geomean_error_factor": err,
                       "kernels": rows}, f, indent=2)


if __name__ == "__main__":
    main()
