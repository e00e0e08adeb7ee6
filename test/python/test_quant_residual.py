# SPDX-License-Identifier: Apache-2.0
"""kiln.quant.static_int8 on residual blocks (torchvision's Bottleneck).

Compiled, the int8 convolution that ends a block absorbs the residual add
and the ReLU as oneDNN post-ops, and a block output that only int8
convolutions and residual adds read stays u8: the residual then reads the
block input as the next convolutions do, dequantized from u8 with their
calibrated scale and zero point (PT2E's X86InductorQuantizer quantizes a
residual's input the same way). The tests compare with a torch reference of
exactly that arithmetic (``quantized_decomposed`` q/dq on the identity, the
converted layers' own reference ops elsewhere), with the fp32 model by SQNR,
and count the u8 outputs the int8 calls wrote.
"""
import ctypes

import pytest
import torch
from torch import nn
from torchvision.models.resnet import Bottleneck

import kiln
from conftest import assert_compiled
from test_quant import sqnr

qd = torch.ops.quantized_decomposed

_LIB = ctypes.CDLL(kiln._C.__file__)
_LIB.kilnDnnlQConvU8Outputs.restype = ctypes.c_int64
_LIB.kilnDnnlQConvReferenceCalls.restype = ctypes.c_int64
_LIB.kilnDnnlQConvRefuse.argtypes = [ctypes.c_int64]
_LIB.kilnDnnlQConvPickLast.argtypes = [ctypes.c_int64]
_LIB.kilnDnnlQConvAlternativesPicked.restype = ctypes.c_int64

pytestmark = pytest.mark.skipif(_LIB.kilnDnnlQConvU8Outputs() < 0,
                                reason="built without oneDNN")


def two_blocks():
    """A stem without ReLU (so the first block input has a nonzero zero
    point) and a max-pool, a Bottleneck without and one with a downsample,
    a pool."""
    torch.manual_seed(0)
    stem = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64))
    down = nn.Sequential(nn.Conv2d(64, 128, 1, stride=2), nn.BatchNorm2d(128))
    stem.append(nn.MaxPool2d(3, 2, 1))
    model = nn.Sequential(stem, Bottleneck(64, 16), Bottleneck(64, 32, stride=2, downsample=down),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten())
    for m in model.modules():  # non-trivial BatchNorm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
    return model.eval()


def prepared_blocks():
    model = two_blocks()
    prepared = kiln.quant.prepare(model, kiln.quant.static_int8())
    with torch.no_grad():
        for _ in range(3):
            prepared(torch.randn(2, 3, 16, 16))
    kiln.quant.convert(prepared)
    return model, prepared


def block(b, x, identity):
    """torchvision's Bottleneck.forward with the identity given."""
    out = b.relu(b.bn1(b.conv1(x)))
    out = b.relu(b.bn2(b.conv2(out)))
    out = b.bn3(b.conv3(out))
    return b.relu(out + identity)


def reference(prepared, x):
    """The converted model's reference ops, the first block's identity
    quantized with its conv1's input scale and zero point."""
    v = prepared[0](x)
    b1, b2 = prepared[1], prepared[2]
    s, z = b1.conv1.input_scale, b1.conv1.input_zero_point
    vq = qd.dequantize_per_tensor(qd.quantize_per_tensor(v, s, z, 0, 255, torch.uint8), s, z, 0,
                                  255, torch.uint8)
    y1 = block(b1, v, vq)
    y2 = block(b2, y1, b2.downsample(y1))
    return prepared[4](prepared[3](y2))


def test_bottlenecks_fuse_residuals_and_stay_u8():
    model, prepared = prepared_blocks()
    b1 = prepared[1]
    assert b1.conv1.input_zero_point > 0  # the stem has no ReLU
    x = torch.randn(2, 3, 16, 16)
    fast = kiln.compile(prepared)
    with torch.no_grad():
        fast(x)
        before = _LIB.kilnDnnlQConvU8Outputs()
        got = fast(x)
        # stem (then a u8 max-pool), b1.conv1, b1.conv2, b1.conv3 (the block
        # output), b2.conv1, b2.conv2
        assert _LIB.kilnDnnlQConvU8Outputs() - before == 6
        want, fp32 = reference(prepared, x), model(x)
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)
    # u8 roundings may differ by one step where a value sits on a tie.
    assert sqnr(want, got) > 40, sqnr(want, got)
    torch.testing.assert_close(got, want, rtol=0.02, atol=0.02)
    assert sqnr(fp32, got) > 25, sqnr(fp32, got)


def compiled_with_hook_matches_reference(hook, x):
    """The compiled bottlenecks on ``x`` with a runtime test hook on equal
    the reference ops (u8 roundings may differ by one step on ties)."""
    _, prepared = prepared_blocks()
    hook(1)
    try:
        with torch.no_grad():
            got = kiln.compile(prepared)(x)
    finally:
        hook(0)
    with torch.no_grad():
        want = reference(prepared, x)
    assert sqnr(want, got) > 40, sqnr(want, got)
    torch.testing.assert_close(got, want, rtol=0.02, atol=0.02)


def test_residual_reference_loops_match():
    """oneDNN refusing the int8 primitives (the test hook; an input size no
    earlier primitive has): kiln's reference loops compute the same residual
    arithmetic (u8 and f32 residuals, u8 and f32 outputs)."""
    before = _LIB.kilnDnnlQConvReferenceCalls()
    compiled_with_hook_matches_reference(_LIB.kilnDnnlQConvRefuse, torch.randn(1, 3, 14, 14))
    assert _LIB.kilnDnnlQConvReferenceCalls() - before == 8  # every convolution, once


def test_residuals_on_oneDNN_alternative_implementations_match():
    """An int8 convolution's first run times oneDNN's other AMX/VNNI
    implementations and keeps the fastest that gives the first one's values,
    with its weights packed in that one's layout. Forced to the last such one
    (test hook; an input size no earlier primitive has), the bottlenecks
    (u8 chains, u8 and f32 residual post-ops) still give the reference
    values."""
    before = _LIB.kilnDnnlQConvAlternativesPicked()
    compiled_with_hook_matches_reference(_LIB.kilnDnnlQConvPickLast, torch.randn(1, 3, 18, 18))
    if before >= 0:
        assert _LIB.kilnDnnlQConvAlternativesPicked() > before
