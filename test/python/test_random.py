# SPDX-License-Identifier: Apache-2.0
"""Random ops inside graphs (kiln.random, Philox 4x32-10): torch.rand/randn/
randint and their _like forms, bernoulli, dropout in training mode and
scaled_dot_product_attention with dropout compile without a graph break;
torch.manual_seed makes compiled runs reproducible, consecutive calls differ,
distributions match eager's (kiln's stream is not eager's bit for bit) and
the backward of a graph with dropout uses the forward's mask."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from kiln import _random
from conftest import assert_close, stats


def assert_one_graph(graphs=1):
    s = stats()
    assert s["graphs_compiled"] == graphs and s["graph_breaks"] == 0, s
    assert s["fallback_ops"] == 0 and s["eager_calls"] == 0, s


# --- the generator -------------------------------------------------------------

def test_philox_known_answers():
    # Random123's known-answer vectors for philox4x32-10, counter (0, 0, 0, 0)
    # under key (0, 0), through our counter/key layout (offset 0, seed 0).
    words = [int(w[0]) for w in _random.philox(0, 0, 1)]
    assert words == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_compiled_values_equal_reference_bitwise():
    # The compiled generator and kiln/_random.py (the backward's replay)
    # agree bit for bit: uniform floats and integers of the first stream.
    def f(x):
        return torch.rand(3, 5), torch.randint(-7, 100, (11,)), torch.rand(4, dtype=torch.float64)

    cf = kiln.compile(f)
    x = torch.zeros(1)
    torch.manual_seed(123)
    u, i, d = cf(x)
    torch.manual_seed(123)
    seed = _random.draw_seed()
    assert torch.equal(u, _random.uniform(seed, 0, (3, 5)))
    assert torch.equal(i, _random.integer(seed, 1 << 40, (11,), -7, 100))
    assert torch.equal(d, _random.uniform(seed, 2 << 40, (4,), torch.float64))
    assert_one_graph()


# --- reproducibility and the default generator ---------------------------------

def test_manual_seed_reproduces_and_calls_differ():
    def f(x):
        return x + torch.randn(64)

    cf = kiln.compile(f)
    x = torch.zeros(64)
    torch.manual_seed(7)
    a, b = cf(x), cf(x)
    torch.manual_seed(7)
    a2, b2 = cf(x), cf(x)
    assert torch.equal(a, a2) and torch.equal(b, b2)
    assert not torch.equal(a, b)
    assert_one_graph()
    assert stats()["compiled_calls"] == 4


def test_generator_advances_for_eager_code_after_the_graph():
    cf = kiln.compile(lambda x: x * torch.rand(8))
    x = torch.ones(8)
    torch.manual_seed(3)
    eager_next = torch.rand(4)
    torch.manual_seed(3)
    cf(x)
    assert not torch.equal(torch.rand(4), eager_next)
    torch.manual_seed(3)
    cf(x)
    after = torch.rand(4)
    torch.manual_seed(3)
    cf(x)
    assert torch.equal(torch.rand(4), after)


def test_generator_argument_breaks():
    gen = torch.Generator().manual_seed(0)

    def f(x):
        return x + torch.rand(4, generator=gen)

    report = kiln.explain(f)(torch.zeros(4))
    assert report.out.shape == (4,)
    assert "random" in report.break_counts(), report.break_records


def test_multinomial_compiles_and_with_a_generator_breaks():
    def f(p):
        return torch.multinomial(p, 2) + 1

    report = kiln.explain(f)(torch.ones(3, 4))
    assert report.out.shape == (3, 2)
    assert not report.break_counts(), report.break_records  # test_scatter_capture.py

    def g(p, gen):
        return torch.multinomial(p, 2, generator=gen) + 1

    report = kiln.explain(g)(torch.ones(3, 4), torch.Generator())
    assert report.break_counts().get("random") == 1, report.break_records


# --- distributions ---------------------------------------------------------------

N = 200_000


def test_rand_and_randn_moments():
    cf = kiln.compile(lambda x: (torch.rand(N) + x, torch.randn(N) + x,
                                 torch.rand(N, dtype=torch.float64) + x.double()))
    torch.manual_seed(0)
    u, n, d = cf(torch.zeros(()))
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    assert abs(n.mean()) < 0.01 and abs(n.var() - 1) < 0.015
    assert abs((n.abs() < 1).float().mean() - 0.6827) < 0.005  # the normal's shape, not just moments
    assert abs(d.mean() - 0.5) < 0.005 and d.dtype == torch.float64
    assert_one_graph()


def test_like_forms_and_low_precision():
    def f(x):
        return torch.rand_like(x), torch.randn_like(x), torch.randint_like(x.long(), 3, 9)

    cf = kiln.compile(f)
    x = torch.zeros(300, 200, dtype=torch.float16)
    u, n, i = cf(x)
    assert u.dtype == torch.float16 and u.shape == x.shape
    assert 0 <= u.min() and u.max() < 1 and abs(u.float().mean() - 0.5) < 0.01
    assert abs(n.float().std() - 1) < 0.02
    assert i.dtype == torch.int64 and i.min() == 3 and i.max() == 8
    counts = torch.bincount(i.flatten())[3:].float()
    assert (counts / counts.mean() - 1).abs().max() < 0.05
    assert_one_graph()


def test_randint_ranges():
    def f(x):
        return (torch.randint(10, (N,)), torch.randint(-5, 5, (N,), dtype=torch.int32),
                torch.randint(0, 2**40, (1000,)))

    cf = kiln.compile(f)
    a, b, c = cf(torch.zeros(1))
    assert a.min() == 0 and a.max() == 9 and a.dtype == torch.int64
    assert b.min() == -5 and b.max() == 4 and b.dtype == torch.int32
    assert abs(a.float().mean() - 4.5) < 0.05
    assert c.min() >= 0 and c.max() < 2**40 and c.max() > 2**39
    assert_one_graph()


def test_bernoulli_rates():
    def f(p):
        return torch.bernoulli(p), torch.bernoulli(p, 0.25), p.bernoulli(), \
            torch.empty(N).bernoulli_(0.8)

    cf = kiln.compile(f)
    p = torch.full((N,), 0.3)
    a, b, c, d = cf(p)
    for t, rate in ((a, 0.3), (b, 0.25), (c, 0.3), (d, 0.8)):
        assert set(t.unique().tolist()) <= {0.0, 1.0}
        assert abs(t.mean() - rate) < 0.005, (t.mean(), rate)
    assert_one_graph()


# --- dropout -----------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_keep_rate_and_scale(p):
    cf = kiln.compile(lambda x: F.dropout(x, p, training=True))
    x = torch.ones(N)
    y = cf(x)
    kept = y != 0
    assert abs(kept.float().mean() - (1 - p)) < 0.005
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - p)))
    assert_one_graph()


def test_dropout_edge_probabilities_and_eval():
    cf = kiln.compile(lambda x, t: (F.dropout(x, 1.0, t), F.dropout(x, 0.0, t)))
    x = torch.randn(100)
    zeros, same = cf(x, True)
    assert torch.equal(zeros, torch.zeros(100)) and torch.equal(same, x)
    z, s = cf(x, False)
    assert torch.equal(z, x) and torch.equal(s, x)


def test_inplace_dropout_writes_into_its_input():
    def f(x):
        y = x * 1
        z = F.dropout(y, 0.5, True, inplace=True)
        return y, z

    y, z = kiln.compile(f)(torch.ones(N))
    assert torch.equal(y, z) and abs((y == 0).float().mean() - 0.5) < 0.005
    assert_one_graph()


def test_channel_dropout_zeroes_whole_channels():
    def f(x):
        return F.dropout2d(x, 0.5, True), F.dropout1d(x[0], 0.5, True)

    cf = kiln.compile(f)
    y, y1 = cf(torch.ones(8, 64, 5, 5))
    per_channel = y.flatten(2)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert abs((per_channel[..., 0] == 0).float().mean() - 0.5) < 0.1
    assert ((y1 == 0).all(-1) | (y1 == 2).all(-1)).all()
    assert_one_graph()


class Block(nn.Module):
    """A small pre-norm transformer block with dropout everywhere."""

    def __init__(self, d=32, heads=4, p=0.2):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(p), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(p)
        self.heads, self.p = heads, p

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.p if self.training else 0.0)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, t, d)))
        return x + self.drop(self.mlp(self.ln2(x)))


def test_train_mode_block_is_one_graph_and_eval_matches_eager():
    model = Block()
    cm = kiln.compile(model)
    x = torch.randn(2, 16, 32)
    model.train()
    out = cm(x)
    assert out.shape == x.shape
    assert_one_graph()
    # eval mode: dropout is the identity, results match eager exactly as before
    model.eval()
    with torch.no_grad():
        assert_close(cm(x), model(x), rtol=1e-4, atol=1e-4)
    assert stats()["graph_breaks"] == 0


def test_sdpa_dropout_rate():
    q = torch.randn(1, 1, 64, 8)
    v = torch.eye(64).reshape(1, 1, 64, 64)
    # zero scores: uniform weights 1/64; dropout scales the kept ones by 1/(1-p)
    cf = kiln.compile(lambda q, v: F.scaled_dot_product_attention(q, q * 0, v, dropout_p=0.3))
    w = cf(q, v)
    kept = w != 0
    assert abs(kept.float().mean() - 0.7) < 0.02
    torch.testing.assert_close(w[kept], torch.full_like(w[kept], 1 / 64 / 0.7))
    assert_one_graph()


# --- autograd -----------------------------------------------------------------------

def test_dropout_gradient_is_mask_times_scale():
    p = 0.4
    cf = kiln.compile(lambda x: F.dropout(x, p, training=True) * 3)
    x = torch.randn(1000, requires_grad=True)
    y = cf(x)
    y.sum().backward()
    mask = (y != 0).float()
    torch.testing.assert_close(x.grad, mask * 3 / (1 - p))
    assert abs(mask.mean() - (1 - p)) < 0.06
    assert stats()["graph_breaks"] == 0 and stats()["graphs_compiled"] == 1


def test_block_gradients_use_the_forward_masks():
    model = Block().train()
    cm = kiln.compile(model)
    x = torch.randn(2, 8, 32, requires_grad=True)
    torch.manual_seed(5)
    out = cm(x)
    g = torch.randn_like(out)
    out.backward(g)
    grads = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    # The same call run eagerly with the graph's random values (the seed it
    # drew, replayed by kiln/_random.py) gives the same output and
    # gradients: the backward saw the forward's masks.
    for p_ in model.parameters():
        p_.grad = None
    xr = x.detach().clone().requires_grad_(True)
    torch.manual_seed(5)
    with _random._Replay(_random.draw_seed()):
        ref = model(xr)
    ref.backward(g)
    assert_close(out, ref, rtol=1e-4, atol=1e-5)
    ref_grads = [p.grad for p in model.parameters()] + [xr.grad]
    for a, b in zip(grads, ref_grads):
        assert_close(a, b, rtol=1e-3, atol=1e-5)
    assert stats()["graph_breaks"] == 0 and stats()["graphs_compiled"] == 1


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_replay_takes_the_graphs_attention_masks(need_weights):
    # multi_head_attention_forward dispatches __torch_function__ itself; its
    # inner dropout (need_weights) or SDPA dropout_p must still be replayed,
    # else the eager-recompute backward draws other masks (and shifts the
    # streams of every later random op).
    mha = nn.MultiheadAttention(16, 4, dropout=0.5, batch_first=True).train()
    x = torch.randn(2, 6, 16)
    fn = kiln.compile(lambda t: F.dropout(mha(t, t, t, need_weights=need_weights)[0], 0.3))
    torch.manual_seed(3)
    out = fn(x)
    torch.manual_seed(3)
    with _random._Replay(_random.draw_seed()):
        ref = F.dropout(mha(x, x, x, need_weights=need_weights)[0], 0.3)
    assert_close(out, ref, rtol=1e-4, atol=1e-5)
    assert stats()["graph_breaks"] == 0 and stats()["graphs_compiled"] == 1


def test_mlp_with_dropout_trains_one_graph():
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 4)).train()
    cm = kiln.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, target = torch.randn(64, 16), torch.randn(64, 4)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = F.mse_loss(cm(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert sum(losses[-5:]) < 0.9 * sum(losses[:5]), losses
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["compiled_calls"] == 30, s


# --- a torchvision model in train mode -------------------------------------------

def test_torchvision_mobilenet_v2_train_is_one_graph():
    # Train mode: Dropout in the classifier, BatchNorm on batch statistics
    # with its running-stat updates. Under no_grad (a graph that needs
    # gradients still breaks at BatchNorm's num_batches_tracked += 1, a
    # buffer mutation: the training issue's work).
    tv = pytest.importorskip("torchvision")
    model = tv.models.mobilenet_v2(num_classes=10).train()
    cm = kiln.compile(model)
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        out = cm(x)
        out2 = cm(x)
    assert out.shape == (2, 10) and torch.isfinite(out).all()
    assert not torch.equal(out, out2)  # dropout draws new masks per call
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, (s, kiln._C.graph_breaks())
    assert s["recompiles"] == 0 and s["compiled_calls"] == 2, s
