#!/usr/bin/env bash
# Thread-CPU-time ratios of the row kernels to the triad loop on one thread (see
# driver.c). Usage: bench/rows_cputime/run.sh [UNITILE_BINARY] [REPS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ut=${1:-$root/build/bin/unitile}
reps=${2:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in Softmax:SOFTMAX LayerNorm:LAYERNORM RmsNorm:RMSNORM Chain:CHAIN; do
  name=${k%%:*}
  "$ut" compile "$root/bench/kernels/rows.ut" --kernel "$name" --device cpu --shape N=4096,D=4096 > "$tmp/$name.c"
  entry=$(grep -o "ut_entry_${name}_[0-9]*" "$tmp/$name.c" | tail -1)
  gcc -O3 -march=native -fno-math-errno -fno-tree-loop-if-convert -std=gnu11 -w \
    -DKERNEL_C="\"$tmp/$name.c\"" -DENTRY="$entry" -DK_${k##*:} -DKNAME="\"$name\"" \
    "$here/driver.c" -o "$tmp/$name" -lm
  "$tmp/$name" "$reps"
done
