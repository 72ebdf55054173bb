"""tl.Tensor: NumPy in and out, devices, and DLPack both ways (zero-copy on cpu)."""

import numpy as np
import pytest

import unitile as tl


def test_devices_lists_cpu_and_sim():
    names = tl.devices()
    assert "cpu" in names and "sim" in names
    assert names == sorted(names)


def test_default_device_can_be_set_and_checked():
    assert tl.get_default_device() == "cpu"
    tl.set_default_device("sim")
    try:
        assert tl.tensor(np.zeros(3, np.float32)).device == "sim"
    finally:
        tl.set_default_device("cpu")
    with pytest.raises(tl.Error, match="unknown device 'nonesuch'"):
        tl.set_default_device("nonesuch")
    assert tl.get_default_device() == "cpu"


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32,
                                   np.int64, np.uint8, np.bool_])
def test_numpy_round_trip_every_dtype(device, dtype, rng):
    a = (rng.standard_normal((3, 5)) * 10).astype(dtype)
    t = tl.tensor(a, device=device)
    assert t.shape == (3, 5) and t.dtype == np.dtype(dtype) and t.device == device
    back = t.numpy()
    assert back.dtype == a.dtype and np.array_equal(back, a)
    assert np.array_equal(np.asarray(t), a)


def test_tensor_moves_between_devices(rng):
    a = rng.standard_normal((4, 4)).astype(np.float32)
    t = tl.tensor(a, device="sim").to("cpu")
    assert t.device == "cpu" and np.array_equal(t.numpy(), a)


def test_unsupported_dtype_and_layout_are_errors():
    with pytest.raises(tl.Error, match="unsupported"):
        tl.tensor(np.zeros(3, np.complex64))
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    with pytest.raises(tl.Error, match="not C-contiguous"):
        tl.from_dlpack(strided)
    # tl.tensor copies, so any layout is fine.
    assert np.array_equal(tl.tensor(strided).numpy(), strided)


def test_from_dlpack_shares_memory_on_cpu():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tl.from_dlpack(a, device="cpu")
    assert t._t.shares_memory
    a[1, 2] = 42.0  # written through NumPy, seen through the tensor
    assert t.numpy()[1, 2] == 42.0


def test_dlpack_export_shares_memory_on_cpu():
    a = np.arange(6, dtype=np.float64).reshape(3, 2)
    t = tl.from_dlpack(a)
    v = np.from_dlpack(t)
    assert np.shares_memory(v, a)
    a[0, 0] = -7.0  # the exported view sees writes to the tensor's memory
    assert v[0, 0] == -7.0
    del t, a  # the view keeps the memory alive
    assert v[0, 0] == -7.0 and v.shape == (3, 2)


def test_dlpack_from_other_devices_copies(device, rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    t = tl.from_dlpack(a, device=device)
    assert t._t.shares_memory == (device == "cpu")
    assert t.__dlpack_device__() == (1, 0)
    assert np.array_equal(np.from_dlpack(t), a)


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = tl.from_dlpack(x)
    x[0, 0] = 99.0
    assert t.numpy()[0, 0] == 99.0
    y = torch.from_dlpack(t)
    y[2, 3] = -5.0  # torch's view is writable: the write lands in x's memory
    assert x[2, 3].item() == -5.0 and t.numpy()[2, 3] == -5.0


def test_bf16_travels_through_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    x = torch.tensor([[1.5, -2.0], [0.25, 3.0]], dtype=torch.bfloat16)
    t = tl.from_dlpack(x, device="sim")
    assert t.dtype == "bf16" and t.shape == (2, 2)
    back = torch.from_dlpack(t)
    assert back.dtype == torch.bfloat16 and torch.equal(back, x)
