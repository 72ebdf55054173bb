"""Devices: which ones can run kernels here, and the default one."""

from . import _core

_default = "cpu"


def devices():
    """Names of the devices that can run kernels on this machine (plugins that load and
    whose driver and hardware are present), sorted by name."""
    return [d.name for d in _core.list_devices() if not d.error and not d.unavailable]


def set_default_device(name):
    """Make `name` the device kernels run on and tensors are made on when none is given.
    An unknown or unusable device is an error now, not at the first call."""
    global _default
    _core.device(name)  # opens it, or raises unitile.Error listing the devices found
    _default = name


def get_default_device():
    """The name of the device used when none is given (``cpu`` unless set)."""
    return _default


def resolve(device):
    """The _core.Device for a name, None (the default device) or a device object."""
    if device is None:
        return _core.device(_default)
    if isinstance(device, _core.Device):
        return device
    if isinstance(device, str):
        return _core.device(device)
    raise TypeError(f"device must be a device name such as 'cpu', not {type(device).__name__}")
