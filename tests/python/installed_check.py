"""Run by pip_install.sh with the pip-installed package: it must import from the venv
(not the build tree) and find its device plugins inside the package."""

import os

import numpy as np

import unitile as tl

package = os.path.dirname(tl.__file__)
assert "site-packages" in package, package
devices = tl.devices()
assert "cpu" in devices and "sim" in devices, devices
plugin_dirs = tl._core.plugin_search_path()
assert plugin_dirs[0] == os.path.join(package, "plugins"), plugin_dirs
a = np.arange(12, dtype=np.float32).reshape(3, 4)
assert np.array_equal(tl.tensor(a, device="sim").numpy(), a)
print(f"installed unitile at {package}: devices {devices}: ok")
