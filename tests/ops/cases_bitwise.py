"""Cases of the bitwise elementwise ops (bitwise_and/or/xor/not, bit_shift) against NumPy,
on every integer width, with broadcasting; shift counts stay in [0, bits) (outside it the
IR defines 0, or the sign fill shifting right, which NumPy does not promise)."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(21)


def ints(shape, dt):
    info = np.iinfo(dt)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dt)


def cases():
    out = []
    for dt in (np.int32, np.int64, np.uint8, np.int8, np.int16):
        a, b = ints((3, 5), dt), ints((5,), dt)
        for name, fn in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                         ("bitwise_xor", np.bitwise_xor)):
            out.append(Case(name, {"A": a, "B": b}, lambda i, a, fn=fn: {"C": fn(i["A"], i["B"])}))
        out.append(Case("bitwise_not", {"X": a}, lambda i, a: {"Y": np.invert(i["X"])}))
        bits = 8 * np.dtype(dt).itemsize
        counts = RNG.integers(0, bits, size=(3, 5)).astype(dt)
        for direction, fn in (("LEFT", np.left_shift), ("RIGHT", np.right_shift)):
            out.append(Case("bit_shift", {"A": a, "B": counts},
                            lambda i, a, fn=fn: {"C": fn(i["A"], i["B"])},
                            {"direction": direction}))
    return out
