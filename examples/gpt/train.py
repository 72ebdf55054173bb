"""Train the GPT of examples/gpt on the shipped corpus with Unitile (or, with --impl torch,
with its PyTorch reference on the same data) and print `step <n> loss <x>` per step.

    python examples/gpt/train.py --steps 100 --device cpu
    python examples/gpt/train.py --steps 10 --layers 2 --d-model 64 --save gpt.npz

Batches depend only on --seed and the step number; the initial parameters come from
--seed too, or from --init PATH.npz (names and shapes as model.param_shapes)."""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import unitile  # noqa: F401  (installed, or on PYTHONPATH)
except ImportError:  # run from a source tree: the package scripts/setup.sh assembles in build/
    sys.path.insert(0, os.path.join(HERE, "..", "..", "build", "python"))

import data  # noqa: E402
import model  # noqa: E402


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # a user's error exits 1, like the unitile tools
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def parse_args(argv):
    p = _Parser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--steps", type=int, required=True, help="training steps to run")
    p.add_argument("--device", default="cpu", help="Unitile device (cpu, opencl, sim, cuda, ...)")
    p.add_argument("--impl", choices=["unitile", "torch"], default="unitile",
                   help="train with Unitile, or with the PyTorch reference (CPU) on the same data")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64, help="context length (tokens per window)")
    p.add_argument("--batch", type=int, default=8, help="windows per step")
    p.add_argument("--vocab", type=int, default=256, help="BPE vocabulary size (trained on the corpus)")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW's peak learning rate")
    p.add_argument("--weight-decay", type=float, default=0.01, help="AdamW's decoupled weight decay")
    p.add_argument("--no-decay-1d", action="store_true",
                   help="no weight decay on the biases and LayerNorm scales (the 1-D parameters), as GPT-2 "
                        "training does: a parameter group of their own")
    p.add_argument("--warmup", type=int, default=0,
                   help="warm-up steps; with a warm-up the rate then decays by a cosine to lr/10 at --steps")
    p.add_argument("--clip", type=float, default=None, help="clip gradients to this global L2 norm")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial parameters and of the batches")
    p.add_argument("--init", metavar="PATH.npz", help="initial parameters (instead of the seeded ones)")
    p.add_argument("--save", metavar="PATH.npz", help="write the trained parameters here")
    p.add_argument("--profile", metavar="PATH.json",
                   help="(unitile) profile the steps after the first (which compiles): print the per-kernel "
                        "table and timeline, write a Chrome trace here and an HTML report next to it")
    a = p.parse_args(argv)
    if a.steps < 0:
        p.error(f"--steps must be 0 or more, got {a.steps}")
    if a.batch < 1:
        p.error(f"--batch must be at least 1, got {a.batch}")
    if a.warmup < 0 or (a.warmup and a.warmup >= a.steps):
        p.error(f"--warmup must be between 0 and --steps - 1, got {a.warmup}")
    if a.profile and a.impl != "unitile":
        p.error("--profile profiles Unitile's kernels; it needs --impl unitile")
    if a.clip is not None and not a.clip > 0:
        p.error(f"--clip must be above 0, got {a.clip}")
    return p, a


def load_params(path, cfg):
    with np.load(path) as f:
        params = {k: f[k].astype(np.float32) for k in f.files}
    model.check_params(params, cfg)
    return params


def lr_at(args, step):
    """The learning rate of update `step` (0 for the first): constant, or linear warm-up
    then cosine decay to lr/10 (tl.optim.WarmupCosine's formula, for the torch side)."""
    if not args.warmup:
        return args.lr
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    floor = args.lr / 10
    progress = min(1.0, (step - args.warmup) / max(1, args.steps - args.warmup))
    return floor + 0.5 * (args.lr - floor) * (1 + np.cos(np.pi * progress))


def unitile_trainer(args, cfg, params):
    import unitile as tl
    lr = args.lr if not args.warmup else tl.optim.WarmupCosine(args.lr, args.warmup, args.steps, args.lr / 10)
    groups = [{"params": model.one_dimensional(params), "weight_decay": 0.0}] if args.no_decay_1d else None
    optimizer = tl.optim.AdamW(lr=lr, weight_decay=args.weight_decay, param_groups=groups)
    ts = tl.TrainStep(lambda p, x, y: model.loss(p, x, y, cfg), params, optimizer, clip_norm=args.clip,
                      device=args.device)
    return ts.step, lambda: ts.params


def torch_trainer(args, cfg, params):
    import torch_gpt
    t = torch_gpt.Trainer(cfg, params, lr=args.lr, weight_decay=args.weight_decay, clip_norm=args.clip,
                          no_decay=model.one_dimensional(params) if args.no_decay_1d else ())
    steps = [0]

    def step(x, y):
        loss = t.step(x, y, lr=lr_at(args, steps[0]))
        steps[0] += 1
        return loss

    return step, t.model.numpy_params


def main(argv=None):
    parser, args = parse_args(argv)
    tok, tokens = data.load(args.vocab)
    try:
        cfg = model.Config(vocab=tok.vocab_size, seq=args.seq, layers=args.layers, d_model=args.d_model,
                           heads=args.heads)
        params = load_params(args.init, cfg) if args.init else model.init_params(cfg, args.seed)
    except (ValueError, OSError) as e:
        parser.error(f"{args.init + ': ' if args.init else ''}{e}")
    n = sum(v.size for v in params.values())
    print(f"# {args.impl} on {args.device if args.impl == 'unitile' else 'cpu'}: {cfg}, {n} parameters, "
          f"{len(tokens)} tokens", flush=True)
    step, final = (unitile_trainer if args.impl == "unitile" else torch_trainer)(args, cfg, params)
    profiler = None
    start = time.perf_counter()
    for s in range(args.steps):
        x, y = data.batch(tokens, s, args.seed, args.batch, cfg.seq)
        if args.profile and s == 1:  # after the first step, which compiles
            import unitile as tl
            profiler = tl.profile()
            profiler.__enter__()
        loss = step(x, y)
        print(f"step {s + 1} loss {loss:.6f}", flush=True)
    if args.steps:
        print(f"# {args.steps} steps in {time.perf_counter() - start:.2f} s (the first includes compiling)")
    if profiler is not None:
        profiler.__exit__(None, None, None)
        print(profiler.table())
        print(profiler.timeline())
        profiler.export_chrome_trace(args.profile)
        html = os.path.splitext(args.profile)[0] + ".html"
        profiler.export_html(html)
        print(f"# profile of steps 2-{args.steps}: {args.profile}, {html}")
    elif args.profile:
        print("# --profile: nothing profiled (it needs at least 2 steps; the first compiles)")
    if args.save:
        np.savez(args.save, **final())
        print(f"# saved {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
