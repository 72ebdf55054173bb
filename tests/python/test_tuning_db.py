"""Python uses the tuning database like `unitile run`: a schedule recorded by `unitile
tune` for a kernel's key is the one a later compile from Python applies ("tuned"), and
without a record the auto-scheduler's is used."""

import os
import subprocess
import sys
import textwrap

import pytest

UNITILE = os.path.join(os.environ.get("UNITILE_BIN_DIR", ""), "unitile")

MATMUL = """
kernel Matmul {
  input: f32[M, K] A, f32[K, N] B
  output: f32[M, N] C
  operation:
    C[i, j] += A[i, k] * B[k, j]
}
"""

# Compiles the kernel for a 64x48x32 matmul and prints the first line of its explanation.
PROBE = textwrap.dedent("""
    import numpy as np, sys
    import unitile as tl
    k = tl.load(sys.argv[1]).Matmul
    a = np.ones((64, 32), np.float32); b = np.ones((32, 48), np.float32)
    c = k.compile(a, b, device="cpu")
    print(c.explain().splitlines()[0])
    out = k(a, b, device="cpu")
    assert np.allclose(out, a @ b), "wrong result under the tuned schedule"
""")


def probe(tmp_path, ut, db):
    env = dict(os.environ, UNITILE_TUNING_DB=str(db))
    r = subprocess.run([sys.executable, "-c", PROBE, str(ut)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.skipif(not os.path.exists(UNITILE), reason="needs the unitile command (run through ctest)")
def test_tuned_schedule_is_used_from_python(tmp_path):
    ut = tmp_path / "matmul.ut"
    ut.write_text(MATMUL)
    db = tmp_path / "tuning.sqlite"
    assert "(auto)" in probe(tmp_path, ut, db), "without a record the auto-scheduler decides"
    assert not db.exists(), "compiling must not create the database"
    r = subprocess.run([UNITILE, "tune", str(ut), "--device", "cpu", "--shape", "M=64,N=48,K=32", "--trials", "3",
                        "--repeat", "1"], env=dict(os.environ, UNITILE_TUNING_DB=str(db)), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert db.exists()
    assert "(tuned)" in probe(tmp_path, ut, db)
