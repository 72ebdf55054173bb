"""tl.Tensor: a tensor that lives in one device's memory.

Kernels called with tl.Tensor arguments return tl.Tensor results that stay on the
device, so a chain of calls never copies through the host. NumPy arrays (or anything with
DLPack) come in with ``tl.tensor`` / ``tl.from_dlpack`` and go out with ``.numpy()``,
``np.asarray`` or ``np.from_dlpack``. On a device whose buffers are host memory (cpu),
``from_dlpack`` and ``__dlpack__`` share memory instead of copying.
"""

import numpy as np

from . import _core, _devices

_DTYPES = {
    "f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64), "u8": np.dtype(np.uint8), "bool": np.dtype(np.bool_),
}
_NAMES = {v: k for k, v in _DTYPES.items()}
_DLPACK_CPU = 1


def dtype_of_name(name):
    """The NumPy dtype of a Unitile dtype name; bf16 (which NumPy lacks) stays 'bf16'."""
    return _DTYPES.get(name, name)


def name_of_dtype(dtype):
    """The Unitile dtype name of a NumPy dtype (or of a name such as 'bf16' or 'f32')."""
    if isinstance(dtype, str) and dtype in ("bf16", *_DTYPES):
        return dtype
    try:
        return _NAMES[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise _core.Error(f"unsupported dtype {dtype!r}: Unitile has "
                          "f16, bf16, f32, f64, i8, i16, i32, i64, u8 and bool") from None


class Tensor:
    """A dense C-order tensor in one device's memory."""

    __slots__ = ("_t",)

    def __init__(self, core_tensor):
        self._t = core_tensor

    @property
    def shape(self):
        return tuple(self._t.shape)

    @property
    def dtype(self):
        return dtype_of_name(self._t.dtype)

    @property
    def ndim(self):
        return len(self._t.shape)

    @property
    def size(self):
        return int(np.prod(self._t.shape, dtype=np.int64))

    @property
    def device(self):
        """The name of the device that holds the tensor."""
        return self._t.device.name

    def numpy(self):
        """A NumPy copy (bf16 comes out as its raw bits, uint16)."""
        return self._t.numpy()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def to(self, device):
        """The tensor on another device (copied through the host); itself if already there."""
        return Tensor(self._t.to(_devices.resolve(device)))

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # A "dltensor" capsule (unversioned DLPack, which every consumer reads) over this
        # tensor's own memory on host-memory devices, over a host copy elsewhere.
        return self._t.dlpack_capsule()

    def __dlpack_device__(self):
        # What __dlpack__ exports is host memory on every device (see host_view).
        return (_DLPACK_CPU, 0)

    def __len__(self):
        if not self._t.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._t.shape[0]

    def __repr__(self):
        return f"tl.Tensor(shape={self.shape}, dtype={self._t.dtype}, device='{self.device}')"


def tensor(data, device=None, dtype=None):
    """A device tensor holding a copy of `data` (a NumPy array, anything np.asarray takes,
    or a tl.Tensor, which is moved to `device`)."""
    dev = _devices.resolve(device)
    if isinstance(data, Tensor):
        if dtype is not None and name_of_dtype(dtype) != data._t.dtype:
            data = tensor(data.numpy().astype(dtype_of_name(name_of_dtype(dtype))), dev)
        return Tensor(data._t.to(dev))
    a = np.ascontiguousarray(data if dtype is None else np.asarray(data, dtype=dtype))
    if a.dtype == np.float16 or a.dtype.kind in "fiub":
        return Tensor(_core.DeviceTensor.from_array(dev, a, False))
    raise _core.Error(f"unsupported array dtype {a.dtype}")


def from_dlpack(x, device=None):
    """A device tensor from anything with ``__dlpack__`` (NumPy, PyTorch, ...). On a device
    whose buffers are host memory (cpu) the tensor uses the producer's memory itself, so a
    write through either side is seen by the other; elsewhere the data is copied."""
    if isinstance(x, Tensor):
        return x if device is None else x.to(device)
    dev = _devices.resolve(device)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__, got {type(x).__name__}")
    return Tensor(_core.DeviceTensor.from_array(dev, x, True))
