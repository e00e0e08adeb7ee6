# SPDX-License-Identifier: Apache-2.0
"""F.interpolate in 'linear' and 'bilinear' modes compiled (TorchOpsNN.cpp
linearAlong: eager's source indices and weights, two gathers per spatial
dim): against eager for up- and down-sampling, sizes and scale factors,
align_corners, f32 and f64, channels-last inputs (eager's strides kept),
nn.Upsample; modes and dtypes kiln does not lower run through torch inside
the graph, also with a torch.Size argument (`size=x.shape[-2:]`); and a
torchvision segmentation model, whose head upsamples bilinearly to the
input's size, is one graph."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torchvision.models import segmentation

import kiln
from conftest import assert_close, assert_compiled

CASES = {
    "x2": (dict(scale_factor=2), (2, 3, 5, 7)),
    "x1.5": (dict(scale_factor=1.5), (1, 2, 6, 4)),
    "down": (dict(scale_factor=0.5), (1, 3, 9, 8)),
    "size": (dict(size=(5, 11)), (2, 2, 3, 4)),
    "size-down": (dict(size=(3, 2)), (1, 4, 7, 9)),
    "per-dim-scale": (dict(scale_factor=(2.0, 0.75)), (1, 2, 4, 8)),
    "align-x2": (dict(scale_factor=2, align_corners=True), (2, 3, 5, 7)),
    "align-size": (dict(size=(6, 1), align_corners=True), (1, 2, 4, 3)),
    "to-one": (dict(size=(1, 1)), (1, 2, 5, 5)),
}


def check(fn, *args, tol=1e-5, fallback_ops=0):
    kiln.reset()
    with torch.no_grad():
        want = fn(*args)
        compiled = kiln.compile(fn)
        for _ in range(2):
            got = compiled(*args)
            assert_close(got, want, rtol=tol, atol=tol)
            assert got.stride() == want.stride()
    assert_compiled(graphs=1, fallback_ops=fallback_ops)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", list(CASES))
def test_bilinear_matches_eager(case, dtype):
    kw, shape = CASES[case]
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=dtype)
    check(lambda t: F.interpolate(t * 2, mode="bilinear", **kw).relu(), x,
          tol=1e-5 if dtype == torch.float32 else 1e-12)


@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_on_sequences(align_corners):
    x = torch.randn(2, 3, 10)
    check(lambda t: F.interpolate(t, size=17, mode="linear", align_corners=align_corners), x)
    check(lambda t: F.interpolate(t, scale_factor=0.4, mode="linear",
                                  align_corners=align_corners), x)


def test_channels_last_input_keeps_eager_strides():
    x = torch.randn(2, 8, 5, 6).to(memory_format=torch.channels_last)
    check(lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), x)


def test_upsample_module():
    up = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Upsample(scale_factor=2, mode="bilinear",
                                                                  align_corners=False)).eval()
    check(up, torch.randn(1, 3, 7, 5))


def test_size_from_another_tensor():
    def f(x, y):  # the FPN / segmentation-head pattern
        return F.interpolate(x, size=y.shape[-2:], mode="bilinear", align_corners=False) + y

    check(f, torch.randn(1, 4, 4, 5), torch.randn(1, 4, 9, 11))


@pytest.mark.parametrize("mode,dtype", [("bicubic", torch.float32),
                                        ("bilinear", torch.bfloat16)])
def test_unlowered_modes_run_through_torch_with_a_size_argument(mode, dtype):
    def f(x, y):
        return F.interpolate(x * 2, size=y.shape[-2:], mode=mode, align_corners=False) + y

    x, y = torch.randn(1, 2, 4, 4, dtype=dtype), torch.randn(1, 2, 6, 7, dtype=dtype)
    check(f, x, y, tol=1e-2 if dtype == torch.bfloat16 else 1e-5, fallback_ops=1)


def test_bilinear_in_3d_input_is_eagers_error():
    x = torch.randn(1, 2, 5)
    with pytest.raises(NotImplementedError):
        kiln.compile(lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"))(x)


def test_segmentation_model_is_one_graph():
    torch.manual_seed(0)
    model = segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                   num_classes=5).eval()
    x = torch.randn(1, 3, 64, 48)
    kiln.reset()
    with torch.no_grad():
        want = model(x)["out"]
        got = kiln.compile(model)(x)["out"]
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)
