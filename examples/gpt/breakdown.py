"""Where a training step of the GPT of examples/gpt spends its time, in Unitile and in
its PyTorch reference, on the same data and thread count.

    python examples/gpt/breakdown.py --threads 1 --steps 8

Unitile: `tl.profile` around each step; each kernel's time is its launches summed per
step, then its minimum over the steps (a shared machine's load only ever adds time), and
kernels are summed by what they compute (read from `TrainStep.describe()`). PyTorch:
`torch.profiler` around each step, each op's self CPU time per step (ops grouped by name
and input shapes), minimum over the steps."""

import argparse
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PARTS = [  # (what a kernel computes, the ops that mark it), first match wins
    ("linear forward (GEMM + bias)", {"linear"}),
    ("linear backward (dX, dW, dB)", {"vjp:linear"}),
    ("attention forward", {"scaled_dot_product_attention"}),
    ("attention backward", {"scaled_dot_product_attention_grad"}),
    ("AdamW updates", {"adamw"}),
    ("gelu forward", {"gelu"}),
    ("gelu backward", {"vjp:gelu"}),
    ("layernorm backward", {"vjp:layernorm"}),
    ("layernorm forward (+ residual add)", {"layernorm"}),
    ("cross-entropy", {"cross_entropy", "cross_entropy_grad", "vjp:cross_entropy"}),
    ("embedding forward/backward", {"embedding", "embedding_grad", "vjp:add"}),
]


def kernel_ops(describe):
    """kernel name -> the ops of its group (vjp nodes as vjp:<forward op>)."""
    ops, current = {}, None
    for line in describe.splitlines():
        m = re.match(r"\s*// kernel (\S+) \(", line)
        if m:
            current = m.group(1)
            ops[current] = []
            continue
        if line.strip().startswith("//"):
            current = None
            continue
        m = re.match(r"\s*%[\w, %]+ = (\w+)\(", line)
        if m and current:
            op = m.group(1)
            if op == "vjp":
                op = "vjp:" + re.search(r'op = "(\w+)"', line).group(1)
            ops[current].append(op)
    return ops


def part_of(ops):
    for name, marks in PARTS:
        if marks & set(ops):
            return name
    return "data movement and other"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=8, help="profiled steps of each (after 3 warm-up steps)")
    p.add_argument("--top", type=int, default=15, help="slowest kernels / ops listed")
    a = p.parse_args(argv)
    os.environ["UNITILE_NUM_THREADS"] = str(a.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)  # before torch loads OpenBLAS
    import torch
    from torch.profiler import ProfilerActivity, profile
    try:
        import unitile as tl
    except ImportError:
        sys.path.insert(0, os.path.join(HERE, "..", "..", "build", "python"))
        import unitile as tl
    import data
    import model
    import torch_gpt

    torch.set_num_threads(a.threads)
    tok, tokens = data.load(256)
    cfg = model.Config(vocab=tok.vocab_size)
    params = model.init_params(cfg, 0)
    ours = tl.TrainStep(lambda q, x, y: model.loss(q, x, y, cfg), params, tl.optim.AdamW(lr=1e-3, weight_decay=0.01),
                        device="cpu")
    theirs = torch_gpt.Trainer(cfg, params, lr=1e-3, weight_decay=0.01)
    for s in range(3):
        x, y = data.batch(tokens, s, 0, 8, cfg.seq)
        ours.step(x, y)
        theirs.step(x, y)
    ops = kernel_ops(ours.describe())

    per_step = []
    for s in range(3, 3 + a.steps):
        x, y = data.batch(tokens, s, 0, 8, cfg.seq)
        with tl.profile() as prof:
            ours.step(x, y)
        times = collections.defaultdict(float)
        for e in prof.events():
            times[e.name] += e.duration_us / 1e3
        per_step.append(times)
    best = {k: min(t.get(k, 0.0) for t in per_step) for k in per_step[0]}
    parts, counts = collections.defaultdict(float), collections.Counter()
    for k, ms in best.items():
        parts[part_of(ops.get(k, []))] += ms
        counts[part_of(ops.get(k, []))] += 1
    print(f"unitile, {a.threads} thread(s): {sum(best.values()):.2f} ms in {len(best)} kernels "
          f"(per kernel: minimum over {a.steps} steps)")
    for name, ms in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"  {ms:8.3f} ms  {counts[name]:3d} kernels  {name}")
    for k, ms in sorted(best.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"  {ms:8.3f} ms  {k}: {' '.join(ops.get(k, []))}")

    per_step = []
    for s in range(3, 3 + a.steps):
        x, y = data.batch(tokens, s, 0, 8, cfg.seq)
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as tp:
            theirs.step(x, y)
        per_step.append({(ev.key, str(ev.input_shapes)): ev.self_cpu_time_total / 1e3
                         for ev in tp.key_averages(group_by_input_shape=True)})
    keys = set.intersection(*(set(t) for t in per_step))
    best = {k: min(t[k] for t in per_step) for k in keys}
    print(f"torch, {a.threads} thread(s): {sum(best.values()):.2f} ms of self CPU time in {len(best)} ops "
          f"(per op and shapes: minimum over {a.steps} steps)")
    for (name, shapes), ms in sorted(best.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"  {ms:8.3f} ms  {name} {shapes[:80]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
