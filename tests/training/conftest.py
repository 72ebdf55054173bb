"""tests/training: examples/gpt against its PyTorch reference. The example's modules are
imported from its folder; the tests run on the cpu device."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "gpt"))
