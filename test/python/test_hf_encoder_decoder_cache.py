# SPDX-License-Identifier: Apache-2.0
"""HuggingFace T5 and BART with their default use_cache=True (issue 15):
the decoder builds `EncoderDecoderCache(DynamicCache(config=...), ...)`,
whose construction calls `config.get_text_config(decoder=True)` (a deep
copy of the legacy encoder-decoder config with `delattr` of the encoder
keys). kiln evaluates that method at capture (kiln/_capture_time.py),
guarding the config's identity and state, so the forward is one graph.
Small random configs, no downloads; logits and cached keys/values are
compared with eager, and graph/break counts asserted."""
import pytest
import torch

import kiln
from conftest import assert_close, stats

transformers = pytest.importorskip("transformers")

TOL = dict(rtol=1e-4, atol=2e-5)


def small_seq2seq(name):
    tf = transformers
    torch.manual_seed(0)
    if name == "t5":
        cfg = tf.T5Config(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                          num_heads=4, decoder_start_token_id=0)
        return tf.T5ForConditionalGeneration(cfg).eval()
    cfg = tf.BartConfig(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=4, decoder_attention_heads=4,
                        encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64)
    return tf.BartForConditionalGeneration(cfg).eval()


def cache_tensors(past):
    """The self- and cross-attention keys/values of an EncoderDecoderCache."""
    return [(layer.keys, layer.values)
            for cache in (past.self_attention_cache, past.cross_attention_cache)
            for layer in cache.layers]


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_forward_with_cache_is_one_graph(name):
    model = small_seq2seq(name)
    assert model.config.use_cache
    ids = torch.randint(0, 128, (2, 8))
    dec = torch.randint(0, 128, (2, 5))
    compiled = kiln.compile(model)
    with torch.no_grad():
        expected = model(ids, decoder_input_ids=dec)
        for _ in range(2):
            got = compiled(ids, decoder_input_ids=dec)
            assert isinstance(got.past_key_values, transformers.EncoderDecoderCache)
            assert_close(got.logits, expected.logits, **TOL)
            assert_close(cache_tensors(got.past_key_values),
                         cache_tensors(expected.past_key_values), **TOL)
    s = stats()
    assert (s["graphs_compiled"], s["graph_breaks"], s["recompiles"]) == (1, 0, 0), s
    assert s["eager_calls"] == 0 and s["compiled_calls"] == 2, s


def greedy(fn, ids, start, steps=3):
    """`steps` greedy decoder steps feeding the cache back: the logits of
    each step, the tokens and the final cache's tensors."""
    past, tokens, logits, out = None, start, [], []
    for _ in range(steps):
        step = fn(ids, decoder_input_ids=tokens, past_key_values=past)
        past = step.past_key_values
        logits.append(step.logits)
        tokens = step.logits[:, -1:].argmax(-1)
        out.append(tokens)
    return logits, out, cache_tensors(past)


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_greedy_decode_with_cache_matches_eager(name):
    model = small_seq2seq(name)
    ids = torch.randint(0, 128, (2, 8))
    start = torch.zeros(2, 1, dtype=torch.long)
    compiled = kiln.compile(model)
    with torch.no_grad():
        expected = greedy(model, ids, start)
        got = greedy(compiled, ids, start)
    assert_close(got, expected, **TOL)
    s = stats()
    # Prefill (no cache) and decode steps (a cache of the caller, updated
    # in place and replayed after the graph): no graph break, every call
    # compiled.
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["graphs_compiled"] <= 3, s


def test_config_change_recompiles():
    # get_text_config's result is a capture-time constant guarded on the
    # config's state (the decoder stack's own copy of it): a change after
    # compiling recompiles, and the new graph sees it like eager.
    model = small_seq2seq("t5")
    ids = torch.randint(0, 128, (2, 8))
    dec = torch.randint(0, 128, (2, 3))
    compiled = kiln.compile(model)
    with torch.no_grad():
        compiled(ids, decoder_input_ids=dec)
        compiled(ids, decoder_input_ids=dec)
        assert stats()["recompiles"] == 0, stats()
        model.decoder.config.decoder_custom_flag = 1  # a new key: the state differs
        got = compiled(ids, decoder_input_ids=dec)
        assert stats()["recompiles"] == 1, stats()
        # More decoder layers in the config: the cache gets one more layer.
        model.decoder.config.num_layers = 3
        expected = model(ids, decoder_input_ids=dec)
        got = compiled(ids, decoder_input_ids=dec)
    assert_close(got.logits, expected.logits, **TOL)
    assert len(got.past_key_values.self_attention_cache.layers) == 3
    assert len(expected.past_key_values.self_attention_cache.layers) == 3
    s = stats()
    assert s["recompiles"] == 2 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_long_greedy_decode_keeps_one_dynamic_graph(name):
    # 12 steps with a growing self-attention cache: torch.arange(past, past
    # + n) with a symbolic start, masks of past + n and the cache concat's
    # past + 1 are derived symbolic sizes (SymbolicSizes.cpp). Graphs: the
    # prefill, the cache of length 1 (0/1 specialized), 2 (the first
    # size), then one `?` graph for every later step.
    model = small_seq2seq(name)
    ids = torch.randint(0, 128, (2, 8))
    start = torch.zeros(2, 1, dtype=torch.long)
    compiled = kiln.compile(model)
    with torch.no_grad():
        expected = greedy(model, ids, start, steps=12)
        got = greedy(compiled, ids, start, steps=12)
    assert_close(got, expected, **TOL)
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["graphs_compiled"] <= 4 and s["dynamic_graphs"] == 1, s
    assert s["compiled_calls"] == 12, s


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_forward_with_labels_is_one_graph(name):
    # The heads compute the loss with `loss_fct = CrossEntropyLoss(ignore_index=-100)`
    # built in the forward: kiln builds it once at capture (BuiltModules.cpp).
    model = small_seq2seq(name)
    ids = torch.randint(0, 128, (2, 8))
    labels = torch.randint(0, 128, (2, 5))
    labels[0, -1] = -100
    compiled = kiln.compile(model)
    expected = model(ids, labels=labels)
    expected.loss.backward()
    want = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    for _ in range(2):
        model.zero_grad()
        got = compiled(ids, labels=labels)
        assert_close(got.loss, expected.loss, **TOL)
        assert_close(got.logits, expected.logits, **TOL)
        got.loss.backward()
        for n, p in model.named_parameters():
            if n in want:
                assert_close(p.grad, want[n], rtol=1e-3, atol=1e-4)
    s = stats()
    assert (s["graphs_compiled"], s["graph_breaks"], s["recompiles"]) == (1, 0, 0), s
    assert s["eager_calls"] == 0 and s["compiled_calls"] == 2, s


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_repeated_generate_reuses_the_graphs(name):
    # generate() with `model.forward = kiln.compile(model.forward)`, called
    # three times: each call passes the encoder's ModelOutput back in and
    # builds a new EncoderDecoderCache (whose `is_updated` dict the forward
    # updates). Guarded by type and keys, not identity: the second and third
    # calls add no graph (T5 was 149 graphs and 247 eager calls).
    model = small_seq2seq(name)
    ids = torch.randint(3, 128, (1, 8))
    kw = dict(max_new_tokens=8, do_sample=False, pad_token_id=0, min_new_tokens=8)
    want = model.generate(ids, **kw)
    model.forward = kiln.compile(model.forward)
    graphs = None
    for call in range(3):
        assert torch.equal(model.generate(ids, **kw), want)
        s = stats()
        assert s["eager_calls"] == 0 and s["graph_breaks"] == 0, s
        if graphs is None:
            graphs = s["graphs_compiled"]
        assert s["graphs_compiled"] == graphs <= 4, (call, s)
