# SPDX-License-Identifier: Apache-2.0
"""Memory planning (kiln-cpu-plan-memory): a compiled call's intermediates share
one arena by liveness, so its peak is what liveness allows, not the sum of
every intermediate. The peak is read from the buffer pool's counters
(kiln._C.intermediate_memory), which see the arena like any other buffer."""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, assert_compiled


def intermediate_peak(fn, *args) -> int:
    """Peak bytes of kiln's intermediate buffers during one call of fn."""
    live = kiln._C.intermediate_memory(reset_peak=True)["live"]
    fn(*args)
    return kiln._C.intermediate_memory()["peak"] - live


def compiled_peak(model, x) -> int:
    """Compiles model, checks it against eager on x and returns the peak of
    one compiled call's intermediates."""
    compiled = kiln.compile(model)
    with torch.no_grad():
        expected = model(x)
        assert_close(compiled(x), expected)
        peak = intermediate_peak(compiled, x)
        assert_close(compiled(x), expected)
    return peak


@pytest.mark.parametrize("layers", [4, 12])
def test_chain_peak_is_two_buffers_not_n(layers):
    # Each layer materializes a GEMM result and its tanh (tanh does not fuse
    # into the BLAS call), 2 * layers - 1 intermediates of 128x128 f32; at
    # any op at most two of them are live (the input and the output).
    width, batch = 128, 128
    model = nn.Sequential(*[m for _ in range(layers)
                            for m in (nn.Linear(width, width, bias=False), nn.Tanh())]).eval()
    x = torch.randn(batch, width)
    buffer = batch * width * 4
    peak = compiled_peak(model, x)
    assert_compiled(graphs=1, calls=3)
    # + the arena's alignment slack (the aligned alloc over-allocates 64 B).
    assert buffer <= peak <= 2 * buffer + 64, (peak, buffer)


def test_branches_keep_live_values_apart():
    # Residual blocks: the skip input stays live across the block's two
    # GEMMs, so the plan must keep it apart from them (a wrong overlap would
    # corrupt the result). Elementwise fusion repeats the small
    # relu(x + ...) producers in each consumer, so earlier GEMM outputs stay
    # live into later blocks: the peak is a few buffers, not the 4 per
    # block the unplanned code held.
    width, batch, blocks = 64, 256, 6

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(width, width)
            self.b = nn.Linear(width, width)

        def forward(self, x):
            return torch.relu(x + self.b(torch.tanh(self.a(x))))

    model = nn.Sequential(*[Residual() for _ in range(blocks)]).eval()
    x = torch.randn(batch, width)
    buffer = batch * width * 4
    peak = compiled_peak(model, x)
    assert buffer <= peak <= blocks * buffer, (peak, buffer)


def test_views_of_planned_buffers():
    # Reshapes, transposes and slices of intermediates are aliases of their
    # buffer: each must keep it live until the alias's last use.
    def f(x, w):
        h = torch.tanh(x @ w)
        t = h.reshape(8, 32, 64).transpose(1, 2)
        s = torch.sigmoid(t @ h.reshape(8, 32, 64)[:, :, :32])
        return (s.sum(-1, keepdim=True) * t).flatten(1) + h.reshape(8, -1)

    compiled = kiln.compile(f)
    x, w = torch.randn(256, 48), torch.randn(48, 64)
    assert_close(compiled(x, w), f(x, w))
    assert_close(compiled(x, w), f(x, w))
    assert_compiled(graphs=1, calls=2)


def test_elementwise_writes_over_dead_input_in_place():
    # A transformer MLP: the bias + GELU after the first GEMM reads the GEMM
    # result for the last time and writes a buffer of the same size, so it
    # writes over it: one [tokens, 4d] buffer, not two, live with the
    # second GEMM's [tokens, d] result (its bias add writes the output).
    tokens, d = 128, 64
    model = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)).eval()
    compiled = kiln.compile(model)
    x = torch.randn(tokens, d)
    buffer, small = tokens * 4 * d * 4, tokens * d * 4
    with torch.no_grad():
        expected = model(x)
        assert_close(compiled(x), expected)
        peak = intermediate_peak(compiled, x)
        assert_close(compiled(x), expected)
    assert buffer <= peak <= buffer + small + 64, (peak, buffer)


def test_torch_profiler_sees_the_arena():
    # torch.profiler's memory events include kiln's intermediates (the pool
    # reports its blocks, frontend/csrc/PoolProfiler.h): the arena holding
    # the first GEMM's 256x256 output is allocated and freed inside the
    # call, on torch's timeline.
    from torch.profiler import ProfilerActivity, profile

    def chain(x):
        return ((x @ x).exp() + 1) @ x

    x = torch.randn(256, 256)
    compiled = kiln.compile(chain)
    compiled(x)
    assert kiln._C.intermediate_memory()["profiled"]
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        compiled(x)
    sizes = [e.nbytes() for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    arena = intermediate_peak(compiled, x)
    assert arena >= 256 * 256 * 4, arena
    assert arena in sizes and -arena in sizes, (arena, sizes)
