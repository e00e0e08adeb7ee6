# SPDX-License-Identifier: Apache-2.0
"""The models and micro-benchmarks of tools/bench.py.

All weights are random (seeded; no download); every module is in eval
mode, fp32. The real models come from torchvision, timm and transformers
(test-and-benchmark dependencies of tools/bootstrap.sh), built from configs.
`cases()` are the timed benchmarks of tools/bench.py; `capture_cases()` the
models whose capture time tools/bench_capture.py measures.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    """256-512-512-10 perceptron (demo, overhead and capture benchmarks)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512),
                                 nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x):
        return self.net(x)


class Micro(nn.Module):
    """One op, as a module (the micro-benchmarks)."""

    def __init__(self, fn: Callable, norm_dim: int | None = None):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(norm_dim) if norm_dim else None

    def forward(self, x):
        return self.norm(x) if self.norm is not None else self.fn(x)


@dataclass
class Case:
    """One benchmark: a module factory and an input factory per batch."""

    name: str
    make: Callable[[], nn.Module]
    inputs: Callable[[int], tuple]
    kind: str = "model"  # "model" or "micro"
    batch: int = 1  # the batch tools/bench_real.py runs


def _randn(*shape):
    return lambda b: (torch.randn(b, *shape),)


class HFBlock(nn.Module):
    """One transformers layer (GPT2Block or BertLayer) on hidden states:
    the layer returns a tuple, the benchmark its first element."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)[0]


def hf_gpt2_block(d=256, heads=4, seq=64) -> nn.Module:
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    return HFBlock(GPT2Block(GPT2Config(n_embd=d, n_head=heads, n_positions=seq,
                                       attn_implementation="sdpa")))


def hf_bert_layer(d=256, heads=4) -> nn.Module:
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLayer
    return HFBlock(BertLayer(BertConfig(hidden_size=d, num_attention_heads=heads,
                                        intermediate_size=4 * d, attn_implementation="sdpa")))


def _tv(name: str, **kw) -> Callable[[], nn.Module]:
    def make():
        import torchvision
        return getattr(torchvision.models, name)(**kw)
    return make


def _tv_segmentation(name: str) -> Callable[[], nn.Module]:
    def make():
        import torchvision
        return getattr(torchvision.models.segmentation, name)(weights=None,
                                                              weights_backbone=None)
    return make


def _ids(seq: int, vocab: int = 1000):
    return lambda b: (torch.randint(0, vocab, (b, seq)),)


def _hf_model(kind: str) -> Callable[[], nn.Module]:
    def make():
        import transformers as tf
        if kind == "gpt2":
            # use_cache=False: a DynamicCache built in forward still breaks.
            return tf.GPT2Model(tf.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000,
                                              n_positions=64, use_cache=False))
        return tf.BertModel(tf.BertConfig(num_hidden_layers=2, hidden_size=128,
                                          num_attention_heads=4, intermediate_size=512,
                                          vocab_size=1000))
    return make


def _timm(name: str) -> Callable[[], nn.Module]:
    def make():
        import timm
        return timm.create_model(name, pretrained=False)
    return make


class LastHidden(nn.Module):
    """A transformers model returning only its last hidden state (its
    ModelOutput is not a tensor or tuple the benchmark can compare)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids).last_hidden_state


def _hf_base(kind: str) -> Callable[[], nn.Module]:
    """BERT-base or GPT-2 (124M) at their default configs (random init)."""
    def make():
        import transformers as tf
        if kind == "gpt2":
            return LastHidden(tf.GPT2Model(tf.GPT2Config(use_cache=False,
                                                         attn_implementation="sdpa")))
        return LastHidden(tf.BertModel(tf.BertConfig(attn_implementation="sdpa")))
    return make


def real_cases() -> list[Case]:
    """The "real sizes" rows of tools/bench_real.py: what users deploy
    (224-px torchvision CNNs, base-size transformers at sequence 128;
    batch 1 unless the name says otherwise)."""
    return [
        Case("resnet50, 224 px", _tv("resnet50"), _randn(3, 224, 224)),
        Case("resnet50, 224 px, batch 8", _tv("resnet50"), _randn(3, 224, 224), batch=8),
        Case("mobilenet_v3_large, 224 px", _tv("mobilenet_v3_large"), _randn(3, 224, 224)),
        Case("efficientnet_b0, 224 px", _tv("efficientnet_b0"), _randn(3, 224, 224)),
        Case("convnext_tiny, 224 px", _tv("convnext_tiny"), _randn(3, 224, 224)),
        Case("vit_b_16, 224 px", _tv("vit_b_16"), _randn(3, 224, 224)),
        Case("lraspp_mobilenet_v3_large, 224 px", _tv_segmentation("lraspp_mobilenet_v3_large"),
             _randn(3, 224, 224)),
        Case("deeplabv3_mobilenet_v3_large, 224 px",
             _tv_segmentation("deeplabv3_mobilenet_v3_large"), _randn(3, 224, 224)),
        Case("BERT-base, seq 128", _hf_base("bert"), _ids(128, 30522)),
        Case("GPT-2 (124M), seq 128", _hf_base("gpt2"), _ids(128, 50257)),
    ]


def capture_cases() -> list[Case]:
    """The real models of the capture acceptance (batch 1 inputs)."""
    return [
        Case("torchvision resnet18, 64x64", _tv("resnet18"), _randn(3, 64, 64)),
        Case("torchvision mobilenet_v3_small, 64x64", _tv("mobilenet_v3_small"),
             _randn(3, 64, 64)),
        Case("torchvision vit_b_16, 32x32", _tv("vit_b_16", image_size=32), _randn(3, 32, 32)),
        Case("timm convnext_atto, 64x64", _timm("convnext_atto"), _randn(3, 64, 64)),
        Case("transformers GPT2Model 2x128, seq 32", _hf_model("gpt2"), _ids(32)),
        Case("transformers BertModel 2x128, seq 32", _hf_model("bert"), _ids(32)),
        Case("nn.TransformerEncoderLayer d256 h4, seq 64",
             lambda: nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True),
             _randn(64, 256)),
        Case("MLP 256-512-512-10", MLP, _randn(256)),
    ]


def cases() -> list[Case]:
    """Every benchmark of issue 5's suite, models first: the GPT-2 block and
    BERT layer are transformers' own classes, ResNet-18 and
    MobileNetV3-small torchvision's."""
    return [
        Case("MLP 256-512-512-10", MLP, _randn(256)),
        Case("nn.TransformerEncoderLayer d256 h4 ff1024, seq 64",
             lambda: nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True),
             _randn(64, 256)),
        Case("transformers GPT2Block d256 h4, seq 64", hf_gpt2_block, _randn(64, 256)),
        Case("transformers BertLayer d256 h4, seq 64", hf_bert_layer, _randn(64, 256)),
        Case("torchvision resnet18, 64x64", _tv("resnet18"), _randn(3, 64, 64)),
        Case("torchvision mobilenet_v3_small, 64x64", _tv("mobilenet_v3_small"),
             _randn(3, 64, 64)),
        Case("LayerNorm(1024), [b,512,1024]", lambda: Micro(None, 1024), _randn(512, 1024),
             "micro"),
        Case("GELU, [b,512,1024]", lambda: Micro(F.gelu), _randn(512, 1024), "micro"),
        Case("softmax(-1), [b,512,1024]", lambda: Micro(lambda x: x.softmax(-1)),
             _randn(512, 1024), "micro"),
    ]
