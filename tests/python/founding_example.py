"""The founding document's example, as written there (only the module renamed)."""

import unitile as tl


@tl.kernel
def attention(q, k, v):
    scores = tl.matmul(q, k.T) / (q.shape[-1] ** 0.5)
    weights = tl.softmax(scores, axis=-1)
    return tl.matmul(weights, v)
