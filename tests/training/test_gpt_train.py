"""Training the GPT with tl.TrainStep against PyTorch (torch.optim.AdamW) from the same
initial parameters on the same batches: the gradients of the first step and the losses of
ten AdamW steps, and examples/gpt/train.py end to end."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import unitile as tl

import data
import model
import torch_gpt

TINY = dict(seq=16, layers=2, d_model=32, heads=4)
BATCH = 4
STEPS = 10
LR, WD = 3e-3, 0.01


@pytest.fixture(scope="module")
def corpus():
    return data.load(128)


def relative_max_diff(got, want):
    """max |got - want| over max |want|: one number per tensor, small for a close match
    whatever the tensor's scale."""
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def test_ten_adamw_steps_match_pytorch(corpus):
    tok, tokens = corpus
    cfg = model.Config(vocab=tok.vocab_size, **TINY)
    params = model.init_params(cfg, 0)
    ours = tl.TrainStep(lambda p, x, y: model.loss(p, x, y, cfg), params,
                        tl.optim.AdamW(lr=LR, weight_decay=WD), device="cpu", keep_grads=True)
    theirs = torch_gpt.Trainer(cfg, params, lr=LR, weight_decay=WD)
    losses_ours, losses_theirs = [], []
    for s in range(STEPS):
        x, y = data.batch(tokens, s, 0, BATCH, cfg.seq)
        losses_ours.append(ours.step(x, y))
        losses_theirs.append(theirs.step(x, y))
        if s == 0:
            got, want = ours.grads, theirs.model.numpy_grads()
            assert set(got) == set(want)
            for name in want:
                assert got[name].shape == want[name].shape, name
                err = relative_max_diff(got[name], want[name])
                assert err <= 1e-4, f"gradient of {name}: max abs diff / max abs value = {err:.2e}"
    rel = np.abs(np.array(losses_ours) - np.array(losses_theirs)) / np.abs(np.array(losses_theirs))
    assert np.all(rel <= 1e-4), f"losses differ: unitile {losses_ours}, torch {losses_theirs}"
    assert losses_theirs[-1] < losses_theirs[0] - 0.1  # the steps do train
    final_ours, final_theirs = ours.params, theirs.model.numpy_params()
    for name in final_theirs:
        assert relative_max_diff(final_ours[name], final_theirs[name]) <= 1e-3, name


def test_no_weight_decay_on_biases_and_layernorm_matches_pytorch_param_groups(corpus):
    """GPT-2's grouping: the 1-D parameters (biases, LayerNorm scales) in an AdamW param
    group without weight decay. The decay is strong enough (0.5) that ignoring the group
    would move the LayerNorm scales by ~1e-2 in 5 steps, far beyond the tolerance."""
    tok, tokens = corpus
    cfg = model.Config(vocab=tok.vocab_size, **TINY)
    params = model.init_params(cfg, 0)
    no_decay = model.one_dimensional(params)
    assert "h.0.ln_1.weight" in no_decay and "h.0.attn.c_attn.bias" in no_decay and "wte" not in no_decay
    ours = tl.TrainStep(lambda p, x, y: model.loss(p, x, y, cfg), params,
                        tl.optim.AdamW(lr=LR, weight_decay=0.5,
                                       param_groups=[{"params": no_decay, "weight_decay": 0.0}]), device="cpu")
    theirs = torch_gpt.Trainer(cfg, params, lr=LR, weight_decay=0.5, no_decay=no_decay)
    for s in range(5):
        x, y = data.batch(tokens, s, 0, BATCH, cfg.seq)
        got, want = ours.step(x, y), theirs.step(x, y)
        assert abs(got - want) <= 1e-4 * abs(want), f"step {s}: unitile {got}, torch {want}"
    final_ours, final_theirs = ours.params, theirs.model.numpy_params()
    for name in final_theirs:
        assert relative_max_diff(final_ours[name], final_theirs[name]) <= 1e-3, name


def test_train_script_prints_losses_and_round_trips_parameters(tmp_path):
    script = os.path.join(os.path.dirname(data.__file__), "train.py")
    flags = ["--layers", "1", "--d-model", "16", "--heads", "2", "--seq", "8", "--batch", "2", "--vocab", "80"]
    saved = tmp_path / "gpt.npz"
    run = subprocess.run([sys.executable, script, "--steps", "2", "--device", "cpu", "--save", str(saved), *flags],
                         capture_output=True, text=True, check=True)
    steps = re.findall(r"^step (\d+) loss (\S+)$", run.stdout, re.M)
    assert [int(n) for n, _ in steps] == [1, 2] and all(np.isfinite(float(v)) for _, v in steps)
    with np.load(saved) as f:
        assert set(f.files) == set(model.param_shapes(model.Config(vocab=80, seq=8, layers=1, d_model=16, heads=2)))
    # the saved parameters load back, and a mismatched configuration is the user's error (exit 1)
    again = subprocess.run([sys.executable, script, "--steps", "1", "--init", str(saved), *flags],
                           capture_output=True, text=True)
    assert again.returncode == 0 and re.search(r"^step 1 loss ", again.stdout, re.M), again.stderr
    bad = subprocess.run([sys.executable, script, "--steps", "1", "--init", str(saved), *flags, "--d-model", "32"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "has shape" in bad.stderr


def test_train_script_profiles_the_steps_after_the_first(tmp_path):
    script = os.path.join(os.path.dirname(data.__file__), "train.py")
    flags = ["--layers", "1", "--d-model", "16", "--heads", "2", "--seq", "8", "--batch", "2", "--vocab", "80"]
    trace = tmp_path / "prof.json"
    run = subprocess.run([sys.executable, script, "--steps", "3", "--device", "cpu", "--profile", str(trace), *flags],
                         capture_output=True, text=True, check=True)
    assert re.search(r"^cpu-0: \w+_k0\(", run.stdout, re.M), run.stdout  # the timeline line
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    kernels = {e["name"] for e in events}
    # every fused kernel of the step ran once per profiled step (steps 2 and 3)
    assert len(kernels) > 5 and len(events) >= 2 * len(kernels), (len(kernels), len(events))
    html = (tmp_path / "prof.html").read_text()
    assert all(k in html for k in kernels)
    bad = subprocess.run([sys.executable, script, "--steps", "2", "--impl", "torch", "--profile", str(trace), *flags],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "--profile" in bad.stderr
