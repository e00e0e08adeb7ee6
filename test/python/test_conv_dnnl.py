# SPDX-License-Identifier: Apache-2.0
"""f32 kxk convolutions through oneDNN (codegen/cpu/ConvsToDnnl.cpp,
runtime/cpu/DnnlConv.cpp; on by default: kiln.config.dnnl_convs, also set
by a fixture here) against eager: NCHW and channels-last inputs,
groups, depthwise, dilation, asymmetric and 'same' padding, padding modes,
odd sizes, stride 2, batches; the ReLU post-op; eval BatchNorm folded with
a ReLU/SiLU (and a hardswish that is not absorbed), training-mode
BatchNorm (not folded, running stats updated as eager); a ResNet bottleneck
block (BatchNorm, residual add, 1x1 convolutions, the residual stream kept
channels-last by the sunk permutes); a MobileNet-style inverted residual; and an in-place weight update between
calls. Each test also checks how many convolutions
the oneDNN shim ran (its call counter, through ctypes on kiln._C) and that kiln compiled the whole function. Skipped when kiln was built without
oneDNN (Debian libdnnl-dev, tools/bootstrap.sh).
"""
import ctypes

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from conftest import assert_close, whole_graph

_LIB = ctypes.CDLL(kiln._C.__file__)
_LIB.kilnDnnlConvCalls.restype = ctypes.c_int64

pytestmark = pytest.mark.skipif(_LIB.kilnDnnlConvCalls() < 0, reason="built without oneDNN")


@pytest.fixture(autouse=True)
def dnnl_on():
    with kiln.config.patch(dnnl_convs=True):
        yield


def dnnl_calls() -> int:
    return _LIB.kilnDnnlConvCalls()


def compare(got, want):
    scale = max(want.abs().max().item(), 1.0)
    assert_close(got, want, rtol=1e-4, atol=1e-4 * scale)


def check(fn, *args, convs=1):
    """fn compiled as one graph matches eager on two calls, and the two
    calls ran `convs` oneDNN convolutions each."""
    before = dnnl_calls()
    got = whole_graph(fn, *args, compare=compare)
    assert dnnl_calls() - before == 2 * convs
    return got


CASES = [
    # (batch, C, F, H, W, kernel, stride, padding, dilation, groups)
    (1, 3, 8, 17, 15, 3, 1, 1, 1, 1),
    (2, 8, 16, 9, 11, 3, 2, 1, 1, 1),
    (1, 16, 8, 10, 10, 1, 1, 0, 1, 1),
    (1, 16, 8, 11, 11, 1, 2, 0, 1, 1),
    (3, 3, 8, 23, 23, 7, 2, 3, 1, 1),
    (1, 8, 8, 12, 13, 3, 1, 2, 2, 1),
    (1, 8, 12, 9, 9, 3, 1, 1, 1, 2),
    (2, 16, 16, 7, 7, (3, 1), (2, 1), (1, 0), 1, 4),
    (1, 4, 6, 8, 8, 2, 1, "same", 1, 1),
    (1, 5, 7, 6, 9, 3, 1, 0, 1, 1),
    (1, 8, 8, 10, 10, 3, 1, 1, 1, 8),  # depthwise
    (2, 6, 12, 9, 11, 5, 2, 2, 1, 6),  # depthwise, channel multiplier 2
    (1, 16, 16, 13, 12, 3, 1, 2, 2, 16),  # depthwise, dilated
]


@pytest.mark.parametrize("n,c,f,h,w,kernel,stride,padding,dilation,groups", CASES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_conv2d_matches_eager(n, c, f, h, w, kernel, stride, padding, dilation, groups,
                              channels_last):
    torch.manual_seed(0)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    x = torch.randn(n, c, h, w)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    wt, b = torch.randn(f, c // groups, kh, kw), torch.randn(f)

    def fn(x, wt, b):
        return F.conv2d(x, wt, b, stride=stride, padding=padding, dilation=dilation,
                        groups=groups)

    kiln.reset()
    check(fn, x, wt, b)


def test_relu_post_op():
    torch.manual_seed(0)
    x, wt = torch.randn(1, 8, 10, 10), torch.randn(16, 8, 3, 3)
    kiln.reset()
    check(lambda x, wt: F.relu(F.conv2d(x, wt, padding=1)), x, wt)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_modes(mode):
    torch.manual_seed(0)
    conv = nn.Conv2d(4, 6, 3, padding=1, padding_mode=mode).eval()
    x = torch.randn(1, 4, 9, 7)
    kiln.reset()
    with torch.no_grad():
        check(conv, x)


class Bottleneck(nn.Module):
    """torchvision's ResNet bottleneck (eval): three conv-BN pairs, ReLUs,
    a downsampling 1x1 conv on the residual path."""

    def __init__(self, c=16, mid=8, out=32, stride=2):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, mid, 1, bias=False), nn.BatchNorm2d(mid)
        self.c2, self.b2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid)
        self.c3, self.b3 = nn.Conv2d(mid, out, 1, bias=False), nn.BatchNorm2d(out)
        self.down = nn.Sequential(nn.Conv2d(c, out, 1, stride, bias=False), nn.BatchNorm2d(out))
        for bn in (self.b1, self.b2, self.b3, self.down[1]):
            nn.init.uniform_(bn.weight, 0.5, 1.5)
            nn.init.uniform_(bn.bias, -0.5, 0.5)
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)))
        return F.relu(self.b3(self.c3(y)) + self.down(x))


@pytest.mark.parametrize("channels_last", [False, True])
def test_bottleneck_block(channels_last):
    torch.manual_seed(0)
    block = Bottleneck().eval()
    x = torch.randn(2, 16, 15, 15)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    kiln.reset()
    with torch.no_grad():
        got = check(block, x, convs=4)
        want = block(x)
    # The user-visible output in eager's format: channels-last from a
    # channels-last input.
    assert got.stride() == want.stride()
    assert got.is_contiguous(memory_format=torch.channels_last) == channels_last


def test_off_by_default_keeps_im2col():
    """Without the knob, convolutions keep kiln's own lowering."""
    torch.manual_seed(0)
    x, wt = torch.randn(1, 8, 10, 10), torch.randn(16, 8, 3, 3)
    kiln.reset()
    before = dnnl_calls()
    with kiln.config.patch(dnnl_convs=False):
        whole_graph(lambda x, wt: F.conv2d(x, wt, padding=1), x, wt, compare=compare)
    assert dnnl_calls() == before


def test_off_by_default_big_convolutions_go_to_dnnl():
    """Without the knob, a convolution whose im2col columns would be big
    next to its weight (resnet's stem: 3x7x7 taps at 112x112, 7 MiB of
    columns for a 37 KiB weight) or with at least 14x14 output positions
    (a 1x1 one after BatchNorm: its weight re-laid with BatchNorm's scale
    in one reorder) runs as a oneDNN call, reading each call's weights and
    BatchNorm statistics; a 1x1 one at 7x7 keeps kiln's GEMM."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
                          nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(8),
                          nn.Conv2d(64, 32, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU(),
                          nn.AdaptiveAvgPool2d(7), nn.Conv2d(32, 16, 1)).eval()
    for bn in (model[1], model[5]):
        nn.init.uniform_(bn.weight, -1.5, 1.5)
        nn.init.uniform_(bn.running_var, 0.5, 2.0)
        nn.init.normal_(bn.running_mean)
    x = torch.randn(1, 3, 224, 224)
    kiln.reset()
    with torch.no_grad(), kiln.config.patch(dnnl_convs=False):
        check(model, x, convs=2)
        model[0].weight.mul_(-0.5)  # read on every call: no stale packed copy
        model[5].weight.mul_(3.0)   # a new BatchNorm scale folded on the next call
        model[5].running_var.add_(1.0)
        compare(kiln.compile(model)(x), model(x))


def test_inplace_weight_update_between_calls():
    """The weights are read on every call: an in-place update of a
    parameter (same tensor, new values) changes the next result."""
    torch.manual_seed(0)
    conv = nn.Conv2d(8, 8, 3, padding=1).eval()
    x = torch.randn(1, 8, 12, 12)
    kiln.reset()
    compiled = kiln.compile(conv)
    with torch.no_grad():
        compare(compiled(x), conv(x))
        conv.weight.mul_(-2.0)
        conv.bias.add_(1.0)
        compare(compiled(x), conv(x))


@pytest.mark.parametrize("act", [nn.ReLU, nn.SiLU, nn.Hardswish, nn.Identity])
@pytest.mark.parametrize("channels_last", [False, True])
def test_conv_batchnorm_activation(act, channels_last):
    """Eval BatchNorm after a biased convolution is folded into the call
    (ReLU/SiLU as post-ops; hardswish stays a kiln op after it)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(6, 10, 3, padding=1), nn.BatchNorm2d(10), act()).eval()
    bn = model[1]
    nn.init.uniform_(bn.weight, 0.5, 1.5)
    nn.init.uniform_(bn.bias, -0.5, 0.5)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 6, 11, 9)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    kiln.reset()
    with torch.no_grad():
        check(model, x)


def test_training_batchnorm_not_folded():
    """Training-mode BatchNorm normalizes with the batch's statistics (of
    the convolution's output): results and running stats match eager."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()).train()
    ref = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()).train()
    ref.load_state_dict(model.state_dict())
    x = torch.randn(2, 4, 9, 9)
    kiln.reset()
    compiled = kiln.compile(model)
    with torch.no_grad():
        for _ in range(2):
            compare(compiled(x), ref(x))
    assert_close(model[1].running_mean, ref[1].running_mean)
    assert_close(model[1].running_var, ref[1].running_var)


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, depthwise 3x3, 1x1 project (all
    oneDNN), BatchNorms, ReLU6, residual add."""

    def __init__(self, c=8, hidden=24):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
            nn.ReLU6(), nn.Conv2d(hidden, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.body(x)


def test_inverted_residual_block():
    torch.manual_seed(0)
    block = InvertedResidual().eval()
    x = torch.randn(1, 8, 13, 13)
    kiln.reset()
    with torch.no_grad():
        check(block, x, convs=3)


_LIB.kilnDnnlConvReferenceCalls.restype = ctypes.c_int64
_LIB.kilnDnnlConvRefuse.argtypes = [ctypes.c_int64]


@pytest.mark.parametrize("channels_last", [False, True])
def test_oneDNN_refusal_runs_reference_loops_and_logs(channels_last, capfd):
    """A shape oneDNN cannot make a primitive for (forced by the test hook)
    runs kiln's reference loops: eager's result with the folded BatchNorm
    and the ReLU/SiLU post-ops, groups, dilation, asymmetric padding and
    stride, one fallbacks log line per shape naming it, never an abort."""
    torch.manual_seed(5)
    model = nn.Sequential(
        nn.Conv2d(6, 12, 3, stride=2, padding=(1, 2), groups=3), nn.BatchNorm2d(12), nn.ReLU(),
        nn.Conv2d(12, 10, (1, 3), dilation=2), nn.SiLU(),
        nn.Conv2d(10, 8, 1, bias=False)).eval()
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    # Another batch per case: an entry (and its log line) is made once per
    # shape and thread.
    batch = 3 if channels_last else 2
    x = torch.randn(batch, 6, 11, 12)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    before = _LIB.kilnDnnlConvReferenceCalls()
    _LIB.kilnDnnlConvRefuse(1)
    try:
        with kiln.config.patch(logs=frozenset({"fallbacks"})):
            check(model, x, convs=3)
    finally:
        _LIB.kilnDnnlConvRefuse(0)
    assert _LIB.kilnDnnlConvReferenceCalls() - before == 3 * 2  # 3 convs, 2 calls
    _, err = capfd.readouterr()
    assert err.count("[kiln:fallbacks] oneDNN convolution") == 3, err
    assert (f"oneDNN convolution [{batch},6,11,12] x [12,2,3,3] stride 2x2 dilation 1x1 groups 3 "
            "failed: refused by kilnDnnlConvRefuse (test hook); this convolution runs kiln's "
            "reference loops (correct, slow)") in err, err
