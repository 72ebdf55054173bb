"""dropout's mask is reproducible (two runs, and cpu against sim, give the same mask),
drops about `ratio` of the elements, and changes with the seed. The mask's exact values
against the NumPy recomputation of the hash are checked by cases_losses.py."""
import os
import subprocess

import numpy as np


def run_dropout(unitile, device, out_dir, seed, ratio=0.3):
    subprocess.run([unitile, "run", "op:dropout", "--device", device, "--shape", "X=101x103",
                    "--attr", "training_mode=1", "--attr", f"ratio={ratio}", "--attr", f"seed={seed}",
                    "--output-dir", str(out_dir)], check=True, capture_output=True, text=True)
    return np.load(os.path.join(out_dir, "Mask.npy")), np.load(os.path.join(out_dir, "Y.npy"))


def test_dropout_mask_reproducible_and_fair(unitile, tmp_path):
    m1, y1 = run_dropout(unitile, "cpu", tmp_path / "a", 42)
    m2, y2 = run_dropout(unitile, "cpu", tmp_path / "b", 42)
    m3, _ = run_dropout(unitile, "sim", tmp_path / "c", 42)
    assert m1.dtype == np.bool_ and m1.shape == (101, 103)
    assert (m1 == m2).all() and (y1 == y2).all(), "two runs with one seed differ"
    assert (m1 == m3).all(), "cpu and sim masks differ"
    kept = m1.mean()
    # 10403 elements: the standard deviation of the kept fraction is about 0.0045.
    assert abs(kept - 0.7) < 0.02, f"kept fraction {kept}, expected about 0.7"
    assert (y1[~m1] == 0).all()
    m4, _ = run_dropout(unitile, "cpu", tmp_path / "d", 43)
    agree = (m1 == m4).mean()
    # Independent masks agree on 0.7^2 + 0.3^2 = 0.58 of the elements.
    assert abs(agree - 0.58) < 0.03, f"seeds 42 and 43 agree on {agree} of the mask"
