"""tl.TrainStep against PyTorch: a small MLP regression trained step for step by Unitile
and by torch.optim from the same initial parameters and batches, with SGD + momentum
(and dampening, and Nesterov), Adam, AdamW under warm-up + cosine, and clipping by the
global norm. Losses, every parameter's gradient after step 1 and every parameter at the
end must agree within 1e-9 relative in f64 (measured: 3e-16) and 1e-4 in f32 (measured:
3e-6). Runs on cpu only: the graph executor's own tests cover the other devices."""

import numpy as np
import pytest

import unitile as tl

torch = pytest.importorskip("torch")

SIZES = (4, 8, 3)  # inputs, hidden, outputs
ROWS = 6
STEPS = 5


def mlp_loss(p, x, y):
    h = tl.tanh(x @ p["l1.w"] + p["l1.b"])
    return ((h @ p["l2.w"] + p["l2.b"] - y) ** 2).mean()


def torch_loss(p, x, y):
    h = torch.tanh(x @ p["l1.w"] + p["l1.b"])
    return ((h @ p["l2.w"] + p["l2.b"] - y) ** 2).mean()


def initial(dtype, seed=3):
    rng = np.random.default_rng(seed)
    i, h, o = SIZES
    return {"l1.w": rng.normal(0, 0.5, (i, h)).astype(dtype), "l1.b": rng.normal(0, 0.1, h).astype(dtype),
            "l2.w": rng.normal(0, 0.5, (h, o)).astype(dtype), "l2.b": rng.normal(0, 0.1, o).astype(dtype)}


def batches(dtype, seed=4):
    rng = np.random.default_rng(seed)
    return [(rng.normal(0, 1, (ROWS, SIZES[0])).astype(dtype), rng.normal(0, 1, (ROWS, SIZES[2])).astype(dtype))
            for _ in range(STEPS)]


# (name, tl optimizer, torch optimizer class and arguments, clip_norm)
CONFIGS = {
    "sgd_momentum": (lambda: tl.optim.SGD(0.05, momentum=0.9, weight_decay=1e-3),
                     lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3, foreach=False),
                     None, None),
    "sgd_dampening_clip": (
        lambda: tl.optim.SGD(0.1, momentum=0.8, dampening=0.3),
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.8, dampening=0.3, foreach=False), None, 0.5),
    "sgd_nesterov": (lambda: tl.optim.SGD(0.1, momentum=0.8, nesterov=True),
                     lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.8, nesterov=True, foreach=False), None, None),
    "adam": (lambda: tl.optim.Adam(1e-2, betas=(0.8, 0.99), weight_decay=1e-2),
             lambda ps: torch.optim.Adam(ps, lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-2, foreach=False),
             None, None),
    "adamw_warmup_cosine_clip": (
        lambda: tl.optim.AdamW(tl.optim.WarmupCosine(3e-2, 2, 4, 3e-3), weight_decay=0.1),
        lambda ps: torch.optim.AdamW(ps, lr=3e-2, weight_decay=0.1, foreach=False),
        tl.optim.WarmupCosine(3e-2, 2, 4, 3e-3), 0.3),
}


def torch_training(config, dtype):
    _, make_opt, schedule, clip = CONFIGS[config]
    tdt = torch.float64 if dtype == np.float64 else torch.float32
    params = {k: torch.nn.Parameter(torch.tensor(v, dtype=tdt)) for k, v in initial(dtype).items()}
    opt = make_opt(list(params.values()))
    sched = None
    if schedule is not None:
        base = opt.param_groups[0]["lr"]
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: schedule(s) / base)
    losses, first_grads = [], None
    for x, y in batches(dtype):
        opt.zero_grad()
        loss = torch_loss(params, torch.tensor(x), torch.tensor(y))
        loss.backward()
        if first_grads is None:
            first_grads = {k: p.grad.detach().numpy().copy() for k, p in params.items()}
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(list(params.values()), clip)
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(loss.item())
    return losses, first_grads, {k: p.detach().numpy() for k, p in params.items()}


# Every configuration in f64; two in f32 as well (to keep the suite short).
CASES = [(c, np.float64) for c in CONFIGS] + [("sgd_momentum", np.float32), ("adamw_warmup_cosine_clip", np.float32)]


@pytest.mark.parametrize("config,dtype", CASES, ids=[f"{c}-{np.dtype(d).name}" for c, d in CASES])
def test_training_matches_torch_step_for_step(config, dtype):
    make_tl, _, _, clip = CONFIGS[config]
    rtol = 1e-9 if dtype == np.float64 else 1e-4
    want_losses, want_grads, want_params = torch_training(config, dtype)
    step = tl.TrainStep(mlp_loss, initial(dtype), make_tl(), clip_norm=clip, device="cpu", keep_grads=True)
    for s, (x, y) in enumerate(batches(dtype)):
        loss = step.step(x, y)
        assert loss == pytest.approx(want_losses[s], rel=rtol), f"step {s}"
        if s == 0:
            for k, g in step.grads.items():
                np.testing.assert_allclose(g, want_grads[k], rtol=rtol, atol=rtol * 1e-2, err_msg=k)
    assert step.step_count == STEPS
    for k, v in step.params.items():
        assert v.dtype == dtype
        np.testing.assert_allclose(v, want_params[k], rtol=rtol, atol=rtol * 1e-2, err_msg=k)


def test_a_schedule_never_recompiles_and_shapes_do():
    step = tl.TrainStep(mlp_loss, initial(np.float64), tl.optim.AdamW(tl.optim.WarmupCosine(1e-2, 2, 10)))
    x, y = batches(np.float64)[0]
    step.step(x, y)
    step.step(x, y)
    assert len(step._programs) == 1
    assert step.lr == pytest.approx(1e-2)
    step.step(x[:3], y[:3])  # another batch shape: a second program, the same state
    assert len(step._programs) == 2 and step.step_count == 3


# Parameter groups: (tl optimizer, torch optimizer over the groups, schedule or None).
# The torch groups list the parameters by key; the default group is the first.
def _torch_groups(params, groups):
    grouped = set(k for g in groups for k in g["params"])
    out = [{"params": [params[k] for k in params if k not in grouped]}]
    for g in groups:
        out.append({**{k: v for k, v in g.items() if k != "params"}, "params": [params[k] for k in g["params"]]})
    return out


BIASES = ["l1.b", "l2.b"]
GROUP_CONFIGS = {
    # GPT-style: no decay on biases; the output layer with its own rate (a number scaling
    # the schedule, as torch's LambdaLR scales each group's rate) and betas.
    "adamw_no_decay_on_biases": (
        lambda: tl.optim.AdamW(tl.optim.WarmupCosine(3e-2, 2, 4, 3e-3), weight_decay=0.1, param_groups=[
            {"params": lambda k: k.endswith(".b"), "weight_decay": 0.0},
            {"params": ["l2.w"], "lr": 1e-2, "betas": (0.8, 0.99)}]),
        lambda ps: torch.optim.AdamW(_torch_groups(ps, [{"params": BIASES, "weight_decay": 0.0},
                                                        {"params": ["l2.w"], "lr": 1e-2, "betas": (0.8, 0.99)}]),
                                     lr=3e-2, weight_decay=0.1, foreach=False),
        tl.optim.WarmupCosine(3e-2, 2, 4, 3e-3)),
    # Momentum with dampening for the weights (a first update of its own), plain SGD at
    # another rate for the biases (no momentum buffer at all).
    "sgd_momentum_groups": (
        lambda: tl.optim.SGD(0.05, momentum=0.9, dampening=0.2, weight_decay=1e-3, param_groups=[
            {"params": BIASES, "momentum": 0.0, "lr": 0.1, "weight_decay": 0.0}]),
        lambda ps: torch.optim.SGD(_torch_groups(ps, [{"params": BIASES, "momentum": 0.0, "lr": 0.1,
                                                       "weight_decay": 0.0}]),
                                   lr=0.05, momentum=0.9, dampening=0.2, weight_decay=1e-3, foreach=False),
        None),
    "adam_groups": (
        lambda: tl.optim.Adam(1e-2, param_groups=[{"params": ["l2.w", "l2.b"], "weight_decay": 0.05, "eps": 1e-6}]),
        lambda ps: torch.optim.Adam(_torch_groups(ps, [{"params": ["l2.w", "l2.b"], "weight_decay": 0.05,
                                                        "eps": 1e-6}]), lr=1e-2, foreach=False),
        None),
}
GROUP_CASES = [(c, np.float64) for c in GROUP_CONFIGS] + [("adamw_no_decay_on_biases", np.float32)]


@pytest.mark.parametrize("config,dtype", GROUP_CASES, ids=[f"{c}-{np.dtype(d).name}" for c, d in GROUP_CASES])
def test_parameter_groups_match_torch_param_groups(config, dtype):
    make_tl, make_torch, schedule = GROUP_CONFIGS[config]
    tdt = torch.float64 if dtype == np.float64 else torch.float32
    params = {k: torch.nn.Parameter(torch.tensor(v, dtype=tdt)) for k, v in initial(dtype).items()}
    opt = make_torch(params)
    sched = None
    if schedule is not None:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: schedule(s) / 3e-2)
    step = tl.TrainStep(mlp_loss, initial(dtype), make_tl(), device="cpu")
    # f64: the same formulas in the same order; f32: rounding of the two libraries (Adam's
    # normalized steps carry it into elements near 0: absolute 1e-5 of parameters ~1).
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (1e-5, 1e-5)
    for s, (x, y) in enumerate(batches(dtype)):
        opt.zero_grad()
        want = torch_loss(params, torch.tensor(x), torch.tensor(y))
        want.backward()
        opt.step()
        if sched is not None:
            sched.step()
        assert step.step(x, y) == pytest.approx(want.item(), rel=rtol), f"step {s}"
    for k, v in step.params.items():
        np.testing.assert_allclose(v, params[k].detach().numpy(), rtol=rtol, atol=atol, err_msg=k)


def test_parameter_groups_are_checked():
    with pytest.raises(tl.Error, match=r"param_groups\[0\]: AdamW has no setting momentum"):
        tl.optim.AdamW(param_groups=[{"params": ["l1.b"], "momentum": 0.9}])
    with pytest.raises(tl.Error, match=r"param_groups\[0\] must be a dict with 'params'"):
        tl.optim.SGD(0.1, param_groups=[{"lr": 0.1}])
    with pytest.raises(tl.Error, match="betas must be in"):
        tl.optim.Adam(param_groups=[{"params": ["l1.b"], "betas": (0.9, 2.0)}])
    opt = tl.optim.AdamW(param_groups=[{"params": ["l1.b", "nope"], "weight_decay": 0.0}])
    with pytest.raises(tl.Error, match="param_groups\\[0\\] names nope, which is not a parameter"):
        tl.TrainStep(mlp_loss, initial(np.float64), opt)
    opt = tl.optim.AdamW(param_groups=[{"params": ["l1.b"], "weight_decay": 0.0}, {"params": ["l1.b"]}])
    with pytest.raises(tl.Error, match=r"parameter 'l1.b' is in param_groups\[0\] and param_groups\[1\]"):
        tl.TrainStep(mlp_loss, initial(np.float64), opt)
    assert opt.param_groups[0] == {"params": ["l1.b"], "weight_decay": 0.0}
