#!/usr/bin/env bash
# The main job: set up, then compile and run real kernels on the cpu device, each checked
# against the sim reference device, and print their check and speed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
UT=build/bin/unitile
export UNITILE_CACHE_DIR=${UNITILE_CACHE_DIR:-$PWD/build/cache}

echo "== devices"
$UT devices

run() { # name flops file kernel shapes...
  local name=$1 flops=$2 file=$3 kernel=$4; shift 4
  echo "== $name ($*)"
  out=$($UT run "$file" --kernel "$kernel" --device cpu "$@" --check --repeat 10)
  echo "$out"
  med=$(sed -n 's/.*median_ms=\([0-9.e+-]*\).*/\1/p' <<<"$out")
  if [[ -n "$med" && "$flops" != 0 ]]; then
    awk -v f="$flops" -v ms="$med" 'BEGIN { printf "speed: %.2f GFLOP/s\n", f / (ms * 1e6) }'
  fi
}

run "MatrixMul 256x256x256" $((2 * 256 * 256 * 256)) examples/design.ut MatrixMul --shape M=256,K=256,N=256
run "Softmax 512x1024" $((5 * 512 * 1024)) examples/design.ut Softmax --shape N=512,D=1024
run "Attention N=256 D=64" $((4 * 256 * 256 * 64)) examples/attention.ut Attention --shape N=256,D=64
