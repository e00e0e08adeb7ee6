# SPDX-License-Identifier: Apache-2.0
"""Decode loops with a growing KV cache under dynamic shapes
(capture/values/SymbolicSizes.cpp, ops/Factories.cpp): `torch.arange(past,
past + n)` with a symbolic start, tensors whose size is an expression of
symbolic sizes (`torch.ones(b, past + 1)`, `cat([cache, new])` of size
`past + 1`, returned to the caller) as derived symbolic sizes, so a greedy
decode loop keeps one `?` graph instead of recompiling per step.

Each case compares with eager on every step AND checks kiln.stats(): the
graphs before the cache length is symbolic (0/1 specialization, the first
size change), then no recompile, no graph break and no eager frame.
"""
import pytest
import torch

import kiln


@pytest.fixture(autouse=True)
def _fresh():
    kiln.reset()
    yield
    kiln.reset()


def _loop(fn, cache, new, steps):
    """Feeds `fn(new, cache) -> (out, cache)` back `steps` times; returns
    the outputs and the final cache."""
    outs = []
    for _ in range(steps):
        out, cache = fn(new, cache)
        outs.append(out)
    return outs, cache


def _compare(fn, cache, new, steps=12):
    cf = kiln.compile(fn)
    with torch.no_grad():
        want = _loop(fn, cache, new, steps)
        got = _loop(cf, cache, new, steps)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    return kiln.stats()


def _assert_few_graphs(s, graphs=3):
    assert s["graphs_compiled"] <= graphs, s
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["dynamic_graphs"] == 1, s


def test_arange_with_symbolic_start():
    # Positions of the new tokens: arange(past, past + n) (HF cache_position).
    def step(x, cache):
        past = cache.shape[1]
        pos = torch.arange(past, past + x.shape[1])
        return x + pos.float(), torch.cat([cache, x], dim=1)
    s = _compare(step, torch.zeros(2, 1), torch.randn(2, 1))
    _assert_few_graphs(s)


def test_arange_with_symbolic_start_and_step():
    def step(x, cache):
        past = cache.shape[1]
        pos = torch.arange(past, past + 2 * x.shape[1], 2, dtype=torch.float32)
        return x * pos, torch.cat([cache, x], dim=1)
    s = _compare(step, torch.zeros(2, 1), torch.randn(2, 1))
    _assert_few_graphs(s)


def test_mask_of_past_plus_new_length():
    # torch.ones(b, past + n) (T5's mask_seq_length) and a bias over the
    # grown cache: a factory and a concat of the derived size past + 1.
    def step(x, cache):
        k = torch.cat([cache, x], dim=1)
        mask = torch.ones(x.shape[0], cache.shape[1] + x.shape[1])
        keys = torch.arange(k.shape[1])
        scores = (k * mask + keys.float()).softmax(-1)
        return scores.sum(-1), k
    s = _compare(step, torch.zeros(2, 1), torch.randn(2, 1))
    _assert_few_graphs(s)


def test_attention_over_growing_cache():
    # One attention head over a (b, t, d) cache grown by one token a step.
    def step(q, cache):
        k = torch.cat([cache, q], dim=1)
        att = (q @ k.transpose(1, 2)).softmax(-1)
        return att @ k, k
    s = _compare(step, torch.zeros(2, 1, 8), torch.randn(2, 1, 8))
    _assert_few_graphs(s)


def test_two_caches_grown_together_share_the_size():
    def step(x, cache):
        k, v = cache
        k, v = torch.cat([k, x], 1), torch.cat([v, 2 * x], 1)
        return (k * v).sum(1), (k, v)
    s = _compare(step, (torch.zeros(2, 1, 4), torch.zeros(2, 1, 4)), torch.randn(2, 1, 4))
    _assert_few_graphs(s)


def test_size_equal_to_another_symbol_specializes_safely():
    # The derived size past + 1 equals the other symbolic size at capture
    # (n == past + 1): kiln cannot tell the two apart by value, so the
    # graph is not kept dynamic for that capture; results stay right.
    def step(x, cache):
        y = torch.cat([cache, cache[:, :1]], 1)
        return y.sum(1) + x.sum(1), torch.cat([cache, cache[:, :1]], 1)
    cf = kiln.compile(step)
    with torch.no_grad():
        for n in [2, 3, 4, 5, 6]:
            x, c = torch.randn(2, n + 1), torch.randn(2, n)
            torch.testing.assert_close(cf(x, c), step(x, c))
    assert kiln.stats()["eager_calls"] == 0, kiln.stats()


class _GrowByOne(torch.nn.Module):
    def forward(self, x):
        return torch.cat([x, x[:, :1]], 1)


def test_derived_size_exported_is_refused(tmp_path):
    # An artifact's plan has input-dim symbols only: a result of size n + 1
    # is an export error naming it, never a wrong size.
    with pytest.raises(kiln.ExportError):
        kiln.export(_GrowByOne(), (torch.randn(2, 5),), str(tmp_path / "f.kiln"),
                    dynamic_shapes=({1: "n"},))


def test_llama_second_sequence_length_is_dynamic():
    # LLaMA (random init, small): a second sequence length recompiles once
    # into a `?` graph that every later length reuses.
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = tf.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=128, vocab_size=128)
    model = tf.LlamaForCausalLM(cfg).eval()
    cf = kiln.compile(model)
    with torch.no_grad():
        for n in [8, 12, 16, 20]:
            ids = torch.randint(0, 128, (2, n))
            torch.testing.assert_close(cf(ids).logits, model(ids).logits, rtol=1e-4, atol=1e-4)
    s = kiln.stats()
    assert (s["graphs_compiled"], s["recompiles"], s["dynamic_graphs"]) == (2, 1, 1), s
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_input_read_after_an_equal_derived_size_is_not_merged():
    # `other` is read after `cache.shape[1] + 1` became a derived size of
    # the same value: it must not be taken for that size (its own size is
    # read per call); kiln specializes instead, and a later call where the
    # two differ still matches eager.
    def f(x, cache, other):
        k = torch.cat([cache, x], 1)
        m = torch.ones(2, k.shape[1])
        return (k * m).sum(1) + other.sum(1)
    cf = kiln.compile(f)
    with torch.no_grad():
        for c, o in [(3, 4), (5, 6), (7, 8), (7, 3), (9, 12)]:
            args = (torch.randn(2, 1), torch.randn(2, c), torch.randn(2, o))
            torch.testing.assert_close(cf(*args), f(*args))
    assert kiln.stats()["eager_calls"] == 0, kiln.stats()


@pytest.mark.parametrize("padded", [False, True])
def test_gpt2_generate_keeps_one_dynamic_forward(padded):
    # GPT-2 generate() with the documented `model.forward = kiln.compile(...)`
    # (issue 15): transformers builds the attention mask under four nested
    # torch.vmap with `padding_mask[batch_idx, kv_idx]`, an advanced index
    # of the padding mask whose kv dim is symbolic. The prefill, the first
    # decode step and one `?` decode graph serve 20 new tokens; the scores
    # of every step and the tokens match eager, on every generate() call.
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=128)
    model = tf.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(1, 256, (2 if padded else 1, 8))
    mask = torch.ones_like(ids)
    if padded:  # left padding of the second row
        ids[1, :3] = 0
        mask[1, :3] = 0
    kw = dict(attention_mask=mask, max_new_tokens=20, do_sample=False, pad_token_id=0,
              output_scores=True, return_dict_in_generate=True)
    want = model.generate(ids, **kw)
    model.forward = kiln.compile(model.forward)
    # Each generate() call makes a new DynamicCache that the forward stores
    # into and returns: guarded by type (and aliasing), not identity, so the
    # second and third calls reuse the three graphs.
    for call in range(3):
        got = model.generate(ids, **kw)
        assert torch.equal(got.sequences, want.sequences)
        torch.testing.assert_close(got.scores, want.scores, rtol=1e-4, atol=1e-4)
        s = kiln.stats()
        assert (s["graphs_compiled"], s["recompiles"], s["dynamic_graphs"]) == (3, 2, 1), s
        assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
        assert s["compiled_calls"] == 20 * (call + 1), s
