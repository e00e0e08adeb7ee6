#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln's CUDA check on a GPU machine (Python 3.12, torch, CUDA driver,
# cmake + ninja; no LLVM/MLIR, no network). Kernels are compiled ahead of
# time on a machine with kiln's MLIR build (no GPU needed):
#   .venv/bin/python tools/cuda_artifact.py          # -> build/gpu-check/cases.json.gz
# then, on the GPU machine (the device tool: carry build/gpu-check):
#   tools/gpu-check.sh [artifact]
# It builds the MLIR-free runtime (runtime/cuda → libkiln_cuda.so, a few
# seconds), runs every artifact graph through it and compares with eager,
# times eager / torch.compile / kiln, times whole models (resnet50, ViT-B,
# BERT-base, GPT-2; eager vs torch.compile, tools/gpu_models.py) and, where
# kiln's extension is built too (a full dev machine with a GPU), runs the
# `cuda`-marked pytest tests. Results (JSON) go to $OUT when it is set.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ARTIFACT="${1:-$ROOT/build/gpu-check/cases.json.gz}"
PY="${PYTHON:-python3}"
BUILD="${KILN_GPU_BUILD:-${TMPDIR:-/tmp}/kiln-gpu-runtime}"
RESULTS="${OUT:-$BUILD}"

if [ ! -f "$ARTIFACT" ]; then
  echo "gpu-check: no artifact at $ARTIFACT (build it with tools/cuda_artifact.py)" >&2
  exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
cmake -S "$ROOT/runtime/cuda" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null
export KILN_CUDA_RUNTIME="$BUILD/libkiln_cuda.so"
echo "gpu-check: runtime $KILN_CUDA_RUNTIME"

status=0
"$PY" "$ROOT/tools/gpu_check.py" --artifact "$ARTIFACT" --out "$RESULTS/gpu-check.json" || status=$?
"$PY" "$ROOT/tools/gpu_models.py" --out "$RESULTS/gpu-models.json" || status=$?

if "$PY" -c "import kiln._C" 2>/dev/null; then
  "$PY" -m pytest -q -m cuda "$ROOT/test/python" || status=$?
else
  echo "gpu-check: kiln's MLIR extension is not built here: cuda-marked pytest tests not run"
fi
exit $status
