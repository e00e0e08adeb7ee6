# SPDX-License-Identifier: Apache-2.0
"""The eager-recompute backward (a graph with an op without a gradient
rule, kiln/_autograd.py `_CompiledFunction`) gives each input the gradient
of the graph alone. It used torch.autograd.grad for the inputs themselves,
which gives the total derivative: an input computed from another input (a
parameter W and h = W + 1 both passed in; a residual across a graph break;
tied weights) had the path through h counted there and again when autograd
carried h's gradient back: W's gradient silently too large (or "backward
through the graph a second time" when that path saved tensors). A
reentrant torch.utils.checkpoint upstream (HF gradient_checkpointing_enable)
also refused the .grad() call."""
import copy

import pytest
import torch

import kiln


def region(h, w):
    # cumsum has no kiln-autodiff rule: the eager-recompute backward.
    return torch.cumsum(h * w, 0).sum()


@pytest.mark.parametrize("make_h", [lambda w: w + 1, lambda w: w * 2, lambda w: w.tanh()[:3]])
def test_input_computed_from_another_input(make_h):
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    region(make_h(w), w).backward()
    want, w.grad = w.grad.clone(), None
    f = kiln.compile(region)
    f(make_h(w), w).backward()
    torch.testing.assert_close(w.grad, want)
    assert kiln.stats()["eager_backwards"] == 1


def test_residual_across_a_graph_break():
    lin = torch.nn.Linear(4, 4)
    ref = copy.deepcopy(lin)

    def block(x, lin):
        y = torch.cumsum(lin(x), -1)
        print("", end="")  # a graph break between y and the residual
        return (torch.cumsum(y + x, -1) * y).sum()

    x = torch.randn(2, 4, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    kiln.compile(block)(x, lin).backward()
    block(x2, ref).backward()
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(lin.weight.grad, ref.weight.grad)
    torch.testing.assert_close(lin.bias.grad, ref.bias.grad)


def test_double_backward_keeps_differentiable_gradients():
    w = torch.randn(3, requires_grad=True)
    (g,) = torch.autograd.grad(kiln.compile(region)(w * 1.0, w), w, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), w)
    w2 = w.detach().clone().requires_grad_()
    (g2,) = torch.autograd.grad(region(w2 * 1.0, w2), w2, create_graph=True)
    (gg2,) = torch.autograd.grad(g2.sum(), w2)
    torch.testing.assert_close(gg, gg2)


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_hf_gradient_checkpointing(name):
    """HF's reentrant checkpoints (a graph break at the checkpoint call):
    loss and every gradient as eager."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    if name == "gpt2":
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=64, resid_pdrop=0,
            embd_pdrop=0, attn_pdrop=0))
    else:
        model = transformers.BertForMaskedLM(transformers.BertConfig(
            vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, hidden_dropout_prob=0, attention_probs_dropout_prob=0))
    model.gradient_checkpointing_enable()
    model.train()
    ref = copy.deepcopy(model)
    ids = torch.randint(0, 100, (2, 7))
    loss = kiln.compile(model)(input_ids=ids, labels=ids).loss
    want = ref(input_ids=ids, labels=ids).loss
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-6)
    loss.backward()
    want.backward()
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=n)
