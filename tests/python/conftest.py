"""Shared fixtures of the Python tests: the devices that can run here, and a fresh
kernel cache directory (set by ctest) so the tests never read a user's cache."""

import numpy as np
import pytest

import unitile as tl

# Devices whose kernels the tests compare with NumPy: every one listed as usable, except
# the cross CPUs, whose qemu runs are slow (the C++ tests cover them).
RUN_DEVICES = [d for d in tl.devices() if d in ("cpu", "sim", "opencl")]


@pytest.fixture(params=RUN_DEVICES)
def device(request):
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
