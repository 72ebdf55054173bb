#!/usr/bin/env bash
# Thread-CPU-time comparison of Unitile's bf16 GEMM (bench/kernels/gemm.ut GemmBF16, as
# the auto-scheduler schedules it for one unit) with oneDNN's bf16 matmul, one thread,
# on a shared machine where wall-clock times swing by 2x and more. Usage:
#   bench/amx_cputime/run.sh [UNITILE_BINARY] [REPS] [MxNxK ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ut=${1:-$root/build/bin/unitile}
reps=${2:-15}
shift $(( $# > 2 ? 2 : $# ))
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(256x256x256 512x512x512 1024x1024x1024 2048x2048x2048 2048x768x768 2048x3072x768)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 "$here/onednn.cpp" -o "$tmp/onednn" -ldnnl
export UNITILE_NUM_THREADS=1
for s in "${shapes[@]}"; do
  IFS=x read -r M N K <<< "$s"
  "$ut" compile "$root/bench/kernels/gemm.ut" --kernel GemmBF16 --device cpu --shape "M=$M,N=$N,K=$K" > "$tmp/k.c"
  blocks=$("$root/build/bin/unitile-opt" "$root/bench/kernels/gemm.ut" --hcd host-cpu --pass=auto --kernel GemmBF16 \
             --shape "M=$M,N=$N,K=$K" | grep -o 'for task in 0\.\.[0-9]*' | grep -o '[0-9]*$')
  gcc -O3 -march=native -fno-math-errno -fno-tree-loop-if-convert -std=gnu11 -w -DKERNEL_C="\"$tmp/k.c\"" \
    -DENTRY=ut_entry_GemmBF16_0 "$here/driver.c" -o "$tmp/k"
  "$tmp/k" "$M" "$N" "$K" "$blocks" "$reps"
  OMP_NUM_THREADS=1 "$tmp/onednn" "$M" "$N" "$K" "$reps"
done
