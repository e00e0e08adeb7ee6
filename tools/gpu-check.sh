#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln's CUDA check on a GPU machine (Python 3.12, torch, CUDA driver,
# cmake + ninja; no LLVM/MLIR, no network). Kernels are compiled ahead of
# time on a machine with kiln's MLIR build (no GPU needed):
#   .venv/bin/python tools/cuda_artifact.py          # -> build/gpu-check/cases.json.gz
# then, on the GPU machine (the device tool: carry build/gpu-check):
#   tools/gpu-check.sh [artifact]
# It builds the MLIR-free runtime (runtime/cuda → libkiln_cuda.so, a few
# seconds), runs every artifact graph through it with both of kiln's
# executors (the whole plan in one C call with cuBLASLt GEMMs, and its
# CUDA graph: mode reduce-overhead; the dynamic cases — `?` graphs of mlp,
# ffn_block and attention with a symbolic batch or length — at three sizes
# each, one plan per size), compares with eager, times eager /
# torch.compile (default, reduce-overhead) / kiln, times whole models
# (resnet50, ViT-B, BERT-base, GPT-2; eager vs torch.compile,
# tools/gpu_models.py) and, where kiln's extension is built too (a full
# dev machine with a GPU), runs the `cuda`-marked pytest tests. Results
# (JSON, with date and device) go to $OUT when it is set.
#
#   tools/gpu-check.sh --rehearse
# is the same script's CPU rehearsal on a machine without a GPU: a small
# artifact (tools/cuda_artifact.py --small, built if missing), the fake
# driver + cuBLASLt (test/python/cuda_fake) and host-compiled kernels run
# tools/gpu_check.py --emulate; the models run tiny on the CPU; exported
# CUDA artifacts (tools/gpu_check_export.py, built if missing) run on the fake
# driver through libkiln_runtime.
#
# Whole models (issue 21): exported CUDA artifacts of resnet50, ViT-B/16,
# BERT-base and GPT-2 in fp32 and bf16, weights zeroed and gzipped, built here:
#   .venv/bin/python tools/gpu_check_models.py --build build/gpu-check/models
# (carry build/gpu-check and frontend/python/kiln/libkiln_runtime.so). On the
# GPU machine they get the weights of the same models built there, run
# through libkiln_runtime, are compared with eager and timed against eager and
# torch.compile default/max-autotune (gpu-models.json); without them the
# models are timed eager vs torch.compile only (tools/gpu_models.py). Each
# step runs under `timeout` (KILN_GPU_MODELS_S: 270 s for the models, with
# a torch.compile budget of KILN_GPU_COMPILE_BUDGET_S=150 s; KILN_GPU_STEP_S:
# 150 s for the others; under 8 min in all with the runtime build): a hung
# step is killed and named, and its JSON keeps the rows done. The rehearsal
# does the same with --small models, emulated (longer limits).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REHEARSE=0
if [ "${1:-}" = "--rehearse" ]; then
  REHEARSE=1
  shift
fi
PY="${PYTHON:-python3}"
BUILD="${KILN_GPU_BUILD:-${TMPDIR:-/tmp}/kiln-gpu-runtime}"
# Exported CUDA artifacts: tools/gpu_check_export.py --build build/gpu-check/exports
EXPORTS="${KILN_GPU_EXPORTS:-$ROOT/build/gpu-check/exports}"
MODELS="${KILN_GPU_MODELS:-$ROOT/build/gpu-check/models}"
STEP_S="${KILN_GPU_STEP_S:-150}"
MODELS_S="${KILN_GPU_MODELS_S:-270}"
# The rehearsal's emulated models run on the CPU (fake cuBLASLt in double).
if [ $REHEARSE = 1 ]; then
  MODELS_S="${KILN_GPU_MODELS_S:-1800}"
  STEP_S="${KILN_GPU_STEP_S:-900}"
fi
# step SECONDS NAME CMD...: CMD under a timeout (SIGTERM, then SIGKILL 10 s
# later); a failure or timeout is reported by name and sets the status.
step() {
  local secs=$1 name=$2 rc=0
  shift 2
  timeout -k 10 "$secs" "$@" || rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    echo "gpu-check: $name timed out after $secs s (its JSON keeps the rows done)" >&2
  elif [ $rc != 0 ]; then
    echo "gpu-check: $name failed (status $rc)" >&2
  fi
  [ $rc = 0 ] || status=1
}
RESULTS="${OUT:-$BUILD}"
if [ $REHEARSE = 1 ]; then
  ARTIFACT="${1:-$ROOT/build/gpu-check/small.json.gz}"
  [ -f "$ARTIFACT" ] || "$PY" "$ROOT/tools/cuda_artifact.py" --small -o "$ARTIFACT"
else
  ARTIFACT="${1:-$ROOT/build/gpu-check/cases.json.gz}"
fi

if [ ! -f "$ARTIFACT" ]; then
  echo "gpu-check: no artifact at $ARTIFACT (build it with tools/cuda_artifact.py)" >&2
  exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
mkdir -p "$BUILD" "$RESULTS"
cmake -S "$ROOT/runtime/cuda" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null
export KILN_CUDA_RUNTIME="$BUILD/libkiln_cuda.so"
echo "gpu-check: runtime $KILN_CUDA_RUNTIME"

status=0
if [ $REHEARSE = 1 ]; then
  FAKE="$BUILD/libfakecuda.so"
  cc -shared -fPIC -O1 -o "$FAKE" "$ROOT/test/python/cuda_fake/fake_libcuda.c" \
    "$ROOT/test/python/cuda_fake/fake_cublaslt.c" -ldl -lm
  step "$STEP_S" gpu_check.py "$PY" "$ROOT/tools/gpu_check.py" --emulate --fake-driver "$FAKE" \
    --artifact "$ARTIFACT" --out "$RESULTS/gpu-check.json"
  step "$STEP_S" gpu_models.py "$PY" "$ROOT/tools/gpu_models.py" --device cpu --small --iters 1 \
    --budget-s 0 --out "$RESULTS/gpu-models-eager.json"
  [ -d "$EXPORTS" ] || "$PY" "$ROOT/tools/gpu_check_export.py" --build "$EXPORTS"
  step "$STEP_S" gpu_check_export.py "$PY" "$ROOT/tools/gpu_check_export.py" --run "$EXPORTS" \
    --emulate --fake-driver "$FAKE" --out "$RESULTS/gpu-exports.json"
  SMALL="${KILN_GPU_SMALL_MODELS:-$ROOT/build/gpu-check/models-small}"
  [ -f "$SMALL/build.json" ] || "$PY" "$ROOT/tools/gpu_check_models.py" --build "$SMALL" --small \
    --only "${KILN_GPU_REHEARSE_ONLY:-resnet50,bert_base,gpt2}" --dtypes fp32
  step "$MODELS_S" gpu_check_models.py "$PY" "$ROOT/tools/gpu_check_models.py" --run "$SMALL" \
    --emulate --fake-driver "$FAKE" --out "$RESULTS/gpu-models.json"
  echo "gpu-check: rehearsal done (status $status)"
  exit $status
fi

# Whole models first: the rows that matter most if the machine's time runs out.
if [ -f "$MODELS/build.json" ]; then
  step "$MODELS_S" gpu_check_models.py "$PY" "$ROOT/tools/gpu_check_models.py" --run "$MODELS" \
    --budget-s "${KILN_GPU_COMPILE_BUDGET_S:-150}" --out "$RESULTS/gpu-models.json"
else
  echo "gpu-check: no whole-model exports at $MODELS: eager vs torch.compile only"
  step "$MODELS_S" gpu_models.py "$PY" "$ROOT/tools/gpu_models.py" --out "$RESULTS/gpu-models.json"
fi
step "$STEP_S" gpu_check.py "$PY" "$ROOT/tools/gpu_check.py" --artifact "$ARTIFACT" \
  --out "$RESULTS/gpu-check.json"
# Exported CUDA artifacts (kiln.export target cuda): libkiln_runtime.so built
# here and carried along ($KILN_RUNTIME_LIB, else the source tree's copy).
if [ -d "$EXPORTS" ] && PYTHONPATH="$ROOT/frontend/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" -c \
    "import ctypes, kiln_runtime; ctypes.CDLL(kiln_runtime._library_path())" 2>/dev/null; then
  step "$STEP_S" gpu_check_export.py "$PY" "$ROOT/tools/gpu_check_export.py" --run "$EXPORTS" \
    --out "$RESULTS/gpu-exports.json"
else
  echo "gpu-check: no exported artifacts at $EXPORTS or no loadable libkiln_runtime: skipped"
fi

if "$PY" -c "import kiln._C" 2>/dev/null; then
  "$PY" -m pytest -q -m cuda "$ROOT/test/python" || status=$?
else
  echo "gpu-check: kiln's MLIR extension is not built here: cuda-marked pytest tests not run"
fi
exit $status
