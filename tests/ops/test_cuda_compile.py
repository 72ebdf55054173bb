"""Library ops compile for the cuda device: `unitile compile op:NAME --device cuda --emit
ptx` (the auto-scheduler under the cuda HCD, the cuda dialect, NVRTC to PTX for the HCD's
architecture) for the first case of each op, with that case's input shapes, dtypes and
attributes. This machine has no GPU, so this and tests/unit/backends/test_cuda_nvrtc.cpp
are how the cuda device is tested here; the kernels run on a GPU in bench/gpu-check.sh.
Skipped, with the reason, where NVRTC does not load.

One NVRTC compile costs 1-4 s here (the cuda_fp16/bf16 headers), so by default every
sixteenth op and every contraction op (the ones the matrix-unit path takes) run, about 30;
UNITILE_CUDA_ALL_OPS=1 runs all of them (the sweep recorded in docs/PERFORMANCE.md).
"""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from test_ops import CASES  # noqa: E402

# One case per op (its first): the compile path is what is under test, not the dtypes
# (test_cuda_nvrtc.cpp compiles every differential kernel's dtype variants).
FIRST = []
_seen = set()
for _c in CASES:
    if _c.op not in _seen:
        _seen.add(_c.op)
        FIRST.append(_c)
if os.environ.get("UNITILE_CUDA_ALL_OPS") != "1":
    CONTRACTIONS = ("matmul", "gemm", "linear", "bmm", "einsum", "attention")
    FIRST = [c for n, c in enumerate(FIRST) if n % 16 == 0 or any(w in c.op for w in CONTRACTIONS)]


def compile_command(unitile, case):
    cmd = [unitile, "compile", f"op:{case.op}", "--device", "cuda", "--emit", "ptx"]
    for name, arr in case.inputs.items():
        shape = "x".join(str(d) for d in arr.shape) or "scalar"
        cmd += ["--shape", f"{name}={shape}", "--dtype", f"{name}={harness.dtype_name(arr.dtype)}"]
    for k, v in case.attrs.items():
        cmd += ["--attr", f"{k}={harness.attr_text(v)}"]
    return cmd


@pytest.fixture(scope="session")
def nvrtc(unitile):
    """Skips every test here when NVRTC cannot compile on this machine."""
    p = subprocess.run(compile_command(unitile, FIRST[0]), capture_output=True, text=True, timeout=300)
    if p.returncode != 0 and "not available" in p.stderr:
        pytest.skip("NVRTC is not usable here: " + p.stderr.strip().splitlines()[0])
    return True


@pytest.mark.parametrize("case", FIRST, ids=[c.op for c in FIRST])
def test_op_compiles_for_cuda(case, unitile, nvrtc):
    p = subprocess.run(compile_command(unitile, case), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{case.id}: {p.stderr.strip() or p.stdout.strip()}"
    assert ".target sm_90" in p.stdout and ".entry ut_entry_" in p.stdout, p.stdout[:2000]
