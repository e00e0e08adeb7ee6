# SPDX-License-Identifier: Apache-2.0
"""Convolutions without im2col copies (transforms/DecomposeNN.cpp), checked
against torch.nn.functional.conv2d through kiln.compile:

- depthwise (groups == C_in, channel multiplier 1 or 2): a weighted sum of
  the padded input's taps, one fused loop nest;
- 1x1 (any stride, no padding, groups 1): one matmul of the [F, C] weight
  with the [N, C, H*W] input, the weight read with batch stride 0 (no copy
  per image);
- kxk of a batch: per-image GEMMs or the channel-major one-GEMM layout
  (the size rule in DecomposeNN.cpp), both checked here;
- grouped convs that are not depthwise keep the grouped im2col path.

The lowering of each shape is checked by the lit tests in
test/transforms/kiln-decompose-nn.mlir and test/pipelines/conv-direct.mlir.
"""
import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import assert_close


def run(fn, *args, rtol=1e-4, atol=1e-4):
    expected = fn(*args)
    got = kiln.compile(fn)(*args)
    assert got.shape == expected.shape
    scale = expected.abs().max().item()
    assert_close(got, expected, rtol=rtol, atol=atol * max(scale, 1.0))


DEPTHWISE = [
    # (batch, channels, multiplier, size, kernel, stride, padding, dilation)
    (1, 8, 1, 9, 3, 1, 1, 1),
    (8, 8, 1, 9, 3, 1, 1, 1),
    (8, 16, 1, 10, 3, 2, 1, 1),
    (1, 6, 1, 11, 5, 2, 2, 1),
    (8, 4, 1, 12, 3, 1, 2, 2),
    (2, 4, 1, 9, 3, 2, 0, 1),
    (8, 3, 2, 8, 3, 1, 1, 1),
    (1, 4, 3, 9, (3, 5), (2, 1), (1, 2), 1),
]


@pytest.mark.parametrize("n,c,m,size,kernel,stride,padding,dilation", DEPTHWISE)
def test_depthwise(n, c, m, size, kernel, stride, padding, dilation):
    torch.manual_seed(0)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    x = torch.randn(n, c, size, size + 1)
    w = torch.randn(c * m, 1, kh, kw)
    b = torch.randn(c * m)

    def f(x, w, b):
        return F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=c)

    run(f, x, w, b)


def test_depthwise_bf16_accumulates_in_f32():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 9, 9).to(torch.bfloat16)
    w = torch.randn(8, 1, 3, 3).to(torch.bfloat16)
    run(lambda x, w: F.conv2d(x, w, padding=1, groups=8), x, w, rtol=2e-2, atol=2e-2)


def test_depthwise_module_f64():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6).double()
    x = torch.randn(8, 6, 10, 10, dtype=torch.float64)
    with torch.no_grad():
        run(conv, x, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n,stride", [(1, 1), (8, 1), (8, 2), (3, (1, 2))])
def test_pointwise(n, stride):
    torch.manual_seed(0)
    x = torch.randn(n, 16, 7, 9)
    w = torch.randn(24, 16, 1, 1)
    b = torch.randn(24)
    run(lambda x, w, b: F.conv2d(x, w, b, stride=stride), x, w, b)


def test_pointwise_f64_batch():
    torch.manual_seed(0)
    x = torch.randn(4, 5, 6, 6, dtype=torch.float64)
    w = torch.randn(7, 5, 1, 1, dtype=torch.float64)
    run(lambda x, w: F.conv2d(x, w), x, w, rtol=1e-10, atol=1e-10)


def test_pointwise_of_a_strided_input():
    # The 1x1 conv reads a permuted (non-contiguous) input: the [N, C, H*W]
    # view needs a copy, the result must still match.
    torch.manual_seed(0)
    x = torch.randn(4, 6, 6, 5)
    w = torch.randn(3, 5, 1, 1)
    run(lambda x, w: F.conv2d(x.permute(0, 3, 1, 2), w), x, w)


KXK = [
    # (batch, c, f, size, kernel, stride, padding): resnet18-like shapes at
    # the bench's 64x64 resolution, small enough to stay fast.
    (8, 3, 16, 64, 7, 2, 3),
    (8, 16, 16, 16, 3, 1, 1),
    (8, 16, 32, 16, 3, 2, 1),
    (8, 32, 32, 4, 3, 1, 1),
    (8, 64, 64, 2, 3, 1, 1),
    (2, 4, 6, 9, (3, 2), (2, 1), (1, 0)),
]


@pytest.mark.parametrize("n,c,f,size,kernel,stride,padding", KXK)
def test_kxk_batch(n, c, f, size, kernel, stride, padding):
    torch.manual_seed(0)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    x = torch.randn(n, c, size, size)
    w = torch.randn(f, c, kh, kw)
    run(lambda x, w: F.conv2d(x, w, stride=stride, padding=padding), x, w)


@pytest.mark.parametrize("n", [1, 8])
def test_grouped_not_depthwise_keeps_im2col(n):
    torch.manual_seed(0)
    x = torch.randn(n, 8, 7, 7)
    w = torch.randn(12, 4, 3, 3)
    run(lambda x, w: F.conv2d(x, w, padding=1, groups=2), x, w)


def test_pointwise_bf16_batch():
    # 16-bit 1x1 convs keep the broadcast batch GEMM with f32 accumulation
    # (the shared-weight BLAS path is f32/f64 only).
    torch.manual_seed(0)
    x = torch.randn(4, 8, 5, 5).to(torch.bfloat16)
    w = torch.randn(6, 8, 1, 1).to(torch.bfloat16)
    run(lambda x, w: F.conv2d(x, w), x, w, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("n", [1, 8])
def test_depthwise_conv1d(n):
    # conv1d is captured as conv2d on [N, C, 1, L]: a (1, k) depthwise kernel.
    torch.manual_seed(0)
    x = torch.randn(n, 6, 20)
    w = torch.randn(12, 1, 5)
    run(lambda x, w: F.conv1d(x, w, padding=2, stride=2, groups=6), x, w)
