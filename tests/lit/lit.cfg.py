# lit configuration: IR text tests. Each .ut/.loop file has RUN: lines; FileCheck checks
# the printed output. Tools come from the build tree (lit.site.cfg.py sets the paths).
import os
import subprocess
import sys
import lit.formats

config.name = "unitile"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ut", ".loop", ".toml", ".test", ".utg"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.unitile_obj_root, "lit-out")

config.substitutions.append(("%unitile-opt", os.path.join(config.unitile_bin_dir, "unitile-opt")))
config.substitutions.append(("%unitile", os.path.join(config.unitile_bin_dir, "unitile")))
config.substitutions.append(("%src", config.unitile_src_root))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("not ", config.not_tool + " "))

for var in ("UNITILE_PLUGIN_PATH", "HOME", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Tests never touch the user's cache.
config.environment["UNITILE_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")

# Headless Chromium (Debian's `chromium`, installed by scripts/setup.sh) renders the
# profiler's HTML report; %chromium-dump-dom prints the DOM after the page's scripts ran.
import shutil

_chromium = shutil.which("chromium")
if _chromium:
    config.available_features.add("chromium")
    config.substitutions.append(
        ("%chromium-dump-dom",
         "%s --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=%%t.chromium "
         "--virtual-time-budget=5000 --dump-dom" % _chromium))

# CUDA: `nvrtc` where NVRTC can be loaded (cuda compile tests need it; elsewhere lit
# reports them UNSUPPORTED, never passed), `cuda-driver` where the NVIDIA driver is.
import ctypes


def _loads(names):
    for name in names:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


if _loads(["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]):
    config.available_features.add("nvrtc")
if _loads(["libcuda.so.1"]):
    config.available_features.add("cuda-driver")

# One feature per device that `unitile devices` lists as usable (REQUIRES: cpu-aarch64).
# A device that is unavailable only because its toolchain or emulator is not installed
# leaves its feature out, so its tests are UNSUPPORTED; any other reason keeps the feature,
# so a broken device fails its tests loudly instead of being skipped.
import re
import subprocess


def _device_features():
    env = dict(os.environ)
    env.update(config.environment)
    try:
        listing = subprocess.run([os.path.join(config.unitile_bin_dir, "unitile"), "devices"],
                                 env=env, capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    features, name = set(), None
    for line in listing.splitlines():
        header = re.match(r"^(\S+)\s+\S", line)
        if header:
            name = header.group(1)
            features.add(name)
        elif name and line.strip().startswith("unavailable:") and (
                "is not installed" in line or "was not built" in line):
            features.discard(name)
    return features


config.available_features.update(_device_features())


# `amx`: the host has Intel AMX tiles for bf16 (the cpu device's detected HCD then lists
# the matrix unit and bf16 GEMMs run on it). Without it those tests are UNSUPPORTED, and
# their sim counterparts under a fixed AMX HCD still run.
def _host_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return set(f.read().split())
    except OSError:
        return set()


_flags = _host_flags()
if "amx_tile" in _flags and "amx_bf16" in _flags:
    config.available_features.add("amx")
else:
    lit_config.note("no Intel AMX on this host: tests that REQUIRE amx are UNSUPPORTED")
# `bf16-pairs`: AVX512-BF16 without AMX (Zen 4): the detected HCD lists vdpbf16ps as a
# 1x16x2 unit and bf16 GEMMs run on it; tests/lit/sim/pairs-gemm.ut checks the same
# launches on any host.
if "avx512_bf16" in _flags and "avx512f" in _flags and "amx_bf16" not in _flags:
    config.available_features.add("bf16-pairs")

# %devices: the devices every differential test runs on, as one `--device a,b` list: those
# of DIFF_DEVICES that `unitile devices` reports as available here. A new device joins
# every differential test by one entry below. UNITILE_TEST_DEVICES=cpu,opencl overrides.
DIFF_DEVICES = [
    "cpu",
    "opencl",
]


def available_devices():
    env = dict(os.environ, UNITILE_CACHE_DIR=config.environment["UNITILE_CACHE_DIR"])
    out = subprocess.run([os.path.join(config.unitile_bin_dir, "unitile"), "devices"],
                         capture_output=True, text=True, env=env, check=True).stdout.splitlines()
    found, name = [], None
    for line in out:
        if not line.startswith(" "):
            name = line.split()[0]
            found.append(name)
        elif name in found and line.strip().startswith("unavailable:"):
            found.remove(name)
    return found


if os.environ.get("UNITILE_TEST_DEVICES"):
    test_devices = os.environ["UNITILE_TEST_DEVICES"].split(",")
else:
    available = available_devices()
    test_devices = [d for d in DIFF_DEVICES if d in available]
    missing = [d for d in DIFF_DEVICES if d not in available]
    if missing:
        lit_config.note("differential tests skip unavailable devices: " + ", ".join(missing))
lit_config.note("differential tests run on: " + ",".join(test_devices))
config.substitutions.append(("%devices", ",".join(test_devices)))
