# SPDX-License-Identifier: Apache-2.0
"""kiln.quant.from_torch_ao: models torch.ao's eager-mode static
quantization converted (quantized tensors between quantized modules),
rewritten onto float tensors holding the quantized values and kiln's int8
layers: equal to the torch.ao model run eagerly (up to rounding ties), one
graph with no fallback when compiled."""
import warnings

import pytest
import torch
from torch import nn
import torch.ao.quantization as tq

import kiln
from conftest import assert_compiled
from test_quant import sqnr

warnings.filterwarnings("ignore", category=DeprecationWarning, module="torch.ao")


def converted(model, x, fuse=(), batches=3):
    """``model`` through torch.ao's eager-mode prepare / calibrate / convert
    (x86 backend, the default qconfig)."""
    model = model.eval()
    if fuse:
        model = tq.fuse_modules(model, list(fuse))
    model.qconfig = tq.get_default_qconfig("x86")
    observed = tq.prepare(model)
    torch.manual_seed(1)
    with torch.no_grad():
        for _ in range(batches):
            observed(torch.randn_like(x))
    return tq.convert(observed)


class Block(nn.Module):
    """QuantStub, fused Conv+ReLU, a residual QFunctional add_relu, average
    pooling on a quantized tensor, a quantized Linear, DeQuantStub."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv1, self.relu = nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.skip = nn.quantized.FloatFunctional()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.relu(self.conv1(self.quant(x)))
        y = self.skip.add_relu(self.conv2(y), y)
        return self.dequant(self.fc(torch.flatten(self.pool(y), 1)))


def steps_apart(a, b, step):
    """How many output quantization steps ``a`` and ``b`` differ by, at most."""
    return int(((a - b).abs() / step).round().max())


def test_block_equals_torch_ao_eager_and_compiles_to_one_graph():
    x = torch.randn(2, 3, 16, 16)
    q = converted(Block(), x, fuse=[["conv1", "relu"]])
    r = kiln.quant.from_torch_ao(q, (x,))
    assert r.kiln_int8_layers == 3
    assert isinstance(r.conv1.layer[0], kiln.quant.StaticQuantizedConv2d)
    assert isinstance(r.fc.layer, kiln.quant.StaticQuantizedLinear)
    assert r.conv2.layer.input_scale == pytest.approx(q.conv1.scale)
    assert r.conv2.layer.input_zero_point == q.conv1.zero_point
    step = q.fc.scale
    kiln.reset()
    fast = kiln.compile(r)
    for seed in range(3):
        torch.manual_seed(seed)
        x = torch.randn(2, 3, 16, 16) * (1 + seed)
        with torch.no_grad():
            ref, eager, compiled = q(x), r(x), fast(x)
        assert steps_apart(eager, ref, step) <= 1
        assert steps_apart(compiled, eager, step) <= 1
        assert sqnr(compiled, ref) > 30
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)


class Activations(nn.Module):
    """Quantized activations with their own output qparams, a quantized
    BatchNorm, QFunctional mul and cat, and an average pool module that
    rounds on quantized tensors in eager."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.hswish, self.relu6 = nn.Hardswish(), nn.ReLU6()
        self.leaky = nn.LeakyReLU(0.1)
        self.mul, self.cat = nn.quantized.FloatFunctional(), nn.quantized.FloatFunctional()
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        x = self.quant(x)
        y = self.bn(self.conv(x))
        y = self.mul.mul(self.hswish(y), self.relu6(y))
        y = self.cat.cat([self.leaky(y), y], dim=1)
        return self.dequant(self.pool(y))


def test_activations_batchnorm_and_functionals():
    torch.manual_seed(0)
    m = Activations().eval()
    m.bn.running_mean.uniform_(-0.5, 0.5)
    m.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(1, 3, 12, 12)
    q = converted(m, x)
    assert type(q.bn).__name__ == "BatchNorm2d" and "quantized" in type(q.bn).__module__
    r = kiln.quant.from_torch_ao(q, (x,))
    assert isinstance(r.pool, kiln.quant.Requantized)  # eager's avg pool rounds to the grid
    step = q.cat.scale
    kiln.reset()
    fast = kiln.compile(r)
    with torch.no_grad():
        ref, eager, compiled = q(x), r(x), fast(x)
    assert steps_apart(eager, ref, step) <= 1
    # torch's quantized average pooling rounds a few % of its values the other way.
    assert (eager - ref).abs().gt(step / 2).float().mean() < 0.05
    assert steps_apart(compiled, eager, step) <= 1
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)


def test_torchvision_quantizable_resnet18():
    qm = pytest.importorskip("torchvision.models.quantization")
    torch.manual_seed(0)
    model = qm.resnet18(weights=None, quantize=False).eval()
    model.fuse_model(is_qat=False)
    x = torch.randn(1, 3, 64, 64)
    q = converted(model, x)
    r = kiln.quant.from_torch_ao(q, (x,))
    assert r.kiln_int8_layers == 21
    kiln.reset()
    with torch.no_grad():
        ref, eager = q(x), r(x)
        compiled = kiln.compile(r)(x)
    # Rounding ties (a few per million) resolved apart by torch's requantization
    # and the float path compound over 20 layers of random weights.
    assert sqnr(eager, ref) > 25
    assert sqnr(compiled, eager) > 25
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)


def test_layers_the_example_inputs_do_not_reach_raise_when_called():
    class WithAux(Block):
        def __init__(self):
            super().__init__()
            self.aux = nn.Conv2d(8, 8, 1)

        def forward(self, x, aux=False):
            if aux:
                return self.dequant(self.aux(self.relu(self.conv1(self.quant(x)))))
            return super().forward(x)

    x = torch.randn(1, 3, 8, 8)
    q = converted(WithAux(), x)
    r = kiln.quant.from_torch_ao(q, (x,))
    assert isinstance(r.aux, kiln.quant.Unreached)
    with pytest.raises(RuntimeError, match="did not reach 'aux'"):
        r(x, aux=True)


def test_bad_models_and_arguments_name_the_problem():
    x = torch.randn(1, 3, 8, 8)
    q = converted(Block(), x)
    with pytest.raises(TypeError, match="example_inputs must be a tuple"):
        kiln.quant.from_torch_ao(q, {"x": x})
    with pytest.raises(TypeError, match="expected an nn.Module"):
        kiln.quant.from_torch_ao(lambda t: t, (x,))

    class Conv1d(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
            self.conv = nn.Conv1d(3, 4, 3)

        def forward(self, x):
            return self.dequant(self.conv(self.quant(x)))

    q1 = converted(Conv1d(), torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match="'conv' is a torch.ao.nn.quantized.*Conv1d"):
        kiln.quant.from_torch_ao(q1, torch.randn(1, 3, 8))

    dynamic = tq.quantize_dynamic(nn.Sequential(nn.Linear(8, 8)).eval(), {nn.Linear})
    with pytest.raises(ValueError, match="dynamic_int8"):
        kiln.quant.from_torch_ao(dynamic, torch.randn(2, 8))

    class AddScalar(Block):
        def forward(self, x):
            y = self.relu(self.conv1(self.quant(x)))
            return self.dequant(self.skip.add_scalar(y, 1.0))

    q2 = converted(AddScalar(), x)
    with pytest.raises(ValueError, match="QFunctional.add_scalar"):
        kiln.quant.from_torch_ao(q2, (x,))


def test_requantization_compiled_equals_the_decomposed_pair():
    """``_ops.quantize_dequantize_static`` (the requantizations of from_pt2e /
    from_torch_ao models) compiled: the same values as torch's
    quantized_decomposed pair, ties, clamping at both ends and the zero
    point included."""
    scale, zero = 0.25, 37
    ties = (torch.arange(-80, 80, dtype=torch.float32) + 0.5) * scale  # half-way values
    x = torch.cat([ties, torch.linspace(-50, 80, 301), torch.tensor([-1e9, 1e9, 0.0, -0.0])])
    f = kiln.compile(lambda t: kiln.quant._ops.quantize_dequantize_static(t * 1.0, scale, zero))
    expected = kiln.quant._ops.quantize_dequantize_static(x, scale, zero)
    assert torch.equal(f(x), expected)
    assert expected.min() == (0 - zero) * scale and expected.max() == (255 - zero) * scale
    assert_compiled(graphs=1, fallback_ops=0)


def test_quantized_models_compiled_as_they_are_break_with_the_call_to_use():
    """Compiled without their rewrite, torch-quantized models break at the
    first quantized op (quantized tensors have no kiln dtype); the break's
    hint names the kiln.quant call that compiles them."""
    x = torch.randn(1, 3, 8, 8)
    q = converted(Block(), x)
    report = kiln.explain(q)(x)
    assert any("kiln.quant.from_torch_ao(model, example_inputs)" in b.hint for b in report.break_records)
    dynamic = tq.quantize_dynamic(nn.Sequential(nn.Linear(8, 8)).eval(), {nn.Linear})
    report = kiln.explain(dynamic)(torch.randn(2, 8))
    assert any("kiln.quant.dynamic_int8()" in b.hint for b in report.break_records), \
        report.graph_breaks


class FxBlock(nn.Module):
    """Functional steps FX-mode quantization leaves on quantized tensors: a
    residual add + ReLU (quantized.add_relu), a product (quantized.mul),
    torch.cat and a mean."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        z = self.c2(y) + y
        return self.fc(torch.cat([torch.relu(z), y * y], 1).mean((2, 3)))


def converted_fx(model, x, batches=3):
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    observed = prepare_fx(model.eval(), tq.get_default_qconfig_mapping("x86"), (x,))
    torch.manual_seed(1)
    with torch.no_grad():
        for _ in range(batches):
            observed(torch.randn_like(x))
    return convert_fx(observed)


def test_fx_mode_model_equals_torch_ao_and_compiles_to_one_graph():
    x = torch.randn(1, 3, 16, 16)
    q = converted_fx(FxBlock(), x)
    r = kiln.quant.from_torch_ao(q, (x,))
    assert r.kiln_int8_layers == 3
    targets = {n.target for n in r.graph.nodes if n.op == "call_function"}
    assert torch.quantize_per_tensor not in targets and torch.ops.quantized.add_relu not in targets
    kiln.reset()
    fast = kiln.compile(r)
    for seed in range(3):
        torch.manual_seed(seed)
        x = torch.randn(1, 3, 16, 16)
        with torch.no_grad():
            ref, eager, compiled = q(x), r(x), fast(x)
        assert steps_apart(eager, ref, q.fc.scale) <= 1
        assert steps_apart(compiled, eager, q.fc.scale) <= 1
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)


class FxActivations(nn.Module):
    """Functional activations FX mode turns into torch.ops.quantized calls
    with their own output qparams (hardswish, elu, leaky_relu, layer_norm,
    softmax) or keeps as float ops on quantized tensors (sigmoid)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 1)

    def forward(self, x):
        y = self.conv(x)
        y = torch.nn.functional.hardswish(y) + torch.nn.functional.elu(y)
        y = torch.nn.functional.leaky_relu(y, 0.2) * torch.sigmoid(y)
        return torch.softmax(torch.nn.functional.layer_norm(y, (6,)), -1)


def test_fx_mode_activations_equal_torch_ao():
    x = torch.randn(1, 3, 5, 6)
    q = converted_fx(FxActivations(), x)
    quantized_calls = {str(n.target) for n in q.graph.nodes if n.op == "call_function"}
    assert {"quantized.hardswish", "quantized.elu", "quantized.leaky_relu",
            "quantized.layer_norm"} <= quantized_calls, quantized_calls
    r = kiln.quant.from_torch_ao(q, (x,))
    kiln.reset()
    fast = kiln.compile(r)
    out_step = 1.0 / 256  # softmax's fixed output scale
    for seed in range(3):
        torch.manual_seed(seed)
        x = torch.randn(1, 3, 5, 6)
        with torch.no_grad():
            ref, eager, compiled = q(x), r(x), fast(x)
        assert steps_apart(eager, ref, out_step) <= 1
        assert steps_apart(compiled, eager, out_step) <= 1
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)


def test_fx_mode_quantized_op_kiln_does_not_know_is_named():
    class FunctionalLinear(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4, 8))

        def forward(self, x):
            return torch.nn.functional.linear(x, self.weight)

    x = torch.randn(2, 8)
    q = converted_fx(FunctionalLinear(), x)  # torch.ops.quantized.linear on packed weights
    with pytest.raises(ValueError, match="quantized.linear.*which kiln does not convert"):
        kiln.quant.from_torch_ao(q, (x,))
