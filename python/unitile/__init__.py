"""Unitile from Python: ``import unitile as tl``.

Write an operator once, as NumPy-like code (``@tl.kernel``) or as tensor comprehensions
(``tl.comprehension``, ``tl.load``), and run it on any device Unitile has a plugin for.
The C++ engine (``unitile._core``) compiles and runs; this package is a thin layer over it.
"""

from ._core import Error
from ._devices import devices, get_default_device, set_default_device
from ._kernels import Compiled, Comprehension, Kernel, Module, comprehension, load, loads
from ._tensor import Tensor, from_dlpack, tensor

__all__ = [
    "Compiled", "Comprehension", "Error", "Kernel", "Module", "Tensor", "comprehension", "devices",
    "from_dlpack", "get_default_device", "load", "loads", "set_default_device", "tensor",
]
__version__ = "0.1.0"
