# SPDX-License-Identifier: Apache-2.0
"""CPU autocast (`torch.autocast("cpu", dtype=torch.bfloat16)`) captured
with eager's per-op cast policy: regions inside a compiled function, a
compiled model called under an outer autocast, nested `enabled=False`
regions, toggling the state between calls (guarded: recompiles), and a
training step under autocast with the compiled backward. Each result's
dtype equals eager autocast's and its values are within bf16 tolerance;
kiln.stats() proves the calls ran compiled (small random-init models)."""
import copy

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import kiln
from conftest import assert_compiled, stats

BF16 = dict(rtol=3e-2, atol=3e-2)  # a few bf16 roundings of O(1) values


def close(got, expected, **tol):
    """Same structure and dtypes as eager; values within bf16 tolerance."""
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            close(g, e, **tol)
        return
    if expected is None:  # a parameter the loss does not reach (BERT's pooler)
        assert got is None
        return
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    torch.testing.assert_close(got.float(), expected.float(), **(tol or BF16))


def autocast(enabled=True):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled)


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 8)).eval()


def cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 8, 3), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4)).eval()


def encoder_layer():
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()


def bert():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=32, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    return transformers.BertModel(config).eval()


def test_region_inside_compiled_function():
    m, x = mlp(), torch.randn(4, 16)

    def f(x):
        y = m[0](x)  # float32: before the region
        with autocast():
            z = m(x)
            with autocast(enabled=False):  # nested: float32 again
                w = z.float() @ m[0].weight[:8, :8]
            s = torch.softmax(z, -1)
        return y, z, w, s, z + y[:, :8]

    with torch.no_grad():
        expected = f(x)
        compiled = kiln.compile(f)
        for _ in range(2):
            close(compiled(x), expected)
    assert [t.dtype for t in expected] == [torch.float32, torch.bfloat16, torch.float32,
                                           torch.bfloat16, torch.float32]
    assert_compiled(graphs=1, calls=2, eager_calls=0)


def test_state_queries_inside_region():
    def f(x):
        with autocast():
            on = torch.is_autocast_enabled("cpu")
            dt = torch.get_autocast_dtype("cpu")
        return x * 2 if on and dt == torch.bfloat16 else x

    x = torch.randn(3)
    close(kiln.compile(f)(x), f(x), rtol=0, atol=0)
    assert_compiled(graphs=1, eager_calls=0)


@pytest.mark.parametrize("make, shape", [(mlp, (4, 16)), (cnn, (2, 3, 16, 16)),
                                         (encoder_layer, (2, 10, 32))],
                         ids=["mlp", "cnn", "encoder_layer"])
def test_model_under_outer_autocast(make, shape):
    m = make()
    x = torch.randn(*shape)
    compiled = kiln.compile(m)
    with torch.no_grad(), autocast():
        expected = m(x)
        for _ in range(2):
            close(compiled(x), expected)
    assert expected.dtype == torch.bfloat16 or make is encoder_layer
    assert_compiled(graphs=1, calls=2, eager_calls=0)


def test_bert_under_outer_autocast():
    m = bert()
    ids = torch.randint(0, 64, (2, 12))
    compiled = kiln.compile(m)
    with torch.no_grad(), autocast():
        expected = m(ids).last_hidden_state
        got = compiled(ids).last_hidden_state
        got = compiled(ids).last_hidden_state
    close(got, expected)
    assert_compiled(graphs=1, calls=2, eager_calls=0)


def test_toggling_autocast_recompiles():
    m, x = mlp(), torch.randn(4, 16)
    compiled = kiln.compile(m)
    with torch.no_grad():
        for on in (False, True, False, True):
            with autocast(on):
                got, expected = compiled(x), m(x)
            close(got, expected)
            assert got.dtype == (torch.bfloat16 if on else torch.float32)
        with torch.autocast("cpu", dtype=torch.float16):  # another dtype: another graph
            close(compiled(x), m(x))
    assert_compiled(graphs=3, calls=5, eager_calls=0)


@pytest.mark.filterwarnings("ignore:CUDA is not available")
def test_cuda_autocast_region():
    """A CUDA autocast region in a CPU graph: without CUDA torch disables it
    (eager warns) and the graph compiles; with CUDA it breaks (kiln applies
    CPU autocast only)."""
    def f(x):
        with torch.autocast("cuda", dtype=torch.float16):
            return x + 1

    x = torch.randn(3)
    close(kiln.compile(f)(x), f(x), rtol=0, atol=0)
    assert stats()["graphs_compiled"] == (0 if torch.cuda.is_available() else 1)


def test_einsum_under_autocast_breaks():
    def f(a, b):
        with autocast():
            return torch.einsum("ij,jk->ik", a, b)

    a, b = torch.randn(3, 4), torch.randn(4, 5)
    close(kiln.compile(f)(a, b), f(a, b))
    assert stats()["graph_breaks"] >= 1


def _train_step(model, x, target, compiled):
    fn = kiln.compile(model) if compiled else model
    with autocast():
        out = fn(x)
        out = getattr(out, "last_hidden_state", out)
        loss = F.mse_loss(out.float() if out.dtype != torch.float32 else out, target)
    loss.backward()
    return loss.detach(), [p.grad for p in model.parameters()]


@pytest.mark.parametrize("make, shape, out", [(mlp, (4, 16), (4, 8)),
                                              (cnn, (2, 3, 16, 16), (2, 4)),
                                              (encoder_layer, (2, 10, 32), (2, 10, 32)),
                                              (bert, None, (2, 12, 32))],
                         ids=["mlp", "cnn", "encoder_layer", "bert"])
def test_training_step_under_autocast(make, shape, out):
    m = make().train()
    torch.manual_seed(1)
    x = torch.randint(0, 64, (2, 12)) if shape is None else torch.randn(*shape)
    target = torch.randn(*out)
    eager = copy.deepcopy(m)
    loss_e, grads_e = _train_step(eager, x, target, compiled=False)
    loss_k, grads_k = _train_step(m, x, target, compiled=True)
    close(loss_k, loss_e)
    # bf16 noise relative to the gradients' scale (some gradients are ~0 in
    # exact arithmetic: a conv bias before BatchNorm, attention key biases).
    scale = max(e.abs().max().item() for e in grads_e if e is not None)
    for g, e in zip(grads_k, grads_e):
        close(g, e, rtol=5e-2, atol=2e-2 * scale)
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["compiled_backwards"] == 1 and s["eager_backwards"] == 0, s


def test_eager_recompute_backward_keeps_autocast():
    """A graph with an op without a gradient rule (cumsum) keeps the
    eager-recompute backward: called after the autocast block ends, the
    recompute runs in the forward's autocast state, so the gradients are
    eager autocast's exactly."""
    torch.manual_seed(0)
    w = torch.randn(16, 16, requires_grad=True)
    x = torch.randn(8, 16) * 10

    def f(x, w):
        return (x @ w).cumsum(0).float().square().mean()

    grads = []
    for fn in (f, kiln.compile(f)):
        w.grad = None
        with autocast():
            loss = fn(x, w)
        loss.backward()
        grads.append(w.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=0, atol=0)
    s = stats()
    assert s["compiled_calls"] == 1 and s["eager_backwards"] == 1, s
