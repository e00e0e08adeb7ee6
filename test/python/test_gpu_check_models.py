# SPDX-License-Identifier: Apache-2.0
"""tools/gpu_check_models.py's weight transport: whole-model artifacts
travel to the GPU machine with zeroed weights (gzipped, a few MB) and get
the weights of the same model built there, by name
(kiln._artifact_file.rewrite_weights; section and header CRC-32 updated,
so libkiln_runtime's validation accepts the file). Checked here on CPU
artifacts: the format is the same for CUDA builds; the CUDA rehearsal is
`tools/gpu-check.sh --rehearse` (fake driver).
"""
import gzip
import os
import sys

import pytest
import torch

import kiln
from export_models import mlp
from kiln import _artifact_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tools"))
import gpu_check_models  # noqa: E402


def _zeroed_gz(model, x, tmp_path):
    path = str(tmp_path / "m.kiln")
    kiln.export(model, (x,), path, baseline=False)
    named = gpu_check_models._named(model)
    data = bytearray(open(path, "rb").read())
    zeroed = _artifact_file.rewrite_weights(
        data, lambda n, _dt, _shape: bytes(named[n].nbytes) if n in named else None)
    with gzip.open(path + "-fp32.kiln.gz", "wb") as f:
        f.write(data)
    return path, data, zeroed


def test_zeroed_weights_load_and_compute_with_zeros(tmp_path):
    torch.manual_seed(0)
    model, x = mlp().eval(), torch.randn(4, 64)
    path, data, zeroed = _zeroed_gz(model, x, tmp_path)
    assert sorted(zeroed) == sorted(n for n, _ in model.named_parameters())
    open(path, "wb").write(data)
    zero = mlp().eval()
    for p in zero.parameters():
        p.data.zero_()
    with torch.no_grad():
        torch.testing.assert_close(kiln.load(path)(x), zero(x))  # CRCs valid: it loads


def test_filled_artifact_matches_eager_of_the_model_built_there(tmp_path):
    torch.manual_seed(0)
    model, x = mlp().eval(), torch.randn(4, 64)
    path, _, _ = _zeroed_gz(model, x, tmp_path)
    torch.manual_seed(1)  # other random weights: the GPU machine's own
    there = mlp().eval()
    filled, count = gpu_check_models.filled_artifact(path + "-fp32.kiln.gz", there,
                                                     str(tmp_path))
    assert count == len(list(there.parameters()))
    with torch.no_grad():
        torch.testing.assert_close(kiln.load(filled)(x), there(x), rtol=1e-5, atol=1e-5)


def test_filled_artifact_refuses_a_different_model(tmp_path):
    torch.manual_seed(0)
    model, x = mlp().eval(), torch.randn(4, 64)
    path, _, _ = _zeroed_gz(model, x, tmp_path)
    with pytest.raises(ValueError, match="the artifact has F32 .* the model torch.float64"):
        gpu_check_models.filled_artifact(path + "-fp32.kiln.gz", mlp().double(),
                                         str(tmp_path))
