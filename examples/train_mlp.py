"""Train a small MLP regression with tl.TrainStep and with PyTorch from the same start,
check that the losses agree, and compare the time of one training step.

    PYTHONPATH=build/python python examples/train_mlp.py [--steps 20] [--device cpu]

AdamW with a warm-up + cosine schedule and clipping by the global norm; the whole step
(forward, backward, clip, update) is one compiled graph on the device. PyTorch runs with
one thread (the kernels Unitile generates for cpu run on one thread unless scheduled
otherwise)."""

import argparse
import time

import numpy as np

import unitile as tl


def loss_fn(p, x, y):
    h = tl.tanh(x @ p["w1"] + p["b1"])
    return ((h @ p["w2"] + p["b2"] - y) ** 2).mean()


def median_ms(step, repeat):
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        step()
        samples.append(time.perf_counter() - t)
    return float(np.median(samples)) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=30, help="timed steps after the checked ones")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n_in, n_out = 128, 32
    params = {"w1": rng.normal(0, 0.1, (n_in, args.hidden)).astype(np.float32), "b1": np.zeros(args.hidden, np.float32),
              "w2": rng.normal(0, 0.1, (args.hidden, n_out)).astype(np.float32), "b2": np.zeros(n_out, np.float32)}
    x = rng.normal(0, 1, (args.batch, n_in)).astype(np.float32)
    y = rng.normal(0, 1, (args.batch, n_out)).astype(np.float32)
    schedule = tl.optim.WarmupCosine(1e-2, 5, args.steps, 1e-3)

    ours = tl.TrainStep(loss_fn, params, tl.optim.AdamW(schedule), clip_norm=1.0, device=args.device)
    xt, yt = tl.tensor(x, args.device), tl.tensor(y, args.device)
    t = time.perf_counter()
    losses = [ours.step(xt, yt)]
    compile_s = time.perf_counter() - t
    losses += [ours.step(xt, yt) for _ in range(args.steps - 1)]

    import torch
    torch.set_num_threads(1)
    tp = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in params.items()}
    opt = torch.optim.AdamW(tp.values(), lr=1e-2, foreach=False)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: schedule(s) / 1e-2)
    tx, ty = torch.tensor(x), torch.tensor(y)

    def torch_step():
        opt.zero_grad()
        loss = ((torch.tanh(tx @ tp["w1"] + tp["b1"]) @ tp["w2"] + tp["b2"] - ty) ** 2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(tp.values(), 1.0)
        opt.step()
        sched.step()
        return loss.item()

    theirs = [torch_step() for _ in range(args.steps)]
    for s, (a, b) in enumerate(zip(losses, theirs)):
        print(f"step {s} loss {a:.6f} torch {b:.6f}")
    worst = max(abs(a - b) / abs(b) for a, b in zip(losses, theirs))
    print(f"largest relative loss difference: {worst:.2e} ({'ok' if worst < 1e-4 else 'FAILED'}, limit 1e-4 in f32)")
    ms_ours = median_ms(lambda: ours.step(xt, yt), args.repeat)
    ms_torch = median_ms(torch_step, args.repeat)
    print(f"first step (compiles the graph): {compile_s:.2f} s")
    print(f"step time, median of {args.repeat}: unitile {ms_ours:.3f} ms, torch {ms_torch:.3f} ms "
          f"({ms_torch / ms_ours:.2f}x)")
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    raise SystemExit(main())
