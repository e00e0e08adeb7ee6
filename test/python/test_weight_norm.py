# SPDX-License-Identifier: Apache-2.0
"""torch._weight_norm (nn.utils.parametrizations.weight_norm's weight)
compiled from kiln ops (TorchOpsNN.cpp weightNorm) instead of a per-op
fallback: per `dim` (0, 1, whole tensor), its gradients through the
compiled backward, and HF wav2vec2 (weight-normed positional convolution)
as one graph with no fallback."""
import copy

import pytest
import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

import kiln
from conftest import assert_close, assert_compiled


@pytest.mark.parametrize("dim", [0, 1, 2, None])
def test_weight_norm_matches_eager(dim):
    torch.manual_seed(0)
    layer = weight_norm(nn.Conv1d(4, 6, 3), dim=dim).eval()
    x = torch.randn(2, 4, 9)
    kiln.reset()
    with torch.no_grad():
        want = layer(x)
        got = kiln.compile(layer)(x)
    assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert_compiled(graphs=1, fallback_ops=0)


def test_weight_norm_gradients():
    torch.manual_seed(0)
    model = nn.Sequential(weight_norm(nn.Conv1d(4, 6, 3)), nn.GELU(),
                          weight_norm(nn.Conv1d(6, 2, 3), dim=None))
    twin = copy.deepcopy(model)
    x = torch.randn(2, 4, 11)
    kiln.reset()
    model(x).square().sum().backward()
    kiln.compile(twin)(x).square().sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)
    assert_compiled(graphs=1, fallback_ops=0, compiled_backwards=1)


def test_wav2vec2_is_one_graph_without_fallbacks():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.Wav2Vec2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3), num_feat_extract_layers=2,
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
    model = transformers.Wav2Vec2Model(config).eval()
    audio = torch.randn(1, 4000)
    kiln.reset()
    with torch.no_grad():
        want = model(input_values=audio).last_hidden_state
        got = kiln.compile(model)(input_values=audio).last_hidden_state
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)
