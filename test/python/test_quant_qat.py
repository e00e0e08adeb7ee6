# SPDX-License-Identifier: Apache-2.0
"""kiln.quant.prepare_qat: quantization-aware training, compiled, then int8.

torch's fake-quantize ops lowered by kiln (values and straight-through
gradients equal to eager's, special values included); QAT layers against a
reference built from torch.ao's own observers and fake-quantize ops; a
compiled QAT training step against the same step run eagerly (one graph,
compiled backward, observer and BatchNorm buffers); conversion to the int8
layers of static int8; accuracy on scikit-learn's bundled digits.
"""
import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.ao.quantization import observer as ao_observer

import kiln
import kiln._fallback
from conftest import assert_compiled
from test_quant import accuracy, digits, mlp
from test_quant_static import train_digits_cnn

# --- torch's fake-quantize ops ----------------------------------------------------


def special_values(shape):
    torch.manual_seed(0)
    x = torch.randn(shape) * 4
    flat = x.view(-1)
    flat[:20] = torch.arange(20) * 0.05 - 0.5  # rounding ties at scale 0.1
    flat[20:26] = torch.tensor([float("inf"), float("-inf"), float("nan"), 1e30, -1e30, 3e38])
    return x


FAKE_QUANT_CALLS = {
    "per_tensor_numbers": lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 3, -128, 127),
    "per_tensor_tensors": lambda x: torch.fake_quantize_per_tensor_affine(
        x, torch.tensor([0.037]), torch.tensor([100], dtype=torch.int32), 0, 255),
    "per_channel_axis1": lambda x: torch.fake_quantize_per_channel_affine(
        x, torch.tensor([0.01, 0.0325, 0.055, 0.0775, 0.1]), torch.tensor([-3, 0, 1, 2, 5], dtype=torch.int32),
        1, -128, 127),
    "per_channel_axis2": lambda x: torch.fake_quantize_per_channel_affine(
        x, torch.tensor([0.02, 0.05, 0.07, 0.11, 0.13, 0.2, 0.3]), torch.zeros(7, dtype=torch.int32), 2, -127, 127),
}


@pytest.mark.parametrize("name", sorted(FAKE_QUANT_CALLS))
def test_fake_quantize_values_and_gradients_equal_eager(name):
    call = FAKE_QUANT_CALLS[name]
    grad = torch.randn(6, 5, 7)
    results = []
    for fn in (call, kiln.compile(call)):
        x = special_values((6, 5, 7)).requires_grad_(True)
        y = fn(x)
        (y * grad).nansum().backward()
        results.append((y.detach(), x.grad))
    (expected, expected_grad), (got, got_grad) = results
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(got_grad, expected_grad, rtol=0, atol=0)
    assert expected_grad.count_nonzero() < expected_grad.numel()  # some values clipped
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0, eager_backwards=0)


def test_fake_quantize_negative_axis_raises_like_eager():
    def call(x):
        return torch.fake_quantize_per_channel_affine(x, torch.ones(3), torch.zeros(
            3, dtype=torch.int32), -1, 0, 255)

    with pytest.raises(RuntimeError, match="axis"):
        kiln.compile(call)(torch.randn(2, 3))


def test_fake_quantize_float_zero_point_matches_eager():
    def call(x):
        return torch.fake_quantize_per_channel_affine(x, torch.full((3,), 0.1),
                                                      torch.tensor([0.5, 1.0, -2.25]), 1, 0, 255)

    x = special_values((10, 3))
    torch.testing.assert_close(kiln.compile(call)(x), call(x), rtol=0, atol=0, equal_nan=True)


def fused_observer(x, on=1, ch_axis=-1, qmin=0, qmax=255):
    """torch.fused_moving_avg_obs_fake_quant on fresh per-tensor buffers;
    (output, buffers)."""
    buffers = [torch.tensor(float("inf")), torch.tensor(float("-inf")), torch.ones(1),
               torch.zeros(1, dtype=torch.int32)]
    flag = torch.tensor([on])
    return torch.fused_moving_avg_obs_fake_quant(x, flag, flag, *buffers, 0.01, qmin, qmax,
                                                 ch_axis, False, False), buffers


EDGE_CALLS = {  # found by porting upstream's test_workflow_ops.py cases (helper probe)
    "quant_min above quant_max": lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 2),
    "zero point out of range": lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 300, 0,
                                                                               255),
    "int64 per-channel zero points": lambda x: torch.fake_quantize_per_channel_affine(
        x, torch.ones(3), torch.zeros(3, dtype=torch.int64), 1, 0, 255),
    "2-D per-channel scales": lambda x: torch.fake_quantize_per_channel_affine(
        x, torch.ones(1, 3), torch.zeros(1, 3, dtype=torch.int32), 1, 0, 255),
    "fused ch_axis past the dims": lambda x: fused_observer(x, ch_axis=5),
    "fused quant_min above quant_max": lambda x: fused_observer(x, qmin=9, qmax=3),
    # values
    "negative scale (signed zeros)": lambda x: torch.fake_quantize_per_tensor_affine(
        x, -0.1, 0, -128, 127),
    "fused flags of 0.5 (read as 0)": lambda x: fused_observer(x, on=0.5),
}


@pytest.mark.parametrize("name", sorted(EDGE_CALLS))
def test_fake_quantize_edge_arguments_as_eager(name):
    call = EDGE_CALLS[name]
    x = torch.tensor([[0.123, -1.0, 2.0], [0.0, -0.04, 3.3]])
    try:
        expected = call(x)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e).splitlines()[0][:30].replace("`", ".")):
            kiln.compile(call)(x)
        return
    got = kiln.compile(call)(x)
    for e_, g in zip(torch.utils._pytree.tree_leaves(expected),
                     torch.utils._pytree.tree_leaves(got)):
        assert torch.equal(g, e_) and torch.equal(g.signbit(), e_.signbit()), (g, e_)


# --- QAT layers -------------------------------------------------------------------


def test_prepare_qat_swaps_selected_layers_and_keeps_the_original():
    model = mlp()
    qat = kiln.quant.prepare_qat(model, kiln.quant.static_int8(exclude=["4"]))
    assert [type(m).__name__ for m in qat] == ["QATLinear", "ReLU", "QATLinear", "GELU", "Linear"]
    assert qat.training and not model.training
    assert all(type(m) is not kiln.quant.QATLinear for m in model.modules())
    assert len(list(qat.parameters())) == len(list(model.parameters()))
    cnn = kiln.quant.prepare_qat(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)))
    assert [type(m).__name__ for m in cnn] == ["QATConv2d", "BatchNorm2d"]  # BN stays float


def torch_ao_reference(layer_weight, bias, batches, conv=None):
    """Outputs of a QAT layer over ``batches`` computed with torch.ao's
    observers and torch's fake-quantize ops: a moving-average activation
    range across batches, per-channel weight qparams of the weight as it is."""
    act = ao_observer.MovingAverageMinMaxObserver(dtype=torch.quint8, quant_min=0, quant_max=255,
                                                  qscheme=torch.per_tensor_affine)
    outputs = []
    for x in batches:
        act(x)
        scale, zero = act.calculate_qparams()
        xq = torch.fake_quantize_per_tensor_affine(x, scale, zero.to(torch.int32), 0, 255)
        wobs = ao_observer.PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, quant_min=-128,
                                                    quant_max=127,
                                                    qscheme=torch.per_channel_symmetric)
        wobs(layer_weight)
        wscale, wzero = wobs.calculate_qparams()
        wq = torch.fake_quantize_per_channel_affine(layer_weight, wscale, wzero.to(torch.int32), 0,
                                                    -128, 127)
        outputs.append(F.linear(xq, wq, bias) if conv is None else conv(xq, wq, bias))
    return outputs, act.calculate_qparams()


@pytest.mark.parametrize("compiled", [False, True])
def test_qat_linear_is_torch_ao_fake_quantization(compiled):
    torch.manual_seed(0)
    qat = kiln.quant.prepare_qat(nn.Sequential(nn.Linear(16, 8)))
    batches = [torch.randn(4, 16) * (1 + i) + i for i in range(4)]
    layer = qat[0]
    expected, (scale, zero) = torch_ao_reference(layer.linear.weight.detach(),
                                                 layer.linear.bias.detach(), batches)
    run = kiln.compile(qat) if compiled else qat
    with torch.no_grad():
        got = [run(x) for x in batches]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-6, atol=1e-6)
    assert layer.input_qparams("0") == (float(scale), int(zero))
    if compiled:
        assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)


def test_qat_conv_is_torch_ao_fake_quantization():
    torch.manual_seed(0)
    qat = kiln.quant.prepare_qat(nn.Sequential(nn.Conv2d(3, 6, 3, stride=2, padding=1,
                                                         groups=3)))
    conv = qat[0].linear
    batches = [torch.randn(2, 3, 9, 9) + i for i in range(3)]
    expected, _ = torch_ao_reference(conv.weight.detach(), conv.bias.detach(), batches,
                                     conv=lambda x, w, b: F.conv2d(x, w, b, 2, 1, 1, 3))
    run = kiln.compile(qat)
    with torch.no_grad():
        for x, e in zip(batches, expected):
            torch.testing.assert_close(run(x), e, rtol=1e-5, atol=1e-5)
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)


def qat_cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 4 * 4, 10))


def train_steps(model, batches, compiled):
    """SGD steps over ``batches``; (losses, the model)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    forward = kiln.compile(model) if compiled else model
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, model


def test_compiled_qat_training_step_matches_eager():
    torch.manual_seed(1)
    batches = [(torch.randn(8, 3, 8, 8), torch.randint(0, 10, (8,))) for _ in range(4)]
    base = qat_cnn()
    # One step: parameters, observer ranges and BatchNorm statistics.
    _, eager = train_steps(kiln.quant.prepare_qat(base), batches[:1], compiled=False)
    _, trained = train_steps(kiln.quant.prepare_qat(base), batches[:1], compiled=True)
    s = assert_compiled(graphs=1, fallback_ops=0, eager_calls=0, eager_backwards=0)
    assert s["compiled_backwards"] == 1, s
    expected = dict(eager.state_dict())
    for name, value in trained.state_dict().items():
        torch.testing.assert_close(value, expected[name], rtol=1e-5, atol=1e-6, msg=name)
    assert float(trained[0].activation_post_process.min_val) < 0
    # Four steps: the loss curve. (A weight whose largest value lands within
    # an ulp of a rounding tie is clipped or not depending on float rounding
    # upstream, so later parameters differ by such steps, in eager too.)
    eager_losses, _ = train_steps(kiln.quant.prepare_qat(base), batches, compiled=False)
    losses, _ = train_steps(kiln.quant.prepare_qat(base), batches, compiled=True)
    torch.testing.assert_close(torch.stack(losses), torch.stack(eager_losses), rtol=1e-3,
                               atol=1e-5)


def test_frozen_observer_keeps_its_range_compiled():
    qat = kiln.quant.prepare_qat(mlp())
    run = kiln.compile(qat)
    run(torch.randn(4, 64))
    first = qat[0].activation_post_process
    low = first.min_val.clone()
    for m in qat.modules():
        if isinstance(m, kiln.quant.QATLinear):
            m.activation_post_process.enabled = False
    x = torch.randn(4, 64) * 10  # a wider range that a live observer would record
    torch.testing.assert_close(run(x), qat(x))
    assert torch.equal(first.min_val, low)


# --- conversion -------------------------------------------------------------------


def test_convert_after_qat_gives_the_int8_layers_of_the_fake_quantization():
    torch.manual_seed(0)
    batches = [(torch.randn(8, 3, 8, 8), torch.randint(0, 10, (8,))) for _ in range(3)]
    _, trained = train_steps(kiln.quant.prepare_qat(qat_cnn()), batches, compiled=True)
    trained.eval()
    qat_conv = trained[3]
    x = torch.randn(4, 3, 8, 8)
    with torch.no_grad():
        simulated = trained(x)
        fake_weight = kiln.quant._qat.fake_quantize_weight(qat_conv.linear.weight)
    # kiln.compile trains a QAT model: it does not convert it.
    assert isinstance(qat_conv, kiln.quant.QATConv2d)
    int8 = kiln.quant.convert(trained)
    assert [type(m).__name__ for m in int8][::3] == ["StaticQuantizedConv2d",
                                                     "StaticQuantizedConv2d",
                                                     "StaticQuantizedLinear"]
    conv = int8[3]
    torch.testing.assert_close(conv.qweight.to(torch.float32) * conv.weight_scale, fake_weight,
                               rtol=0, atol=0)
    assert (conv.input_scale, conv.input_zero_point) == qat_conv.input_qparams("3")
    kiln.reset()
    fast = kiln.compile(int8)
    with torch.no_grad():
        got = fast(x)
    assert_compiled(graphs=1, eager_calls=0)
    # The int8 kernels sum exactly in int32 where the fake-quantized model
    # sums float products: equal up to float rounding.
    torch.testing.assert_close(got, simulated, rtol=1e-4, atol=1e-4)


def test_preparing_twice_is_a_clear_error():
    qat = kiln.quant.prepare_qat(mlp())
    with pytest.raises(ValueError, match="already prepared"):
        kiln.quant.prepare_qat(qat)
    with pytest.raises(ValueError, match="already prepared"):
        kiln.quant.prepare(qat, kiln.quant.static_int8())


def test_convert_before_training_is_a_clear_error():
    qat = kiln.quant.prepare_qat(mlp())
    with pytest.raises(ValueError, match="'0' saw no training batch"):
        kiln.quant.convert(qat)


# --- accuracy on real data --------------------------------------------------------


def test_digits_cnn_qat_within_one_point_of_fp32():
    model, xtr, xte, yte = train_digits_cnn()
    ytr = digits()[1]
    fp32 = accuracy(model, xte, yte)
    qat = kiln.quant.prepare_qat(model)
    batches = list(zip(xtr.split(200), ytr.split(200)))
    opt = torch.optim.Adam(qat.parameters(), lr=1e-3)
    step = kiln.compile(qat)
    for x, y in batches * 2:
        opt.zero_grad()
        F.cross_entropy(step(x), y).backward()
        opt.step()
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0, eager_backwards=0)
    int8 = kiln.quant.convert(qat.eval())
    quantized = accuracy(kiln.compile(int8), xte, yte)
    assert abs(quantized - fp32) <= 1.0, (fp32, quantized)


# --- torch.ao's own QAT modules ---------------------------------------------------


class AoNet(nn.Module):
    """A model for torch.ao's eager-mode QAT flow."""

    def __init__(self):
        super().__init__()
        self.quant, self.dequant = (torch.ao.quantization.QuantStub(),
                                    torch.ao.quantization.DeQuantStub())
        self.fc1, self.relu, self.fc2 = nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)

    def forward(self, x):
        return self.dequant(self.fc2(self.relu(self.fc1(self.quant(x)))))


def torch_ao_qat_model():
    model = AoNet().train()
    model.qconfig = torch.ao.quantization.get_default_qat_qconfig("x86")
    with warnings.catch_warnings():  # torch.ao's deprecation and reduce_range warnings
        warnings.simplefilter("ignore")
        torch.ao.quantization.prepare_qat(model, inplace=True)
    return model


def test_fallback_refuses_torch_ao_fused_observer():
    """torch.fused_moving_avg_obs_fake_quant writes its running min/max,
    scale and zero point (``Tensor(a!)``) without bumping their version
    counters on meta tensors: the per-op fallback admitted it and ran it on
    copies of those buffers, so they never updated (outputs and gradients
    wrong from the second step). The probe reads the schema now."""
    meta = [torch.empty(8, 16, device="meta"), torch.ones(1, dtype=torch.uint8, device="meta"),
            torch.ones(1, dtype=torch.uint8, device="meta"), torch.empty((), device="meta"),
            torch.empty((), device="meta"), torch.empty(1, device="meta"),
            torch.empty(1, dtype=torch.int32, device="meta")]
    refusal = kiln._fallback.probe(torch.fused_moving_avg_obs_fake_quant,
                                   (*meta, 0.01, 0, 127, -1, False, False), {}, meta)
    assert isinstance(refusal, kiln._fallback.Refusal), refusal
    assert "it mutates an argument" in refusal.reason


@pytest.mark.parametrize("warm_up", [False, True])
def test_torch_ao_qat_model_compiled_matches_eager(warm_up):
    """torch.ao's FakeQuantize modules (``torch.fused_moving_avg_obs_fake_quant``,
    lowered by kiln/_decompositions.py: bit-equal outputs, gradients and
    observer state). Its per-channel weight observers size their buffers in
    the first call: compiled from the start, that call breaks there (and the
    breaks stay); after one eager call the step is one graph."""
    model = torch_ao_qat_model()
    if warm_up:
        model(torch.randn(8, 16))
    twin = copy.deepcopy(model)
    run = kiln.compile(twin)
    for i in range(3):
        x = torch.randn(8, 16) * (i + 1)
        expected, got = model(x), run(x)
        expected.sum().backward()
        got.sum().backward()
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        torch.testing.assert_close(twin.fc1.weight.grad, model.fc1.weight.grad, rtol=0, atol=0)
    expected = model.state_dict()
    for name, value in twin.state_dict().items():
        torch.testing.assert_close(value, expected[name], rtol=0, atol=0, msg=name)
    if warm_up:
        assert_compiled(graphs=1, eager_calls=0, fallback_ops=0, eager_backwards=0)
    # Observers switched off through their tensor flags: the same graph.
    model.apply(torch.ao.quantization.disable_observer)
    twin.apply(torch.ao.quantization.disable_observer)
    x = torch.randn(8, 16) * 9
    torch.testing.assert_close(run(x), model(x), rtol=0, atol=0)


DYNAMIC_CONFIGS = {"weight_only": kiln.quant.weight_only_int8,
                   "per_token": kiln.quant.dynamic_int8,
                   "per_tensor": lambda: kiln.quant.dynamic_int8(activations="per_tensor")}


@pytest.mark.parametrize("config", list(DYNAMIC_CONFIGS))
def test_dynamic_and_weight_only_qat_train_the_int8_layers_they_convert_to(config):
    """``prepare_qat`` with ``dynamic_int8`` / ``weight_only_int8``: the
    forward computes exactly what the converted ``QuantizedLinear`` computes
    (kiln's symmetric int8 weights and activations); gradients pass
    straight through the fake quantization."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    qat = kiln.quant.prepare_qat(model, DYNAMIC_CONFIGS[config]())
    layer = qat[0]
    assert isinstance(layer, kiln.quant.QATDynamicLinear)
    x = torch.randn(8, 16) * 3
    qat(x).square().sum().backward()
    # Straight through: the weight gets the gradient of a linear layer whose
    # weight is the fake-quantized one.
    w = kiln.quant._qat._symmetric_fake_quantize(layer.linear.weight.detach(), 1).requires_grad_()
    xq = x if config == "weight_only" else (
        kiln.quant._qat._symmetric_fake_quantize(x, -1) if config == "per_token"
        else kiln.quant._qat._symmetric_fake_quantize(x.reshape(1, -1), 1).reshape(x.shape))
    ref = qat[2](torch.relu(F.linear(xq, w, layer.linear.bias.detach()))).square().sum()
    ref.backward()
    torch.testing.assert_close(layer.linear.weight.grad, w.grad)
    converted = kiln.quant.convert(copy.deepcopy(qat).eval())
    assert isinstance(converted[0], kiln.quant.QuantizedLinear)
    with torch.no_grad():
        torch.testing.assert_close(converted(x), qat.eval()(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("config", ["weight_only", "per_token"])
def test_compiled_dynamic_qat_step_matches_eager(config):
    torch.manual_seed(2)
    base = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
    batches = [(torch.randn(8, 16), torch.randint(0, 10, (8,))) for _ in range(3)]
    _, eager = train_steps(kiln.quant.prepare_qat(base, DYNAMIC_CONFIGS[config]()), batches,
                           compiled=False)
    _, trained = train_steps(kiln.quant.prepare_qat(base, DYNAMIC_CONFIGS[config]()), batches,
                             compiled=True)
    s = assert_compiled(graphs=1, fallback_ops=0, eager_calls=0, eager_backwards=0)
    assert s["compiled_backwards"] == 1 and s["backward_calls"] == 3, s
    expected = dict(eager.state_dict())
    for name, value in trained.state_dict().items():
        torch.testing.assert_close(value, expected[name], rtol=1e-5, atol=1e-6, msg=name)


def test_int4_qat_trains_the_int4_layer_it_converts_to():
    """``prepare_qat`` with ``weight_only_int4``: the forward computes
    exactly what the converted ``QuantizedLinearInt4`` computes (one
    symmetric scale per output channel and group of 32 inputs, values in
    [-7, 7]); the weight's gradient passes straight through."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))
    with torch.no_grad():
        model[0].weight[3, :32] *= 40.0  # one group with a much larger scale
    qat = kiln.quant.prepare_qat(model, kiln.quant.weight_only_int4(group_size=32,
                                                                     exclude=("2",)))
    layer = qat[0]
    assert isinstance(layer, kiln.quant.QATInt4Linear)
    assert type(qat[2]) is nn.Linear  # excluded by name
    x = torch.randn(8, 64) * 3
    qat(x).square().sum().backward()
    # The fake-quantized weight is the converted layer's dequantized weight.
    converted = kiln.quant.convert(copy.deepcopy(qat).eval())
    assert isinstance(converted[0], kiln.quant.QuantizedLinearInt4)
    q = converted[0]
    values = kiln.quant._ops.unpack_int4(q.qweight).to(torch.float32)
    assert values.abs().max() <= 7
    dequantized = (values.reshape(32, 2, 32) * q.weight_scale.unsqueeze(-1)).reshape(32, 64)
    w = dequantized.clone().requires_grad_()
    ref = qat[2](torch.relu(F.linear(x, w, layer.linear.bias.detach()))).square().sum()
    ref.backward()
    torch.testing.assert_close(layer.linear.weight.grad, w.grad)
    assert not torch.equal(dequantized, layer.linear.weight.detach())  # it did quantize
    with torch.no_grad():
        torch.testing.assert_close(converted(x), qat.eval()(x), rtol=1e-5, atol=1e-5)


def test_compiled_int4_qat_step_matches_eager():
    torch.manual_seed(3)
    base = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    batches = [(torch.randn(8, 64), torch.randint(0, 10, (8,))) for _ in range(3)]
    config = kiln.quant.weight_only_int4(group_size=32)
    _, eager = train_steps(kiln.quant.prepare_qat(base, config), batches, compiled=False)
    _, trained = train_steps(kiln.quant.prepare_qat(base, config), batches, compiled=True)
    s = assert_compiled(graphs=1, fallback_ops=0, eager_calls=0, eager_backwards=0)
    assert s["compiled_backwards"] == 1 and s["backward_calls"] == 3, s
    expected = dict(eager.state_dict())
    for name, value in trained.state_dict().items():
        torch.testing.assert_close(value, expected[name], rtol=1e-5, atol=1e-6, msg=name)
