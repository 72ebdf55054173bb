"""Cases of the linear quantization ops (quantize_linear, dequantize_linear,
dynamic_quantize_linear, matmul_integer, qlinear_matmul) against NumPy, following the ONNX
operator definitions. Quantized outputs are integers and compared exactly, so the inputs
keep X / scale away from the rounding ties (x = (q + f) * scale with f in [0.1, 0.4] or
[0.6, 0.9]), where a last-bit difference in the division could flip the result."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(5151)
F32 = np.float32
RANGES = {np.uint8: (0, 255), np.int8: (-128, 127)}


def off_tie(shape, lo, hi, scale):
    """f32 values (q + f) * scale, q integer in [lo, hi), f away from 0.5 and from 0/1."""
    q = RNG.integers(lo, hi, size=shape)
    f = RNG.uniform(0.1, 0.4, size=shape) + np.where(RNG.uniform(size=shape) < 0.5, 0.5, 0.0)
    return ((q + f) * np.asarray(scale, np.float64)).astype(F32)


def saturate(v, dt):
    lo, hi = RANGES[dt]
    return np.clip(v, lo, hi).astype(dt)


def per_axis(v, axis, rank):
    """A 1-D per-channel array shaped to broadcast along `axis` of a rank-`rank` tensor."""
    if v.ndim == 0 or v.size == 1 and v.ndim == 1:
        return v.reshape(())
    shape = [1] * rank
    shape[axis] = v.size
    return v.reshape(shape)


def quantize_ref(i, a):
    x = i["X"]
    axis = a.get("axis", 1) % max(x.ndim, 1)
    s = per_axis(i["Scale"], axis, x.ndim)
    dt = i["ZeroPoint"].dtype.type if "ZeroPoint" in i else {"u8": np.uint8, "i8": np.int8}[a.get("dtype", "u8")]
    q = np.rint(x.astype(F32) / s.astype(F32)).astype(np.float64)
    if "ZeroPoint" in i:
        q = q + per_axis(i["ZeroPoint"], axis, x.ndim).astype(np.float64)
    return {"Y": saturate(q, dt)}


def dequantize_ref(i, a):
    x = i["X"]
    axis = a.get("axis", 1) % max(x.ndim, 1)
    v = x.astype(F32)
    if "ZeroPoint" in i:
        v = v - per_axis(i["ZeroPoint"], axis, x.ndim).astype(F32)
    return {"Y": (v * per_axis(i["Scale"], axis, x.ndim)).astype(F32)}


def dynamic_ref(i, a):
    x = i["X"].astype(F32)
    lo, hi = min(F32(0), x.min()), max(F32(0), x.max())
    scale = F32((hi - lo) / F32(255))
    zp = saturate(np.rint(-lo / scale), np.uint8)
    y = saturate(np.rint(x / scale).astype(np.float64) + float(zp), np.uint8)
    return {"Y": y, "YScale": np.asarray(scale, F32), "YZeroPoint": np.asarray(zp, np.uint8)}


def centered(v, zp, per_row):
    v = v.astype(np.int64)
    if zp is None:
        return v
    z = zp.astype(np.int64)
    if z.ndim == 1 and z.size > 1:
        z = z.reshape(-1, 1) if per_row else z.reshape(1, -1)
    return v - z.reshape(z.shape if z.ndim == 2 else ())


def matmul_integer_ref(i, a):
    y = np.matmul(centered(i["A"], i.get("AZeroPoint"), True), centered(i["B"], i.get("BZeroPoint"), False))
    return {"Y": y.astype(np.int32)}


def qlinear_ref(i, a):
    acc = np.matmul(centered(i["A"], i["AZeroPoint"], True), centered(i["B"], i["BZeroPoint"], False))
    mult = F32(F32(i["AScale"].reshape(()) * i["BScale"].reshape(())) / i["YScale"].reshape(()))
    q = np.rint(acc.astype(F32) * mult).astype(np.float64) + float(i["YZeroPoint"].reshape(()))
    return {"Y": saturate(q, i["YZeroPoint"].dtype.type)}


def cases():
    out = []
    # quantize_linear: per-tensor u8 with a zero point, i8 through the dtype attribute, a
    # per-channel scale on axis 1 and on the last axis, saturation at both ends
    s = np.asarray(0.05, F32)
    out.append(Case("quantize_linear", {"X": off_tie((4, 7), -140, 140, s), "Scale": s,
                                        "ZeroPoint": np.asarray(128, np.uint8)}, quantize_ref, cross=True))
    out.append(Case("quantize_linear", {"X": off_tie((3, 5, 2), -150, 150, s), "Scale": s},
                    quantize_ref, attrs={"dtype": "i8"}))
    cs = np.asarray([0.02, 0.1, 0.5], F32)
    xc = off_tie((2, 3, 5), -100, 100, cs.reshape(1, 3, 1))
    out.append(Case("quantize_linear", {"X": xc, "Scale": cs, "ZeroPoint": np.asarray([-3, 0, 7], np.int8)},
                    quantize_ref))
    cs4 = np.asarray([0.25, 0.125, 1.0, 0.5], F32)
    out.append(Case("quantize_linear", {"X": off_tie((6, 4), 0, 300, cs4), "Scale": cs4,
                                        "ZeroPoint": np.asarray([1, 2, 3, 4], np.uint8)},
                    quantize_ref, attrs={"axis": -1}))
    # dequantize_linear: u8 and i8 with zero points, i32 without, per-channel
    out.append(Case("dequantize_linear", {"X": RNG.integers(0, 256, (5, 6)).astype(np.uint8),
                                          "Scale": np.asarray(0.1, F32),
                                          "ZeroPoint": np.asarray(100, np.uint8)}, dequantize_ref, cross=True))
    out.append(Case("dequantize_linear", {"X": RNG.integers(-128, 128, (2, 3, 4)).astype(np.int8),
                                          "Scale": np.asarray([0.5, 0.25, 2.0], F32),
                                          "ZeroPoint": np.asarray([0, -5, 9], np.int8)}, dequantize_ref))
    out.append(Case("dequantize_linear", {"X": RNG.integers(-5000, 5000, (7,)).astype(np.int32),
                                          "Scale": np.asarray([0.01], F32)}, dequantize_ref, attrs={"axis": 0}))
    # dynamic_quantize_linear: a range across zero, an all-positive one (zero point 0)
    out.append(Case("dynamic_quantize_linear", {"X": RNG.uniform(-3, 5, (6, 9)).astype(F32)}, dynamic_ref))
    out.append(Case("dynamic_quantize_linear", {"X": RNG.uniform(0.5, 2, (4, 3, 5)).astype(F32)}, dynamic_ref))
    # matmul_integer: u8 x u8 with scalar zero points, i8 x i8 without, u8 x i8 batched
    # with per-row / per-column zero points
    a8 = RNG.integers(0, 256, (5, 13)).astype(np.uint8)
    b8 = RNG.integers(0, 256, (13, 7)).astype(np.uint8)
    out.append(Case("matmul_integer", {"A": a8, "B": b8, "AZeroPoint": np.asarray(12, np.uint8),
                                       "BZeroPoint": np.asarray(200, np.uint8)}, matmul_integer_ref, cross=True))
    # K = 700: blocks of 256 with a padded last one; extreme operands (255 - 0 against
    # 0 - 255), so every block's f32 sum is as large as the exactness bound allows.
    big_a = RNG.choice(np.array([0, 255], np.uint8), (6, 700))
    big_b = RNG.choice(np.array([0, 255], np.uint8), (700, 5))
    out.append(Case("matmul_integer", {"A": big_a, "B": big_b, "AZeroPoint": np.asarray(0, np.uint8),
                                       "BZeroPoint": np.asarray(255, np.uint8)}, matmul_integer_ref,
                    label="-k700"))
    out.append(Case("matmul_integer", {"A": RNG.integers(-128, 128, (2, 4, 9)).astype(np.int8),
                                       "B": RNG.integers(-128, 128, (9, 3)).astype(np.int8)}, matmul_integer_ref))
    out.append(Case("matmul_integer", {"A": RNG.integers(0, 256, (3, 6)).astype(np.uint8),
                                       "B": RNG.integers(0, 256, (2, 6, 5)).astype(np.uint8),
                                       "AZeroPoint": RNG.integers(0, 256, (3,)).astype(np.uint8),
                                       "BZeroPoint": RNG.integers(0, 256, (5,)).astype(np.uint8)},
                    matmul_integer_ref))
    # qlinear_matmul: u8 and i8 outputs, odd sizes
    for adt, ydt, (m, k, n) in ((np.uint8, np.uint8, (5, 11, 6)), (np.int8, np.int8, (3, 17, 4))):
        lo, hi = RANGES[adt]
        out.append(Case("qlinear_matmul", {
            "A": RNG.integers(lo, hi + 1, (m, k)).astype(adt), "AScale": np.asarray(0.03, F32),
            "AZeroPoint": np.asarray(lo + 100, adt),
            "B": RNG.integers(lo, hi + 1, (k, n)).astype(adt), "BScale": np.asarray(0.02, F32),
            "BZeroPoint": np.asarray(lo + 120, adt),
            "YScale": np.asarray(0.7, F32), "YZeroPoint": np.asarray(lo + 90, ydt)}, qlinear_ref))
    return out
