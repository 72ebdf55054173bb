#!/usr/bin/env bash
# Set up, build, and run the whole test suite (ctest: GoogleTest units and lit tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR=${UNITILE_BUILD_DIR:-build}
export UNITILE_CACHE_DIR=$PWD/$BUILD_DIR/test-cache
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" --timeout 900
