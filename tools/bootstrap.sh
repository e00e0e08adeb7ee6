#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what kiln needs on a Debian 12 machine, idempotently:
# Debian packages (LLVM/MLIR 19, Ninja, ccache, lld, OpenBLAS, OpenSSL) and the
# project venv (.venv) with pinned Python packages. Safe to run repeatedly;
# does nothing when everything is already present.
set -euo pipefail
cd "$(dirname "$0")/.."

# libdnnl-dev: oneDNN 2.6 (CPU, libgomp) for convolutions (runtime/cpu/
# DnnlConv.cpp). PyPI's `onednn` wheel is the SYCL build: it pulls the DPC++
# runtime and a newer intel-openmp/tbb than the pinned MKL wants.
APT_PKGS=(llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools cmake ninja-build
          ccache lld libopenblas-dev libgtest-dev python3-venv clang-format-19
          libssl-dev zlib1g-dev libdnnl-dev)
# mkl: oneMKL's libmkl_rt for compiled GEMMs (the same 2024.2 MKL eager torch
# links statically); kiln dlopens it from the venv's lib/ and falls back to
# OpenBLAS without it. Its dependencies are pinned too (about 680 MB in all).
PY_PKGS=("torch==2.11.0" "numpy>=1.26,<3" "pytest>=8" "nanobind==2.4.0" "lit==18.1.8"
         "mkl==2024.2.2" "intel-openmp==2024.2.1" "intel-cmplr-lib-ur==2024.2.1"
         "tbb==2021.13.1"
         # Test and benchmark models (no weights are downloaded: random init).
         # transformers stays on 4.x: 5.x needs packages PyPI's mirror lacks.
         "torchvision==0.26.0" "timm==1.0.31" "transformers==4.57.6"
         # kiln.export tests read the artifact's weights with the reference reader.
         "safetensors==0.8.0"
         # kiln.quant's accuracy tests train on its bundled digits (load_digits).
         "scikit-learn==1.9.1"
         # PT2E's X86InductorQuantizer (torch 2.11 moved it to torchao): the
         # PT2E parity test and the int8 static bench row (a 3.4 MB wheel).
         "torchao==0.18.0")

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[bootstrap] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

stamp=.venv/.kiln-requirements
want="$(printf '%s\n' "${PY_PKGS[@]}")"
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[bootstrap] preparing .venv"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q "${PY_PKGS[@]}"
  printf '%s\n' "${PY_PKGS[@]}" > "$stamp"
fi

# Make the source-tree package importable from the venv (not when .venv is
# a link to another checkout's venv: that one keeps pointing at its own tree;
# the test suite and tools/bench.py put their checkout first anyway).
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
pth="$site/kiln.pth"
want_pth="$PWD/frontend/python"
[ -L .venv ] || [ "$(cat "$pth" 2>/dev/null)" = "$want_pth" ] || echo "$want_pth" > "$pth"
