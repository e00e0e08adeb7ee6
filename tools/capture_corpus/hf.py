# SPDX-License-Identifier: Apache-2.0
"""HF transformers idioms: attention masks, ModelOutput-like dataclasses,
config objects, past_key_values tuples, ``**kwargs``, head splitting,
rotary embeddings, activations chosen by name, Longformer-style chunks."""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from capture_corpus._case import case, randn

H = 16  # hidden size used by this theme


def _hidden(n):
    return (randn(2, n, H),)


def _mask(n):
    m = torch.ones(2, n, dtype=torch.long)
    m[1, -1] = 0
    return m


class Config:
    """A PretrainedConfig-like object."""
    def __init__(self, **kwargs):
        self.hidden_size = kwargs.pop("hidden_size", H)
        self.num_attention_heads = kwargs.pop("num_attention_heads", 4)
        self.hidden_act = kwargs.pop("hidden_act", "gelu")
        self.layer_norm_eps = kwargs.pop("layer_norm_eps", 1e-12)
        self.hidden_dropout_prob = kwargs.pop("hidden_dropout_prob", 0.1)
        self.use_cache = kwargs.pop("use_cache", True)
        self.output_attentions = kwargs.pop("output_attentions", False)
        self.num_hidden_layers = kwargs.pop("num_hidden_layers", 2)
        for k, v in kwargs.items():
            setattr(self, k, v)


ACT2FN = {"gelu": nn.GELU(), "relu": nn.ReLU(), "silu": nn.SiLU(), "gelu_new": nn.GELU("tanh")}


class ModelOutput(OrderedDict):
    """A transformers.utils.ModelOutput-like ordered dict with attributes."""
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclass
class BaseOutput:
    last_hidden_state: torch.Tensor
    pooler_output: Optional[torch.Tensor] = None
    attentions: Optional[tuple] = None


@case("hf", _hidden, kwargs=lambda n: {"attention_mask": _mask(n)})
def extended_attention_mask(hidden_states, attention_mask=None):
    ext = attention_mask[:, None, None, :].to(dtype=hidden_states.dtype)
    ext = (1.0 - ext) * torch.finfo(hidden_states.dtype).min
    scores = hidden_states @ hidden_states.transpose(-1, -2)
    return scores.unsqueeze(1) + ext


@case("hf", _hidden)
def causal_mask_triu(x):
    bsz, seq_len, _ = x.shape
    mask = torch.full((seq_len, seq_len), float("-inf"))
    mask = torch.triu(mask, diagonal=1)
    scores = x @ x.transpose(1, 2) / math.sqrt(x.size(-1))
    return torch.softmax(scores + mask, dim=-1)


@case("hf", _hidden)
def causal_mask_bool_tril(x):
    seq = x.shape[1]
    causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
    scores = torch.matmul(x, x.transpose(-1, -2))
    scores = scores.masked_fill(~causal, torch.finfo(scores.dtype).min)
    return scores.softmax(-1)


@case("hf", _hidden)
def split_heads_merge(x, num_heads=4):
    b, t, c = x.size()
    head_dim = c // num_heads
    q = x.view(b, t, num_heads, head_dim).permute(0, 2, 1, 3)
    attn = (q @ q.transpose(-1, -2)) * head_dim ** -0.5
    out = attn.softmax(dim=-1) @ q
    return out.permute(0, 2, 1, 3).contiguous().view(b, t, c)


@case("hf", _hidden)
class BertSelfAttention(nn.Module):
    def __init__(self, config=None):
        super().__init__()
        config = config or Config()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            scores = scores + attention_mask
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.all_head_size,))
        outputs = (ctx, probs) if output_attentions else (ctx,)
        return outputs


@case("hf", _hidden)
class BertSelfOutput(nn.Module):
    def __init__(self, config=None):
        super().__init__()
        config = config or Config()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states):
        input_tensor = hidden_states
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


@case("hf", _hidden)
class IntermediateByName(nn.Module):
    def __init__(self, config=None):
        super().__init__()
        config = config or Config(hidden_act="gelu_new")
        self.dense = nn.Linear(config.hidden_size, 4 * config.hidden_size)
        if isinstance(config.hidden_act, str):
            self.intermediate_act_fn = ACT2FN[config.hidden_act]
        else:
            self.intermediate_act_fn = config.hidden_act

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


@case("hf", _hidden)
class ReturnsModelOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(H, H)
        self.pool = nn.Linear(H, H)

    def forward(self, x, return_dict=True):
        h = self.proj(x)
        pooled = torch.tanh(self.pool(h[:, 0]))
        if not return_dict:
            return (h, pooled)
        return ModelOutput(last_hidden_state=h, pooler_output=pooled)


@case("hf", _hidden)
class ReturnsDataclassOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(H, H)

    def forward(self, x):
        h = self.proj(x)
        return BaseOutput(last_hidden_state=h, pooler_output=h.mean(1))


@case("hf", _hidden)
def model_output_attr_and_index(x):
    out = ModelOutput(logits=x * 2, hidden_states=(x, x + 1))
    return out.logits + out["hidden_states"][1] + out.to_tuple()[0]


@case("hf", _hidden, kwargs=lambda n: {"output_hidden_states": True, "use_cache": False})
def forward_with_kwargs(x, **kwargs):
    output_hidden_states = kwargs.get("output_hidden_states", False)
    use_cache = kwargs.pop("use_cache", True)
    all_hidden = () if output_hidden_states else None
    for i in range(3):
        if output_hidden_states:
            all_hidden = all_hidden + (x,)
        x = torch.relu(x) + i
    return x, all_hidden, use_cache


@case("hf", lambda n: (randn(2, n, H), (randn(2, 4, 3, 4), randn(2, 4, 3, 4))))
def past_key_values_concat(x, layer_past):
    b, t, c = x.shape
    k = x.view(b, t, 4, 4).transpose(1, 2)
    v = k * 2
    past_key, past_value = layer_past
    k = torch.cat((past_key, k), dim=-2)
    v = torch.cat((past_value, v), dim=-2)
    present = (k, v)
    w = torch.softmax(k.sum(-1, keepdim=True), dim=2)
    return (w * v).sum(2), present


@case("hf", lambda n: (randn(2, n, H),))
def past_key_values_none(x, past_key_values=None):
    if past_key_values is None:
        past_length = 0
        past_key_values = tuple([None] * 2)
    else:
        past_length = past_key_values[0][0].size(-2)
    position_ids = torch.arange(past_length, x.shape[1] + past_length, dtype=torch.long)
    position_ids = position_ids.unsqueeze(0).view(-1, x.shape[1])
    return x + position_ids.unsqueeze(-1).float(), len(past_key_values)


@case("hf", _hidden)
def rotary_embedding(x):
    seq_len, dim = x.shape[1], x.shape[-1]
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    t = torch.arange(seq_len, dtype=inv_freq.dtype)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None], emb.sin()[None]
    x1, x2 = x[..., : dim // 2], x[..., dim // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos + rotated * sin


@case("hf", _hidden)
class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size=H, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


@case("hf", _hidden)
class LlamaMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(H, 32, bias=False)
        self.up_proj = nn.Linear(H, 32, bias=False)
        self.down_proj = nn.Linear(32, H, bias=False)
        self.act_fn = ACT2FN["silu"]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


@case("hf", lambda n: (randn(2, 4, n, 4), randn(2, 4, n, 4), randn(2, 4, n, 4)))
def sdpa_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


@case("hf", lambda n: (randn(2, 4, n, 4),))
def repeat_kv(hidden_states, n_rep=2):
    batch, num_kv, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_kv, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_kv * n_rep, slen, head_dim)


@case("hf", lambda n: (torch.randint(0, 50, (2, n)),))
class EmbeddingsWithPositions(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(50, H, padding_idx=0)
        self.position_embeddings = nn.Embedding(32, H)
        self.token_type_embeddings = nn.Embedding(2, H)
        self.LayerNorm = nn.LayerNorm(H)
        self.register_buffer("position_ids", torch.arange(32).expand((1, -1)), persistent=False)

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = torch.zeros(input_ids.size(), dtype=torch.long)
        emb = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        emb += self.position_embeddings(position_ids)
        return self.LayerNorm(emb)


@case("hf", lambda n: (torch.randint(1, 50, (2, n)),))
def create_position_ids_from_input_ids(input_ids, padding_idx=1):
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = torch.cumsum(mask, dim=1).type_as(mask) * mask
    return incremental_indices.long() + padding_idx


@case("hf", lambda n: (randn(2, n, 10), torch.randint(0, 10, (2, n))))
def masked_lm_loss(logits, labels):
    labels = labels.clone()
    labels[:, 0] = -100
    loss_fct = nn.CrossEntropyLoss()
    return loss_fct(logits.view(-1, logits.size(-1)), labels.view(-1))


@case("hf", lambda n: (randn(2, n, 10), torch.randint(0, 10, (2, n))))
def shift_labels_loss(lm_logits, labels):
    shift_logits = lm_logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    return F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))


@case("hf", lambda n: (randn(2, n, H), _mask(n)))
def mean_pooling(token_embeddings, attention_mask):
    input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
    summed = torch.sum(token_embeddings * input_mask_expanded, 1)
    return summed / torch.clamp(input_mask_expanded.sum(1), min=1e-9)


@case("hf", lambda n: (randn(2, n, H), _mask(n)))
def last_token_pooling(hidden, attention_mask):
    sequence_lengths = attention_mask.sum(dim=1) - 1
    batch_size = hidden.shape[0]
    return hidden[torch.arange(batch_size), sequence_lengths]


@case("hf", lambda n: (randn(2, n, H), torch.tensor([n - 1, n - 2])))
def gather_by_lengths(hidden, lengths):
    idx = lengths.view(-1, 1, 1).expand(-1, 1, hidden.size(-1))
    return hidden.gather(1, idx).squeeze(1)


@case("hf", lambda n: (randn(1, 8 * n, 1),))
def longformer_chunk(hidden_states, window_overlap=4):
    hidden_states = hidden_states.view(
        hidden_states.size(0), hidden_states.size(1) // (window_overlap * 2),
        window_overlap * 2, hidden_states.size(2))
    chunk_size = list(hidden_states.size())
    chunk_size[1] = chunk_size[1] * 2 - 1
    chunk_stride = list(hidden_states.stride())
    chunk_stride[1] = chunk_stride[1] // 2
    return hidden_states.as_strided(size=chunk_size, stride=chunk_stride)


@case("hf", _hidden)
def gelu_new_formula(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


@case("hf", _hidden)
def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


@case("hf", _hidden)
class T5LayerNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))
        self.variance_epsilon = 1e-6

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


@case("hf", lambda n: (n,))
def t5_relative_position_bucket(n, bidirectional=True, num_buckets=32, max_distance=128):
    context_position = torch.arange(n, dtype=torch.long)[:, None]
    memory_position = torch.arange(n, dtype=torch.long)[None, :]
    relative_position = memory_position - context_position
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    rp_large = max_exact + (
        torch.log(relative_position.float() / max_exact + 1e-6) / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)).to(torch.long)
    rp_large = torch.min(rp_large, torch.full_like(rp_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, rp_large)
    return relative_buckets


@case("hf", _hidden)
class EncoderLayersLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.layer = nn.ModuleList([nn.Linear(H, H) for _ in range(self.config.num_hidden_layers)])
        self.gradient_checkpointing = False

    def forward(self, hidden_states, output_hidden_states=True, return_dict=True):
        all_hidden_states = () if output_hidden_states else None
        for i, layer_module in enumerate(self.layer):
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            if self.gradient_checkpointing and self.training:
                raise NotImplementedError
            hidden_states = torch.tanh(layer_module(hidden_states))
        if not return_dict:
            return tuple(v for v in [hidden_states, all_hidden_states] if v is not None)
        return {"last_hidden_state": hidden_states, "hidden_states": all_hidden_states}


@case("hf", _hidden)
class ClassifierHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_labels = 3
        self.dense = nn.Linear(H, H)
        self.out_proj = nn.Linear(H, self.num_labels)

    def forward(self, features, labels=None, **kwargs):
        x = features[:, 0, :]
        x = torch.tanh(self.dense(x))
        logits = self.out_proj(x)
        loss = None
        if labels is not None:
            if self.num_labels == 1:
                loss = F.mse_loss(logits.squeeze(), labels.squeeze())
            else:
                loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return (loss, logits) if loss is not None else (logits,)


@case("hf", lambda n: (randn(2, n, H), torch.tensor([0, 2])))
def classifier_with_labels(features, labels):
    logits = features[:, 0, :3]
    problem_type = "single_label_classification" if labels.dtype == torch.long else "regression"
    if problem_type == "regression":
        return F.mse_loss(logits, labels)
    return F.cross_entropy(logits, labels), problem_type


@case("hf", lambda n: (randn(2, n, 8),))
def top_k_top_p_filtering(logits, top_k=3, top_p=0.9, filter_value=-float("inf")):
    top_k = min(max(top_k, 1), logits.size(-1))
    indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
    logits = logits.masked_fill(indices_to_remove, filter_value)
    sorted_logits, sorted_indices = torch.sort(logits, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    indices_to_remove = sorted_indices_to_remove.scatter(-1, sorted_indices, sorted_indices_to_remove)
    return logits.masked_fill(indices_to_remove, filter_value)


@case("hf", lambda n: (randn(2, n, 8),))
def greedy_next_token(logits):
    next_token_logits = logits[:, -1, :]
    next_tokens = torch.argmax(next_token_logits, dim=-1)
    return next_tokens[:, None]


@case("hf", lambda n: (torch.randint(0, 9, (2, n)),))
def prepare_decoder_input_ids(labels, decoder_start_token_id=2, pad_token_id=0):
    shifted = labels.new_zeros(labels.shape)
    shifted[:, 1:] = labels[:, :-1].clone()
    shifted[:, 0] = decoder_start_token_id
    shifted.masked_fill_(shifted == -100, pad_token_id)
    return shifted


@case("hf", _hidden)
class ConfigDrivenHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config(num_attention_heads=2, output_attentions=True)
        self.qkv = nn.Linear(H, 3 * H)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        nh = self.config.num_attention_heads
        shape = (x.shape[0], x.shape[1], nh, -1)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        w = (q @ k.transpose(-2, -1)).softmax(-1)
        out = (w @ v).transpose(1, 2).reshape(x.shape)
        return (out, w) if self.config.output_attentions else (out,)


@case("hf", lambda n: (randn(2, n, H), _mask(n)))
def invert_mask_min_value(x, mask):
    dtype = x.dtype
    inverted = 1.0 - mask[:, None, None, :].to(dtype)
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


@case("hf", _hidden)
def apply_chunking_to_forward(x, chunk_size=2, chunk_dim=1):
    def forward_fn(t):
        return t * 2 + 1
    if chunk_size > 0 and x.shape[chunk_dim] % chunk_size == 0:
        num_chunks = x.shape[chunk_dim] // chunk_size
        chunks = x.chunk(num_chunks, dim=chunk_dim)
        return torch.cat(tuple(forward_fn(c) for c in chunks), dim=chunk_dim)
    return forward_fn(x)


@case("hf", _hidden)
def logits_to_probs_dict(x):
    logits = x[:, 0, :4]
    probs = logits.softmax(-1)
    id2label = {0: "NEG", 1: "NEU", 2: "POS", 3: "MIX"}
    return {id2label[i]: probs[:, i] for i in range(probs.shape[-1])}
