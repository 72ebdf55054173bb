#!/usr/bin/env bash
# Installs every dependency Unitile needs on a fresh Debian machine, then configures and
# builds it. Safe to run twice: apt-get and pip skip what is already there, and the
# build is incremental.
#   scripts/setup.sh            install + build (build/)
#   UNITILE_SKIP_APT=1 ...      skip the apt-get step (already done)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libfmt-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libxxhash-dev
  libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev
  llvm-14-tools
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  python3 python3-venv python3-numpy
  python3-dev              # the Python package's extension (headers for nanobind)
  python3-pytest python3-pytest-xdist  # tests/ops and tests/python: the op tests (two workers), the package's
  python3-torch            # tests/ops: autograd references of the backward ops; PyTorch baselines; DLPack tests
  libopenblas-dev          # `unitile bench` baseline only (bench/baselines), never linked by unitile
  libdnnl-dev              # oneDNN: `unitile bench` baseline only
  gcc-aarch64-linux-gnu    # cpu-aarch64: the NEON cross compiler (and the kernel server's)
  libc6-dev-arm64-cross    # cpu-aarch64: its libc, also qemu's sysroot (-L /usr/aarch64-linux-gnu)
  gcc-riscv64-linux-gnu    # cpu-riscv64: GNU binutils, libgcc and the kernel server's compiler
  libc6-dev-riscv64-cross  # cpu-riscv64: its libc, also qemu's sysroot (-L /usr/riscv64-linux-gnu)
  clang-15                 # cpu-riscv64: the kernel compiler (GCC 12 emits no RVV code)
  qemu-user                # cpu-aarch64, cpu-riscv64: qemu-aarch64 / qemu-riscv64 run the kernels
  chromium                 # tests only: headless Chromium renders `unitile profile --html` reports
)

if [[ "${UNITILE_SKIP_APT:-0}" != 1 ]]; then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

# A venv from Debian's own interpreter sees Debian's numpy; the rest comes from PyPI:
# lit (the text tests), nanobind and scikit-build-core (the Python package, built into
# build/ and by `pip install .`); pytest is Debian's.
if [[ ! -x .venv/bin/python ]]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
PIP_PACKAGES=(lit nanobind scikit-build-core)
.venv/bin/python -c "import lit, nanobind, scikit_build_core" 2>/dev/null ||
  .venv/bin/pip install -q "${PIP_PACKAGES[@]}"

BUILD_DIR=${UNITILE_BUILD_DIR:-build}
WERROR=OFF
if [[ -n "${CI:-}" || "${UNITILE_WERROR:-0}" == 1 ]]; then WERROR=ON; fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNITILE_WERROR=$WERROR >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
