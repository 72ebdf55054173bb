# lit configuration: IR text tests. Each .ut/.loop file has RUN: lines; FileCheck checks
# the printed output. Tools come from the build tree (lit.site.cfg.py sets the paths).
import os
import sys
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
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("not ", config.not_tool + " "))

for var in ("UNITILE_PLUGIN_PATH", "HOME", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Tests never touch the user's cache.
config.environment["UNITILE_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")
