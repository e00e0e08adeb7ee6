# SPDX-License-Identifier: Apache-2.0
"""Results keep eager's strides (capture/values/EagerLayouts.cpp): per op
on channels-last and row-major inputs (convolutions, pooling, elementwise
ops in TensorIterator's operand order, concat, interpolate, pad, views of a
result), channels-last weights, a result returned twice (one object) and
cloned, a value live at a graph break, graphs that need gradients (the
gradients equal eager's on both backward paths), and a torchvision
feature extractor. Values are checked against eager every time: the
layout changes strides only."""
import copy

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import kiln
from conftest import assert_close, assert_compiled

torch.manual_seed(0)
W = torch.randn(8, 8, 3, 3)
W_CHANNELS_LAST = W.to(memory_format=torch.channels_last)
BIAS = torch.randn(8, 1, 1)
LINEAR = torch.randn(4, 8)

# name: (function of (x, y), x is channels-last) — y is always row-major.
CASES = {
    "conv": (lambda x, y: F.conv2d(x, W, padding=1), True),
    "conv-weight-cl": (lambda x, y: F.conv2d(x, W_CHANNELS_LAST), False),
    "depthwise": (lambda x, y: F.conv2d(x, W[:, :1], groups=8, padding=1), True),
    "batch-norm": (lambda x, y: F.batch_norm(x, torch.zeros(8), torch.ones(8)), True),
    "relu": (lambda x, y: torch.relu(x), True),
    "hardswish": (lambda x, y: F.hardswish(x), True),
    "x+y": (lambda x, y: x + y, True),
    "y+x": (lambda x, y: y + x, True),  # the first full-size operand decides
    "bias+x": (lambda x, y: BIAS + x, True),  # a broadcast operand does not
    "where": (lambda x, y: torch.where(y > 0, x, y), True),
    "double": (lambda x, y: x.double(), True),
    "max-pool": (lambda x, y: F.max_pool2d(x, 2), True),
    "avg-pool": (lambda x, y: F.avg_pool2d(x, 2), True),
    "adaptive-1": (lambda x, y: F.adaptive_avg_pool2d(x, 1), True),  # N C 1 1: eager's strides
    "adaptive-2": (lambda x, y: F.adaptive_avg_pool2d(x, 2), True),
    "interpolate": (lambda x, y: F.interpolate(x, scale_factor=2), True),
    "group-norm": (lambda x, y: F.group_norm(x, 2), True),
    "pad": (lambda x, y: F.pad(x, (1, 1, 1, 1)), True),
    "pad-circular": (lambda x, y: F.pad(x, (1, 1, 1, 1), mode="circular"), True),  # row-major
    "cat": (lambda x, y: torch.cat([x, x * 2], 1), True),
    "cat-mixed": (lambda x, y: torch.cat([x, y], 1), True),  # row-major
    "softmax": (lambda x, y: torch.softmax(x, 1), True),  # row-major
    "mean-keepdim": (lambda x, y: x.mean((2, 3), keepdim=True), True),
    "squeeze-excite": (lambda x, y: x * torch.sigmoid(x.mean((2, 3), keepdim=True)), True),
    "slice-of-result": (lambda x, y: (x + 1)[:, :4], True),
    "permuted-view": (lambda x, y: (y + 1).permute(0, 2, 3, 1), False),
    "linear-on-nhwc": (lambda x, y: F.linear(x.permute(0, 2, 3, 1), LINEAR), True),
    "row-major-conv": (lambda x, y: F.conv2d(y, W, padding=1), False),
    # contiguous() makes eager's strides row-major whatever they were
    "nhwc-copy-viewed-back": (lambda x, y: y.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
                              + 1, False),
    "contiguous-of-channels-last": (lambda x, y: (x + 1).contiguous() * 2, True),
    "transposed-copy": (lambda x, y: x.transpose(1, 2).contiguous() - y.transpose(1, 2), True),
    # an in-place update keeps the tensor's strides
    "setitem-keeps-layout": (lambda x, y: setitem_zero(F.relu(x)), True),
}


def setitem_zero(r):
    r[:, 0] = 0
    r[:, :, 1] += 1
    return r


def inputs(channels_last):
    torch.manual_seed(1)
    x = torch.randn(2, 8, 5, 6)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    return x, torch.randn(2, 8, 5, 6)


@pytest.mark.parametrize("case", list(CASES))
def test_op_strides_match_eager(case):
    fn, channels_last = CASES[case]
    x, y = inputs(channels_last)
    kiln.reset()
    with torch.no_grad():
        want = fn(x, y)
        compiled = kiln.compile(fn)
        for _ in range(2):
            got = compiled(x, y)
            assert_close(got, want, rtol=1e-5, atol=1e-5)
            assert got.stride() == want.stride(), (got.stride(), want.stride())
    assert_compiled(graphs=1, fallback_ops=0)


def test_the_model_changes_strides_only():
    # Channels-last outputs are eager's: not contiguous, channels-last.
    x, y = inputs(True)
    with torch.no_grad():
        got = kiln.compile(CASES["conv"][0])(x, y)
    assert got.is_contiguous(memory_format=torch.channels_last) and not got.is_contiguous()


def test_result_returned_twice_is_one_object_and_a_clone_is_not():
    def fn(x):
        y = torch.relu(x)
        return y, y, y.clone()

    x, _ = inputs(True)
    kiln.reset()
    with torch.no_grad():
        want = fn(x)
        got = kiln.compile(fn)(x)
    assert got[0] is got[1] and got[2] is not got[0]
    assert got[2].data_ptr() != got[0].data_ptr()
    for g, w in zip(got, want):
        assert g.stride() == w.stride()
        assert_close(g, w)


def test_value_live_at_a_graph_break_keeps_eager_strides():
    def fn(x):
        y = torch.relu(x + 1)
        print("a graph break")
        return y * 2  # eager's TensorIterator follows y's strides

    x, _ = inputs(True)
    kiln.reset()
    with torch.no_grad():
        want = fn(x)
        got = kiln.compile(fn)(x)
    assert got.stride() == want.stride()
    assert_close(got, want)
    assert_compiled(graphs=2, breaks=1)


@pytest.mark.parametrize("compiled_backward", [True, False], ids=["compiled", "eager-recompute"])
def test_graph_with_gradients_keeps_eager_strides_and_gradients(compiled_backward):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=1)).eval()
    twin = copy.deepcopy(model)
    x = torch.randn(2, 3, 9, 9).to(memory_format=torch.channels_last)
    xe, xk = x.clone().requires_grad_(), x.clone().requires_grad_()
    kiln.reset()
    with kiln.config.patch(compiled_backward=compiled_backward):
        compiled = kiln.compile(twin)
        want, got = model(xe), compiled(xk)
    assert got.stride() == want.stride() and got.requires_grad
    want.square().sum().backward()
    got.square().sum().backward()
    assert_close(xk.grad, xe.grad, rtol=1e-4, atol=1e-5)
    assert xk.grad.stride() == xe.grad.stride()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-4)
    s = kiln.stats()
    assert s["compiled_backwards" if compiled_backward else "eager_backwards"] == 1, s


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_torchvision_feature_maps(channels_last):
    torch.manual_seed(0)
    net = torchvision.models.resnet18()
    features = nn.Sequential(*list(net.children())[:-2]).eval()
    x = torch.randn(2, 3, 64, 64)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    kiln.reset()
    with torch.no_grad():
        want = features(x)
        got = kiln.compile(features)(x)
    assert got.stride() == want.stride()
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)
