# SPDX-License-Identifier: Apache-2.0
"""Caller's tensors dense in another dim order than row-major (channels-last
images, the weights of `model.to(memory_format=torch.channels_last)`,
transposed matrices) are passed to compiled graphs as they are
(capture/values/InputLayouts.h): no per-call copy (`kiln.stats()
["input_copies"]` stays 0), with eager's values, result strides and
updates of the caller's tensors. Strided views that are not dense are
still copied; graphs that need gradients copy too. Every case is checked
against eager."""
import copy

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import kiln
from conftest import assert_close, assert_compiled, stats

CL = torch.channels_last


def cl(*shape):
    return torch.randn(*shape).to(memory_format=CL)


def small_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 24, 3, stride=2, padding=1), nn.ReLU(),  # 4x4 outputs: im2col + GEMM
        nn.Conv2d(24, 24, 3, padding=2, dilation=2), nn.ReLU(),
        nn.Conv2d(24, 32, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).eval()


@pytest.mark.parametrize("batch", [1, 3])
def test_channels_last_model_is_not_copied(batch):
    model = small_cnn()
    for m in model.modules():  # non-trivial BatchNorm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    model = model.to(memory_format=CL)
    x = cl(batch, 3, 16, 16)
    compiled = kiln.compile(model)
    with torch.no_grad():
        for _ in range(2):
            assert_close(compiled(x), model(x))
    assert_compiled(graphs=1, eager_calls=0, input_copies=0)


def test_channels_last_input_to_row_major_model():
    model = small_cnn()
    x = cl(2, 3, 16, 16)
    with torch.no_grad():
        assert_close(kiln.compile(model)(x), model(x))
    assert_compiled(graphs=1, input_copies=0)


def test_torchvision_resnet18_channels_last():
    model = torchvision.models.resnet18(num_classes=10).eval().to(memory_format=CL)
    x = cl(1, 3, 64, 64)
    with torch.no_grad():
        assert_close(kiln.compile(model)(x), model(x), rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0, input_copies=0)


X = cl(2, 3, 5, 7)
SQUARE = cl(1, 4, 4, 4)  # channels-last sizes equal to row-major ones
WEIGHT = cl(8, 3, 3, 3)

# name: (function, arguments); each argument is cloned keeping its strides.
CASES = {
    "relu": (lambda x: x.relu(), (X,)),
    "returned-as-is": (lambda x: x, (X,)),
    "add_": (lambda x: x.add_(1), (X,)),
    "add_-square": (lambda x: x.add_(1) * 2, (SQUARE,)),
    "update-through-view": (lambda x: x[:, 0].mul_(3), (X,)),
    "copy_": (lambda x, y: x.copy_(y), (X, torch.randn(2, 3, 5, 7))),
    "permute-view": (lambda x: x.permute(0, 2, 3, 1), (X,)),
    "permute-math": (lambda x: x.permute(0, 2, 3, 1) + 1, (X,)),
    "stride-read": (lambda x: x * x.stride()[1], (X,)),
    "is_contiguous": (lambda x: x + x.is_contiguous(memory_format=CL), (X,)),
    "contiguous": (lambda x: x.contiguous() + 0, (X,)),
    "reshape": (lambda x: x.reshape(2, -1) * 2, (X,)),
    "flatten": (lambda x: torch.flatten(x, 1), (X,)),
    "item-index": (lambda x: x[0, 1, 2], (X,)),
    "one-tensor-twice": (lambda x, y: x * y, (X, X)),
    "conv": (lambda x, w: F.conv2d(x, w, padding=1), (X, WEIGHT)),
    "conv-sum": (lambda x, w: F.conv2d(x, w).relu().sum(1), (X, WEIGHT)),
    "grouped-conv": (lambda x, w: F.conv2d(x, w, groups=3), (cl(1, 6, 5, 5), cl(6, 2, 3, 3))),
    "fallback-on-view": (lambda x: torch.special.i0(x.permute(0, 2, 3, 1)) + x.sum(), (X,)),
    "transposed-matmul": (lambda a, b: a @ b, (torch.randn(5, 6).t(), torch.randn(5, 4))),
    "transposed-square": (lambda a: a + a.t(), (torch.randn(6, 6).t(),)),
    "permuted-3d": (lambda a: a.transpose(0, 2) * a, (torch.randn(3, 3, 3).permute(2, 0, 1),)),
}


def _clones(args):
    return [a.clone(memory_format=torch.preserve_format) for a in args]


@pytest.mark.parametrize("name", list(CASES))
def test_semantics_match_eager(name):
    fn, args = CASES[name]
    compiled = kiln.compile(fn)
    for _ in range(2):
        eager_args, kiln_args = _clones(args), _clones(args)
        with torch.no_grad():
            expected, got = fn(*eager_args), compiled(*kiln_args)
        assert_close(got, expected)
        assert got.stride() == expected.stride()
        for a, e in zip(kiln_args, eager_args):  # the caller's tensors after the call
            assert torch.equal(a, e) and a.stride() == e.stride()
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s
    assert s["input_copies"] == 0, s


@pytest.mark.parametrize("x", [X, SQUARE], ids=["channels-last", "square"])
def test_update_without_result(x):
    # The write-back may not reuse the input's memory as the result buffer
    # (its dims are in another order): SQUARE's types match, the values not.
    def scale(t):
        t.mul_(2).add_(torch.arange(float(t.shape[1])).reshape(-1, 1, 1))

    a, b = _clones([x, x])
    with torch.no_grad():
        scale(a)
        kiln.compile(scale)(b)
    assert torch.equal(a, b) and a.stride() == b.stride()
    assert stats()["input_copies"] == 0


def test_returned_input_is_the_callers_object():
    x = X.clone(memory_format=torch.preserve_format)
    with torch.no_grad():
        assert kiln.compile(lambda t: t)(x) is x


def test_other_strides_recompile():
    fn = kiln.compile(lambda x: F.conv2d(x, WEIGHT).tanh() * 2)
    x = torch.randn(2, 3, 6, 6)
    with torch.no_grad():
        for t in (x, x.to(memory_format=CL), x, x.to(memory_format=CL)):
            assert_close(fn(t), F.conv2d(t, WEIGHT).tanh() * 2)
    assert stats()["graphs_compiled"] == 2
    assert stats()["input_copies"] == 0


@pytest.mark.parametrize("view", ["slice", "expand", "step"])
def test_views_that_are_not_dense_are_copied(view):
    base = cl(2, 3, 6, 6)
    x = {"slice": base[:, :, 1:], "expand": torch.randn(1, 3, 1, 6).expand(2, 3, 6, 6),
         "step": base[..., ::2]}[view]
    fn = lambda t: t * 2 + 1  # noqa: E731
    with torch.no_grad():
        assert_close(kiln.compile(fn)(x), fn(x))
    assert stats()["input_copies"] == 1


def test_training_with_channels_last_inputs_keeps_eager_gradients():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 3)).to(memory_format=CL)
    twin = copy.deepcopy(model)
    x = cl(2, 3, 8, 8)
    kiln.compile(model)(x).square().sum().backward()
    twin(x).square().sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert_close(p.grad, q.grad)


def test_frozen_channels_last_weight_updated_in_place():
    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU()).eval().to(memory_format=CL)
    x = cl(1, 8, 32, 32)  # 1024 output positions: a oneDNN convolution
    with kiln.config.patch(freeze_weights=True), torch.no_grad():
        compiled = kiln.compile(model)
        assert_close(compiled(x), model(x))
        model[0].weight.mul_(-0.5)  # same tensor, new values: repacked
        assert_close(compiled(x), model(x))
    assert stats()["input_copies"] == 0
