# SPDX-License-Identifier: Apache-2.0
"""Peak memory of one compiled call is at most eager's on CNN stages at
real sizes, measured as `make bench` measures it (tools/bench_memory.py):
torch's allocations from the profiler's memory events (eager: every
intermediate and the output; kiln: its outputs) plus, for kiln, the peak
of its compiled code's intermediate buffers (the buffer pool's counters).
Byte counts, not timings: the same on every run. Weights and inputs count
for neither. Guards the fusion and planning choices that had kiln above
eager: a residual stage's block outputs recomputed in every later
residual add (all kept alive), GEMM-output fills and pad borders hoisted
into the stage's first row loop, im2col columns of 3x3 convolutions.
"""
import os
import sys

import pytest
import torch
from torch import nn
from torchvision.models.convnext import CNBlock
from torchvision.models.resnet import Bottleneck

import kiln
from conftest import assert_close, assert_compiled

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from bench_memory import call_peak_bytes  # noqa: E402


def pooled(*blocks) -> nn.Module:
    """`blocks` then a global average pool: a network's stage whose output
    is small, as in the whole network (a stage-sized output would count
    the same for both, hiding the difference in what each keeps live)."""
    return nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten())


def resnet_stage() -> nn.Module:
    """resnet50's first stage (3 bottlenecks, 64 -> 256 channels) at 56x56,
    after its stem's max pool: where resnet50's peak was."""
    down = nn.Sequential(nn.Conv2d(64, 256, 1, bias=False), nn.BatchNorm2d(256))
    return pooled(Bottleneck(64, 64, downsample=down), Bottleneck(256, 64), Bottleneck(256, 64))


def convnext_stage() -> nn.Module:
    """convnext_tiny's first stage (3 blocks, 96 channels) at 56x56."""
    return pooled(*[CNBlock(96, layer_scale=1e-6, stochastic_depth_prob=0.0) for _ in range(3)])


def peaks(model, x):
    """(eager, kiln) peak bytes of one call, after checking kiln's answer
    and that kiln compiled the stage as one graph."""
    torch.manual_seed(0)
    model = model.eval()
    with torch.no_grad():
        for m in model.modules():  # non-trivial BatchNorm statistics
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
        kiln.reset()
        compiled = kiln.compile(model)
        want = model(x)
        for _ in range(2):  # the first call stamps the weights
            assert_close(compiled(x), want, rtol=1e-4, atol=1e-4)
        assert_compiled(graphs=1)
        return call_peak_bytes(lambda: model(x)), call_peak_bytes(lambda: compiled(x))


@pytest.mark.parametrize("freeze", [False, True], ids=["default", "freezing"])
@pytest.mark.parametrize("stage", [pytest.param(resnet_stage, id="resnet"),
                                   pytest.param(convnext_stage, id="convnext")])
def test_peak_at_most_eager(stage, freeze):
    # Default (no freezing): the 3x3 convolutions' im2col columns (6.9 MiB
    # at 56x56, 64 channels: eager's whole peak is 10.6) are not built;
    # such convolutions run as oneDNN calls (kiln-cpu-convs-to-dnnl's
    # min-columns-bytes, the driver's default).
    x = torch.randn(1, 64 if stage is resnet_stage else 96, 56, 56)
    with kiln.config.patch(freeze_weights=freeze, dnnl_convs=None):
        eager, compiled = peaks(stage(), x)
    assert compiled <= eager, f"kiln {compiled / 2**20:.2f} MiB > eager {eager / 2**20:.2f} MiB"


def mlp_chain(x, weights):
    for w in weights:
        x = torch.relu(x @ w)
    return x.sum(1)


def test_symbolic_batch_frees_each_intermediate_after_its_last_use():
    # With a symbolic batch nothing is in the arena: every GEMM output and
    # ReLU result is its own buffer. The deallocation pipeline freed them
    # all at the function's end (5.0x eager's peak for these 8 layers);
    # kiln-cpu-free-early frees each after its last use.
    torch.manual_seed(0)
    weights = [torch.randn(512, 512) / 20 for _ in range(8)]
    kiln.reset()
    compiled = kiln.compile(mlp_chain, dynamic=True)
    for n in (256, 257):
        x = torch.randn(n, 512)
        assert_close(compiled(x, weights), mlp_chain(x, weights), rtol=1e-4, atol=1e-4)
    assert kiln.stats()["dynamic_graphs"] == 1
    assert_compiled(graphs=1)
    eager = call_peak_bytes(lambda: mlp_chain(x, weights))
    kiln_peak = call_peak_bytes(lambda: compiled(x, weights))
    assert kiln_peak <= eager, f"kiln {kiln_peak / 2**20:.2f} MiB > eager {eager / 2**20:.2f} MiB"
