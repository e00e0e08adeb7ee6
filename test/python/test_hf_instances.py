# SPDX-License-Identifier: Apache-2.0
"""HuggingFace models: instances of one model class with equal configs (each
its own config object) share one graph, the config guarded by type and by
the values the forward read (capture/interp/PlainObjects.h); a config
attribute changed after compiling, or differing between instances, that the
forward reads recompiles and gives eager's result; a LLaMA-style greedy
decode passing `past_key_values=` as a keyword (the `can_return_tuple`
wrapper's `**kwargs` dict, new per call) keeps a few graphs and no eager
frame. Small random configs (no downloads)."""
import pytest
import torch

import kiln
from conftest import assert_close, stats

transformers = pytest.importorskip("transformers")

TOL = dict(rtol=1e-4, atol=2e-5)


def gpt2(**extra):
    return transformers.GPT2Model(transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64, **extra)).eval()


def bert(**extra):
    return transformers.BertModel(transformers.BertConfig(
        num_hidden_layers=2, num_attention_heads=2, hidden_size=32, intermediate_size=64,
        vocab_size=100, max_position_embeddings=64, **extra)).eval()


def check(model, ids):
    with torch.no_grad():
        out, ref = kiln.compile(model)(ids), model(ids)
    assert_close(out.last_hidden_state, ref.last_hidden_state, **TOL)
    assert (out.hidden_states is None) == (ref.hidden_states is None)
    for a, b in zip(out.hidden_states or (), ref.hidden_states or ()):
        assert_close(a, b, **TOL)
    return out.last_hidden_state


@pytest.mark.parametrize("make", [gpt2, bert], ids=["gpt2", "bert"])
def test_twelve_instances_share_one_graph(make):
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (2, 8))
    models = [make() for _ in range(12)]
    assert len({id(m.config) for m in models}) == 12  # twelve config objects
    outs = [check(m, ids) for m in models]
    assert not torch.allclose(outs[0], outs[1])  # each instance's own weights
    s = stats()
    assert s["graphs_compiled"] == 1 and s["recompiles"] == 0, s
    assert s["eager_calls"] == 0 and s["graph_breaks"] == 0, s


@pytest.mark.parametrize("make", [gpt2, bert], ids=["gpt2", "bert"])
def test_config_read_by_the_forward_is_guarded(make):
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (2, 8))
    a, b = make(), make(output_hidden_states=True)
    check(a, ids)
    check(b, ids)  # differs in a value the forward reads: not a's graph
    assert stats()["graphs_compiled"] == 2, stats()
    a.config.output_hidden_states = True  # changed after compiling
    check(a, ids)
    a.config.output_hidden_states = False
    check(a, ids)
    s = stats()
    assert s["eager_calls"] == 0 and s["compiled_calls"] == 4, s


def test_llama_decode_with_keyword_cache_keeps_few_graphs():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 100, (1, 6))

    def decode(fn, steps=12):
        out = fn(ids, use_cache=True)
        logits = [out.logits]
        for _ in range(steps):
            nxt = out.logits[:, -1:].argmax(-1)
            out = fn(nxt, past_key_values=out.past_key_values, use_cache=True)
            logits.append(out.logits)
        return logits

    with torch.no_grad():
        ref = decode(model)
        got = decode(kiln.compile(model))
    for a, b in zip(got, ref):
        assert_close(a, b, **TOL)
    s = stats()
    assert s["graphs_compiled"] <= 4 and s["eager_calls"] == 0 and s["graph_breaks"] == 0, s
    assert s["compiled_calls"] == 13, s


@pytest.mark.parametrize("make,eps", [(gpt2, "layer_norm_epsilon"), (bert, "layer_norm_eps")],
                         ids=["gpt2", "bert"])
def test_differing_layer_norm_eps_does_not_share(make, eps):
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (2, 8))
    a, b = make(), make(**{eps: 0.5})
    b.load_state_dict(a.state_dict())  # same weights: only eps differs
    out_a, out_b = check(a, ids), check(b, ids)
    assert not torch.allclose(out_a, out_b, atol=1e-3)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["eager_calls"] == 0, s


def test_output_attentions_set_after_compiling():
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (2, 8))
    model = gpt2(attn_implementation="eager")
    check(model, ids)
    model.config.output_attentions = True
    with torch.no_grad():
        out, ref = kiln.compile(model)(ids), model(ids)
    assert len(out.attentions) == len(ref.attentions) == 2
    for a, b in zip(out.attentions, ref.attentions):
        assert_close(a, b, **TOL)
    assert stats()["graphs_compiled"] == 2, stats()
