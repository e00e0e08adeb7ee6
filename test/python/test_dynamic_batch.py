# SPDX-License-Identifier: Apache-2.0
"""Dynamic shapes: a CNN's batch under kiln.compile's default mode.

A convolution over a batch that became symbolic by itself compiles a
static graph per batch size for the frame's first 4 graphs (a symbolic
batch's per-image GEMMs run ~2x slower than the static form); from the
5th on one `?` graph serves every batch >= 2, instead of a graph per size
up to the recompile limit and then eager. kiln.mark_dynamic keeps it
symbolic from the start. Each case compares with eager AND checks the
graph/recompile counts.
"""
import torch
from torch import nn

import kiln

from conftest import assert_close


def cnn():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, stride=2), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4)).eval()
    m[1].running_mean.uniform_(-0.5, 0.5)
    m[1].running_var.uniform_(0.5, 1.5)
    return m


def _counts():
    s = kiln.stats()
    return (s["graphs_compiled"], s["recompiles"], s["dynamic_graphs"], s["dynamic_specialized"],
            s["eager_calls"], s["graph_breaks"])


def _run(model, batches, size=13, mark=False):
    compiled = kiln.compile(model)
    rows = []
    with torch.no_grad():
        for b in batches:
            x = torch.randn(b, 3, size, size)
            if mark:
                kiln.mark_dynamic(x, 0)
            assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
            rows.append(_counts())
    return rows


def test_conv_batch_static_first_then_one_dynamic_graph():
    rows = _run(cnn(), [4, 6, 8, 3, 5, 7, 9, 2, 1, 10, 16])
    # 4, 6, 8, 3: one static graph each (the batch is symbolic after the
    # first change, specialized for the convolutions' sake).
    assert rows[3] == (4, 3, 0, 3, 0, 0)
    # 5: the 5th graph is the `?` one; 7, 9, 2 reuse it; 1 is specialized
    # (sizes 0/1 always are); 10 and 16 reuse the `?` graph again.
    assert rows[4] == (5, 4, 1, 3, 0, 0)
    assert rows[7] == (5, 4, 1, 3, 0, 0)
    assert rows[-1] == (6, 5, 1, 3, 0, 0)


def test_conv_batch_sizes_seen_before_keep_their_static_graph():
    model = cnn()
    rows = _run(model, [4, 6, 8, 3, 5, 4, 6])
    # 4 and 6 again hit their static graphs: no new graph.
    assert rows[-1] == rows[4] == (5, 4, 1, 3, 0, 0)


def test_conv_batch_marked_dynamic_is_one_graph_from_the_start():
    # (not 4 first: equal to the Linear's 4 outputs, that batch would stay static)
    assert _run(cnn(), [5, 6, 9], mark=True)[-1] == (1, 0, 1, 0, 0, 0)


def test_conv_odd_spatial_sizes_with_symbolic_batch():
    # 15x15 input: the stride-2 conv's floor division differs from 13's.
    rows = _run(cnn(), [2, 3, 4, 5, 6, 7], size=15)
    assert rows[-1] == (5, 4, 1, 3, 0, 0)
