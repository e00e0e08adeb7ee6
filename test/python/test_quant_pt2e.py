# SPDX-License-Identifier: Apache-2.0
"""kiln.quant.from_pt2e: models PT2E converted (X86InductorQuantizer), compiled by kiln.

``convert_pt2e`` leaves quantize/dequantize ops on uint8/int8 tensors that
kiln's capture cannot hold (a break at every quantize). ``from_pt2e``
rewrites static int8 convolutions/linears into kiln's int8 layer calls and
the other q/dq pairs into fake quantizations: the rewritten model equals
the PT2E model run eagerly, and compiles to one graph on kiln's int8
kernels.
"""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_compiled
from test_quant import sqnr
from test_quant_static import calibrate, pt2e_modules

qd = torch.ops.quantized_decomposed


def converted_pt2e(model, x, batches=3):
    pt2e, xiq = pt2e_modules()
    quantizer = xiq.X86InductorQuantizer().set_global(
        xiq.get_default_x86_inductor_quantization_config())
    # strict export: the non-strict default leaves the quantizer nothing to match.
    observed = pt2e.prepare_pt2e(torch.export.export(model, (x,), strict=True).module(), quantizer)
    calibrate(observed, [torch.randn_like(x) for _ in range(batches)])
    return pt2e.convert_pt2e(observed)


def cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4)).eval()


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.conv1, self.conv2 = nn.Conv2d(16, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = self.conv2(torch.relu(self.conv1(x)))
        return self.head(torch.relu(x + y).mean((2, 3)))


def test_convs_and_linear_become_kiln_int8_layers():
    x = torch.randn(2, 3, 16, 16)
    converted = converted_pt2e(cnn(), x)
    rewritten = kiln.quant.from_pt2e(converted)
    assert rewritten.kiln_int8_layers == 3
    targets = [n.target for n in rewritten.graph.nodes if n.op == "call_function"]
    assert targets.count(kiln.quant._ops.conv2d_static_int8) == 2
    assert targets.count(kiln.quant._ops.linear_static_int8) == 1
    assert not any(getattr(t, "namespace", None) == "quantized_decomposed" for t in targets)
    with torch.no_grad():
        want, eager = converted(x), rewritten(x)
        got = kiln.compile(rewritten)(x)
    torch.testing.assert_close(eager, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got, eager, rtol=1e-5, atol=1e-5)
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)


def test_residual_block_compiles_to_one_graph_close_to_pt2e():
    """The residual add's q/dq pair becomes a fake quantization; kiln's
    int8 convolutions then run it with the residual as a post-op (the same
    rounding as kiln's own static int8 flow: SQNR, not bit equality)."""
    torch.manual_seed(0)
    model = Residual().eval()
    x = torch.randn(1, 3, 12, 12)
    converted = converted_pt2e(model, x)
    rewritten = kiln.quant.from_pt2e(converted)
    assert rewritten.kiln_int8_layers == 4
    with torch.no_grad():
        want = converted(x)
        torch.testing.assert_close(rewritten(x), want, rtol=1e-5, atol=1e-6)
        got = kiln.compile(rewritten)(x)
    assert sqnr(want, got) > 30
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)


def test_the_original_is_left_as_it_was():
    x = torch.randn(2, 3, 16, 16)
    converted = converted_pt2e(cnn(), x)
    before = str(converted.graph)
    kiln.quant.from_pt2e(converted)
    assert str(converted.graph) == before


def test_not_a_graph_module_is_a_clear_error():
    with pytest.raises(TypeError, match="convert_pt2e returns"):
        kiln.quant.from_pt2e(cnn())


def test_export_of_the_rewritten_model_is_a_clear_error(tmp_path):
    x = torch.randn(2, 3, 16, 16)
    rewritten = kiln.quant.from_pt2e(converted_pt2e(cnn(), x))
    with pytest.raises(kiln.ExportError, match="kiln.quant layers"):
        kiln.export(rewritten, (x,), str(tmp_path / "q.kiln"))


def test_conv_without_bias_or_trailing_arguments():
    """aten.conv2d with only (input, weight): the defaults fill in (a
    shorter argument list made the rewrite fail to unpack)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.ReLU()).eval()
    x = torch.randn(1, 3, 10, 10)
    converted = converted_pt2e(model, x)
    for node in converted.graph.nodes:
        if node.target == torch.ops.aten.conv2d.default:
            node.args = node.args[:2]
    converted.recompile()
    rewritten = kiln.quant.from_pt2e(converted)
    assert rewritten.kiln_int8_layers == 1
    with torch.no_grad():
        torch.testing.assert_close(rewritten(x), converted(x), rtol=1e-5, atol=1e-6)


def test_pt2e_model_compiled_as_it_is_breaks_with_a_hint_to_from_pt2e():
    x = torch.randn(1, 3, 16, 16)
    converted = converted_pt2e(cnn(), x)
    report = kiln.explain(converted)(x)
    assert any("from_pt2e(model) for PT2E" in b.hint for b in report.break_records), \
        report.graph_breaks
