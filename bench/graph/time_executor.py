"""Time one graph three ways on one device: the graph executor with fusion, without
fusion (one kernel per node), and the whole graph as ONE graph_kernel. Prints the
median of --runs runs of each (compilation excluded: one warm-up run first) and the
memory plans. Usage (from the build tree's python package):

  PYTHONPATH=build/python .venv/bin/python bench/graph/time_executor.py --device cpu
"""

import argparse
import statistics
import time

import numpy as np

from unitile import _core

# A transformer-ish block: linear + bias + gelu, linear, residual, layernorm, softmax.
GRAPH = """graph block(x: f32[256, 256], w1: f32[256, 512], b1: f32[512], w2: f32[512, 256], s: f32[256]) {
  %h = matmul(x, w1)
  %hb = add(%h, b1)
  %g = gelu(%hb)
  %o = matmul(%g, w2)
  %r = add(%o, x)
  %n = layernorm(%r, s) {axis = -1}
  %m = reduce_max(%n) {axes = [1]}
  %d = sub(%n, %m)
  %e = exp(%d)
  %z = reduce_sum(%e) {axes = [1]}
  %p = div(%e, %z)
  return %p
}
"""


def median_ms(fn, runs):
    fn()  # warm-up (compiles nothing: everything is compiled before)
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    dev = _core.device(args.device)
    name, graph = _core.parse_graph(GRAPH)
    rng = np.random.default_rng(0)
    shapes = [(256, 256), (256, 512), (512,), (512, 256), (256,)]
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in shapes]
    ins = [_core.DeviceTensor.from_array(dev, a, False) for a in arrays]

    results = {}
    for label, fuse in (("executor, fused", True), ("executor, one kernel per node", False)):
        ex = _core.GraphExecutor(dev, graph, fuse=fuse, name=name)
        out = ex.run(ins)[0].numpy()
        results[label] = out
        ms = median_ms(lambda: ex.run(ins), args.runs)
        print(f"{label:32s} {ex.kernel_count:3d} kernels  {ms:8.3f} ms  "
              f"planned {ex.peak_bytes} B (no reuse {ex.no_reuse_bytes} B)")
    kernel = graph.kernel(name)
    compiled = kernel.compile(dev, {n: list(s) for n, s in zip(["x", "w1", "b1", "w2", "s"], shapes)}, {})
    named = {n: t for n, t in zip(["x", "w1", "b1", "w2", "s"], ins)}
    one = compiled.run(named, {})["out0"].numpy()
    ms = median_ms(lambda: compiled.run(named, {}), args.runs)
    print(f"{'one graph_kernel':32s} {1:3d} kernel   {ms:8.3f} ms")
    for label, out in results.items():
        np.testing.assert_allclose(out, one, rtol=1e-4, atol=1e-5, err_msg=label)
    print("all three agree (rtol 1e-4, atol 1e-5)")


if __name__ == "__main__":
    main()
