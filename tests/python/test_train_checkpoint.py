"""tl.TrainStep.save/load with the optimizer state: 5 steps, save, load into a fresh
TrainStep, 5 more steps gives bit for bit what 10 steps straight give (Adam's moments,
SGD's momentum buffer, the update count, which is the schedule's position and Adam's
bias correction). Files of parameters alone still load; files that do not fit are clear
errors that change nothing."""

import numpy as np
import pytest

import unitile as tl


def mlp_loss(p, x, y):
    h = tl.tanh(x @ p["l1.w"] + p["l1.b"])
    return ((h @ p["l2.w"] + p["l2.b"] - y) ** 2).mean()


def initial(dtype=np.float32):
    rng = np.random.default_rng(5)
    return {"l1.w": rng.normal(0, 0.5, (4, 8)).astype(dtype), "l1.b": rng.normal(0, 0.1, 8).astype(dtype),
            "l2.w": rng.normal(0, 0.5, (8, 3)).astype(dtype), "l2.b": rng.normal(0, 0.1, 3).astype(dtype)}


def batch(step, dtype=np.float32):
    rng = np.random.default_rng(100 + step)
    return rng.normal(0, 1, (6, 4)).astype(dtype), rng.normal(0, 1, (6, 3)).astype(dtype)


OPTIMIZERS = {
    # a schedule, parameter groups and clipping: everything that depends on the step count
    "adamw": (lambda: tl.optim.AdamW(tl.optim.WarmupCosine(3e-2, 3, 10, 3e-3), weight_decay=0.1, param_groups=[
        {"params": lambda k: k.endswith(".b"), "weight_decay": 0.0}]), 0.5),
    # dampening: the first update is a graph of its own, the resumed run must not rerun it
    "sgd_dampening": (lambda: tl.optim.SGD(0.05, momentum=0.9, dampening=0.3), None),
    "adam": (lambda: tl.optim.Adam(1e-2, betas=(0.8, 0.99)), None),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_resumed_training_equals_training_straight(tmp_path, name):
    make, clip = OPTIMIZERS[name]
    straight = tl.TrainStep(mlp_loss, initial(), make(), clip_norm=clip, device="cpu")
    want = [straight.step(*batch(s)) for s in range(10)]

    first = tl.TrainStep(mlp_loss, initial(), make(), clip_norm=clip, device="cpu")
    got = [first.step(*batch(s)) for s in range(5)]
    first.save(tmp_path / "ckpt.npz")
    resumed = tl.TrainStep(mlp_loss, {k: np.zeros_like(v) for k, v in initial().items()}, make(), clip_norm=clip,
                           device="cpu")
    resumed.load(tmp_path / "ckpt.npz")
    assert resumed.step_count == 5
    got += [resumed.step(*batch(s)) for s in range(5, 10)]
    assert got == want  # bit for bit
    for k, v in straight.params.items():
        np.testing.assert_array_equal(resumed.params[k], v, err_msg=k)
    for n in straight._names:
        for a, b in zip(straight._state.optimizer_state(n), resumed._state.optimizer_state(n)):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=n)


def test_the_file_holds_the_state_by_name(tmp_path):
    ts = tl.TrainStep(mlp_loss, initial(), tl.optim.SGD(0.1, momentum=0.9, param_groups=[
        {"params": ["l2.b"], "momentum": 0.0}]))
    ts.step(*batch(0))
    ts.save(tmp_path / "a.npz")
    with np.load(tmp_path / "a.npz") as f:
        assert sorted(f.files) == sorted(["l1.w", "l1.b", "l2.w", "l2.b", "__train_step__", "__optimizer__",
                                          "__optimizer__/momentum/l1.w", "__optimizer__/momentum/l1.b",
                                          "__optimizer__/momentum/l2.w"])
        assert int(f["__train_step__"]) == 1
        # torch's first momentum buffer is the gradient itself (dampening 0)
        np.testing.assert_allclose(f["__optimizer__/momentum/l1.b"], (initial()["l1.b"] - f["l1.b"]) / 0.1, atol=1e-5)
        assert f["__optimizer__/momentum/l1.b"].any()
    ts.save(tmp_path / "p.npz", optimizer_state=False)
    with np.load(tmp_path / "p.npz") as f:
        assert sorted(f.files) == ["l1.b", "l1.w", "l2.b", "l2.w"]


def test_parameter_files_still_load_and_misfits_are_errors(tmp_path):
    ts = tl.TrainStep(mlp_loss, initial(), tl.optim.AdamW(1e-2))
    ts.step(*batch(0))
    ts.save(tmp_path / "adamw.npz")
    # a file of parameters alone (an older save, or np.savez): the state stays as it is
    np.savez(tmp_path / "params.npz", **{k: v + 1 for k, v in initial().items()})
    fresh = tl.TrainStep(mlp_loss, initial(), tl.optim.AdamW(1e-2))
    fresh.load(tmp_path / "params.npz")
    assert fresh.step_count == 0
    np.testing.assert_array_equal(fresh.params["l1.w"], initial()["l1.w"] + 1)
    assert not fresh._state.optimizer_state("l1_w")[0].numpy().any()
    # another optimizer's state does not fit, and nothing changes
    sgd = tl.TrainStep(mlp_loss, initial(), tl.optim.SGD(0.1, momentum=0.9))
    with pytest.raises(tl.Error, match=r"adamw.npz: the optimizer state saved by .*AdamW.* does not fit .*SGD.*: "
                                       r"missing __optimizer__/momentum/l1.b.*; unexpected __optimizer__/m/l1.b.*optimizer_state=False"):
        sgd.load(tmp_path / "adamw.npz")
    np.testing.assert_array_equal(sgd.params["l1.w"], initial()["l1.w"])
    sgd.load(tmp_path / "adamw.npz", optimizer_state=False)
    np.testing.assert_array_equal(sgd.params["l1.w"], ts.params["l1.w"])
    assert sgd.step_count == 0
    # a parameter of another shape: nothing loaded, not even the parameters before it
    bad = dict(initial())
    bad["l2.b"] = np.zeros(4, np.float32)
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(tl.Error, match=r"parameter 'l2.b' is f32\[4\] in the file but f32\[3\] here"):
        fresh.load(tmp_path / "bad.npz")
    np.testing.assert_array_equal(fresh.params["l1.w"], initial()["l1.w"] + 1)
