#!/usr/bin/env bash
# `pip install .` from the repository root into a new virtual environment, then import
# the installed package (with no PYTHONPATH or UNITILE_PLUGIN_PATH) and run
# tests/python/installed_check.py against it: the plugins must come from inside the package.
# Then `pip wheel .`, and the same check on the wheel installed into another new venv.
#   pip_install.sh SOURCE_DIR WERROR(ON|OFF) CC CXX
#
# A full build. To reuse the objects of the main build through ccache, it builds in
# SOURCE_DIR/build-pip-test, a sibling of build/ (ccache rewrites paths under the source
# directory relative to the build directory, so only a build directory at the same depth
# gives the same compiler command lines), with the main build's compilers (scikit-build-core
# would otherwise take Python's, x86_64-linux-gnu-gcc), flags and UNITILE_WERROR.
# Only nanobind's own sources (in pip's temporary build environment) are compiled anew.
set -euo pipefail
src=$1 werror=$2
export CC=$3 CXX=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset UNITILE_PLUGIN_PATH PYTHONPATH
export UNITILE_CACHE_DIR=$work/cache

/usr/bin/python3 -m venv --system-site-packages "$work/venv"
cd "$src"
start=$(date +%s)
"$work/venv/bin/pip" install -q . --config-settings=build-dir="$src/build-pip-test" \
  --config-settings=cmake.define.UNITILE_WERROR="$werror"
echo "pip install . took $(($(date +%s) - start)) s"
cd "$work"
"$work/venv/bin/python" "$src/tests/python/installed_check.py"

# `pip wheel .` from the same build directory (so it only packages), then the wheel
# installed into a second new venv must pass the same check.
cd "$src"
start=$(date +%s)
"$work/venv/bin/pip" wheel -q --no-deps -w "$work/wheels" . --config-settings=build-dir="$src/build-pip-test" \
  --config-settings=cmake.define.UNITILE_WERROR="$werror"
wheel=$(ls "$work"/wheels/unitile-*.whl)
echo "pip wheel . took $(($(date +%s) - start)) s: $(basename "$wheel")"
/usr/bin/python3 -m venv --system-site-packages "$work/venv2"
"$work/venv2/bin/pip" install -q --no-deps "$wheel"
cd "$work"
"$work/venv2/bin/python" "$src/tests/python/installed_check.py"
