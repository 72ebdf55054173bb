"""Every library op against its NumPy/PyTorch reference on every available device.

Cases come from the cases_*.py files, one per op family. Each case runs on cpu and sim;
the first case of each op per dtype also runs on the slower-compiling devices (opencl,
whose PoCL compile costs about a second per kernel) and the cases marked `cross` on the
qemu-run cross CPUs, so the suite stays within its time budget while every op is
checked on every device.
"""
import importlib
import os
import pkgutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

FAST_DEVICES = ("cpu", "sim")


def all_cases():
    cases = []
    here = os.path.dirname(__file__)
    for mod in sorted(m.name for m in pkgutil.iter_modules([here]) if m.name.startswith("cases_")):
        cases += importlib.import_module(mod).cases()
    seen, primary = set(), set()
    for c in cases:
        key = (c.op, c.dtype)
        if key not in seen:
            seen.add(key)
            primary.add(c.id)
    ids = [c.id for c in cases]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"duplicate case ids: {sorted(dup)}"
    return cases, primary


CASES, PRIMARY = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op(case, unitile, devices, cross_devices, record, tmp_path):
    run_on = [d for d in devices if d in FAST_DEVICES or case.id in PRIMARY]
    run_on += [d for d in cross_devices if case.cross]
    assert run_on, "no device to run on"
    failures = []
    for device in run_on:
        ok, message = harness.run_case(unitile, device, case, str(tmp_path / device))
        record(device, case.op, ok, message)
        if not ok:
            failures.append(f"{device}: {message}")
    assert not failures, "\n".join(failures)
