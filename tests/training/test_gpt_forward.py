"""The GPT's forward loss in Unitile against PyTorch's on the same parameters and batch,
and the example's tokenizer and batches."""

import numpy as np
import pytest
import torch

import data
import model
import torch_gpt
from tokenizer import Tokenizer

TINY = dict(seq=16, layers=2, d_model=32, heads=4)


def test_tokenizer_round_trips_the_corpus_and_is_deterministic():
    text = open(data.CORPUS, encoding="utf-8").read()
    a = Tokenizer.train(text[:20000], 120)
    b = Tokenizer.from_json(a.to_json())
    assert a.vocab_size == 120 and a.merges == b.merges
    ids = a.encode(text[20000:30000])
    assert a.decode(ids) == text[20000:30000]
    assert len(ids) < 10000 * 0.7  # merges shorten the text
    with pytest.raises(ValueError, match="not in the vocabulary"):
        a.encode("caf\u00e9")


def test_batches_depend_only_on_seed_and_step():
    tokens = np.arange(1000, dtype=np.int64)
    x1, y1 = data.batch(tokens, 3, 7, 4, 16)
    x2, y2 = data.batch(tokens, 3, 7, 4, 16)
    x3, _ = data.batch(tokens, 4, 7, 4, 16)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, x1 + 1)  # targets are the next tokens
    assert not np.array_equal(x1, x3)


@pytest.mark.parametrize("seed", [0, 1])
def test_forward_loss_matches_pytorch(seed):
    cfg = model.Config(vocab=96, **TINY)
    params = model.init_params(cfg, seed)
    # Larger weights than the initialisation so attention and GELU are far from linear.
    rng = np.random.default_rng(seed + 10)
    params = {k: (v + rng.normal(0, 0.2, v.shape)).astype(np.float32) for k, v in params.items()}
    tokens = rng.integers(0, cfg.vocab, size=2000).astype(np.int64)
    x, y = data.batch(tokens, 0, seed, 4, cfg.seq)
    got = model.forward_loss_kernel(cfg)(params, x, y, device="cpu")
    with torch.no_grad():
        want = torch_gpt.make(cfg, params, torch.float64)(torch.from_numpy(x), torch.from_numpy(y)).item()
    # f32 against an f64 reference: 1e-4 relative.
    assert abs(got - want) <= 1e-4 * abs(want), (got, want)
