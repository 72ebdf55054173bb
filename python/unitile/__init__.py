"""Unitile from Python: ``import unitile as tl``.

Write an operator once, as NumPy-like code (``@tl.kernel``) or as tensor comprehensions
(``tl.comprehension``, ``tl.load``), and run it on any device Unitile has a plugin for.
The C++ engine (``unitile._core``) compiles and runs; this package is a thin layer over it.

Every op of the operator library is ``tl.<name>`` (``tl.relu``, ``tl.reduce_sum``, ...);
the NumPy-style functions below take NumPy's arguments. Inside ``@tl.kernel`` they record
operations; on arrays they run at once as a one-op kernel.
"""

from . import _core, _trace, optim
from ._core import Error
from ._devices import devices, get_default_device, set_default_device
from ._kernels import Compiled, Comprehension, Kernel, Module, comprehension, load, loads
from ._profile import Profile, ProfileEvent, profile
from ._tensor import Tensor, from_dlpack, tensor
from ._trace import KernelFunction, kernel
from ._autodiff import grad, value_and_grad
from ._train import TrainStep

_NUMPY_STYLE = ["astype", "floor", "matmul", "max", "maximum", "mean", "min", "minimum", "power", "prod",
                "reshape", "softmax", "sum", "transpose", "where"]
for _name in _NUMPY_STYLE:
    globals()[_name] = _trace._eager(getattr(_trace, _name), _name)

_OPS = {spec["name"]: spec for spec in _core.op_specs()}


def ops():
    """The names of every op reachable as tl.<name> (the library's and the graph's own)."""
    return sorted(_OPS)


def __getattr__(name):
    spec = _OPS.get(name)
    if spec is None:
        raise AttributeError(f"module 'unitile' has no attribute '{name}' (tl.ops() lists the ops)")
    # The tracer's own slice and cast take other attributes than the library's ops of the
    # same names (which tl.ops() lists): these adapt the library's.
    adapted = {"slice": _trace.onnx_slice, "cast": _trace.onnx_cast}.get(name)
    function = _trace._eager(adapted or _trace._op_function(spec), name)
    globals()[name] = function
    return function


def __dir__():
    return sorted(set(globals()) | set(_OPS))


__all__ = [
    "Compiled", "Comprehension", "Error", "Kernel", "KernelFunction", "Module", "Profile", "ProfileEvent", "Tensor",
    "TrainStep", "comprehension", "devices", "from_dlpack", "get_default_device", "grad", "kernel", "load", "loads",
    "ops", "optim", "profile", "set_default_device", "tensor", "value_and_grad", *_NUMPY_STYLE,
]
__version__ = "0.1.0"
