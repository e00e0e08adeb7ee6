# SPDX-License-Identifier: Apache-2.0
"""nn.Linear weights packed once under kiln.config.freeze_weights
(runtime/cpu/PackedGemm.h): the GEMM shim reorders a stamped weight into
oneDNN's blocked matmul layout once per (tensor, version) and runs oneDNN's
matmul on the packed copy. Every way of changing a weight after compiling
must give eager's new answer, never the stale packed one; the packed copy
is freed when its tensor dies; nothing is packed with the knob off, for a
one-row input or for a weight that is not transposed (x @ W). Counted
through the shim's counters (ctypes on kiln._C). Skipped when kiln was
built without oneDNN.
"""
import ctypes
import gc
import threading

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats

_LIB = ctypes.CDLL(kiln._C.__file__)
for _name in ("kilnGemmWeightPacks", "kilnGemmPackedCalls", "kilnGemmPackedBytes"):
    getattr(_LIB, _name).restype = ctypes.c_int64

pytestmark = pytest.mark.skipif(_LIB.kilnGemmWeightPacks() < 0, reason="built without oneDNN")


def packs() -> int:
    return _LIB.kilnGemmWeightPacks()


def packed_calls() -> int:
    return _LIB.kilnGemmPackedCalls()


def compare(got, want):
    assert_close(got, want, rtol=1e-4, atol=1e-4 * max(want.abs().max().item(), 1.0))


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 384)).eval()


def warm(model, x):
    """model compiled under freezing and run until its weights are packed
    (the first run learns that the graph's GEMMs ask for stamps)."""
    kiln.reset()
    compiled = kiln.compile(model)
    with torch.no_grad():
        for _ in range(2):
            compare(compiled(x), model(x))
    return compiled


@pytest.fixture(autouse=True)
def frozen():
    with kiln.config.patch(freeze_weights=True):
        yield


def test_packed_once_and_used():
    model, x = mlp(), torch.randn(16, 256)
    before = packs()
    compiled = warm(model, x)
    assert packs() == before + 2  # both weights, once
    calls = packed_calls()
    with torch.no_grad():
        for _ in range(3):
            compare(compiled(x), model(x))
    assert packs() == before + 2
    assert packed_calls() == calls + 6
    s = stats()
    assert (s["graphs_compiled"], s["eager_calls"], s["fallback_ops"]) == (1, 0, 0), s


@pytest.mark.parametrize("change", ["mul_", "copy_", "view", "load_state_dict", "new_parameter"])
def test_weight_changes_after_compiling_are_seen(change):
    model, x = mlp(), torch.randn(16, 256)
    compiled = warm(model, x)
    with torch.no_grad():
        stale = compiled(x).clone()
        lin = model[0]
        if change == "mul_":
            lin.weight.mul_(-1)
        elif change == "copy_":
            lin.weight.copy_(torch.randn_like(lin.weight))
        elif change == "view":
            lin.weight[:, :8].zero_()  # in place through a view
        elif change == "load_state_dict":
            state = {k: torch.randn_like(v) for k, v in model.state_dict().items()}
            model.load_state_dict(state)
        else:
            lin.weight = nn.Parameter(torch.randn_like(lin.weight))
        want = model(x)
        assert not torch.allclose(stale, want)
        compare(compiled(x), want)
        compare(compiled(x), want)


def test_packed_copy_freed_with_its_tensor():
    model, x = mlp(), torch.randn(16, 256)
    compiled = warm(model, x)
    held = _LIB.kilnGemmPackedBytes()
    assert held >= (256 * 512 + 512 * 384) * 4
    del model, compiled
    gc.collect()
    assert _LIB.kilnGemmPackedBytes() <= held - (256 * 512 + 512 * 384) * 4


def test_nothing_packed_without_freezing_one_row_or_plain_weight():
    model = mlp()
    with kiln.config.patch(freeze_weights=False):
        before = packs()
        warm(model, torch.randn(16, 256))
        assert packs() == before
    before = packs()
    warm(model, torch.randn(1, 256))  # one row: a GEMV, packing does not pay
    assert packs() == before
    w = torch.randn(256, 512)

    def plain(a):  # x @ W: B not transposed (GPT-2's Conv1D)
        return torch.relu(a @ w)

    kiln.reset()
    compiled = kiln.compile(plain)
    a = torch.randn(16, 256)
    for _ in range(3):
        compare(compiled(a), plain(a))
    assert packs() == before


def test_threads_share_packed_weights():
    model, x = mlp(), torch.randn(16, 256)
    compiled = warm(model, x)
    want = model(x).detach()
    before, errors = packs(), []

    def run():
        try:
            with torch.no_grad(), kiln.config.patch(freeze_weights=True):
                for _ in range(20):
                    compare(compiled(x), want)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert packs() == before


def test_thread_count_change_packs_for_it():
    """A oneDNN matmul's packed layout belongs to the primitive, made per
    thread count: a weight packed at 1 thread is not read by the 2-thread
    primitive (each count keeps its own pack), and both give eager's answer."""
    model, x = mlp(), torch.randn(64, 256)
    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        compiled = warm(model, x)
        with torch.no_grad():
            want = model(x)
            before = packs()
            torch.set_num_threads(2)
            for _ in range(2):
                compare(compiled(x), want)
            assert packs() == before + 2  # the 2-thread primitives' own packs
            for n in (1, 2, 1):
                torch.set_num_threads(n)
                compare(compiled(x), want)
            assert packs() == before + 2  # both counts' packs stay cached
    finally:
        torch.set_num_threads(saved)
