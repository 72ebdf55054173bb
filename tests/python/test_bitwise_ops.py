"""The bitwise library ops from Python (tl.bitwise_and, ..., tl.bit_shift) on integer
arrays against NumPy, on cpu and opencl."""

import numpy as np
import pytest

import unitile as tl

from conftest import RUN_DEVICES

DEVICES = [d for d in ("cpu", "opencl") if d in RUN_DEVICES]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_bitwise_ops_match_numpy(device, dtype, rng):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=(3, 7), endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, size=(7,), endpoint=True).astype(dtype)
    np.testing.assert_array_equal(tl.bitwise_and(a, b, device=device), a & b)
    np.testing.assert_array_equal(tl.bitwise_or(a, b, device=device), a | b)
    np.testing.assert_array_equal(tl.bitwise_xor(a, b, device=device), a ^ b)
    np.testing.assert_array_equal(tl.bitwise_not(a, device=device), ~a)
    bits = 8 * np.dtype(dtype).itemsize
    count = rng.integers(0, bits, size=(3, 7)).astype(dtype)
    np.testing.assert_array_equal(tl.bit_shift(a, count, direction="LEFT", device=device), a << count)
    np.testing.assert_array_equal(tl.bit_shift(a, count, direction="RIGHT", device=device), a >> count)


def test_bitwise_on_floats_is_an_error():
    with pytest.raises(tl.Error, match="bitwise_and"):
        tl.bitwise_and(np.ones(3, np.float32), np.ones(3, np.float32))
