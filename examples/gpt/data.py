"""The training data: the corpus shipped in data/, tokenized by a tokenizer trained on it
here, and batches of (input, next-token target) windows drawn from a seed."""

import os

import numpy as np

from tokenizer import Tokenizer

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shakespeare_coriolanus.txt")


def load(vocab_size):
    """(tokenizer, token ids as int64) for a BPE vocabulary of `vocab_size` symbols."""
    with open(CORPUS, encoding="utf-8") as f:
        text = f.read()
    tok = Tokenizer.train(text, vocab_size)
    return tok, np.asarray(tok.encode(text), dtype=np.int64)


def batch(tokens, step, seed, batch_size, seq):
    """Batch number `step` of the stream for `seed`: `batch_size` windows of `seq` tokens at
    random offsets, and the same windows one token later. The same (seed, step) always
    gives the same batch, whatever was drawn before."""
    if len(tokens) < seq + 2:
        raise ValueError(f"the corpus has {len(tokens)} tokens, too few for --seq {seq}")
    rng = np.random.default_rng([seed, step])
    starts = rng.integers(0, len(tokens) - seq - 1, size=batch_size)
    x = np.stack([tokens[s:s + seq] for s in starts])
    y = np.stack([tokens[s + 1:s + seq + 1] for s in starts])
    return x, y
