#!/usr/bin/env bash
# Thread-CPU-time ratios of the generated f32 GEMM to OpenBLAS sgemm on one thread (see
# driver.c). Usage: bench/gemm_cputime/run.sh [UNITILE_BINARY] [REPS] [SHAPE...]
# SHAPE is M,N,K (default: issue 3's nine). KERNEL=FILE.ut (with GemmF32) replaces
# bench/kernels/gemm.ut, e.g. a copy with a schedule { } block.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ut=${1:-$root/build/bin/unitile}
reps=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(256,256,256 512,512,512 1024,1024,1024 2048,2048,2048 4096,4096,4096
  2048,768,768 2048,3072,768 2048,768,3072 128,50257,768)
kernel=${KERNEL:-$root/bench/kernels/gemm.ut}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in "${shapes[@]}"; do
  IFS=, read -r M N K <<< "$s"
  UNITILE_NUM_THREADS=1 "$ut" compile "$kernel" --kernel GemmF32 --device cpu --shape M=$M,N=$N,K=$K > "$tmp/k.c"
  grid=$(UNITILE_NUM_THREADS=1 "$ut" compile "$kernel" --kernel GemmF32 --device cpu --shape M=$M,N=$N,K=$K --explain |
    grep -o 'launch GemmF32_0: grid [0-9]*x[0-9]*x[0-9]*' | sed 's/.*grid //' | awk -Fx '{print $1*$2*$3}')
  entry=$(grep -o "ut_entry_GemmF32_[0-9]*" "$tmp/k.c" | tail -1)
  gcc -O3 -march=native -fno-math-errno -fno-tree-loop-if-convert -std=gnu11 -w -I/usr/include/x86_64-linux-gnu \
    -DKERNEL_C="\"$tmp/k.c\"" -DENTRY="$entry" -DGRID="$grid" -DGM=$M -DGN=$N -DGK=$K \
    "$here/driver.c" -o "$tmp/g" -lopenblas -lm
  "$tmp/g" "$reps"
done
