# SPDX-License-Identifier: Apache-2.0
"""torch.compile(model, backend=kiln.aot_backend) (issue 16, item 4).

AOTAutograd hands over a forward and a backward graph of ATen overloads
(``torch.ops.aten.mm.default`` ...); kiln compiles both (their calls go
through capture/ops/AtenOps.cpp). Outputs and every parameter's gradient
match eager for an MLP and a transformer-style block.
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
