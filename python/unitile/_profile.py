"""The profiler: ``with tl.profile() as p:`` records every kernel launch in the block, on
every device, timed on the device's own timer; ``p.table()``, ``p.timeline()``,
``p.events()`` and the exports read the recording afterwards."""

from dataclasses import dataclass
from typing import Optional, Tuple

from . import _core


@dataclass(frozen=True)
class ProfileEvent:
    """One kernel launch. ``device`` is DEVICE-ORDINAL ("cpu-0"); ``name`` is the op or
    kernel, ``func`` the launch (a kernel may launch several funcs in one ``call``);
    times are microseconds since the profiler started, on one axis for all devices;
    ``operations`` is None when it cannot be counted statically."""

    device: str
    queue: int
    name: str
    func: str
    shapes: str
    call: int
    start_us: float
    duration_us: float
    bytes: float
    operations: Optional[float]
    dtype: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]


class Profile:
    """A recording of kernel launches. Use it as a context manager (``with tl.profile() as
    p``) or call start()/stop(); starting it again continues the same recording. Only one
    profiler records at a time in a process: starting a second is a unitile.Error."""

    def __init__(self):
        self._p = _core.Profiler()

    def start(self):
        self._p.start()
        return self

    def stop(self):
        self._p.stop()

    @property
    def active(self):
        """Whether this profiler is recording now."""
        return self._p.active

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def events(self):
        """The launches recorded, in order, as ProfileEvent records."""
        return [ProfileEvent(**e) for e in self._p.events()]

    def devices(self):
        """The devices the launches ran on: dicts with label, name, ordinal and hcd."""
        return self._p.devices()

    def table(self):
        """Per device: name, calls, total, average, min, max, % of device time, GFLOP/s, GB/s."""
        return self._p.table()

    def timeline(self):
        """One line per device, ``DEVICE-ORDINAL: Name(NN%) -> Name(NN%) -> ...``."""
        return self._p.timeline()

    def export_chrome_trace(self, path):
        """Write the recording as Chrome Trace Event JSON (opens in Perfetto)."""
        self._p.export_chrome_trace(str(path))

    def export_html(self, path):
        """Write a self-contained HTML report: timelines, the table and a roofline plot."""
        self._p.export_html(str(path))

    def clear(self):
        """Forget every event and device; the clock restarts at the next start."""
        self._p.clear()

    def __str__(self):
        return self.table()

    def __repr__(self):
        state = "recording" if self.active else "stopped"
        return f"<unitile.Profile {state}, {len(self._p.events())} events>"


def profile():
    """A new profiler, not yet recording: ``with tl.profile() as p: ...``."""
    return Profile()
