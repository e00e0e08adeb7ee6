# SPDX-License-Identifier: Apache-2.0
"""torch.compile(model, backend=kiln.aot_backend) (issue 16, item 4).

AOTAutograd hands over a forward and a backward graph of ATen overloads
(``torch.ops.aten.mm.default`` ...); kiln compiles both (their calls go
through capture/ops/AtenOps.cpp). Outputs and every parameter's gradient
match eager for an MLP, a transformer-style block and a small CNN (its
backward overloads lowered by kiln, no per-op fallback).
"""
import torch
import torch.nn as nn

import kiln
from conftest import assert_close, stats


class Block(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 32), nn.GELU(), nn.Linear(32, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


def _check(model, x, rtol=1e-4, atol=1e-5):
    import copy
    ref = copy.deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=kiln.aot_backend)
    out = compiled(x)
    out.sum().backward()
    expected = ref(x)
    expected.sum().backward()
    assert_close(out, expected, rtol=rtol, atol=atol)
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert_close(p.grad, q.grad, rtol=rtol, atol=atol), name
    s = stats()
    assert s["compiled_calls"] >= 2 and s["graph_breaks"] == 0, s  # forward and backward
    torch._dynamo.reset()


def test_aot_mlp_forward_and_backward():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    _check(model, torch.randn(5, 8))


def test_aot_transformer_block_forward_and_backward():
    _check(Block(), torch.randn(2, 6, 16), rtol=1e-4, atol=1e-4)


def test_aot_cnn_backward_overloads_lowered():
    """convolution_backward (stride, groups), max_pool2d_with_indices(_backward)
    and _adaptive_avg_pool2d_backward in the backward graph: kiln lowers them
    (kiln/_aten_nn.py, _aten_pool.py), no per-op fallback."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                          nn.MaxPool2d(3, 2, 1), nn.Conv2d(8, 8, 3, padding=1, groups=2),
                          nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32, 4))
    _check(model, torch.randn(2, 3, 16, 16), rtol=1e-4, atol=1e-4)
    assert stats()["fallback_ops"] == 0, stats()
