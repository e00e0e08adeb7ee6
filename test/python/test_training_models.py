# SPDX-License-Identifier: Apache-2.0
"""One training step of whole models (random init, tiny configs) with the
compiled backward: HF BertModel and GPT2Model and torchvision's
VisionTransformer give eager's loss and every parameter gradient with
dropout off; with dropout on, eager's own masks come from another RNG, so
the compiled backward is compared with kiln's eager-recompute backward
(`compiled_backward=False`), which replays the compiled forward's random
values: autograd through the model with the same masks. kiln.stats()
proves the backward ran compiled."""
import copy

import pytest
import torch
from torch.nn import functional as F

import kiln
from conftest import assert_close, stats


MODELS = ["bert", "gpt2", "vit"]


def assert_compiled_backward():
    s = stats()
    assert s["compiled_backwards"] == 1 and s["eager_backwards"] == 0, s
    assert s["backward_calls"] == 1 and s["graph_breaks"] == 0 and s["fallback_ops"] == 0, s


def _hf_model(name, dropout):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    if name == "bert":
        config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=4, intermediate_size=64,
                                         max_position_embeddings=32, hidden_dropout_prob=dropout,
                                         attention_probs_dropout_prob=dropout)
        return transformers.BertModel(config).train()
    config = transformers.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4,
                                     n_positions=32, resid_pdrop=dropout, embd_pdrop=dropout,
                                     attn_pdrop=dropout)
    return transformers.GPT2Model(config).train()


def _vit(dropout):
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    # vit_b_16's code (VisionTransformer) at a small width and depth, 32 px;
    # attention dropout is scaled_dot_product_attention's dropout_p inside
    # nn.MultiheadAttention.
    model = tv.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=4,
                                        hidden_dim=32, mlp_dim=64, num_classes=10,
                                        dropout=dropout, attention_dropout=dropout).train()
    # torchvision zero-initializes the head, which would leave every other
    # parameter without gradient: random weights so the whole model is checked
    with torch.no_grad():
        model.heads.head.weight.normal_(0, 0.2)
    return model


def _inputs(name):
    torch.manual_seed(1)
    if name == "vit":
        return torch.randn(2, 3, 32, 32), torch.tensor([3, 7])
    return torch.randint(0, 64, (2, 12)), torch.randn(2, 12, 32)


def _loss(name, fn, x, target):
    if name == "vit":
        return F.cross_entropy(fn(x), target)
    return (fn(x).last_hidden_state - target).square().mean()


def _step(name, model, compiled=True):
    x, target = _inputs(name)
    loss = _loss(name, kiln.compile(model) if compiled else model, x, target)
    loss.backward()
    return loss.detach(), [p.grad for p in model.parameters()]


def _make(name, dropout):
    return _vit(dropout) if name == "vit" else _hf_model(name, dropout)


def _assert_same(got, want, rtol, atol):
    assert_close(got[0], want[0], rtol, atol)
    for g, w in zip(got[1], want[1]):
        assert (g is None) == (w is None)
        if g is not None:
            assert_close(g, w, rtol, atol)


# Gradients that are zero in exact arithmetic (the attention key's bias:
# softmax ignores a constant shift) come out as rounding noise near 1e-11:
# an absolute tolerance.
@pytest.mark.parametrize("name", MODELS)
def test_training_step_matches_eager_dropout_off(name):
    model = _make(name, 0.0)
    ref = copy.deepcopy(model)
    got = _step(name, model)
    assert_compiled_backward()
    _assert_same(got, _step(name, ref, compiled=False), 1e-4, 1e-6)


@pytest.mark.parametrize("name", MODELS)
def test_training_step_dropout_on_matches_autograd_with_the_same_masks(name):
    model = _make(name, 0.2)
    results = []
    for compiled_backward in (True, False):
        kiln.reset()
        model.zero_grad(set_to_none=True)
        with kiln.config.patch(compiled_backward=compiled_backward):
            torch.manual_seed(5)
            loss, grads = _step(name, model)
        results.append((loss, [None if g is None else g.clone() for g in grads]))
        if compiled_backward:
            assert_compiled_backward()
        else:
            assert stats()["eager_backwards"] == 1
    # Two differentiations of one step (kiln's GEMMs vs eager's in the
    # recompute): rounding reaches 1.3e-4 relative on a cancelling sum
    # (vit's class token); other masks would differ by O(1).
    _assert_same(results[0], results[1], 3e-4, 1e-5)
    # the masks are really on: without dropout the gradients differ
    plain = _step(name, _make(name, 0.0), compiled=False)[1]
    assert any(g is not None and not torch.allclose(g, w)
               for g, w in zip(results[0][1], plain)), "dropout had no effect"
