# lit configuration: IR text tests. Each .ut/.loop file has RUN: lines; FileCheck checks
# the printed output. Tools come from the build tree (lit.site.cfg.py sets the paths).
import os
import subprocess
import lit.formats

config.name = "unitile"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ut", ".loop", ".toml", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.unitile_obj_root, "lit-out")

config.substitutions.append(("%unitile-opt", os.path.join(config.unitile_bin_dir, "unitile-opt")))
config.substitutions.append(("%unitile", os.path.join(config.unitile_bin_dir, "unitile")))
config.substitutions.append(("%src", config.unitile_src_root))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("not ", config.not_tool + " "))

for var in ("UNITILE_PLUGIN_PATH", "HOME", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Tests never touch the user's cache.
config.environment["UNITILE_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")

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
    found = []
    for k, line in enumerate(out):
        if line.startswith(" "):
            continue
        nxt = out[k + 1] if k + 1 < len(out) else ""
        if not nxt.strip().startswith("unavailable:"):
            found.append(line.split()[0])
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
for d in test_devices:
    config.available_features.add("device-" + d)
