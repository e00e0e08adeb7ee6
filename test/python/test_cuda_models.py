# SPDX-License-Identifier: Apache-2.0
"""Whole real models on the CUDA path without a GPU (issue 21's CI
acceptance): torchvision resnet50, mobilenet_v3_large, ViT-B/16 and HF
BERT-base, GPT-2 (random init, eval) are built on `meta` and called
through kiln.compile (the CUDA dry run); every graph they capture is
emitted with no op left out and compiled by NVRTC for sm_80 and sm_90
(tools/cuda_models.py, which also prints the per-model table).

Each model is one graph with no break: the text models' factories with
`device=input_ids.device` (torch.ones for BERT's attention mask,
torch.arange for GPT-2's positions and causal mask) are captured on the
graph's device. Every GEMM of each model's launch plan gets its cuBLASLt
call, and each distinct call runs through libkiln_cuda's lowering on the
fake driver + cuBLASLt (test/python/cuda_fake), compared with its float64
reference.
"""
import json
import os
import sys

import pytest

from conftest import run_python
from cuda_helpers import build_fake_driver, requires_nvrtc

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tools")
sys.path.insert(0, TOOLS)
import cuda_models  # noqa: E402

pytest.importorskip("torchvision")
pytest.importorskip("transformers")


@requires_nvrtc
@pytest.mark.parametrize("name", sorted(cuda_models.MODELS))
def test_whole_model_is_fully_emitted_and_compiles(name):
    r = cuda_models.check_model(name, archs=(80, 90))
    print(cuda_models.format_table([r]))
    assert r["graphs"] >= 1 and r["kernels"] > 0 and r["externs"] > 0
    assert not r["unsupported"], cuda_models.format_table([r])
    assert r["stats"]["graph_breaks"] == 0, r["stats"]
    assert r["graphs"] == 1


@pytest.mark.parametrize("name", sorted(cuda_models.MODELS))
def test_model_gemm_plans_run_through_the_fake_cublaslt(name, tmp_path):
    """Every GEMM step of the model's plan lowered to its cuBLASLt call;
    the distinct calls give their reference's numbers on the fake."""
    irs, _ = cuda_models.capture(name)
    specs, gemms = cuda_models.gemm_plans(irs)
    assert len(specs) == len(irs) and sum(gemms.values()) > 0
    keys = tmp_path / "gemms.json"
    keys.write_text(json.dumps([list(k) for k in gemms]))
    log = tmp_path / "fake.log"
    fake = build_fake_driver(tmp_path)
    code = (f"import json, sys; sys.path.insert(0, {TOOLS!r}); import cuda_models\n"
            f"keys = [tuple(k) for k in json.load(open({str(keys)!r}))]\n"
            "errors = cuda_models.validate_gemms(keys)\n"
            "print(len(errors), max(errors.values()))\n")
    env = {"KILN_CUDA_DRIVER": fake, "KILN_CUBLASLT": fake, "KILN_FAKE_CUDA_LOG": str(log)}
    r = run_python(code, env, timeout=600)
    assert r.returncode == 0, r.stderr
    count, worst = r.stdout.split()
    print(name, f"{sum(gemms.values())} GEMM steps, {count} distinct calls, max error {worst}")
    assert int(count) == len(gemms)
    assert sum(line.startswith("gemm ") for line in log.read_text().splitlines()) == len(gemms)
