# SPDX-License-Identifier: Apache-2.0
"""nn.Module models compiled with kiln.compile, compared against eager."""
import copy
import math

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, assert_compiled, stats


def mlp(widths, act=nn.ReLU):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(act())
    return nn.Sequential(*layers)


@pytest.mark.parametrize("widths", [(8, 4), (16, 32, 8), (32, 64, 64, 64, 10), (3, 128, 1)])
@pytest.mark.parametrize("batch", [1, 4, 32])
def test_mlp_depths_widths_batches(widths, batch):
    model = mlp(widths).eval()
    compiled = kiln.compile(model)
    x = torch.randn(batch, widths[0])
    with torch.no_grad():
        expected = model(x)
        assert_close(compiled(x), expected)
        assert_close(compiled(x), expected)
    assert_compiled(graphs=1, calls=2)
    assert stats()["cache_hits"] == 1


@pytest.mark.parametrize("act", [nn.ReLU, nn.GELU, nn.Tanh, nn.Sigmoid, nn.SiLU])
def test_sequential_activations(act):
    model = nn.Sequential(nn.Linear(12, 24), act(), nn.Linear(24, 6), act()).eval()
    compiled = kiln.compile(model)
    x = torch.randn(4, 12)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
    assert_compiled(graphs=1, calls=1)


def test_sequential_layernorm_dropout_eval():
    model = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Dropout(0.5),
                          nn.Linear(32, 16), nn.Tanh()).eval()
    compiled = kiln.compile(model)
    x = torch.randn(8, 16)
    with torch.no_grad():
        # Dropout in eval mode is the identity: results are deterministic.
        assert_close(compiled(x), model(x))
        assert_close(compiled(x), model(x))
    assert_compiled(graphs=1, calls=2)


class FFNBlock(nn.Module):
    """Transformer-style feed-forward block: pre-LayerNorm, GELU, residual."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.down = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = self.norm(x)
        h = self.down(self.act(self.up(h)))
        return x + self.drop(h)


class TwoBlocks(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.first = FFNBlock(dim, 4 * dim)
        self.second = FFNBlock(dim, 2 * dim)
        self.out_norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.out_norm(self.second(self.first(x)))


@pytest.mark.parametrize("batch", [1, 4, 32])
def test_ffn_block_3d_input(batch):
    model = FFNBlock(32, 128).eval()
    compiled = kiln.compile(model)
    x = torch.randn(batch, 7, 32)
    with torch.no_grad():
        assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, calls=1)


def test_nested_user_modules():
    model = TwoBlocks(16).eval()
    compiled = kiln.compile(model)
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, calls=1)


def test_ffn_block_against_fp64():
    model = FFNBlock(24, 96).eval()
    compiled = kiln.compile(model)
    x = torch.randn(4, 3, 24)
    with torch.no_grad():
        got = compiled(x)
        ref = copy.deepcopy(model).double()(x.double())
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), ref, rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, calls=1)


@pytest.mark.parametrize("shape", [(2, 5, 12), (1, 1, 12), (3, 2, 4, 12)])
def test_linear_on_nd_input(shape):
    model = nn.Linear(12, 7).eval()
    compiled = kiln.compile(model)
    x = torch.randn(*shape)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
    assert_compiled(graphs=1, calls=1)


def test_linear_without_bias_float64():
    model = nn.Sequential(nn.Linear(10, 20, bias=False), nn.ReLU(), nn.Linear(20, 3)).double().eval()
    compiled = kiln.compile(model)
    x = torch.randn(5, 10, dtype=torch.float64)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
    assert_compiled(graphs=1, calls=1)


class SelfAttention(nn.Module):
    """Multi-head self-attention written with view/permute/matmul/softmax."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def split(self, t):
        b, n, c = t.shape
        return t.view(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3)

    def forward(self, x):
        b, n, c = x.shape
        h = self.norm(x)
        q, k, v = self.split(self.q(h)), self.split(self.k(h)), self.split(self.v(h))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        return x + self.out(y)


def test_self_attention_block():
    model = SelfAttention(16, 4).eval()
    compiled = kiln.compile(model)
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        ref = copy.deepcopy(model).double()(x.double())
        torch.testing.assert_close(compiled(x).double(), ref, rtol=1e-4, atol=1e-5)
    assert_compiled(graphs=1, calls=2)


def test_self_attention_gradients():
    model = SelfAttention(8, 2)
    ref = copy.deepcopy(model)
    x = torch.randn(3, 4, 8, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)
    kiln.compile(model)(x).square().mean().backward()
    ref(xr).square().mean().backward()
    assert_close(x.grad, xr.grad)
    for p, rp in zip(model.parameters(), ref.parameters()):
        assert_close(p.grad, rp.grad)
    assert_compiled(graphs=1, calls=1)


def test_linear_on_1d_input():
    model = nn.Linear(6, 3).eval()
    x = torch.randn(6)
    with torch.no_grad():
        assert_close(kiln.compile(model)(x), model(x))
    assert_compiled(graphs=1, calls=1)


class GRULikeCell(nn.Module):
    def __init__(self, i, h):
        super().__init__()
        self.xr, self.hr = nn.Linear(i, h), nn.Linear(h, h, bias=False)
        self.xz, self.hz = nn.Linear(i, h), nn.Linear(h, h, bias=False)
        self.xn, self.hn = nn.Linear(i, h), nn.Linear(h, h)

    def forward(self, x, hx):
        r = torch.sigmoid(self.xr(x) + self.hr(hx))
        z = torch.sigmoid(self.xz(x) + self.hz(hx))
        n = torch.tanh(self.xn(x) + r * self.hn(hx))
        return (1 - z) * n + z * hx


class UnrolledRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = GRULikeCell(4, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, steps):
        h = torch.zeros(steps[0].shape[0], 8)
        outs = []
        for x in steps:
            h = self.cell(x, h)
            outs.append(self.head(h))
        return sum(outs) / len(outs), h


def test_unrolled_rnn_over_a_list_of_steps_with_gradients():
    model = UnrolledRNN()
    ref = copy.deepcopy(model)
    steps = [torch.randn(3, 4) for _ in range(5)]
    out, h = kiln.compile(model)(steps)
    (out.sum() + h.square().sum()).backward()
    rout, rh = ref(steps)
    (rout.sum() + rh.square().sum()).backward()
    assert_close(out, rout)
    assert_close(h, rh)
    for p, rp in zip(model.parameters(), ref.parameters()):
        assert_close(p.grad, rp.grad)
    assert_compiled(graphs=1, calls=1)
    with torch.no_grad():
        assert_close(kiln.compile(model)(steps), ref(steps))  # grad mode changed
        steps.append(torch.randn(3, 4))                      # the list length is guarded
        assert_close(kiln.compile(model)(steps), ref(steps))
    s = stats()
    assert s["graphs_compiled"] == 3 and s["recompiles"] == 2, s


class MixerBlock(nn.Module):
    def __init__(self, tokens, channels):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(channels), nn.LayerNorm(channels)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(),
                                       nn.Linear(2 * tokens, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(channels, 2 * channels), nn.GELU(),
                                         nn.Linear(2 * channels, channels))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


def test_mlp_mixer_block():
    model = MixerBlock(6, 8).eval()
    x = torch.randn(2, 6, 8)
    with torch.no_grad():
        assert_close(kiln.compile(model)(x), model(x), rtol=1e-4, atol=1e-5)
    assert_compiled(graphs=1, calls=1)
