"""f16 and bf16 in vector loops (CHelperSet::need_half_lanes): the cpu device converts
whole vectors between f32 lanes and 16-bit storage with branch-free code. Every f16 bit
pattern, and f32 values on both sides of every f16 rounding boundary (ties included),
must convert to exactly the bits NumPy gives (f16) or round-to-nearest-even of the high
half gives (bf16, computed here in integers); sim's interpreter is checked the same way,
so the vector code and the scalar reference agree bit for bit."""
import os
import subprocess

import numpy as np
import pytest


def f16_boundaries():
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    f = h.astype(np.float32)
    bits = f[np.isfinite(f)].view(np.uint32)
    # 0x1000 above an f16 value is the halfway point to the next one (for normal f16).
    near = [bits + d for d in (1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000)] + [bits - 1]
    edge = np.array([0x7f800000, 0xff800000, 0x7fc00001, 0xffc12345, 0x7f800001, 0x477fefff,
                     0x477ff000, 0x47800000, 0x33000000, 0x33000001, 0x32ffffff, 0x387fffff,
                     0x38800000, 0x00000001, 0x80000001], dtype=np.uint32)
    x = np.concatenate([bits] + near + [edge]).view(np.float32)
    return np.resize(x, ((x.size + 255) // 256, 256))


def bf16_reference(x):
    """Round-to-nearest-even of the f32 bits' high half; NaN made quiet."""
    b = x.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def run_cast(unitile, device, x, to, tmp_path, tag):
    src, out = tmp_path / f"{tag}.npy", tmp_path / f"out-{tag}"
    np.save(src, x)
    subprocess.run([unitile, "run", "op:cast", "--device", device, "--input", f"X={src}",
                    "--attr", f"to={to}", "--output-dir", str(out)], check=True,
                   capture_output=True, text=True)
    return np.load(os.path.join(out, "Y.npy"))


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_f16_lanes_bit_exact(unitile, device, tmp_path):
    x = f16_boundaries()
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    got = run_cast(unitile, device, x, "f16", tmp_path, "f32")
    assert got.dtype == np.float16
    nan = np.isnan(want)
    assert np.isnan(got[nan]).all()
    bad = np.flatnonzero(got.view(np.uint16)[~nan] != want.view(np.uint16)[~nan])
    assert bad.size == 0, (f"{bad.size} f32 -> f16 conversions differ, first "
                           f"{x[~nan][bad[0]]!r} -> {got[~nan][bad[0]]!r}, expected {want[~nan][bad[0]]!r}")

    h = np.arange(65536, dtype=np.uint16).view(np.float16).reshape(256, 256)
    back = run_cast(unitile, device, h, "f32", tmp_path, "f16")
    ref = h.astype(np.float32)
    nan = np.isnan(ref)
    assert np.isnan(back[nan]).all()
    assert np.array_equal(back.view(np.uint32)[~nan], ref.view(np.uint32)[~nan])


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_bf16_lanes_bit_exact(unitile, device, tmp_path):
    x = f16_boundaries()
    got = run_cast(unitile, device, x, "bf16", tmp_path, "f32")
    assert got.dtype == np.uint16  # bf16 is written as its raw bits
    assert np.array_equal(got, bf16_reference(x))
