"""The training API: tl.optim's optimizers and schedules, and tl.TrainStep's checks,
state and parameter files. (Training itself against PyTorch: test_train_torch.py.)"""

import math

import numpy as np
import pytest

import unitile as tl


def test_warmup_cosine_matches_its_formula():
    s = tl.optim.WarmupCosine(base_lr=0.3, warmup_steps=3, total_steps=10, min_lr=0.03)
    for step in range(14):
        if step < 3:
            want = 0.3 * (step + 1) / 3
        elif step >= 10:
            want = 0.03
        else:
            want = 0.03 + 0.27 * 0.5 * (1 + math.cos(math.pi * (step - 3) / 7))
        assert s(step) == pytest.approx(want, rel=1e-15), step
    assert tl.optim.Constant(0.5)(1000) == 0.5


def test_warmup_cosine_equals_torch_lambda_schedule():
    torch = pytest.importorskip("torch")
    s = tl.optim.WarmupCosine(1e-2, 4, 20, 1e-3)
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1e-2)

    def factor(step):
        if step < 4:
            return (step + 1) / 4
        progress = min((step - 4) / 16, 1.0)
        return (1e-3 + (1e-2 - 1e-3) * 0.5 * (1 + math.cos(math.pi * progress))) / 1e-2

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    for step in range(25):
        assert s(step) == pytest.approx(opt.param_groups[0]["lr"], rel=1e-12), step
        opt.step()
        sched.step()


def test_optimizer_settings_are_checked_at_once():
    with pytest.raises(tl.Error, match=r"betas must be in \[0, 1\)"):
        tl.optim.AdamW(betas=(0.9, 1.5))
    with pytest.raises(tl.Error, match="nesterov needs a momentum above 0"):
        tl.optim.SGD(0.1, nesterov=True)
    with pytest.raises(tl.Error, match="total_steps must be at least warmup_steps"):
        tl.optim.WarmupCosine(1e-3, 100, 10)
    with pytest.raises(tl.Error, match="lr must be a number or a schedule"):
        tl.optim.Adam(lr="fast")
    with pytest.raises(tl.Error, match="betas must be a pair"):
        tl.optim.Adam(betas=0.9)
    assert tl.optim.Adam().state_names == ["m", "v"]
    assert tl.optim.SGD(0.1, momentum=0.9).state_names == ["momentum"]
    assert tl.optim.SGD(0.1).state_names == []
    assert tl.optim.AdamW(lr=tl.optim.WarmupCosine(1.0, 2, 4)).lr_at(0) == 0.5


def mse(p, x, y):
    return ((x @ p["w"] + p["b"] - y) ** 2).mean()


def test_train_step_checks_its_arguments():
    with pytest.raises(tl.Error, match="params must be a non-empty dict"):
        tl.TrainStep(mse, {}, tl.optim.SGD(0.1))
    with pytest.raises(tl.Error, match="parameter 'w' is int64: parameters must be floats"):
        tl.TrainStep(mse, {"w": np.ones((2, 2), dtype=np.int64)}, tl.optim.SGD(0.1))
    with pytest.raises(tl.Error, match="clip_norm must be a number above 0"):
        tl.TrainStep(mse, {"w": np.ones(2)}, tl.optim.SGD(0.1), clip_norm=0)
    with pytest.raises(TypeError, match="optimizer must be tl.optim.SGD"):
        tl.TrainStep(mse, {"w": np.ones(2)}, "adam")


def test_params_are_copied_and_saved_and_loaded(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    ts = tl.TrainStep(mse, {"w": w, "b": np.zeros(2, np.float32)}, tl.optim.AdamW(1e-2))
    w[0, 0] = 100  # the step holds its own copy
    assert ts.params["w"][0, 0] == 0
    assert ts.step_count == 0 and ts.lr == 1e-2
    ts.set_params({"b": np.full(2, 7, np.float32)})
    path = tmp_path / "p.npz"
    ts.save(path)
    other = tl.TrainStep(mse, {"w": np.zeros((3, 2), np.float32), "b": np.zeros(2, np.float32)}, tl.optim.SGD(0.1))
    other.load(path, optimizer_state=False)  # an AdamW file into an SGD step: the parameters alone
    np.testing.assert_array_equal(other.params["w"], ts.params["w"])
    np.testing.assert_array_equal(other.params["b"], [7, 7])
    with pytest.raises(tl.Error, match="parameter 'b' is f32\\[2\\] but the new value is f64\\[2\\]"):
        other.set_params({"b": np.zeros(2)})
    with pytest.raises(tl.Error, match="no parameter named 'c'"):
        other.set_params({"c": np.zeros(2)})
    np.savez(tmp_path / "q.npz", w=np.zeros((3, 2), np.float32))
    with pytest.raises(tl.Error, match="missing parameters b"):
        other.load(tmp_path / "q.npz")
    with pytest.raises(tl.Error, match="keeps no gradients"):
        other.grads


def test_bad_loss_functions_and_batches_are_clear_errors():
    ts = tl.TrainStep(lambda p, x: x @ p["w"], {"w": np.ones((3, 2))}, tl.optim.SGD(0.1))
    with pytest.raises(tl.Error, match=r"test_train.py:\d+: error: the loss must be a single float value, got f64\[4, 2\]"):
        ts.step(np.ones((4, 3)))
    ts = tl.TrainStep(lambda p, x: 3.0, {"w": np.ones((3, 2))}, tl.optim.SGD(0.1))
    with pytest.raises(tl.Error, match="must return a tensor computed from its inputs"):
        ts.step(np.ones((4, 3)))
    ts = tl.TrainStep(lambda p, x, k: (x @ p["w"]).sum() * k, {"w": np.ones((3, 2))}, tl.optim.SGD(0.1))
    with pytest.raises(tl.Error, match="batch item 1 is a float, not an array"):
        ts.step(np.ones((4, 3)), 2.0)
    assert ts.step_count == 0
