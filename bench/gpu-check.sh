#!/usr/bin/env bash
# One command for a machine with an NVIDIA H200 (or H100), under 8 minutes:
#   1. builds Unitile (Release, into build-gpu/) unless UNITILE_BIN points at a build;
#   2. runs every differential test (each `unitile run ... --check` RUN line of
#      tests/lit/diff/*.ut and *.loop, with its dtype substitution) on --device cuda, checked against
#      the sim reference;
#   3. checks the tensor-core paths against sim at the bench size: bf16 (mma.sync
#      m16n8k16, chosen by the auto-scheduler) and TF32 (m16n8k8, bench/cuda/gemm-tf32.ut
#      asks for it) on inputs exact in tf32, so the f32 tolerance holds;
#   4. times GEMM (f32 on the CUDA cores, TF32 and bf16 on the tensor cores) and
#      attention (one head; and ATTN_H causal heads, bench/kernels/attention.ut), and prints Unitile's time next to cuBLAS / PyTorch
#      (bench/cuda/baselines.py) with the ratio baseline_ms / unitile_ms (1.0 = as fast
#      as the baseline; higher is better).
# Exit status: 0 when every differential test and tensor-core check passed, 1 otherwise.
# Usage: bash bench/gpu-check.sh        (env: GEMM_N=1024 ATTN_N=1024 ATTN_D=64 ATTN_H=16 REPEAT=10)
# GPU_CHECK_DEVICE=cpu runs the same steps on another device, to try the script where no
# GPU is (the baselines then say why they are skipped).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
GEMM_N="${GEMM_N:-1024}"
ATTN_N="${ATTN_N:-1024}"
ATTN_D="${ATTN_D:-64}"
ATTN_H="${ATTN_H:-16}"
REPEAT="${REPEAT:-10}"
DEVICE="${GPU_CHECK_DEVICE:-cuda}"
# numpy (tf32 inputs) and torch (baselines): $PYTHON, else the project's venv, else python3.
PY="${PYTHON:-python3}"
[[ -z "${PYTHON:-}" && -x "$ROOT/.venv/bin/python" ]] && PY="$ROOT/.venv/bin/python"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export UNITILE_CACHE_DIR="$WORK/cache"
start_s=$SECONDS
stage() { echo; echo "== $* ($((SECONDS - start_s)) s)"; }

stage "build"
if [[ -n "${UNITILE_BIN:-}" ]]; then
  UNITILE="$UNITILE_BIN"
else
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DUNITILE_BUILD_TESTS=OFF >"$WORK/cmake.log" 2>&1 \
    || { cat "$WORK/cmake.log"; echo "gpu-check: cmake failed (run scripts/setup.sh for the dependencies)"; exit 1; }
  cmake --build build-gpu -j"$(nproc)" --target unitile unitile-device-cuda unitile-device-sim unitile-device-cpu \
    >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; echo "gpu-check: build failed"; exit 1; }
  UNITILE="$ROOT/build-gpu/bin/unitile"
fi
device_listing() { # the `unitile devices` lines of $DEVICE: its header and indented lines
  "$UNITILE" devices | awk -v d="$DEVICE" '/^[^ ]/ { on = ($1 == d) } on'
}
listing="$(device_listing)"
[[ -n "$listing" ]] || { echo "gpu-check: no $DEVICE plugin found"; exit 1; }
echo "$listing"
if grep -q 'unavailable:' <<<"$listing"; then
  echo "gpu-check: the $DEVICE device is unavailable here (see above); nothing to check"
  exit 1
fi

stage "differential tests on $DEVICE (against sim)"
passed=0
failed=0
skipped=0
for f in tests/lit/diff/*.ut tests/lit/diff/*.loop; do
  name="$(basename "$f")"
  name="${name%.*}"
  while IFS= read -r run; do
    cmd="${run#*RUN: }"
    cmd="${cmd//%unitile/$UNITILE}"
    cmd="${cmd//%s/$f}"
    cmd="${cmd//%t/$WORK/$name}"
    if [[ "$cmd" == sed* ]]; then
      eval "$cmd" || { echo "FAIL (sed): $cmd"; failed=$((failed + 1)); }
      continue
    fi
    [[ "$cmd" == *" run "* && "$cmd" == *"--check"* ]] || continue
    cmd="${cmd%% | *}"
    [[ "$cmd" == *"--hcd "* ]] && continue # sim modelling another chip: not a device test
    cmd="${cmd//--device %devices,sim/--device $DEVICE}"
    cmd="${cmd//--device %devices/--device $DEVICE}"
    cmd="${cmd//--device cpu/--device $DEVICE}"
    cmd="${cmd//--device opencl/--device $DEVICE}"
    cmd="${cmd//%python/$PY}"
    if out="$(timeout 120 bash -c "$cmd" 2>&1)" && grep -q 'check: ok' <<<"$out" && ! grep -q 'check: FAILED' <<<"$out"; then
      passed=$((passed + 1))
    elif [[ "$DEVICE" != cuda ]] && grep -q 'does not fit device' <<<"$out"; then
      skipped=$((skipped + 1)) # a trial device without threads per block (cpu): not a failure
      echo "SKIP (beyond $DEVICE's HCD limits): $cmd"
    else
      failed=$((failed + 1))
      echo "FAIL: $cmd"
      echo "$out" | tail -5 | sed 's/^/    /'
    fi
  done < <(grep -E '^(//|#) RUN: (sed |%unitile run )' "$f")
done
echo "differential tests on $DEVICE: $passed passed, $failed failed, $skipped skipped"

# The sim reference interprets every multiply-add, so the check uses a smaller GEMM (with
# partial blocks) than the timing.
CHECK_SHAPE="M=250,K=200,N=260"
stage "tensor-core GEMMs on $DEVICE against sim ($CHECK_SHAPE, bf16 and TF32; TF32 inputs exact in tf32)"
tc_check() { # NAME FILE [INPUT FLAGS...]
  local name="$1" file="$2"
  shift 2
  if out="$(timeout 300 "$UNITILE" run "$file" --device "$DEVICE" --shape "$CHECK_SHAPE" "$@" --check 2>&1)" \
    && grep -q 'check: ok' <<<"$out"; then
    echo "$name: $(grep 'check:' <<<"$out")"
  else
    failed=$((failed + 1))
    echo "FAIL: $name"
    echo "$out" | tail -5 | sed 's/^/    /'
  fi
}
sed "s/DTYPE/bf16/g" bench/cuda/gemm.ut >"$WORK/gemm-check-bf16.ut"
tc_check gemm-bf16 "$WORK/gemm-check-bf16.ut"
if "$PY" -c "import numpy as np; r = np.random.default_rng(5)
for x, shape in (('a', (250, 200)), ('b', (200, 260))): np.save('$WORK/tf32-' + x + '.npy', (r.integers(-64, 64, shape) / 64).astype(np.float32))" 2>"$WORK/err"; then
  tc_check gemm-tf32 bench/cuda/gemm-tf32.ut --input "A=$WORK/tf32-a.npy" --input "B=$WORK/tf32-b.npy"
else
  failed=$((failed + 1))
  echo "FAIL: gemm-tf32: could not write inputs with numpy: $(tail -1 "$WORK/err")"
fi

stage "GEMM ${GEMM_N}^3 and attention N=$ATTN_N D=$ATTN_D (1 head; $ATTN_H causal heads): Unitile vs cuBLAS / PyTorch"
unitile_ms() { # FILE SHAPES -> median ms of REPEAT device-timed runs, or "-"
  local line
  line="$(timeout 240 "$UNITILE" run "$1" --device "$DEVICE" --shape "$2" --repeat "$REPEAT" 2>"$WORK/err" | grep '^timing:')"
  if [[ -z "$line" ]]; then
    echo "    unitile run $1 failed: $(tail -3 "$WORK/err")" >&2
    echo "-"
    return
  fi
  sed -E 's/.*median_ms=([^ ]+).*/\1/' <<<"$line"
}
for t in f32 bf16; do sed "s/DTYPE/$t/g" bench/cuda/gemm.ut >"$WORK/gemm-$t.ut"; done
declare -A mine
mine[gemm-f32]="$(unitile_ms "$WORK/gemm-f32.ut" "M=$GEMM_N,K=$GEMM_N,N=$GEMM_N")"
mine[gemm-tf32]="$(unitile_ms bench/cuda/gemm-tf32.ut "M=$GEMM_N,K=$GEMM_N,N=$GEMM_N")"
mine[gemm-bf16]="$(unitile_ms "$WORK/gemm-bf16.ut" "M=$GEMM_N,K=$GEMM_N,N=$GEMM_N")"
mine[attention-f32]="$(unitile_ms examples/attention.ut "N=$ATTN_N,D=$ATTN_D")"
mine[causal-attention-f32]="$(unitile_ms bench/kernels/attention.ut "H=$ATTN_H,N=$ATTN_N,D=$ATTN_D")"

baselines="$(timeout 180 "$PY" bench/cuda/baselines.py "$GEMM_N" "$ATTN_N" "$ATTN_D" "$REPEAT" "$ATTN_H" 2>&1)"
grep -E '^(#|skip:)' <<<"$baselines"
printf '%-21s %14s %14s %10s\n' kernel unitile_ms baseline_ms ratio
for k in gemm-f32 gemm-tf32 gemm-bf16 attention-f32 causal-attention-f32; do
  base="$(awk -v k="$k" '$1 == k { print $2 }' <<<"$baselines")"
  ratio="-"
  if [[ -n "$base" && "${mine[$k]}" != "-" ]]; then
    ratio="$(awk -v b="$base" -v u="${mine[$k]}" 'BEGIN { printf "%.4f", b / u }')"
  fi
  printf '%-21s %14s %14s %10s\n' "$k" "${mine[$k]}" "${base:--}" "$ratio"
done
echo "(ratio = baseline_ms / unitile_ms; gemm-f32 runs on the CUDA cores, gemm-tf32 and gemm-bf16 on the tensor cores)"
stage "done"
[[ $failed -eq 0 ]]
