# SPDX-License-Identifier: Apache-2.0
"""Convolution gradients of compiled backwards through oneDNN's
backward-data / backward-weights primitives (kiln-autodiff's marked chains,
codegen/cpu/ConvGradsToDnnl.cpp, runtime/cpu/DnnlConvBwd.cpp): input and
weight gradients against eager for strides, paddings (asymmetric, 'same'),
dilations, groups, depthwise, 1x1, odd sizes and a weight-only gradient,
with the shim's call counter proving oneDNN ran; a shape oneDNN refuses
(test hook) runs kiln's reference loops with the same gradients; with
kiln.config.dnnl_conv_grads off the decomposition gives them too.
Skipped when kiln was built without oneDNN."""
import ctypes

import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import assert_close, stats

_LIB = ctypes.CDLL(kiln._C.__file__)
for _name in ("kilnDnnlConvBwdCalls", "kilnDnnlConvBwdReferenceCalls"):
    getattr(_LIB, _name).restype = ctypes.c_int64
_LIB.kilnDnnlConvBwdRefuse.argtypes = [ctypes.c_int64]

pytestmark = pytest.mark.skipif(_LIB.kilnDnnlConvBwdCalls() < 0, reason="built without oneDNN")

CASES = {
    # name: (x shape, weight shape, conv2d keyword arguments)
    "stride2_pad1": ((2, 3, 9, 9), (4, 3, 3, 3), dict(stride=2, padding=1)),
    "asym_stride_pad": ((1, 2, 5, 6), (3, 2, 2, 3), dict(stride=(1, 2), padding=(0, 1))),
    "dilation_groups": ((1, 4, 7, 8), (6, 2, 3, 2), dict(padding=(2, 1), dilation=2, groups=2)),
    "depthwise_stride2": ((2, 4, 6, 6), (4, 1, 3, 3), dict(stride=2, padding=1, groups=4)),
    "pointwise": ((2, 4, 5, 5), (5, 4, 1, 1), {}),
    "pointwise_stride2": ((2, 8, 7, 7), (6, 8, 1, 1), dict(stride=2)),
    "same_even_kernel": ((1, 2, 5, 5), (3, 2, 2, 2), dict(padding="same")),
    "odd_sizes_stem": ((3, 3, 13, 11), (8, 3, 7, 7), dict(stride=2, padding=3)),
    "stride3_dilation2": ((2, 6, 17, 15), (4, 3, 3, 3), dict(stride=3, dilation=2, groups=2)),
    "unread_cells": ((1, 2, 8, 8), (2, 2, 2, 2), dict(stride=3)),
}


def _run(xs, ws, kw, x_grad=True):
    torch.manual_seed(0)
    x = torch.randn(*xs, requires_grad=x_grad)
    w = torch.randn(*ws, requires_grad=True)
    xr = x.detach().clone().requires_grad_(x_grad)
    wr = w.detach().clone().requires_grad_()
    fn = kiln.compile(lambda a, b: F.conv2d(a, b, **kw).square().sum())
    fn(x, w).backward()
    F.conv2d(xr, wr, **kw).square().sum().backward()
    s = stats()
    assert s["compiled_backwards"] == 1 and s["eager_backwards"] == 0, s
    if x_grad:
        assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-4 * xr.grad.abs().max().item())
    else:
        assert x.grad is None
    assert_close(w.grad, wr.grad, rtol=1e-4, atol=1e-4 * wr.grad.abs().max().item())


@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_gradients_run_onednn_backward(name):
    before = _LIB.kilnDnnlConvBwdCalls()
    refs = _LIB.kilnDnnlConvBwdReferenceCalls()
    _run(*CASES[name])
    assert _LIB.kilnDnnlConvBwdCalls() - before == 2  # backward-data and -weights
    assert _LIB.kilnDnnlConvBwdReferenceCalls() == refs


def test_weight_only_gradient_is_one_backward_weights_call():
    before = _LIB.kilnDnnlConvBwdCalls()
    _run((2, 3, 16, 16), (8, 3, 7, 7), dict(stride=2, padding=3), x_grad=False)
    assert _LIB.kilnDnnlConvBwdCalls() - before == 1


@pytest.mark.parametrize("name", ["stride2_pad1", "dilation_groups", "depthwise_stride2",
                                  "same_even_kernel"])
def test_refused_shapes_run_the_reference_loops(name):
    refs = _LIB.kilnDnnlConvBwdReferenceCalls()
    _LIB.kilnDnnlConvBwdRefuse(1)
    try:
        # a shape of its own: the per-thread primitive cache has not seen it
        xs, ws, kw = CASES[name]
        _run((xs[0] + 3, *xs[1:]), ws, kw)
    finally:
        _LIB.kilnDnnlConvBwdRefuse(0)
    assert _LIB.kilnDnnlConvBwdReferenceCalls() - refs == 2


@pytest.mark.parametrize("name", ["stride2_pad1", "dilation_groups"])
def test_decomposed_gradients_when_off(name):
    before = _LIB.kilnDnnlConvBwdCalls()
    with kiln.config.patch(dnnl_conv_grads=False):
        _run(*CASES[name])
    assert _LIB.kilnDnnlConvBwdCalls() == before


def test_training_forward_runs_only_big_convolutions_on_onednn():
    # A training graph's forward keeps kiln's im2col convolutions except
    # those with many output positions (kTrainingMinOutputPositions, 16384:
    # resnet's stem and first stage at 224 px), which run as oneDNN calls;
    # gradients as eager's either way.
    _LIB.kilnDnnlConvCalls.restype = ctypes.c_int64
    for size, calls in ((64, 1), (32, 0)):  # 4 x 64 x 64 = 16384 positions; 4096
        torch.manual_seed(0)
        x = torch.randn(4, 3, size, size, requires_grad=True)
        w = torch.randn(8, 3, 3, 3, requires_grad=True)
        xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        kiln.reset()
        fn = kiln.compile(lambda a, b: F.conv2d(a, b, padding=1).square().sum())
        before = _LIB.kilnDnnlConvCalls()
        fn(x, w).backward()
        assert _LIB.kilnDnnlConvCalls() - before == calls, size
        assert stats()["compiled_backwards"] == 1
        F.conv2d(xr, wr, padding=1).square().sum().backward()
        assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-4 * xr.grad.abs().max().item())
        assert_close(w.grad, wr.grad, rtol=1e-4, atol=1e-4 * wr.grad.abs().max().item())
