# SPDX-License-Identifier: Apache-2.0
"""Tensor.uniform_/normal_/exponential_ on tensors made in the graph filled
from kiln.random in place (nn.init.kaiming_uniform_ on a local weight):
the distributions of eager (not its stream), one graph, no break."""
import math

import torch
import torch.nn as nn

import kiln
from conftest import stats


def test_kaiming_uniform_on_local_weight():
    def f(x):
        w = torch.empty(8, 4)
        nn.init.kaiming_uniform_(w, a=math.sqrt(5))
        return x @ w, w

    x = torch.randn(6, 8)
    r, w = kiln.compile(f)(x)
    bound = 0.5  # gain sqrt(1/3), fan_in 4: sqrt(3) * gain / sqrt(4)
    assert w.abs().max().item() <= bound and w.std().item() > 0.1
    assert torch.allclose(r, x @ w, atol=1e-5)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_fill_distributions():
    def f(n):
        return (torch.empty(n, 1000).normal_(2.0, 3.0), torch.empty(n, 1000).exponential_(2.0),
                torch.empty(n, 1000).uniform_(-1, 3))

    torch.manual_seed(0)
    a, e, u = kiln.compile(f)(100)
    assert abs(a.mean().item() - 2.0) < 0.05 and abs(a.std().item() - 3.0) < 0.05
    assert abs(e.mean().item() - 0.5) < 0.01 and e.min().item() > 0
    assert u.min().item() >= -1 and u.max().item() < 3 and abs(u.mean().item() - 1.0) < 0.02
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s
