"""A byte-pair-encoding tokenizer trained locally on the shipped corpus: the vocabulary
starts from the corpus's characters and grows by merging the most frequent adjacent pair
of symbols, inside words only, until it has the size asked for."""

import collections
import json
import re

# Words keep their leading space (" the"), punctuation runs and newlines are their own
# chunks, so a merge never joins the end of one word with the start of the next.
_CHUNK = re.compile(r"\n| ?[A-Za-z']+| ?[0-9]+| ?[^A-Za-z0-9'\s]+| +")


def _chunks(text):
    pieces = _CHUNK.findall(text)
    if sum(len(p) for p in pieces) != len(text):
        raise ValueError("tokenizer: the text has characters the chunk pattern does not cover "
                         "(tabs or carriage returns?)")
    return pieces


class Tokenizer:
    """Characters plus merges, in the order they were learned; a token's id is its index
    in `vocab`."""

    def __init__(self, chars, merges):
        self.chars = list(chars)
        self.merges = [tuple(m) for m in merges]
        self.vocab = self.chars + [a + b for a, b in self.merges]
        self._id = {s: i for i, s in enumerate(self.vocab)}
        if len(self._id) != len(self.vocab):
            raise ValueError("tokenizer: two merges make the same symbol")
        self._rank = {m: r for r, m in enumerate(self.merges)}
        self._cache = {}

    @property
    def vocab_size(self):
        return len(self.vocab)

    @staticmethod
    def train(text, vocab_size):
        """Learn merges on `text` until the vocabulary has `vocab_size` symbols (fewer when
        no pair occurs twice any more). Ties go to the lexicographically first pair, so the
        result depends only on the text and the size."""
        chars = sorted(set(text))
        if vocab_size < len(chars):
            raise ValueError(f"tokenizer: vocab_size {vocab_size} is below the corpus's "
                             f"{len(chars)} distinct characters")
        words = collections.Counter(_chunks(text))
        seqs = {w: tuple(w) for w in words}
        merges = []
        while len(chars) + len(merges) < vocab_size:
            pairs = collections.Counter()
            for w, n in words.items():
                s = seqs[w]
                for a, b in zip(s, s[1:]):
                    pairs[(a, b)] += n
            if not pairs:
                break
            best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
            if best[1] < 2:
                break
            a, b = best[0]
            merges.append((a, b))
            for w, s in seqs.items():
                if len(s) < 2:
                    continue
                out, i = [], 0
                while i < len(s):
                    if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                        out.append(a + b)
                        i += 2
                    else:
                        out.append(s[i])
                        i += 1
                seqs[w] = tuple(out)
        return Tokenizer(chars, merges)

    def _encode_chunk(self, chunk):
        ids = self._cache.get(chunk)
        if ids is not None:
            return ids
        s = list(chunk)
        for c in s:
            if c not in self._id:
                raise ValueError(f"tokenizer: character {c!r} is not in the vocabulary")
        while len(s) > 1:
            ranked = [(self._rank.get((s[i], s[i + 1]), len(self._rank)), i) for i in range(len(s) - 1)]
            rank, _ = min(ranked)
            if rank == len(self._rank):
                break
            a, b = self.merges[rank]
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            s = out
        ids = [self._id[t] for t in s]
        self._cache[chunk] = ids
        return ids

    def encode(self, text):
        out = []
        for chunk in _chunks(text):
            out.extend(self._encode_chunk(chunk))
        return out

    def decode(self, ids):
        return "".join(self.vocab[i] for i in ids)

    def to_json(self):
        return json.dumps({"chars": self.chars, "merges": [list(m) for m in self.merges]})

    @staticmethod
    def from_json(text):
        d = json.loads(text)
        return Tokenizer(d["chars"], d["merges"])
