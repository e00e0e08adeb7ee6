# SPDX-License-Identifier: Apache-2.0
"""kiln.quant.static_int8: calibration, conversion, compiled int8 Linear and Conv2d.

The flow under test is ``prepare`` → calibration batches through the
prepared model → ``kiln.compile``. Scales and zero points are checked
against torch.ao's own observers and quantize ops on the same data; compiled
results against the eager reference (kiln/quant/_ops.py, built from
``torch.ops.quantized_decomposed`` q/dq) and, for accuracy, against the fp32
model on scikit-learn's bundled digits (within 1 point).
"""
import ctypes
import functools
import importlib.util

import pytest
import torch
from torch import nn
from torch.ao.quantization import observer as ao_observer

import kiln
from conftest import assert_compiled
from test_quant import accuracy, digits, mlp, sqnr, train_digits_mlp

qd = torch.ops.quantized_decomposed

_LIB = ctypes.CDLL(kiln._C.__file__)
_LIB.kilnDnnlQConvReferenceCalls.restype = ctypes.c_int64
_LIB.kilnDnnlQConvRefuse.argtypes = [ctypes.c_int64]
_LIB.kilnDnnlQConvU8Outputs.restype = ctypes.c_int64


def calibrate(prepared, batches):
    with torch.no_grad():
        for x in batches:
            prepared(x)
    return prepared


def compiled_matches_eager(prepared, x, tol=1e-5):
    fast = kiln.compile(prepared)
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(fast(x), prepared(x), rtol=tol, atol=tol)
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)
    return fast


def pt2e_modules():
    """torchao's PT2E flow and X86InductorQuantizer (torch 2.11 has them
    only in torchao, pinned by tools/bootstrap.sh). Skips only when torchao
    is not installed at all; an installed torchao that fails to import
    fails the test."""
    if importlib.util.find_spec("torchao") is None:
        pytest.skip("torchao is not installed (tools/bootstrap.sh pins torchao==0.18.0; "
                    "torch 2.11 has PT2E's X86InductorQuantizer only there)")
    from torchao.quantization.pt2e import quantize_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer
    return quantize_pt2e, x86_inductor_quantizer


def small_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1, groups=32),  # depthwise
        nn.Conv2d(32, 24, 1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(24, 10)).eval()


# --- Linear ---------------------------------------------------------------------


@pytest.mark.parametrize("observer", ["minmax", "histogram"])
def test_static_linear_compiles_to_one_graph(observer):
    prepared = kiln.quant.prepare(mlp(), kiln.quant.static_int8(observer=observer))
    assert [type(m).__name__ for m in prepared][::2] == ["ObservedLinear"] * 3
    calibrate(prepared, [torch.randn(32, 64) for _ in range(4)])
    compiled_matches_eager(prepared, torch.randn(16, 64))
    # kiln.compile converted the prepared model in place.
    assert [type(m).__name__ for m in prepared][::2] == ["StaticQuantizedLinear"] * 3


def test_static_qparams_are_torch_ao_observers_and_quantize_ops():
    model = mlp()
    batches = [torch.randn(32, 64) * 3 + 1 for _ in range(3)]
    prepared = kiln.quant.convert(calibrate(kiln.quant.prepare(model, kiln.quant.static_int8()),
                                            batches))
    obs = ao_observer.MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
    for x in batches:
        obs(x)
    scale, zero = obs.calculate_qparams()
    layer = prepared[0]
    assert layer.input_scale == float(scale) and layer.input_zero_point == int(zero)
    wobs = ao_observer.PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8,
                                                qscheme=torch.per_channel_symmetric)
    wobs(model[0].weight.detach())
    wscale, wzero = wobs.calculate_qparams()
    qw = torch.quantize_per_channel(model[0].weight.detach(), wscale, wzero, 0, torch.qint8)
    assert torch.equal(layer.int8_weight(), qw.int_repr())
    assert torch.equal(layer.weight_scale.reshape(-1), wscale.float())
    # The compiled layer against torch's reference q/dq + float linear.
    x = torch.randn(16, 64) * 3 + 1
    with torch.no_grad():
        got = kiln.compile(nn.Sequential(layer))(x)
    xd = qd.dequantize_per_tensor(qd.quantize_per_tensor(x, float(scale), int(zero), 0, 255,
                                                         torch.uint8),
                                  float(scale), int(zero), 0, 255, torch.uint8)
    ref = nn.functional.linear(xd, qw.dequantize(), model[0].bias.detach())
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)


def test_percentile_observer_clips_outliers_with_torch_ao_qparams():
    """observer="percentile": the range is the 0.01st..99.99th percentile of
    the calibration values (the bin edges around torch.quantile's order
    statistics for one batch; later batches rebin torch.ao's histogram, approximately), and
    scale / zero point are exactly torch.ao's qparams of that range."""
    torch.manual_seed(5)
    batch = torch.randn(256, 64)
    batch[3, 7], batch[100, 0] = 50.0, -9.0  # outliers
    config = kiln.quant.static_int8(observer="percentile", percentile=99.99)
    prepared = calibrate(kiln.quant.prepare(mlp(), config), [batch])
    obs = prepared[0].activation_post_process
    low, high = obs.percentile_range()
    flat = batch.flatten()  # the order statistics the cumulative counts reach:
    exact = (torch.quantile(flat, 0.0001, interpolation="lower"),
             torch.quantile(flat, 0.9999, interpolation="higher"))
    width = float(obs.max_val - obs.min_val) / obs.bins
    assert 0 <= float(exact[0] - low) <= width and 0 <= float(high - exact[1]) <= width
    assert float(high) < 10 and float(low) > -8.5  # both outliers clipped
    ref = ao_observer.MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
    ref(torch.stack([low, high]))
    assert prepared[0].input_qparams("0") == tuple(
        f(v) for f, v in zip((float, int), ref.calculate_qparams()))
    calibrate(prepared, [torch.randn(64, 64) * 2 for _ in range(3)])  # rebinned, still clipped
    assert float(obs.percentile_range()[1]) < 12
    compiled_matches_eager(prepared, torch.randn(16, 64))
    assert prepared[0].input_scale < 25 / 255  # minmax would take 59 / 255


def test_calibration_outside_the_range_clamps_like_torch():
    prepared = kiln.quant.prepare(mlp(), kiln.quant.static_int8())
    calibrate(prepared, [torch.rand(8, 64)])  # [0, 1): zero point 0
    x = torch.randn(8, 64) * 4  # negatives clamp to 0, large values to 255
    compiled_matches_eager(prepared, x)


def test_uncalibrated_model_is_a_clear_error():
    prepared = kiln.quant.prepare(mlp(), kiln.quant.static_int8())
    with pytest.raises(ValueError, match="'0' saw no calibration data"):
        kiln.compile(prepared)


def test_ir_is_static_q_dq_folded_into_the_int8_gemm(tmp_path):
    prepared = calibrate(kiln.quant.prepare(mlp(), kiln.quant.static_int8()),
                         [torch.randn(8, 64)])
    with kiln.config.patch(debug_dir=str(tmp_path)):
        kiln.compile(prepared)(torch.randn(4, 64))
    (folder,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    captured = (folder / "captured.mlir").read_text()
    assert captured.count("kiln.quantize_static") == 3
    dumps = sorted(p for p in folder.iterdir() if p.name[:2].isdigit() and p.suffix == ".mlir")
    folded = next(p.read_text() for p in dumps if "fold-quant" in p.name)
    assert folded.count('activations = "static"') == 3 and "quantize_static" not in folded


# --- Conv2d ---------------------------------------------------------------------


def test_static_conv_cnn_compiles_to_oneDNN_int8_calls():
    """Consecutive int8 convolutions pass u8 activations (the first three
    requantize into the next one's input: its scale and zero point), and the
    result is still eager's quantized_decomposed one."""
    torch.manual_seed(0)
    model = small_cnn()
    prepared = kiln.quant.prepare(model, kiln.quant.static_int8())
    assert sum(type(m).__name__ == "ObservedConv2d" for m in prepared) == 4
    calibrate(prepared, [torch.randn(4, 3, 16, 16) for _ in range(3)])
    x = torch.randn(2, 3, 16, 16)
    before = _LIB.kilnDnnlQConvU8Outputs()
    compiled_matches_eager(prepared, x, tol=1e-4)
    if before >= 0:
        assert _LIB.kilnDnnlQConvU8Outputs() - before == 3 * 2  # 3 convs, 2 calls
    with torch.no_grad():
        assert sqnr(model(x), prepared(x)) > 20


@pytest.mark.parametrize("act", [nn.Identity, nn.ReLU, nn.SiLU])
def test_u8_activations_between_convs_match_reference(act):
    """The first convolution requantizes into the second's input (its zero
    point nonzero unless after a ReLU): eager's quantize_per_tensor values,
    so the result matches the quantized_decomposed reference."""
    torch.manual_seed(7)
    model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), act(), nn.Conv2d(8, 6, 3, stride=2),
                          nn.Flatten()).eval()
    prepared = calibrate(kiln.quant.prepare(model, kiln.quant.static_int8()),
                         [torch.randn(2, 4, 9, 9) for _ in range(2)])
    before = _LIB.kilnDnnlQConvU8Outputs()
    compiled_matches_eager(prepared, torch.randn(2, 4, 9, 9), tol=1e-4)
    assert (prepared[2].input_zero_point == 0) == (act is nn.ReLU)
    if before >= 0:
        assert _LIB.kilnDnnlQConvU8Outputs() - before == 2  # 2 calls


def test_static_conv_before_max_pool_matches_reference():
    """An int8 convolution whose result only a pooling reads (a stem) is
    handed over NCHW (oneDNN writes NHWC, the shim reorders): still eager's
    quantized_decomposed result."""
    torch.manual_seed(6)
    model = nn.Sequential(nn.Conv2d(3, 16, 7, stride=2, padding=3), nn.BatchNorm2d(16),
                          nn.ReLU(), nn.MaxPool2d(3, 2, 1), nn.Conv2d(16, 8, 1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten()).eval()
    prepared = calibrate(kiln.quant.prepare(model, kiln.quant.static_int8()),
                         [torch.randn(2, 3, 32, 32) for _ in range(2)])
    compiled_matches_eager(prepared, torch.randn(2, 3, 32, 32), tol=1e-4)


def test_static_conv_layer_against_torch_reference_ops():
    torch.manual_seed(1)
    conv = nn.Conv2d(8, 16, 3, stride=2, padding=1).eval()
    x = torch.randn(2, 8, 9, 9)
    prepared = calibrate(kiln.quant.prepare(nn.Sequential(conv), kiln.quant.static_int8()), [x])
    with torch.no_grad():
        got = kiln.compile(prepared)(x)
    layer = prepared[0]
    obs = ao_observer.MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
    obs(x)
    scale, zero = obs.calculate_qparams()
    assert (layer.input_scale, layer.input_zero_point) == (float(scale), int(zero))
    xd = qd.dequantize_per_tensor(qd.quantize_per_tensor(x, float(scale), int(zero), 0, 255,
                                                         torch.uint8),
                                  float(scale), int(zero), 0, 255, torch.uint8)
    wd = layer.qweight.float() * layer.weight_scale
    ref = nn.functional.conv2d(xd, wd, conv.bias.detach(), 2, 1)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)


def test_batchnorm_folded_before_weight_quantization():
    """``prepare(static_int8())`` folds an eval BatchNorm into the conv
    before quantizing its weight per channel, as PT2E does (torch.fx finds
    the pairs): kiln's result is torch's reference on the folded, then
    quantized weight (negative BatchNorm gains included: folding after the
    quantization would differ where a channel's largest weight meets one)."""
    torch.manual_seed(3)
    conv, bn = nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16)
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.2, 3.0)
    bn.weight.data.uniform_(-2, 2)
    bn.bias.data.uniform_(-1, 1)
    model = nn.Sequential(conv, bn).eval()
    x = torch.randn(2, 8, 9, 9)
    prepared = calibrate(kiln.quant.prepare(model, kiln.quant.static_int8()), [x])
    assert isinstance(prepared[1], nn.Identity)
    with torch.no_grad():
        got = kiln.compile(prepared)(x)
        fused = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
    values, wscale = kiln.quant._static.quantize_weight_static(fused.weight)
    s, z = prepared[0].input_scale, prepared[0].input_zero_point
    xd = qd.dequantize_per_tensor(qd.quantize_per_tensor(x, s, z, 0, 255, torch.uint8), s, z, 0,
                                  255, torch.uint8)
    want = nn.functional.conv2d(xd, values.float() * wscale, fused.bias.detach(), 1, 1)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)


class _Branchy(nn.Module):
    """Data-dependent control flow: torch.fx cannot trace it."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)

    def forward(self, x):
        y = self.bn(self.conv(x))
        return y if x.sum() > 0 else -y


def test_batchnorm_kept_when_fx_cannot_trace(capsys):
    """An untraceable model keeps its BatchNorm (the compiler folds it into
    the int8 call's output scales) and KILN_LOGS=fallbacks says why."""
    model = _Branchy().eval()
    with kiln.config.patch(logs=frozenset({"fallbacks"})):
        prepared = kiln.quant.prepare(model, kiln.quant.static_int8())
    assert isinstance(prepared.bn, nn.BatchNorm2d)
    assert "BatchNorms not folded before weight quantization" in capsys.readouterr().err
    x = torch.randn(2, 3, 8, 8).abs()
    calibrate(prepared, [x])
    with torch.no_grad():
        torch.testing.assert_close(kiln.compile(prepared)(x), prepared(x), rtol=1e-4, atol=1e-4)


def test_kept_batchnorm_with_zero_gain_channels():
    """A BatchNorm gain of 0 makes that channel's output scale 0: its shift
    (the BatchNorm's bias) cannot ride oneDNN's bias (added before the
    scales, shift / 0); the call keeps the shift as a post-op and the
    channel equals its bias."""
    torch.manual_seed(0)
    model = _Branchy().eval()
    with torch.no_grad():
        model.bn.weight[:3] = 0.0
        model.bn.bias.uniform_(-1, 1)
        model.bn.running_mean.uniform_(-0.5, 0.5)
    prepared = kiln.quant.prepare(model, kiln.quant.static_int8())
    assert isinstance(prepared.bn, nn.BatchNorm2d)
    x = torch.randn(2, 3, 8, 8).abs()
    calibrate(prepared, [x])
    with torch.no_grad():
        got = kiln.compile(prepared)(x)
        torch.testing.assert_close(got, prepared(x), rtol=1e-4, atol=1e-4)
    assert torch.isfinite(got).all()
    assert torch.equal(got[:, :3], model.bn.bias[:3].reshape(1, 3, 1, 1).expand(2, 3, 6, 6))


@pytest.mark.skipif(_LIB.kilnDnnlQConvReferenceCalls() < 0, reason="built without oneDNN")
def test_int8_conv_oneDNN_refuses_runs_reference_loops_and_logs(capfd):
    """A shape oneDNN cannot make an int8 primitive for (forced by the test
    hook) runs kiln's reference loops: eager's quantized_decomposed result,
    one fallbacks log line naming the shape, never an abort. The convolutions
    chain u8 activations (ReLU and SiLU before the requantization)."""
    torch.manual_seed(4)
    model = nn.Sequential(
        nn.Conv2d(6, 12, 3, stride=2, padding=(1, 2), groups=3), nn.ReLU(),
        nn.Conv2d(12, 10, (1, 3), dilation=2), nn.SiLU(),
        nn.Conv2d(10, 8, 1), nn.Flatten(), nn.Linear(8 * 6 * 3, 5)).eval()
    x = torch.randn(2, 6, 11, 12)
    prepared = calibrate(kiln.quant.prepare(model, kiln.quant.static_int8()),
                         [torch.randn(2, 6, 11, 12) for _ in range(2)])
    before, u8_before = _LIB.kilnDnnlQConvReferenceCalls(), _LIB.kilnDnnlQConvU8Outputs()
    _LIB.kilnDnnlQConvRefuse(1)
    try:
        with kiln.config.patch(logs=frozenset({"fallbacks"})):
            compiled_matches_eager(prepared, x, tol=1e-4)
    finally:
        _LIB.kilnDnnlQConvRefuse(0)
    assert _LIB.kilnDnnlQConvReferenceCalls() - before == 3 * 2  # 3 convs, 2 calls
    assert _LIB.kilnDnnlQConvU8Outputs() - u8_before == 2 * 2
    _, err = capfd.readouterr()
    assert err.count("[kiln:fallbacks] oneDNN int8 convolution") == 3, err
    assert ("oneDNN int8 convolution [2,6,11,12] x [12,2,3,3] stride 2x2 dilation 1x1 "
            "groups 3 failed: refused by kilnDnnlQConvRefuse (test hook); this convolution "
            "runs kiln's reference int8 loops (correct, slow)") in err, err


# --- accuracy on real data --------------------------------------------------------


@pytest.mark.parametrize("observer", ["minmax", "histogram", "percentile"])
def test_digits_mlp_static_within_one_point_of_fp32(observer):
    model, xte, yte = train_digits_mlp()
    xtr = digits()[0]
    prepared = calibrate(kiln.quant.prepare(model, kiln.quant.static_int8(observer=observer)),
                         xtr[:512].split(128))
    fp32, quantized = accuracy(model, xte, yte), accuracy(kiln.compile(prepared), xte, yte)
    assert abs(quantized - fp32) <= 1.0, (fp32, quantized)
    assert_compiled(graphs=1, eager_calls=0)


@functools.lru_cache(maxsize=1)
def train_digits_cnn():
    """A two-conv CNN on the 8x8 digits (a few seconds on one thread)."""
    xtr, ytr, xte, yte = digits()
    xtr, xte = xtr.reshape(-1, 1, 8, 8), xte.reshape(-1, 1, 8, 8)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Flatten(), nn.Linear(32 * 16, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        opt.zero_grad()
        nn.functional.cross_entropy(model(xtr), ytr).backward()
        opt.step()
    torch.set_num_threads(threads)
    return model.eval(), xtr, xte, yte


@pytest.mark.parametrize("observer", ["minmax", "percentile"])
def test_digits_cnn_static_within_one_point_of_fp32(observer):
    model, xtr, xte, yte = train_digits_cnn()
    fp32 = accuracy(model, xte, yte)
    assert fp32 > 90, fp32
    prepared = calibrate(kiln.quant.prepare(model, kiln.quant.static_int8(observer=observer)),
                         xtr[:512].split(128))
    quantized = accuracy(kiln.compile(prepared), xte, yte)
    assert abs(quantized - fp32) <= 1.0, (fp32, quantized)
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)


def test_export_of_static_layers_is_a_clear_error(tmp_path):
    prepared = calibrate(kiln.quant.prepare(small_cnn(), kiln.quant.static_int8()),
                         [torch.randn(2, 3, 8, 8)])
    kiln.quant.convert(prepared)
    with pytest.raises(kiln.ExportError, match="kiln.quant layers"):
        kiln.export(prepared, (torch.randn(2, 3, 8, 8),), str(tmp_path / "q.kiln"))


def test_histogram_qparams_equal_pt2e_x86_inductor_quantizer():
    """observer="histogram" picks exactly the input scales and zero points of
    PT2E's X86InductorQuantizer (torchao's copy)."""
    pt2e, xiq = pt2e_modules()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3)).eval()
    batches = [torch.randn(2, 3, 10, 10) for _ in range(3)]
    quantizer = xiq.X86InductorQuantizer().set_global(
        xiq.get_default_x86_inductor_quantization_config())
    # strict export: the non-strict default leaves the quantizer nothing to match.
    observed = pt2e.prepare_pt2e(torch.export.export(model, (batches[0],), strict=True).module(),
                                 quantizer)
    calibrate(observed, batches)
    converted = pt2e.convert_pt2e(observed, fold_quantize=False)
    theirs = [tuple(n.args[1:3]) for n in converted.graph.nodes
              if n.target == qd.quantize_per_tensor.default]
    prepared = kiln.quant.prepare(model, kiln.quant.static_int8(observer="histogram"))
    calibrate(prepared, batches)
    with torch.no_grad():
        got = kiln.compile(prepared)(batches[0])
        want = converted(batches[0])
    ours = [(m.input_scale, m.input_zero_point) for m in prepared if hasattr(m, "input_scale")]
    assert ours == theirs[:len(ours)] and len(ours) == 2
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)
