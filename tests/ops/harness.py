"""Runs one library op case on one device through `unitile run op:NAME` and compares
every output with an independent NumPy (or PyTorch) reference.

A case is one op with concrete inputs (NumPy arrays), attributes and a reference
function. The inputs go to the command as .npy files, exactly as a user would give
them; the outputs come back as .npy files. Tolerances: |x - ref| <= atol + rtol*|ref|
with the dtype's defaults below (scaled by the case), integers and bools exact, NaN
only where the reference has NaN.

Reduced precision: NumPy has no bf16, so a bf16 tensor is a uint16 array of its raw bits,
exactly as `unitile run` reads and writes it (.npy descr <u2, read as bf16 when the
command says `--dtype NAME=bf16`; Unitile has no u16 of its own, so a uint16 array always
means bf16 here). References see f16 and bf16 inputs widened to f32 (the same rounded
values the kernel reads) and compute in f32 or wider; their outputs are rounded to the
output's dtype before the comparison. Tolerances are about two units in the last place of
the format: f16 has 11 significant bits (2e-3), bf16 has 8 (2^-6 = 1.6e-2).
"""
import os
import subprocess

import numpy as np

TOL = {"f64": (1e-10, 1e-10), "f32": (2e-5, 2e-5), "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2)}
NP = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64,
      "i8": np.int8, "i16": np.int16, "u8": np.uint8, "bool": np.bool_}
FLOAT_DTYPES = ("f32", "f64")
REDUCED = ("f16", "bf16")


def to_bf16(x):
    """The bf16 bits (uint16) of `x` rounded to nearest, ties to even, as Unitile rounds."""
    f = np.asarray(x, np.float32)
    b = f.reshape(-1).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f.reshape(-1)), np.uint16(0x7FC0), r).astype(np.uint16).reshape(f.shape)


def from_bf16(bits):
    """The f32 values of bf16 bits (exact)."""
    b = np.asarray(bits, np.uint16)
    return (b.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(b.shape)


def as_dtype(x, name):
    """`x` (any float array) rounded to the dtype `name` in the representation cases use:
    a float16 array for f16, uint16 bits for bf16, else a plain NumPy cast."""
    return to_bf16(x) if name == "bf16" else np.asarray(x).astype(NP[name])


def widen(x):
    """What a reference sees of an input: f16 and bf16 values as f32, others unchanged."""
    if x.dtype == np.uint16:
        return from_bf16(x)
    if x.dtype == np.float16:
        return x.astype(np.float32)
    return x


class Case:
    """One op invocation: `inputs` maps port names to arrays, `ref(inputs, attrs)` returns
    the outputs by name (float64 for float outputs is fine: they are compared after
    rounding to the output dtype), `scale` multiplies the tolerance (long reductions)."""

    def __init__(self, op, inputs, ref, attrs=None, scale=1.0, label="", cross=False):
        self.op, self.inputs, self.ref = op, inputs, ref
        self.attrs = attrs or {}
        self.scale, self.cross = scale, cross
        ins = ",".join(f"{dtype_name(v.dtype)}:{'x'.join(str(d) for d in v.shape) or 'scalar'}"
                       for v in inputs.values())
        attrs_text = ",".join(f"{k}={attr_text(v)}" for k, v in self.attrs.items())
        self.id = f"{op}[{ins}{'-' + attrs_text if attrs_text else ''}{label}]"
        # The dtype the op computes in: the first float input's, else the first input's.
        floats = [v.dtype for v in inputs.values() if v.dtype.kind == "f" or v.dtype == np.uint16]
        self.dtype = dtype_name(floats[0] if floats else next(iter(inputs.values())).dtype) if inputs else ""


def dtype_name(dt):
    for k, v in NP.items():
        if np.dtype(v) == np.dtype(dt):
            return k
    raise ValueError(f"no Unitile dtype for {dt}")


def attr_text(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(attr_text(x) for x in v) + "]"
    return str(v)


def compare(name, got, want, scale):
    """'' when `got` matches `want`, else why not."""
    if got.shape != want.shape:
        return f"{name}: shape {list(got.shape)}, expected {list(want.shape)}"
    kind = dtype_name(got.dtype)
    if got.dtype != want.dtype and not (kind in TOL and np.issubdtype(want.dtype, np.floating)):
        return f"{name}: dtype {got.dtype}, expected {want.dtype}"
    if kind not in TOL:
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        if bad.size:
            i = bad[0]
            return (f"{name}: {bad.size} of {got.size} elements differ; first at flat index {i}: "
                    f"{got.reshape(-1)[i]} vs {want.reshape(-1)[i]}")
        return ""
    rtol, atol = TOL[kind]
    rtol, atol = rtol * scale, atol * scale
    if kind == "bf16":
        g = from_bf16(got).astype(np.float64).reshape(-1)
        w = from_bf16(to_bf16(want)).astype(np.float64).reshape(-1)
    else:
        g = got.astype(np.float64).reshape(-1)
        w = want.astype(NP[kind]).astype(np.float64).reshape(-1)
    nan_w, nan_g = np.isnan(w), np.isnan(g)
    if (nan_w != nan_g).any():
        i = np.flatnonzero(nan_w != nan_g)[0]
        return f"{name}: NaN mismatch at flat index {i}: {g[i]} vs {w[i]}"
    inf = np.isinf(w) & ~nan_w
    if (g[inf] != w[inf]).any():
        i = np.flatnonzero(inf & (g != w))[0]
        return f"{name}: at flat index {i}: {g[i]} vs {w[i]}"
    fin = ~nan_w & ~inf
    err = np.abs(g[fin] - w[fin])
    lim = atol + rtol * np.abs(w[fin])
    if (err > lim).any():
        j = np.argmax(err - lim)
        i = np.flatnonzero(fin)[j]
        return (f"{name}: max error {err.max():.3g} over the tolerance (atol {atol:.2g}, rtol "
                f"{rtol:.2g}); worst at flat index {i}: {g[i]!r} vs {w[i]!r}")
    return ""


def run_case(unitile, device, case, workdir, timeout=300):
    """(ok, message) for `case` on `device`."""
    os.makedirs(workdir, exist_ok=True)
    cmd = [unitile, "run", f"op:{case.op}", "--device", device]
    for name, arr in case.inputs.items():
        path = os.path.join(workdir, f"in_{name}.npy")
        np.save(path, arr)
        cmd += ["--input", f"{name}={path}"]
        if arr.dtype == np.uint16:
            cmd += ["--dtype", f"{name}=bf16"]
    for k, v in case.attrs.items():
        cmd += ["--attr", f"{k}={attr_text(v)}"]
    out_dir = os.path.join(workdir, "out")
    cmd += ["--output-dir", out_dir]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return False, "error: " + (msg[0] if msg else f"exit status {p.returncode}")
    want = case.ref({k: widen(v) for k, v in case.inputs.items()}, case.attrs)
    for name, w in want.items():
        path = os.path.join(out_dir, f"{name}.npy")
        if not os.path.exists(path):
            return False, f"failed: output {name} was not written"
        got = np.load(path)
        why = compare(name, got, np.asarray(w), case.scale)
        if why:
            return False, f"failed: {case.id}: {why}"
    return True, "ok"
