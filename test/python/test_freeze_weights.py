# SPDX-License-Identifier: Apache-2.0
"""oneDNN convolution weights packed once ("freezing", kiln.config.
freeze_weights; runtime/cpu/WeightStamps.h, frontend/csrc/InputStamps.cpp):
the frontend stamps each input tensor of a graph with a per-object serial
and its version counter, and the oneDNN shim reorders a weight to the
primitive's blocked layout once per (tensor, version) instead of on every
call. Every way of changing a weight after compiling must give eager's new
answer, never the stale packed one: in-place add_/copy_ under no_grad, an
in-place write through a view, load_state_dict, assigning a new
nn.Parameter; the packed copy is freed when its tensor dies; with the knob
off every call reorders. Counted through the shim's counters (ctypes on
kiln._C). Skipped when kiln was built without oneDNN.
"""
import ctypes
import gc

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from conftest import assert_close

_LIB = ctypes.CDLL(kiln._C.__file__)
for _name in ("kilnDnnlConvCalls", "kilnDnnlWeightPacks", "kilnDnnlPackedBytes"):
    getattr(_LIB, _name).restype = ctypes.c_int64

pytestmark = pytest.mark.skipif(_LIB.kilnDnnlConvCalls() < 0, reason="built without oneDNN")


@pytest.fixture(autouse=True)
def dnnl_on():
    with kiln.config.patch(dnnl_convs=True, freeze_weights=True):
        yield


def packs() -> int:
    return _LIB.kilnDnnlWeightPacks()


def compare(got, want):
    assert_close(got, want, rtol=1e-4, atol=1e-4 * max(want.abs().max().item(), 1.0))


def warm(model, x):
    """model compiled and run until its weights are stamped (the first run
    learns that the graph has oneDNN convolutions); returns the compiled
    model after checking that further calls reorder nothing."""
    kiln.reset()
    compiled = kiln.compile(model)
    with torch.no_grad():
        for _ in range(2):
            compare(compiled(x), model(x))
        before, calls = packs(), _LIB.kilnDnnlConvCalls()
        compare(compiled(x), model(x))
        assert _LIB.kilnDnnlConvCalls() > calls  # oneDNN ran ...
        assert packs() == before  # ... on the cached packed weights
    return compiled


def make(channels_last=False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 8, 3, stride=2, padding=1)).eval()
    x = torch.randn(1, 8, 14, 14)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    return model, x


@pytest.mark.parametrize("channels_last", [False, True])
def test_packed_once(channels_last):
    model, x = make(channels_last)
    compiled = warm(model, x)
    before = packs()
    with torch.no_grad():
        for _ in range(3):
            compare(compiled(x), model(x))
    assert packs() == before
    assert _LIB.kilnDnnlPackedBytes() > 0


def update_add(model):
    model[0].weight.add_(0.5)


def update_copy(model):
    model[0].weight.copy_(torch.randn_like(model[0].weight))


def update_view(model):
    model[2].weight[3].zero_()


def update_state_dict(model):
    torch.manual_seed(1)
    fresh = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 8, 3, stride=2, padding=1))
    model.load_state_dict(fresh.state_dict())


def update_new_parameter(model):
    model[0].weight = nn.Parameter(torch.randn_like(model[0].weight))


@pytest.mark.parametrize("update", [update_add, update_copy, update_view, update_state_dict,
                                    update_new_parameter])
def test_weight_update_after_compile(update):
    """Each update gives eager's new answer on the next call (repacked)."""
    model, x = make()
    compiled = warm(model, x)
    with torch.no_grad():
        stale = compiled(x)
        update(model)
        before = packs()
        got, want = compiled(x), model(x)
    assert not torch.allclose(stale, want)
    compare(got, want)
    assert packs() > before


def test_packed_weights_freed_with_tensor():
    model, x = make()
    warm(model, x)
    held = _LIB.kilnDnnlPackedBytes()
    assert held > 0
    kiln.reset()
    del model
    gc.collect()
    assert _LIB.kilnDnnlPackedBytes() < held


def test_off_reorders_every_call():
    model, x = make()
    with kiln.config.patch(freeze_weights=False):
        kiln.reset()
        compiled = kiln.compile(model)
        with torch.no_grad():
            compiled(x)
            before = packs()
            compare(compiled(x), model(x))
            assert packs() - before == 2  # both convolutions reordered again
            model[0].weight.data.add_(1.0)  # bypasses the version counter
            compare(compiled(x), model(x))


def test_functional_weight_input():
    """A weight passed as a plain input tensor (not a module parameter)."""
    torch.manual_seed(0)
    x, w = torch.randn(1, 4, 9, 9), torch.randn(6, 4, 3, 3)
    kiln.reset()
    compiled = kiln.compile(lambda x, w: F.relu(F.conv2d(x, w, padding=1)))
    for _ in range(3):
        compare(compiled(x, w), F.relu(F.conv2d(x, w, padding=1)))
    w.mul_(-1.0)
    compare(compiled(x, w), F.relu(F.conv2d(x, w, padding=1)))
    w2 = torch.randn(6, 4, 3, 3)  # another tensor of the same shape
    compare(compiled(x, w2), F.relu(F.conv2d(x, w2, padding=1)))


@pytest.mark.parametrize("write", ["weight", "bn_mean"])
def test_default_sees_writes_that_bypass_the_version_counter(write):
    # Freezing is opt-in: by default a write through `.data` (which torch's
    # version counter does not see) gives eager's new answer.
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()).eval()
    x = torch.randn(1, 3, 12, 12)
    with kiln.config.patch(dnnl_convs=None, freeze_weights=False):
        compiled = kiln.compile(m)
        assert_close(compiled(x), m(x))
        if write == "weight":
            m[0].weight.data.mul_(2)
        else:
            m[1].running_mean.data.add_(1)
        assert_close(compiled(x), m(x))


def test_thread_count_change_makes_primitives_for_it():
    """A oneDNN primitive partitions its work for the thread count it was
    created at: the primitive (and its packed weights) made at 1 thread ran
    resnet50 on one core after torch.set_num_threads(2) (68 instead of 37 ms).
    Primitives and packed weights are cached per thread count."""
    model, x = make()
    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        held = _LIB.kilnDnnlPackedBytes()  # other tests' packs still alive
        compiled = warm(model, x)
        one = _LIB.kilnDnnlPackedBytes() - held
        with torch.no_grad():
            torch.set_num_threads(2)
            for _ in range(2):
                compare(compiled(x), model(x))
            assert one > 0 and _LIB.kilnDnnlPackedBytes() == held + 2 * one  # 2 threads' own
            before = packs()
            for n in (1, 2):
                torch.set_num_threads(n)
                compare(compiled(x), model(x))
            assert packs() == before  # both thread counts' packs stay cached
    finally:
        torch.set_num_threads(saved)


_LIB.kilnDnnlWinogradCalls.restype = ctypes.c_int64


def winograd_calls() -> int:
    return _LIB.kilnDnnlWinogradCalls()


@pytest.mark.parametrize("channels_last", [False, True])
def test_winograd_on_frozen_3x3(channels_last):
    """3x3 stride-1 convolutions with at least 14x14 output positions run
    oneDNN's Winograd kernels on packed (stamped) weights, BatchNorm's scale
    folded into them; stride 2 and unstamped weights stay direct. Results
    match eager, an update is repacked, and the direct kernels agree."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                          nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 16, 3, stride=2, padding=1)).eval()
    model[1].running_mean.normal_()
    model[1].running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 16, 30, 30)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    compiled = warm(model, x)
    with torch.no_grad():
        before = winograd_calls()
        want = model(x)
        got = compiled(x)
        compare(got, want)
        assert winograd_calls() == before + 2  # the two stride-1 convolutions
        model[3].weight.mul_(-0.5)
        compare(compiled(x), model(x))
        _LIB.kilnDnnlConvWinograd(0)
        try:
            before = winograd_calls()
            compare(compiled(x), model(x))
            assert winograd_calls() == before
        finally:
            _LIB.kilnDnnlConvWinograd(1)
    with kiln.config.patch(freeze_weights=False), torch.no_grad():
        before = winograd_calls()
        compare(compiled(x), model(x))
        assert winograd_calls() == before  # weights re-laid per call: direct
