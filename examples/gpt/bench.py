"""Time one training step (forward, backward, AdamW update) of the GPT of examples/gpt
with Unitile and with its PyTorch reference on the CPU, same data, same thread count.

    python examples/gpt/bench.py --threads 2 --steps 15

Both start from the same parameters and see the same batches. After --warmup steps of
each (Unitile's first step compiles), the two are timed step by step in alternation, so a
change of load on a shared machine hits both alike; the report gives each one's median
and the ratio torch / unitile (above 1: Unitile is faster)."""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2, help="threads for both (UNITILE_NUM_THREADS, torch)")
    p.add_argument("--steps", type=int, default=15, help="timed steps of each")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps of each first")
    p.add_argument("--device", default="cpu")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.threads < 1 or a.steps < 1 or a.warmup < 1:
        p.error("--threads, --steps and --warmup must be at least 1")
    os.environ["UNITILE_NUM_THREADS"] = str(a.threads)  # read when the cpu device starts
    # Debian's torch does its GEMMs in OpenBLAS, whose own thread pool ignores
    # torch.set_num_threads and reads this when the library loads (at `import torch`).
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)

    import numpy as np
    import torch
    try:
        import unitile as tl
    except ImportError:
        sys.path.insert(0, os.path.join(HERE, "..", "..", "build", "python"))
        import unitile as tl
    import data
    import model
    import torch_gpt

    torch.set_num_threads(a.threads)
    tok, tokens = data.load(a.vocab)
    cfg = model.Config(vocab=tok.vocab_size, seq=a.seq, layers=a.layers, d_model=a.d_model, heads=a.heads)
    params = model.init_params(cfg, a.seed)
    lr, wd = 1e-3, 0.01
    ours = tl.TrainStep(lambda q, x, y: model.loss(q, x, y, cfg), params, tl.optim.AdamW(lr=lr, weight_decay=wd),
                        device=a.device)
    theirs = torch_gpt.Trainer(cfg, params, lr=lr, weight_decay=wd)

    def timed(step, x, y):
        t0 = time.perf_counter()
        loss = step(x, y)
        return time.perf_counter() - t0, loss

    start = time.perf_counter()
    first, _ = timed(ours.step, *data.batch(tokens, 0, a.seed, a.batch, cfg.seq))
    for s in range(a.warmup):
        x, y = data.batch(tokens, s, a.seed, a.batch, cfg.seq)
        if s:
            ours.step(x, y)
        theirs.step(x, y)
    t_ours, t_theirs, last = [], [], None
    for s in range(a.warmup, a.warmup + a.steps):
        x, y = data.batch(tokens, s, a.seed, a.batch, cfg.seq)
        dt, lo = timed(ours.step, x, y)
        t_ours.append(dt)
        dt, lt = timed(theirs.step, x, y)
        t_theirs.append(dt)
        last = (lo, lt)
    mo, mt = float(np.median(t_ours)), float(np.median(t_theirs))
    n = sum(v.size for v in params.values())
    print(f"GPT {cfg}, {n} parameters, batch {a.batch}, {a.threads} thread(s), device {a.device}")
    print(f"unitile first step (compiles): {first:.2f} s")
    print(f"unitile step: median {1e3 * mo:8.2f} ms  (min {1e3 * min(t_ours):.2f}, max {1e3 * max(t_ours):.2f}, "
          f"{a.steps} steps)")
    print(f"torch   step: median {1e3 * mt:8.2f} ms  (min {1e3 * min(t_theirs):.2f}, max {1e3 * max(t_theirs):.2f}, "
          f"torch {torch.__version__})")
    print(f"ratio torch/unitile: {mt / mo:.2f}x  (above 1: Unitile faster)")
    print(f"last losses: unitile {last[0]:.6f} torch {last[1]:.6f}; total {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
