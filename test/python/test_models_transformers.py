# SPDX-License-Identifier: Apache-2.0
"""Transformer models captured whole: nn.TransformerEncoderLayer (slow path
and the fused inference fast path), nn.TransformerEncoder, HuggingFace
GPT-2 / BERT built from small configs with random weights (no downloads),
and the autocast guard. Each checks eager parity and the graph counts."""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats

TOL = dict(rtol=1e-4, atol=2e-5)


def counts():
    s = stats()
    return s["graphs_compiled"], s["graph_breaks"], s["recompiles"]


def check_twice(model, *args, grad=False, **kwargs):
    """Two calls through kiln match eager; one graph, no break, no recompile,
    the second call a cache hit."""
    compiled = kiln.compile(model)
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        expected = model(*args, **kwargs)
        first = compiled(*args, **kwargs)
        second = compiled(*args, **kwargs)
    assert counts() == (1, 0, 0), stats()
    assert stats()["cache_hits"] >= 1, stats()
    return expected, first, second


# --- autocast -------------------------------------------------------------


def test_autocast_recompiles_instead_of_reusing_fp32_graph():
    lin = nn.Linear(16, 16).eval()
    compiled = kiln.compile(lin)
    x = torch.randn(4, 16)
    with torch.no_grad():
        assert_close(compiled(x), lin(x))
        assert counts() == (1, 0, 0)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            expected = lin(x)
            got = compiled(x)
        assert expected.dtype == torch.bfloat16
        assert got.dtype == torch.bfloat16  # not the fp32 graph's result
        # kiln rounds the product to bf16 before adding the bias (eager's
        # GEMM adds it first): one bf16 ulp apart (test_autocast.py).
        assert_close(got, expected, rtol=1.6e-2, atol=1e-2)
        s = stats()
        # A second graph, compiled with autocast's casts (test_autocast.py).
        assert s["recompiles"] == 1 and s["eager_calls"] == 0, s
        # Autocast off again: the fp32 graph is reused.
        hits = s["cache_hits"]
        assert_close(compiled(x), lin(x))
        assert stats()["cache_hits"] == hits + 1


def test_autocast_queries_are_constants():
    def f(x):
        if torch.is_autocast_enabled() or torch.is_autocast_enabled("cpu"):
            return x * 2
        return x + torch.get_autocast_dtype("cpu").is_floating_point

    compiled = kiln.compile(f)
    x = torch.randn(8)
    assert_close(compiled(x), f(x))
    assert counts() == (1, 0, 0)


def test_autocast_region_inside_compiled_code_is_one_graph():
    lin = nn.Linear(8, 8).eval()

    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = lin(x)
        return y.float() * 2

    x = torch.randn(4, 8)
    with torch.no_grad():
        report = kiln.explain(f)(x)
        expected = f(x)
    assert_close(report.out, expected, rtol=1.6e-2, atol=2e-2)
    assert report.graph_break_count == 0, report.graph_breaks


def test_autocast_disabled_region_is_a_no_op_context():
    # LLaMA's rotary embedding: `with torch.autocast(device_type, enabled=False)`
    # forces f32. With autocast off it changes nothing; under an outer CPU
    # autocast (guarded: a second graph) the region's matmul stays f32.
    def f(x):
        with torch.autocast(device_type="cpu", enabled=False):
            y = x.float() @ x.float().t()
        return y.exp()

    x = torch.randn(4, 4)
    assert_close(kiln.compile(f)(x), f(x))
    assert counts() == (1, 0, 0)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the outer state is guarded
        assert_close(kiln.compile(f)(x), f(x))
    assert stats()["eager_calls"] == 0 and stats()["graphs_compiled"] == 2, stats()


# --- nn.TransformerEncoderLayer -------------------------------------------


def encoder_layer(d_model, batch_first, norm_first, activation="relu"):
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, dropout=0.1,
                                      activation=activation, batch_first=batch_first,
                                      norm_first=norm_first).eval()


def padding_mask(batch, seq):
    mask = torch.zeros(batch, seq, dtype=torch.bool)
    mask[1, seq - 5:] = True
    return mask


# (no_grad, norm_first, batch_first, masked): no_grad + batch_first takes the
# fused fast path (torch._transformer_encoder_layer_fwd), the rest the
# Python path through F.multi_head_attention_forward.
LAYER_CASES = [
    (True, False, True, False), (True, True, True, True), (True, False, True, True),
    (True, True, False, False), (False, False, True, True), (False, True, True, False),
    (False, False, False, True), (False, True, False, True),
]


@pytest.mark.parametrize("no_grad,norm_first,batch_first,masked", LAYER_CASES)
def test_transformer_encoder_layer(no_grad, norm_first, batch_first, masked):
    layer = encoder_layer(64, batch_first, norm_first, "gelu" if norm_first else "relu")
    x = torch.randn(2, 12, 64) if batch_first else torch.randn(12, 2, 64)
    kw = {"src_key_padding_mask": padding_mask(2, 12)} if masked else {}
    compiled = kiln.compile(layer)
    ctx = torch.no_grad() if no_grad else torch.enable_grad()
    with ctx:
        expected = layer(x, **kw)
        assert_close(compiled(x, **kw), expected, **TOL)
        assert_close(compiled(x, **kw), expected, **TOL)
    assert counts() == (1, 0, 0), stats()


def test_transformer_encoder_layer_wide_causal_mask():
    layer = encoder_layer(128, True, False)
    x = torch.randn(2, 16, 128)
    causal = nn.Transformer.generate_square_subsequent_mask(16)
    with torch.no_grad():
        expected = layer(x, src_mask=causal)
        compiled = kiln.compile(layer)
        assert_close(compiled(x, src_mask=causal), expected, **TOL)
    assert counts() == (1, 0, 0), stats()


def test_multihead_attention_fast_path_with_weights():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(64, 4, batch_first=True).eval()
    x = torch.randn(2, 10, 64)
    mask = padding_mask(2, 10)

    def f(x):
        return mha(x, x, x, key_padding_mask=mask)

    with torch.no_grad():
        expected = f(x)
        got = kiln.compile(f)(x)
    assert_close(got, expected, **TOL)
    assert counts() == (1, 0, 0), stats()


@pytest.mark.parametrize("masked", [False, True])
def test_transformer_encoder_two_layers(masked):
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(encoder_layer(64, True, False), 2,
                                enable_nested_tensor=False).eval()
    x = torch.randn(2, 12, 64)
    kw = {"src_key_padding_mask": padding_mask(2, 12)} if masked else {}
    check = check_twice(enc, x, **kw)
    for got in check[1:]:
        assert_close(got, check[0], **TOL)


def test_transformer_encoder_nested_fast_path_runs_eagerly():
    # enable_nested_tensor=True with a padding mask converts to a nested
    # tensor depending on the mask's values (padded rows become 0): kiln
    # must not compile the padded computation in its place.
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(encoder_layer(64, True, False), 2).eval()
    x = torch.randn(2, 12, 64)
    mask = padding_mask(2, 12)
    with torch.no_grad():
        expected = enc(x, src_key_padding_mask=mask)
        report = kiln.explain(enc)(x, src_key_padding_mask=mask)
    assert_close(report.out, expected, **TOL)
    assert (report.out[1, -5:] == 0).all()
    assert any("nested" in b for b in report.graph_breaks), report.graph_breaks


# --- HuggingFace transformers (random weights from small configs) ----------

transformers = pytest.importorskip("transformers")


def run_hf(model, *args, **kwargs):
    """Two compiled calls match eager field by field and come back as the
    same ModelOutput class; returns kiln.stats()."""
    model.eval()
    compiled = kiln.compile(model)
    with torch.no_grad():
        expected = model(*args, **kwargs)
        for _ in range(2):
            got = compiled(*args, **kwargs)
            assert type(got) is type(expected)
            assert list(got.keys()) == list(expected.keys())
            for k in expected.keys():
                assert_close(got[k], expected[k], **TOL)
    return stats()


# attn_implementation: None is the default (sdpa); "eager" the explicit
# matmul/softmax path. GPT-2 runs with use_cache=False (inference, no KV
# cache); its causal mask goes through masking_utils (torch.diff packed-
# sequence detection, torch.vmap of the mask functions inside a
# TransformGetItemToIndex block), BERT's padding mask too.
@pytest.mark.parametrize("attn,masked", [(None, False), ("eager", False), (None, True)])
def test_gpt2_lm_head_matches_eager(attn, masked):
    kw = {} if attn is None else {"attn_implementation": attn}
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000,
                                  n_positions=64, use_cache=False, **kw)
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, :4] = 0  # left padding
    extra = {"attention_mask": mask} if masked else {}
    s = run_hf(transformers.GPT2LMHeadModel(cfg), ids, **extra)
    assert counts() == (1, 0, 0), s
    assert s["compiled_calls"] == 2 and s["cache_hits"] >= 1 and s["eager_calls"] == 0, s


def test_gpt2_with_kv_cache_prefill_is_one_graph_and_decodes_like_eager():
    # The default use_cache=True: the prefill builds a DynamicCache in the
    # graph (its layers start as torch.tensor([]), legacy-concatenated with
    # the keys) and returns it; greedy decoding then feeds it back. Logits
    # and cached keys/values match eager at every step.
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000,
                                  n_positions=64)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    compiled = kiln.compile(model)
    ids = torch.randint(0, 1000, (2, 8))

    def decode(fn, steps=3):
        out, logits, past, tokens = None, [], None, ids
        for _ in range(steps):
            out = fn(tokens, past_key_values=past)
            past = out.past_key_values
            logits.append(out.logits)
            tokens = out.logits[:, -1:].argmax(-1)
        return logits, [(layer.keys, layer.values) for layer in past.layers]

    with torch.no_grad():
        expected = decode(model)
        kiln.reset()
        prefill = compiled(ids)
        assert counts() == (1, 0, 0), stats()
        assert isinstance(prefill.past_key_values, transformers.DynamicCache)
        got = decode(compiled)
    assert_close(got, expected, **TOL)


def test_pretrained_config_reads_are_guarded_not_breaks():
    # PretrainedConfig.__getattribute__ remaps aliases (hidden_size -> n_embd)
    # through super().__getattribute__: object's lookup, done at capture with
    # guards on where each value was found.
    cfg = transformers.GPT2Config(n_embd=8, scale_attn_weights=True)

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = cfg

        def forward(self, x):
            y = x * self.config.hidden_size
            return y + 1 if self.config.scale_attn_weights else y

    head, x = Head(), torch.randn(3)
    compiled = kiln.compile(head)
    assert_close(compiled(x), head(x))
    assert counts() == (1, 0, 0), stats()
    cfg.n_embd, cfg.scale_attn_weights = 16, False  # changed after compiling
    assert_close(compiled(x), head(x))
    assert stats()["graph_breaks"] == 0 and stats()["recompiles"] == 1, stats()


@pytest.mark.parametrize("attn", [None, "eager"])
def test_bert_with_padding_mask_matches_eager(attn):
    kw = {} if attn is None else {"attn_implementation": attn}
    cfg = transformers.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                  intermediate_size=128, vocab_size=1000,
                                  max_position_embeddings=64, **kw)
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 10:] = 0
    s = run_hf(transformers.BertModel(cfg), ids, attention_mask=mask)
    assert counts() == (1, 0, 0), s
    assert s["compiled_calls"] == 2 and s["cache_hits"] >= 1 and s["eager_calls"] == 0, s


def test_model_output_built_in_graph_is_rebuilt():
    # A ModelOutput dataclass made inside the compiled code is one graph:
    # fields left None are absent, indexing follows to_tuple().
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    def f(x):
        out = BaseModelOutputWithPooling(last_hidden_state=x * 2, pooler_output=x.sum(1))
        first = out[0] + out.last_hidden_state
        assert out.hidden_states is None and len(out) == 2
        return BaseModelOutputWithPooling(first, out["pooler_output"])

    x = torch.randn(3, 4)
    got = kiln.compile(f)(x)
    expected = f(x)
    assert type(got) is type(expected) and list(got.keys()) == list(expected.keys())
    assert_close(got.last_hidden_state, expected.last_hidden_state)
    assert_close(got.pooler_output, expected.pooler_output)
    assert counts() == (1, 0, 0), stats()


def test_generator_expressions_and_fstrings():
    layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def f(x):
        if any(len(m._forward_hooks) for m in layers.modules()):
            raise RuntimeError("hooks")
        names = f"{len(layers)} layers, first {type(layers[0]).__name__!r}"
        scale = sum(i * 0.5 for i in range(4)) + len(names) * 0
        return tuple(layer(x) * scale for layer in layers)

    x = torch.randn(2, 4)
    with torch.no_grad():
        assert_close(kiln.compile(f)(x), f(x))
        assert counts() == (1, 0, 0), stats()
        # A hook registered later changes the answer: the guard recompiles.
        layers[1].register_forward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="hooks"):
            kiln.compile(f)(x)


# LLaMA-family decoders (RMSNorm, rotary embeddings under @torch.no_grad()
# and dynamic_rope_update, grouped-query attention, the decoder loop over
# `self.layers[:num_hidden_layers]`), encoder-decoders with
# decoder_input_ids, DistilBERT (`type(out) is not tuple`): one graph each.
SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, vocab_size=128)


def small_model(name, use_cache=False):
    tf = transformers
    if name == "t5":
        return tf.T5Model(tf.T5Config(vocab_size=128, d_model=64, d_kv=16, d_ff=128,
                                      num_layers=2, num_heads=4, use_cache=use_cache))
    if name == "bart":
        return tf.BartModel(tf.BartConfig(
            vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
            decoder_ffn_dim=128, max_position_embeddings=64, use_cache=use_cache))
    if name == "distilbert":
        return tf.DistilBertModel(tf.DistilBertConfig(
            vocab_size=128, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
            max_position_embeddings=64))
    cls, cfg = {"llama": (tf.LlamaForCausalLM, tf.LlamaConfig),
                "qwen2": (tf.Qwen2ForCausalLM, tf.Qwen2Config),
                "mistral": (tf.MistralForCausalLM, tf.MistralConfig)}[name]
    kv = {} if name == "llama" else {"num_key_value_heads": 2}
    return cls(cfg(**SMALL, use_cache=use_cache, **kv))


@pytest.mark.parametrize("name", ["llama", "qwen2", "mistral", "t5", "bart", "distilbert"])
def test_small_hf_model_is_one_graph(name):
    torch.manual_seed(0)
    model = small_model(name)
    ids = torch.randint(0, 128, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, :3] = 0  # left padding
    kw = {"attention_mask": mask}
    if name in ("t5", "bart"):
        kw["decoder_input_ids"] = torch.randint(0, 128, (2, 5))
    s = run_hf(model, ids, **kw)
    assert counts() == (1, 0, 0), s
    assert s["compiled_calls"] == 2 and s["eager_calls"] == 0, s


def test_deberta_v2_inlines_its_torch_jit_script_helpers():
    # DeBERTa-v2's attention calls @torch.jit.script functions
    # (scaled_size_sqrt, build_relative_position ...): inlined from their
    # Python originals as Dynamo does (it broke at each call: 16 graphs).
    torch.manual_seed(0)
    model = transformers.DebertaV2Model(transformers.DebertaV2Config(**SMALL))
    s = run_hf(model, torch.randint(0, 128, (2, 8)))
    assert counts() == (1, 0, 0), s
    assert s["eager_calls"] == 0, s


def test_beit_relative_position_bias_is_one_graph():
    # BEiT builds its relative position index in the forward:
    # `relative_coords[:, :, 0] += ...` on a computed tensor (broke at the
    # store, and the resumed frame lost the update) and
    # `torch.zeros(size=...)` (the size by keyword): 34 graphs, 45 breaks.
    torch.manual_seed(0)
    config = transformers.BeitConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, image_size=32, patch_size=8,
                                     use_relative_position_bias=True)
    model = transformers.BeitModel(config)
    s = run_hf(model, pixel_values=torch.randn(1, 3, 32, 32))
    assert counts() == (1, 0, 0), s
    assert s["eager_calls"] == 0, s


def clip_model():
    tf = transformers
    small = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    return tf.CLIPModel(tf.CLIPConfig(
        text_config=dict(**small, vocab_size=128, max_position_embeddings=32),
        vision_config=dict(**small, image_size=32, patch_size=8), projection_dim=32)).eval()


def test_clip_output_with_its_own_to_tuple_is_built_in_the_graph():
    # CLIPOutput overrides to_tuple (its nested outputs become tuples): the
    # record is still built in the graph (was a break at its construction,
    # 17 graphs); only uses that run to_tuple break.
    torch.manual_seed(0)
    model = clip_model()
    ids, pixels = torch.randint(0, 128, (2, 7)), torch.randn(2, 3, 32, 32)
    kiln.reset()
    with torch.no_grad():
        want = model(input_ids=ids, pixel_values=pixels)
        got = kiln.compile(model)(input_ids=ids, pixel_values=pixels)
    assert type(got) is type(want) and list(got.keys()) == list(want.keys())
    for k in ("logits_per_image", "logits_per_text", "text_embeds", "image_embeds"):
        assert_close(got[k], want[k], **TOL)
    assert_close(got.vision_model_output.pooler_output, want.vision_model_output.pooler_output,
                 **TOL)
    assert counts() == (1, 0, 0), stats()
    assert stats()["eager_calls"] == 0

    def first_item(ids, pixels):  # out[0] runs CLIPOutput.to_tuple: a break, eager's answer
        return model(input_ids=ids, pixel_values=pixels)[0] * 2

    with torch.no_grad():
        assert_close(kiln.compile(first_item)(ids, pixels), first_item(ids, pixels), **TOL)


def test_llama_with_kv_cache_prefill_is_one_graph():
    # use_cache=True: the prefill builds a DynamicCache in the graph and
    # returns it (rebuilt after the graph); its keys/values match eager's.
    torch.manual_seed(0)
    model = small_model("llama", use_cache=True).eval()
    ids = torch.randint(0, 128, (2, 8))
    compiled = kiln.compile(model)
    with torch.no_grad():
        expected = model(ids)
        got = compiled(ids)
        got = compiled(ids)
    assert counts() == (1, 0, 0), stats()
    assert isinstance(got.past_key_values, transformers.DynamicCache)
    assert_close(got.logits, expected.logits, **TOL)
    for g, e in zip(got.past_key_values.layers, expected.past_key_values.layers):
        assert_close((g.keys, g.values), (e.keys, e.values), **TOL)
