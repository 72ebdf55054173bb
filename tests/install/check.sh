#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds tests/install/consumer against
# it with find_package(unitile), runs it, and runs the installed `unitile` command (which
# must find its plugins beside itself, with no UNITILE_PLUGIN_PATH).
#   check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset UNITILE_PLUGIN_PATH
export UNITILE_CACHE_DIR=$work/cache

cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer"

"$work/prefix/bin/unitile" devices | grep -q '^cpu '
"$work/prefix/bin/unitile" run "$src/examples/design.ut" --kernel MatrixMul --device cpu \
  --shape M=8,K=5,N=3 --check | grep -q '^check: ok'
echo "installed unitile: ok"
