# SPDX-License-Identifier: Apache-2.0
"""Convolution networks on NCHW and channels-last inputs against eager, on
both convolution paths: the default one (im2col + GEMM, direct depthwise)
and freezing (oneDNN on NHWC buffers, BatchNorm folded): odd sizes,
groups, dilation, padding modes, a residual block. Values and the
output's strides must match eager's (channels-last stays channels-last:
capture/values/EagerLayouts.cpp).
"""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, assert_compiled


def block(c, f, kernel, stride, padding, dilation, groups, mode):
    """conv + BatchNorm + ReLU, then a second conv; a residual add when
    the shapes allow."""
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(c, f, kernel, stride, padding, dilation, groups,
                                  padding_mode=mode)
            self.bn = nn.BatchNorm2d(f)
            self.out = nn.Conv2d(f, f, 3, 1, 1, bias=False)
            with torch.no_grad():
                self.bn.running_mean.uniform_(-0.3, 0.3)
                self.bn.running_var.uniform_(0.5, 1.5)
                self.bn.weight.uniform_(0.5, 1.5)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            return self.out(y) + y

    return Block().eval()


CASES = {
    "odd-size": (3, 8, 3, 1, 1, 1, 1, "zeros", (13, 17)),
    "strided-even": (8, 16, 3, 2, 1, 1, 1, "zeros", (16, 14)),
    "dilated": (8, 8, 3, 1, 2, 2, 1, "zeros", (11, 12)),
    "groups": (8, 12, 3, 1, 1, 1, 4, "zeros", (9, 9)),
    "depthwise": (16, 16, 5, 1, 2, 1, 16, "zeros", (10, 7)),
    "reflect": (4, 6, 3, 1, 1, 1, 1, "reflect", (9, 7)),
    "circular": (4, 6, 3, 1, 1, 1, 1, "circular", (8, 8)),
    "pointwise": (16, 8, 1, 1, 0, 1, 1, "zeros", (7, 9)),
}


def run(case, channels_last, freeze):
    torch.manual_seed(0)
    c, f, k, s, p, d, g, mode, (h, w) = CASES[case]
    model = block(c, f, k, s, p, d, g, mode)
    x = torch.randn(2, c, h, w)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    kiln.reset()
    with kiln.config.patch(freeze_weights=freeze, dnnl_convs=None), torch.no_grad():
        compiled = kiln.compile(model)
        want = model(x)
        for _ in range(2):
            got = compiled(x)
            assert_close(got, want, rtol=1e-4, atol=1e-4 * max(1.0, want.abs().max().item()))
            assert got.stride() == want.stride()
    assert_compiled(graphs=1)
    return got, want


@pytest.mark.parametrize("freeze", [False, True], ids=["default", "freezing"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_eager(case, channels_last, freeze):
    run(case, channels_last, freeze)


@pytest.mark.parametrize("freeze", [False, True], ids=["default", "freezing"])
def test_output_memory_format_follows_eager(freeze):
    got, want = run("odd-size", True, freeze)
    assert want.is_contiguous(memory_format=torch.channels_last)
    assert got.stride() == want.stride()
