# SPDX-License-Identifier: Apache-2.0
"""kiln-layout (transforms/Layout.cpp) on ConvNeXt-style networks, which
permute to channels-last themselves around LayerNorm and Linear layers:
values against eager for NCHW and channels-last inputs, odd sizes, batch
2, depthwise kernels with stride, dilation and reflect/circular padding,
tiling (stem, downsampling) convolutions that do and do not divide the
input; that the pass rewrote the graph (no depthwise kiln.conv2d and no
NHWC→NCHW permute left inside the blocks, from the KILN_DEBUG_DIR dump);
that it leaves an NCHW network alone. Eager returns these networks'
feature maps channels-last, even from NCHW inputs: kiln returns them with
eager's strides, the graph's NHWC buffer itself as a permuted view
(capture/values/EagerLayouts.cpp), with no transposing copy left."""
import pathlib

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from conftest import assert_close, assert_compiled


class Block(nn.Module):
    """A ConvNeXt block (torchvision's CNBlock): depthwise conv, permute to
    NHWC, LayerNorm, Linear-GELU-Linear, permute back, layer scale, residual
    (only when the depthwise conv keeps the size)."""

    def __init__(self, dim, kernel=7, stride=1, dilation=1, mode="zeros"):
        super().__init__()
        pad = dilation * (kernel - 1) // 2
        self.dw = nn.Conv2d(dim, dim, kernel, stride, pad, dilation, groups=dim, padding_mode=mode)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.scale = nn.Parameter(torch.rand(dim, 1, 1) + 0.5)
        self.residual = stride == 1

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y)))).permute(0, 3, 1, 2)
        return x + self.scale * y if self.residual else self.scale * y


class Norm2d(nn.LayerNorm):
    """ConvNeXt's LayerNorm2d: over channels through two permutes."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def net(dim, patch, block):
    """Stem (patch x patch, stride patch) + Norm2d, two blocks, a 2x2
    stride-2 downsampling, one more block; returns the NCHW feature map."""
    return nn.Sequential(nn.Conv2d(3, dim, patch, patch), Norm2d(dim, eps=1e-6), Block(dim, **block),
                         Block(dim, **block), Norm2d(dim, eps=1e-6), nn.Conv2d(dim, 2 * dim, 2, 2),
                         Block(2 * dim)).eval()


CASES = {  # dim, stem patch, input H x W, block's depthwise conv
    "convnext": (16, 4, (32, 32), {}),
    "odd-size": (8, 4, (36, 44), {}),  # 9x11 maps: the downsampling drops a row/column
    "kernel3-dilated": (8, 2, (20, 18), {"kernel": 3, "dilation": 2}),
    "kernel5-reflect": (8, 4, (28, 24), {"kernel": 5, "mode": "reflect"}),
    "circular": (8, 4, (24, 24), {"kernel": 3, "mode": "circular"}),
    "strided": (8, 2, (32, 32), {"kernel": 3, "stride": 2}),
}


def compile_and_check(model, x, **knobs):
    kiln.reset()
    with torch.no_grad(), kiln.config.patch(**knobs):
        want = model(x)
        compiled = kiln.compile(model)
        for _ in range(2):
            got = compiled(x)
            assert_close(got, want, rtol=1e-4, atol=1e-4 * max(1.0, want.abs().max().item()))
    assert_compiled(graphs=1)
    return got, want


@pytest.mark.parametrize("freeze", [False, True], ids=["default", "freezing"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_eager(case, channels_last, freeze):
    dim, patch, (h, w), block = CASES[case]
    torch.manual_seed(0)
    model = net(dim, patch, block)
    x = torch.randn(2, 3, h, w)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    got, want = compile_and_check(model, x, freeze_weights=freeze, dnnl_convs=None)
    assert got.stride() == want.stride()


def test_output_memory_format_follows_eager():
    torch.manual_seed(0)
    got, want = compile_and_check(net(8, 4, {}), torch.randn(1, 3, 16, 16))
    assert want.is_contiguous(memory_format=torch.channels_last) and not want.is_contiguous()
    assert got.stride() == want.stride()


def after_layout(tmp_path, model, x, **knobs):
    """The graph after kiln-layout and its cleanup (CSE), from the debug dump."""
    compile_and_check(model, x, debug_dir=str(tmp_path), **knobs)
    (graph,) = [p for p in pathlib.Path(tmp_path).iterdir() if p.is_dir()]
    dumps = sorted(graph.glob("*-cse.mlir"), key=lambda p: int(p.name.split("-")[0]))
    return dumps[0].read_text()


def test_convnext_blocks_stay_channels_last(tmp_path):
    torch.manual_seed(0)
    ir = after_layout(tmp_path, net(16, 4, {}), torch.randn(1, 3, 32, 32))
    assert "kiln.conv2d" not in ir  # depthwise, stem and downsampling all NHWC
    # No permute to NCHW is left: the returned feature map is the NHWC
    # buffer, handed back as eager's channels-last view of it.
    assert ir.count("dims = array<i64: 0, 3, 1, 2>") == 0, ir
    assert "-> tensor<1x4x4x32xf32>" in ir


def test_layout_off_keeps_convs(tmp_path):
    torch.manual_seed(0)
    ir = after_layout(tmp_path, net(16, 4, {}), torch.randn(1, 3, 32, 32), layout=False)
    assert ir.count("kiln.conv2d") == 5


def test_nchw_network_untouched(tmp_path):
    """A MobileNet-style block (depthwise + BatchNorm + ReLU6, no permutes)
    has no channels-last neighbour: its convolutions stay NCHW."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1, groups=8), nn.BatchNorm2d(8), nn.ReLU6(),
                          nn.Conv2d(8, 16, 1)).eval()
    ir = after_layout(tmp_path, model, torch.randn(1, 8, 9, 7))
    assert ir.count("kiln.conv2d") == 2
    assert "kiln.permute" not in ir
