# SPDX-License-Identifier: Apache-2.0
"""kiln.compile(exported_program) (issue 16, part 4).

A torch.export ExportedProgram's graph module (torch.ops.aten calls, the
lifted parameters and buffers as inputs) runs compiled by kiln with the
parameters supplied as the graph signature says; results match the
program's own module and eager; inputs outside the exported sizes or the
dynamic dim's range raise a ValueError naming the input, the dim and the
range. Models: a small MLP, a resnet-like basic block (conv, batch norm in
eval, residual), HF BertModel and torchvision resnet18 (random init), each
in export IR and in the core-ATen form (run_decompositions).
"""
import pytest
import torch
import torch.nn as nn

import kiln
from conftest import assert_close, stats


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))).softmax(-1)


class Block(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


def _randomize_bn(m):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
    return m


def _whole():
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0 and s["compiled_calls"] >= 1, s
    return s


@pytest.mark.parametrize("core", [False, True], ids=["export-ir", "core-aten"])
def test_exported_mlp(core):
    m = MLP().eval()
    x = torch.randn(3, 8)
    ep = torch.export.export(m, (x,))
    if core:
        ep = ep.run_decompositions()
    compiled = kiln.compile(ep)
    for _ in range(2):
        assert_close(compiled(x), m(x))
    assert _whole()["fallback_ops"] == 0


@pytest.mark.parametrize("core", [False, True], ids=["export-ir", "core-aten"])
def test_exported_resnet_block(core):
    m = _randomize_bn(Block()).eval()
    x = torch.randn(2, 4, 8, 8)
    ep = torch.export.export(m, (x,))
    if core:
        ep = ep.run_decompositions()
    compiled = kiln.from_export(ep)
    for _ in range(2):
        assert_close(compiled(x), m(x), rtol=1e-4, atol=1e-4)
    _whole()


def test_dynamic_batch_range_checked():
    m = MLP().eval()
    batch = torch.export.Dim("batch", min=2, max=16)
    ep = torch.export.export(m, (torch.randn(5, 8),), dynamic_shapes=({0: batch},))
    compiled = kiln.compile(ep)
    for n in (5, 7, 16):  # (4 would equal a weight dim: kiln keeps such a size static)
        x = torch.randn(n, 8)
        assert_close(compiled(x), m(x))
    assert stats()["graphs_compiled"] == 1, stats()  # one graph with a `?` batch dim
    with pytest.raises(ValueError, match=r"dim 0 is 17, outside the program's range \[2, 16\]"):
        compiled(torch.randn(17, 8))
    with pytest.raises(ValueError, match="dim 1 is 9"):
        compiled(torch.randn(4, 9))


def test_buffer_mutation_written_back():
    m = _randomize_bn(Block()).train()
    x = torch.randn(2, 4, 8, 8)
    ep = torch.export.export(m, (x,))
    ref = torch.export.export(_randomize_bn(Block()).train(), (x,))
    ref.graph_module.load_state_dict(ep.graph_module.state_dict(), strict=False)
    with torch.no_grad():
        for name, value in ep.state_dict.items():
            ref.state_dict[name].copy_(value)
    compiled = kiln.compile(ep)
    got = compiled(x)
    expected = ref.module()(x)
    assert_close(got, expected, rtol=1e-4, atol=1e-4)
    for name in ("bn1.running_mean", "bn1.running_var", "bn2.running_mean"):
        assert_close(ep.state_dict[name], ref.state_dict[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("core", [False, True], ids=["export-ir", "core-aten"])
def test_exported_bert(core):
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=32,
                                     intermediate_size=64, vocab_size=100)
    model = transformers.BertModel(config).eval()
    ids = torch.randint(0, 100, (2, 10))
    ep = torch.export.export(model, (ids,))
    if core:
        ep = ep.run_decompositions()
    compiled = kiln.compile(ep)
    for _ in range(2):
        got = compiled(ids)
    expected = model(ids)
    assert_close(got["last_hidden_state"], expected.last_hidden_state, rtol=1e-4, atol=1e-4)
    assert_close(got["pooler_output"], expected.pooler_output, rtol=1e-4, atol=1e-4)
    assert _whole()["fallback_ops"] == 0


@pytest.mark.parametrize("core", [False, True], ids=["export-ir", "core-aten"])
def test_exported_resnet18(core):
    torchvision = pytest.importorskip("torchvision")
    model = _randomize_bn(torchvision.models.resnet18()).eval()
    x = torch.randn(1, 3, 64, 64)  # small images: a test, not a benchmark
    ep = torch.export.export(model, (x,))
    if core:
        ep = ep.run_decompositions()
    compiled = kiln.compile(ep)
    for _ in range(2):
        got = compiled(x)
    assert_close(got, model(x), rtol=1e-4, atol=1e-4)
    # core ATen's max_pool2d_with_indices too (kiln/_aten_pool.py)
    assert _whole()["fallback_ops"] == 0


def _gpt2():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000,
                                  n_positions=64, use_cache=False)
    return transformers.GPT2LMHeadModel(cfg).eval()


def test_exported_gpt2_whole_graph():
    """GPT-2's export IR builds its attention mask with pre-dispatch vmap
    calls: from_export lowers them to plain ATen first (one graph, 0
    fallbacks)."""
    model = _gpt2()
    ids = torch.randint(0, 1000, (2, 10))
    compiled = kiln.from_export(torch.export.export(model, (ids,)))
    for _ in range(2):
        got = compiled(ids)
    assert_close(got["logits"], model(ids).logits, rtol=1e-4, atol=1e-4)
    assert _whole()["fallback_ops"] == 0


def test_exported_gpt2_dynamic_batch_and_sequence():
    model = _gpt2()
    ids = torch.randint(0, 1000, (2, 10))
    dims = {0: torch.export.Dim("batch", min=1, max=8), 1: torch.export.Dim("seq", min=2, max=32)}
    compiled = kiln.from_export(torch.export.export(model, (ids,), dynamic_shapes=(dims,)))
    for shape in [(2, 10), (3, 7)]:
        x = torch.randint(0, 1000, shape)
        assert_close(compiled(x)["logits"], model(x).logits, rtol=1e-4, atol=1e-4)
    s = stats()
    assert s["graph_breaks"] == 0 and s["fallback_ops"] == 0 and s["eager_calls"] == 0, s
    with pytest.raises(ValueError, match="dim 1 is 40"):
        compiled(torch.randint(0, 1000, (2, 40)))


def test_exported_resnet18_dynamic_batch():
    torchvision = pytest.importorskip("torchvision")
    model = _randomize_bn(torchvision.models.resnet18()).eval()
    batch = torch.export.Dim("batch", min=1, max=8)
    ep = torch.export.export(model, (torch.randn(2, 3, 64, 64),), dynamic_shapes=({0: batch},))
    compiled = kiln.from_export(ep)
    for b in (2, 3, 1):
        x = torch.randn(b, 3, 64, 64)
        assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="dim 0 is 9"):
        compiled(torch.randn(9, 3, 64, 64))
    assert _whole()["fallback_ops"] == 0


def test_exported_bert_dynamic_batch_and_sequence():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=32,
                                     intermediate_size=64, vocab_size=100)
    model = transformers.BertModel(config).eval()
    dims = {0: torch.export.Dim("batch", min=1, max=8), 1: torch.export.Dim("seq", min=2, max=32)}
    ep = torch.export.export(model, (torch.randint(0, 100, (2, 10)),), dynamic_shapes=(dims,))
    compiled = kiln.from_export(ep)
    for shape in [(2, 10), (3, 7), (1, 16)]:
        ids = torch.randint(0, 100, shape)
        assert_close(compiled(ids)["last_hidden_state"], model(ids).last_hidden_state,
                     rtol=1e-4, atol=1e-4)
    assert _whole()["fallback_ops"] == 0
