#!/usr/bin/env bash
# Builds the opencl plugin out of tree, as a vendor would: its folder alone, copied out
# of the source tree, against an installed Unitile (find_package(unitile)). Then loads it
# with --device-plugin and checks kernels against sim; and builds it once more against a
# device.h claiming ABI v2, which the runtime must refuse with exit status 1.
#   opencl-plugin.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset UNITILE_PLUGIN_PATH
export UNITILE_CACHE_DIR=$work/cache

cmake --install "$build" --prefix "$work/prefix" >/dev/null
cp -r "$src/src/backends/opencl" "$work/opencl"
cmake -S "$work/opencl" -B "$work/opencl-build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/opencl-build" >/dev/null
plugin=$work/opencl-build/libunitile-device-opencl.so

unitile=$work/prefix/bin/unitile
out=$("$unitile" run "$src/examples/design.ut" --device opencl --device-plugin "$plugin" \
  --shape M=33,K=17,N=65,D=127 --check --repeat 2)
echo "$out"
[[ $(grep -c '^check: ok' <<<"$out") == 2 ]]
out=$("$unitile" run "$src/tests/lit/diff/staged-matmul.loop" --device opencl --device-plugin "$plugin" --check)
echo "$out"
grep -q '^check: ok' <<<"$out"

# The same folder built against a header of another ABI version.
mkdir -p "$work/abi2/unitile"
sed 's/#define UT_DEVICE_ABI_VERSION 1u/#define UT_DEVICE_ABI_VERSION 2u/' \
  "$work/prefix/include/unitile/device.h" > "$work/abi2/unitile/device.h"
grep -q 'UT_DEVICE_ABI_VERSION 2u' "$work/abi2/unitile/device.h"
cmake -S "$work/opencl" -B "$work/abi2-build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=-I$work/abi2" >/dev/null
cmake --build "$work/abi2-build" >/dev/null
set +e
msg=$("$unitile" run "$src/examples/design.ut" --kernel MatrixMul --device opencl \
  --device-plugin "$work/abi2-build/libunitile-device-opencl.so" --shape M=2,K=2,N=2 2>&1)
rc=$?
set -e
echo "$msg"
[[ $rc == 1 ]]
grep -q 'was built for device ABI v2; this runtime speaks v1' <<<"$msg"
echo "out-of-tree opencl plugin: ok"
