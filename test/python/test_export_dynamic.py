# SPDX-License-Identifier: Apache-2.0
"""Dynamic batch and sequence dims of transformer blocks (issue 20).

BERT and GPT-2 blocks (export_models.py: fused QKV split, head reshapes
[b, t, 64] -> [b, t, 4, 16], batched matmuls over symbolic batch dims,
softmax over a symbolic dim, GPT-2's causal mask built from t) exported
with `batch` and `seq` symbolic: the artifact run at sizes other than the
example's equals the JIT path (one dynamic graph, no recompile; also
kiln.compile's default mode after the first size change) and eager;
sizes outside a dim's range are errors naming the input and the dim; a
reshape kiln cannot keep symbolic, or two Dims with one example size, are
export errors naming them.
"""
import pytest
import torch

import kiln
from conftest import assert_close, stats
from kiln_runtime import KilnRuntimeError
from export_models import CNN, BertBlock, GPT2Block

SIZES = [(3, 10), (2, 7), (8, 33), (5, 64), (2, 2)]


def _dims():
    return ({0: torch.export.Dim("batch", min=2, max=8),
             1: torch.export.Dim("seq", min=2, max=64)},)


@pytest.mark.parametrize("block", [BertBlock, GPT2Block])
def test_dynamic_batch_and_sequence(tmp_path, block):
    model = block().eval()
    path = str(tmp_path / "block.kiln")
    kiln.export(model, (torch.randn(3, 10, 64),), path, dynamic_shapes=_dims())
    loaded = kiln.load(path)
    kiln.reset()
    jit = kiln.compile(model)
    with torch.no_grad():
        for b, t in SIZES:
            x = torch.randn(b, t, 64)
            kiln.mark_dynamic(x, [0, 1])  # the export's dims (64 stays static)
            got, expected = loaded(x), model(x)
            assert_close(got, jit(x), rtol=1e-5, atol=1e-5)
            assert_close(got, expected)
    s = stats()  # the JIT path: one graph with symbolic sizes serves every size
    assert s["graphs_compiled"] == 1 and s["dynamic_graphs"] == 1, s
    assert s["eager_calls"] == 0 and s["fallback_ops"] == 0 and s["recompiles"] == 0, s
    with pytest.raises(KilnRuntimeError, match=r"input 0 \('x'\) dim 1 \(symbolic 'seq'\): "
                                               r"size 65 outside its range \[2, 64\]"):
        loaded(torch.randn(2, 65, 64))
    with pytest.raises(KilnRuntimeError, match=r"input 0 \('x'\) dim 0 \(symbolic 'batch'\): "
                                               r"size 9 outside its range \[2, 8\]"):
        loaded(torch.randn(9, 4, 64))


def test_jit_mark_dynamic_block():
    """kiln.mark_dynamic on both dims: one graph for every (batch, seq)."""
    model = GPT2Block().eval()
    compiled = kiln.compile(model)
    with torch.no_grad():
        for b, t in SIZES:
            x = torch.randn(b, t, 64)
            kiln.mark_dynamic(x, [0, 1])
            assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["dynamic_graphs"] == 1 and s["eager_calls"] == 0, s


class SwapsSizes(torch.nn.Module):
    """Reshapes [b, t, 8] to [t, b, 8]: not the layout the sizes keep."""

    def forward(self, x):
        b, t, d = x.shape
        return torch.relu(x).reshape(t, b, d) * 2


def test_reshape_moving_symbolic_sizes_is_refused(tmp_path):
    """A reshape that moves symbolic sizes is never lowered as if it kept them:
    export names the dims; the JIT path specializes (results stay right)."""
    model, x = SwapsSizes(), torch.randn(3, 5, 8)
    with pytest.raises(kiln.ExportError, match=r"dynamic dim 'batch' \(input 0 dim 0\) was "
                                               r"specialized.*moves, merges or splits symbolic"):
        kiln.export(model, (x,), str(tmp_path / "s.kiln"), dynamic_shapes=_dims())
    kiln.reset()
    compiled = kiln.compile(model, dynamic=True)
    for b, t in [(3, 5), (4, 6)]:
        y = torch.randn(b, t, 8)
        assert_close(compiled(y), model(y))


def test_two_dims_with_one_example_size(tmp_path):
    with pytest.raises(kiln.ExportError, match="dynamic dims 'batch' and 'seq' have the same "
                                               "example size 5"):
        kiln.export(BertBlock().eval(), (torch.randn(5, 5, 64),), str(tmp_path / "b.kiln"),
                    dynamic_shapes=_dims())


@pytest.mark.parametrize("block", [BertBlock, GPT2Block])
def test_jit_default_mode_one_recompile(block):
    """kiln.compile's default (dynamic=None): the first size change makes batch
    and sequence symbolic; the next sizes reuse that graph (before, each new
    size specialized a new graph)."""
    model = block().eval()
    compiled = kiln.compile(model)
    with torch.no_grad():
        for b, t in [(3, 10), (2, 7), (8, 33), (5, 20), (16, 100)]:
            x = torch.randn(b, t, 64)
            assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["dynamic_graphs"] == 1 and s["recompiles"] == 1, s
    assert s["eager_calls"] == 0 and s["dynamic_specialized"] == 0, s


def test_cnn_dynamic_batch(tmp_path):
    """Convolutions, BatchNorm, pooling over a symbolic batch (per-image conv
    GEMMs, padding broadcast to the batch): one artifact for every batch."""
    model = CNN().eval()
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    path = str(tmp_path / "cnn.kiln")
    batch = torch.export.Dim("batch", min=2, max=16)
    kiln.export(model, (torch.randn(5, 3, 32, 32),), path, dynamic_shapes=({0: batch},))
    loaded = kiln.load(path)
    kiln.reset()
    jit = kiln.compile(model)
    with torch.no_grad():
        for b in (5, 2, 9, 16):
            x = torch.randn(b, 3, 32, 32)
            kiln.mark_dynamic(x, 0)
            got = loaded(x)
            assert_close(got, jit(x), rtol=1e-5, atol=1e-5)
            assert_close(got, model(x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["dynamic_graphs"] == 1 and s["eager_calls"] == 0, s
    with pytest.raises(KilnRuntimeError, match=r"input 0 \('x'\) dim 0 \(symbolic 'batch'\): "
                                               r"size 17 outside its range \[2, 16\]"):
        loaded(torch.randn(17, 3, 32, 32))


def test_jit_auto_mode_specializes_conv_batch():
    """kiln.compile's default mode does not make a convolution's batch
    symbolic by itself (per-image GEMMs run ~2x slower than the static
    form): a new batch size specializes, as before; results stay right."""
    model = CNN().eval()
    compiled = kiln.compile(model)
    with torch.no_grad():
        for b in (4, 6, 8):
            x = torch.randn(b, 3, 32, 32)
            assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 3 and s["dynamic_graphs"] == 0, s
    assert s["dynamic_specialized"] >= 1 and s["eager_calls"] == 0, s
