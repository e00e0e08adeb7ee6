# SPDX-License-Identifier: Apache-2.0
"""kiln.quant.weight_only_int4: grouped int4 weights, compiled to kiln's int4 kernel.

Packing against its documented layout, weights against the group scales,
compiled layers against the eager reference (kiln/quant/_ops.py) and against
torch's own int4 kernel (``_weight_int4pack_mm_for_cpu``, torchao's CPU path)
on the same values and scales, the row kernel (up to 8 rows) and the
dequantize + sgemm path, accuracy on scikit-learn's bundled digits.
"""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_compiled
from test_quant import accuracy, sqnr, train_digits_mlp

ops = kiln.quant._ops


def test_pack_int4_layout():
    values = torch.arange(64, dtype=torch.int32).remainder(16).reshape(1, 64) - 8
    words = ops.pack_int4(values)
    assert words.shape == (1, 8) and words.dtype == torch.int32
    packed = words.view(torch.uint8).reshape(64 // 2)
    # Byte j of each 32-value block: value j + 8 low, value 16 + j + 8 high.
    for block in range(2):
        for j in range(16):
            low, high = values[0, 32 * block + j] + 8, values[0, 32 * block + 16 + j] + 8
            assert int(packed[16 * block + j]) == int(low) | (int(high) << 4)
    assert torch.equal(ops.unpack_int4(words), values)


def test_weights_are_group_scaled_int4():
    torch.manual_seed(0)
    linear = nn.Linear(128, 8)
    with torch.no_grad():
        linear.weight[0, :32] = 0.0  # an all-zero group: scale 1, values 0
        linear.weight[1, 32:64] *= 100  # an outlier group does not touch its neighbours
    q = kiln.quant.QuantizedLinearInt4.from_float(linear, group_size=32)
    assert q.qweight.shape == (8, 16) and q.weight_scale.shape == (8, 4)
    w = linear.weight.detach().reshape(8, 4, 32)
    torch.testing.assert_close(q.weight_scale, w.abs().amax(-1).clamp_min(0) / 7.0 +
                               (w.abs().amax(-1) == 0).float() * 1.0)
    values = ops.unpack_int4(q.qweight)
    assert values.abs().max() <= 7 and torch.equal(values[0, :32], torch.zeros(32, dtype=torch.int32))
    dequantized = (values.float().reshape(8, 4, 32) * q.weight_scale.unsqueeze(-1))
    assert ((dequantized - w).abs() <= q.weight_scale.unsqueeze(-1) / 2 + 1e-6).all()


@pytest.mark.parametrize("rows", [1, 3, 8, 9, 33])
@pytest.mark.parametrize("group", [32, 128])
def test_compiled_matches_eager_reference(rows, group):
    torch.manual_seed(rows)
    hidden = 96 if group == 32 else 128  # a multiple of the group
    model = nn.Sequential(nn.Linear(256, hidden), nn.GELU(), nn.Linear(hidden, 40))
    prepared = kiln.quant.prepare(model.eval(), kiln.quant.weight_only_int4(group_size=group))
    assert [type(m).__name__ for m in prepared][::2] == ["QuantizedLinearInt4"] * 2
    x = torch.randn(rows, 256)
    with torch.no_grad():
        expected, got = prepared(x), kiln.compile(prepared)(x)
        want = model(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert sqnr(want, got) > 15  # int4: coarse, but the fp32 model's output
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)


@pytest.mark.parametrize("shape", [(256,), (2, 3, 256)])
def test_1d_and_3d_inputs_without_bias(shape):
    prepared = kiln.quant.prepare(nn.Sequential(nn.Linear(256, 64, bias=False)).eval(),
                                  kiln.quant.weight_only_int4(group_size=64))
    x = torch.randn(shape)
    with torch.no_grad():
        torch.testing.assert_close(kiln.compile(prepared)(x), prepared(x), rtol=1e-4, atol=1e-5)
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)


@pytest.mark.parametrize("rows", [1, 12])
def test_matches_torch_int4_kernel(rows):
    """torch's int4 matmul (``_weight_int4pack_mm_for_cpu``: values stored
    plus 8, a float zero per group, here 0) on kiln's own values and scales."""
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(512, 96)).eval()
    prepared = kiln.quant.prepare(layer, kiln.quant.weight_only_int4(group_size=64))
    q = prepared[0]
    packed = torch._convert_weight_to_int4pack_for_cpu(ops.unpack_int4(q.qweight) + 8, 1)
    scales_and_zeros = torch.stack([q.weight_scale.t(), torch.zeros_like(q.weight_scale.t())],
                                   -1).contiguous()
    x = torch.randn(rows, 512)
    with torch.no_grad():
        got = kiln.compile(prepared)(x)
    reference = torch._weight_int4pack_mm_for_cpu(x, packed, 64, scales_and_zeros) + q.bias
    torch.testing.assert_close(got, reference, rtol=1e-4, atol=1e-4)


def test_nan_weight_group_gives_nan_outputs_in_its_row():
    linear = nn.Linear(64, 4)
    with torch.no_grad():
        linear.weight[2, 5] = float("nan")
    prepared = kiln.quant.prepare(nn.Sequential(linear).eval(),
                                  kiln.quant.weight_only_int4(group_size=32))
    x = torch.randn(2, 64)
    with torch.no_grad():
        expected, got = prepared(x), kiln.compile(prepared)(x)
    assert torch.isnan(expected[:, 2]).all() and torch.isnan(got[:, 2]).all()
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_ir_is_a_grouped_qlinear_calling_the_int4_kernel(tmp_path):
    prepared = kiln.quant.prepare(nn.Sequential(nn.Linear(64, 32), nn.ReLU(),
                                                nn.Linear(32, 16)).eval(),
                                  kiln.quant.weight_only_int4(group_size=32))
    with kiln.config.patch(debug_dir=str(tmp_path)):
        kiln.compile(prepared)(torch.randn(1, 64))
    (folder,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    assert (folder / "captured.mlir").read_text().count("kiln.int4_view") == 2
    dumps = sorted(p for p in folder.iterdir() if p.name[:2].isdigit() and p.suffix == ".mlir")
    folded = next(p.read_text() for p in dumps if "fold-quant" in p.name)
    assert folded.count("group_size = 32") == 2 and "kiln.dequantize" not in folded
    called = next(p.read_text() for p in dumps if "quant-to-calls" in p.name)
    assert called.count("call @kiln_int4_linear") == 2 and "kiln.qlinear" not in called


@pytest.mark.parametrize("call, message", [
    (lambda: kiln.quant.weight_only_int4(group_size=48), "group_size=48"),
    (lambda: kiln.quant.prepare(nn.Sequential(nn.Linear(96, 4)),
                                kiln.quant.weight_only_int4(group_size=64)),
     "in_features=96 is not a multiple of group_size=64"),
])
def test_unsupported_int4_configs_name_themselves(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value)


def test_digits_accuracy_within_one_point_of_fp32():
    model, xte, yte = train_digits_mlp()
    fp32 = accuracy(model, xte, yte)
    prepared = kiln.quant.prepare(model, kiln.quant.weight_only_int4(group_size=32))
    quantized = accuracy(kiln.compile(prepared), xte, yte)
    assert abs(quantized - fp32) <= 1.0, (fp32, quantized)
    assert_compiled(graphs=1, eager_calls=0)
