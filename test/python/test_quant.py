# SPDX-License-Identifier: Apache-2.0
"""kiln.quant: int8 configs, prepare, the compiled int8 GEMM path, accuracy.

Compiled results are compared with the eager reference of the same
arithmetic (kiln/quant/_ops.py: identical scales and rounding, so they agree
to float rounding), with torch's own quantized kernels on the same int8
weights (``torch.ops.quantized.linear_dynamic``: a wrong scale or zero point
would show as a large error), and with the fp32 model on scikit-learn's
bundled digits (accuracy within 1 point).
"""
import copy
import functools
import importlib.util

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_compiled

ACTS = ["per_token", "per_tensor"]


def mlp(k=64, hidden=128, out=10, bias=True):
    return nn.Sequential(nn.Linear(k, hidden, bias=bias), nn.ReLU(), nn.Linear(hidden, hidden),
                         nn.GELU(), nn.Linear(hidden, out)).eval()


def sqnr(ref, x):
    return float(10 * torch.log10(ref.pow(2).sum() / (ref - x).pow(2).sum()))


def compiled_matches_eager(prepared, *inputs):
    fast = kiln.compile(prepared)
    with torch.no_grad():
        for _ in range(2):
            expected, got = prepared(*inputs), fast(*inputs)
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)
    return got


# --- API ---------------------------------------------------------------------


def test_prepare_swaps_selected_linears_and_keeps_the_original():
    model = mlp()
    prepared = kiln.quant.prepare(model, kiln.quant.dynamic_int8())
    kinds = [type(m).__name__ for m in prepared]
    assert kinds == ["QuantizedLinear", "ReLU", "QuantizedLinear", "GELU", "QuantizedLinear"]
    assert all(isinstance(m, nn.Linear) for m in (model[0], model[2], model[4]))
    q = prepared[0]
    assert q.qweight.dtype == torch.int32 and q.int8_weight().shape == (128, 64)
    # Per-channel symmetric: each row's largest magnitude maps to 127.
    assert torch.equal(q.int8_weight().abs().amax(dim=1), torch.full((128,), 127, dtype=torch.int8))
    torch.testing.assert_close(q.int8_weight().float() * q.weight_scale, model[0].weight,
                               atol=float(q.weight_scale.max()) / 2 + 1e-7, rtol=0)


def test_name_filters_select_modules():
    model = mlp()
    only = kiln.quant.prepare(model, kiln.quant.dynamic_int8(include="2"))
    assert [type(m).__name__ for m in only][::2] == ["Linear", "QuantizedLinear", "Linear"]
    skip = kiln.quant.prepare(model, kiln.quant.weight_only_int8(exclude=["4"]))
    assert [type(m).__name__ for m in skip][::2] == ["QuantizedLinear", "QuantizedLinear", "Linear"]
    assert skip[0].activations == "none"


@pytest.mark.parametrize("call, message", [
    (lambda: kiln.quant.dynamic_int8(dtype=torch.float16), "dtype torch.float16 is not supported"),
    (lambda: kiln.quant.dynamic_int8(activations="per_channel"), "activations='per_channel'"),
    (lambda: kiln.quant.dynamic_int8(module_types=(nn.LSTM,)), "torch.nn.modules.rnn.LSTM"),
    (lambda: kiln.quant.static_int8(observer="kl"), "observer='kl'"),
    (lambda: kiln.quant.static_int8(observer="percentile", percentile=20), "percentile=20"),
    (lambda: kiln.quant.static_int8(dtype=torch.qint32), "activation dtype torch.qint32"),
    (lambda: kiln.quant.static_int8(module_types=(nn.LSTM,)),
     "only torch.nn.Linear and torch.nn.Conv2d"),
    (lambda: kiln.quant.dynamic_int8(module_types=(nn.Conv2d,)), "only torch.nn.Linear)"),
    (lambda: kiln.quant.prepare(nn.Sequential(nn.Conv2d(3, 4, 3, padding_mode="reflect")),
                                kiln.quant.static_int8()), "padding_mode='reflect'"),
    (lambda: kiln.quant.weight_only_int4(group_size=40), "group_size=40"),
    (lambda: kiln.quant.fp8(activations="none"), "kiln.quant.fp8: activations='none'"),
    (lambda: kiln.quant.prepare_qat(mlp(), kiln.quant.fp8()), "prepare_qat: fp8 is not"),
    (lambda: kiln.quant.prepare_qat(nn.Sequential(nn.Linear(48, 4)),
                                    kiln.quant.weight_only_int4(group_size=32)),
     "in_features=48 is not a multiple of group_size=32"),
    (lambda: kiln.quant.prepare_qat(
        torch.ao.quantization.quantize_dynamic(mlp(), {nn.Linear}), kiln.quant.dynamic_int8()),
     "already quantized"),
    (lambda: kiln.quant.prepare_qat(mlp(), kiln.quant.static_int8(observer="histogram")),
     "observer='histogram'"),
    (lambda: kiln.quant.prepare_qat(mlp(), "int8"), "kiln.quant.prepare_qat: config must"),
    (lambda: kiln.quant.prepare(mlp(), "int8"), "config must come from"),
    (lambda: kiln.quant.prepare(mlp().double(), kiln.quant.dynamic_int8()),
     "cannot quantize '0': weight dtype torch.float64"),
    (lambda: kiln.quant.prepare(nn.Sequential(nn.Linear(6, 4)), kiln.quant.dynamic_int8()),
     "in_features=6 is not a multiple of 4"),
])
def test_unsupported_configs_name_themselves(call, message):
    with pytest.raises((ValueError, TypeError, NotImplementedError), match=None) as info:
        call()
    assert message in str(info.value)


# --- compiled path -----------------------------------------------------------


@pytest.mark.parametrize("act", ACTS)
def test_dynamic_int8_compiles_to_one_graph(act):
    prepared = kiln.quant.prepare(mlp(), kiln.quant.dynamic_int8(activations=act))
    compiled_matches_eager(prepared, torch.randn(32, 64))


@pytest.mark.parametrize("rows", [1, 32])  # the row kernel, then dequantize + sgemm
def test_weight_only_int8_compiles_to_one_graph(rows):
    prepared = kiln.quant.prepare(mlp(), kiln.quant.weight_only_int8())
    compiled_matches_eager(prepared, torch.randn(rows, 64))


def test_weight_only_int8_dynamic_batch_and_sequence():
    # A returned [b, s, n] reshape of the GEMM with two symbolic sizes: the
    # dead reshape left by kiln-destination-outputs crashed the JIT.
    prepared = kiln.quant.prepare(mlp(), kiln.quant.weight_only_int8())
    fast = kiln.compile(prepared, dynamic=True)
    with torch.no_grad():
        for shape in [(2, 3, 64), (4, 5, 64), (1, 1, 64)]:
            x = torch.randn(*shape)
            torch.testing.assert_close(fast(x), prepared(x), rtol=1e-5, atol=1e-5)
    assert kiln.stats()["eager_calls"] == 0


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("rows", [1, 2, 32])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_dynamic_int8_nan_and_inf_inputs(act, rows, bad):
    # A group (row, or the tensor) holding a NaN or an infinity has a NaN
    # scale: its outputs are NaN, in eager's reference and in the kernel
    # (which used to drop NaNs and turn inf into -inf).
    prepared = kiln.quant.prepare(mlp(), kiln.quant.dynamic_int8(activations=act))
    x = torch.randn(rows, 64)
    x[rows - 1, 5] = bad
    fast = kiln.compile(prepared)
    with torch.no_grad():
        expected, got = prepared(x), fast(x)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert got[rows - 1].isnan().all()
    if act == "per_token" and rows > 1:
        assert got[0].isfinite().all()


@pytest.mark.parametrize("shape", [(2, 7, 64), (64,)])
def test_batched_and_1d_inputs(shape):
    prepared = kiln.quant.prepare(mlp(bias=False), kiln.quant.dynamic_int8())
    got = compiled_matches_eager(prepared, torch.randn(*shape))
    assert got.shape == (*shape[:-1], 10)


def test_all_zero_rows_and_outliers():
    prepared = kiln.quant.prepare(mlp(), kiln.quant.dynamic_int8())
    x = torch.randn(8, 64)
    x[0] = 0
    x[1, 3] = 1e4
    compiled_matches_eager(prepared, x)


def test_ir_is_q_dq_folded_into_an_int8_gemm_call(tmp_path):
    prepared = kiln.quant.prepare(mlp(), kiln.quant.dynamic_int8())
    with kiln.config.patch(debug_dir=str(tmp_path)):
        kiln.compile(prepared)(torch.randn(4, 64))
    (folder,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    captured = (folder / "captured.mlir").read_text()
    assert captured.count("kiln.quantize") == 3 and captured.count("kiln.int8_view") == 3
    dumps = sorted(p for p in folder.iterdir() if p.name[:2].isdigit() and p.suffix == ".mlir")
    folded = next(p.read_text() for p in dumps if "fold-quant" in p.name)
    assert folded.count("kiln.qlinear") == 3 and "kiln.quantize" not in folded
    called = next(p.read_text() for p in dumps if "quant-to-calls" in p.name)
    assert called.count("call @kiln_int8_linear") == 3 and "kiln.qlinear" not in called


# --- against torch's quantized kernels ----------------------------------------


def torch_reference(q: "kiln.quant.QuantizedLinear", x):
    """torch.ops.quantized.linear_dynamic on kiln's own int8 weights (per
    channel; torch quantizes the activations per tensor, asymmetric u8)."""
    scales = q.weight_scale.reshape(-1).double()
    qw = torch._make_per_channel_quantized_tensor(q.int8_weight(), scales,
                                                  torch.zeros_like(scales, dtype=torch.long), 0)
    packed = torch.ops.quantized.linear_prepack(qw, q.bias)
    return torch.ops.quantized.linear_dynamic(x, packed, False)


@pytest.mark.parametrize("act", ACTS)
def test_matches_torch_quantized_linear_dynamic(act):
    torch.backends.quantized.engine = "fbgemm" if "fbgemm" in torch.backends.quantized.supported_engines else torch.backends.quantized.engine
    layer = nn.Sequential(nn.Linear(256, 96)).eval()
    prepared = kiln.quant.prepare(layer, kiln.quant.dynamic_int8(activations=act))
    x = torch.randn(16, 256)
    with torch.no_grad():
        got = kiln.compile(prepared)(x)
        ref = torch_reference(prepared[0], x)
        fp32 = layer(x)
    # Same weights, different activation rounding: both are close to fp32
    # and much closer to each other than a wrong scale could be.
    assert sqnr(fp32, got) > 30 and sqnr(fp32, ref) > 30
    assert sqnr(ref, got) > 30
    assert_compiled(graphs=1, eager_calls=0)


# --- accuracy on real data ------------------------------------------------------


def digits():
    sklearn = pytest.importorskip("sklearn.datasets")
    data = sklearn.load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target)
    g = torch.Generator().manual_seed(0)
    perm = torch.randperm(len(y), generator=g)
    return x[perm[:1400]], y[perm[:1400]], x[perm[1400:]], y[perm[1400:]]


@functools.lru_cache(maxsize=1)
def train_digits_mlp():
    """A 64-128-64-10 MLP trained on 1400 digits (0.5 s on one thread);
    returns (model, test inputs, test labels) for the other 397."""
    xtr, ytr, xte, yte = digits()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a few small GEMMs: threads only contend here
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        opt.zero_grad()
        nn.functional.cross_entropy(model(xtr), ytr).backward()
        opt.step()
    torch.set_num_threads(threads)
    return model.eval(), xte, yte


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(x).argmax(-1) == y).float().mean()) * 100


@pytest.mark.parametrize("config", ["per_token", "per_tensor", "weight_only"])
def test_digits_accuracy_within_one_point_of_fp32(config):
    model, xte, yte = train_digits_mlp()
    fp32 = accuracy(model, xte, yte)
    assert fp32 > 90, fp32
    cfg = (kiln.quant.weight_only_int8() if config == "weight_only"
           else kiln.quant.dynamic_int8(activations=config))
    quantized = accuracy(kiln.compile(kiln.quant.prepare(model, cfg)), xte, yte)
    assert abs(quantized - fp32) <= 1.0, (fp32, quantized)
    assert_compiled(graphs=1, eager_calls=0)
    # torch.ao's dynamic int8 on the same model, for scale: also within a point.
    ao = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    assert abs(accuracy(ao, xte, yte) - fp32) <= 1.0


def test_export_of_quantized_layers_is_a_clear_error(tmp_path):
    prepared = kiln.quant.prepare(mlp(), kiln.quant.dynamic_int8())
    with pytest.raises(kiln.ExportError, match="kiln.quant layers"):
        kiln.export(prepared, (torch.randn(4, 64),), str(tmp_path / "q.kiln"))


def test_batch_sizes_recompile_or_share_a_graph_correctly():
    prepared = kiln.quant.prepare(mlp(), kiln.quant.dynamic_int8())
    fast = kiln.compile(prepared, dynamic=True)
    with torch.no_grad():
        for b in (3, 5, 9):
            x = torch.randn(b, 64)
            torch.testing.assert_close(fast(x), prepared(x), rtol=1e-5, atol=1e-5)
    assert kiln.stats()["eager_calls"] == 0


@pytest.mark.parametrize("per_channel", [False, True])
def test_models_quantized_by_torch_ao_keep_their_int8_weights(per_channel):
    model = mlp()
    qconfig = (torch.ao.quantization.per_channel_dynamic_qconfig if per_channel
               else torch.ao.quantization.default_dynamic_qconfig)
    ao = torch.ao.quantization.quantize_dynamic(model, {nn.Linear: qconfig}, dtype=torch.qint8)
    prepared = kiln.quant.prepare(ao, kiln.quant.dynamic_int8(activations="per_tensor"))
    for i in (0, 2, 4):
        assert torch.equal(prepared[i].int8_weight(), ao[i].weight().int_repr())
    x = torch.randn(16, 64)
    got = compiled_matches_eager(prepared, x)
    with torch.no_grad():
        # torch.ao quantizes activations asymmetrically (u8); kiln symmetric.
        assert sqnr(ao(x), got) > 30 and sqnr(model(x), got) > 25


@pytest.mark.parametrize("config", ["weight_only", "per_token", "static"])
def test_hf_conv1d_layers_quantized_as_linears(config):
    """GPT-2's attention and MLP layers are transformers' Conv1D (``addmm``
    with the weight stored [in, out]): quantized as the nn.Linear they
    compute, so a GPT-2 decoding step runs int8 everywhere, not only its
    LM head."""
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128,
                                             n_positions=32)).eval()
    ids = torch.randint(0, 128, (2, 12))
    cfg = {"weight_only": kiln.quant.weight_only_int8(), "static": kiln.quant.static_int8(),
           "per_token": kiln.quant.dynamic_int8(exclude=["transformer.h.1.mlp.*"])}[config]
    prepared = kiln.quant.prepare(model, cfg)
    if config == "static":
        with torch.no_grad():
            prepared(torch.randint(0, 128, (4, 12)))
        kiln.quant.convert(prepared)
    kinds = [type(m).__name__ for m in prepared.modules()]
    # 8 Conv1D layers and the LM head; the excluded MLP keeps its 2 Conv1D.
    assert kinds.count("Conv1D") == (2 if config == "per_token" else 0)
    assert sum("QuantizedLinear" in k for k in kinds) == (7 if config == "per_token" else 9)
    with torch.no_grad():
        want = model(ids).logits
        expected = prepared(ids).logits
        got = kiln.compile(prepared)(ids).logits
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    assert sqnr(want, got) > 25
    assert_compiled(graphs=1, eager_calls=0, fallback_ops=0)
    # The original keeps its Conv1D layers.
    assert sum(type(m).__name__ == "Conv1D" for m in model.modules()) == 8


@pytest.mark.parametrize("config", ["Int8WeightOnlyConfig", "Int8DynamicActivationInt8WeightConfig"])
def test_models_quantized_by_torchao_keep_their_int8_weights(config):
    """torchao's ``quantize_`` leaves ``Int8Tensor`` weights (a tensor
    subclass kiln's capture breaks on: 7-32 breaks, every layer eager);
    ``prepare`` takes their int8 values and scales into kiln's layers."""
    if importlib.util.find_spec("torchao") is None:
        pytest.skip("torchao is not installed (tools/bootstrap.sh pins torchao==0.18.0)")
    import torchao.quantization as tq
    model = copy.deepcopy(mlp())
    tq.quantize_(model, getattr(tq, config)())
    weight_only = config == "Int8WeightOnlyConfig"
    cfg = kiln.quant.weight_only_int8() if weight_only else kiln.quant.dynamic_int8()
    prepared = kiln.quant.prepare(model, cfg)
    for i in (0, 2, 4):
        assert torch.equal(prepared[i].int8_weight(), model[i].weight.qdata)
    x = torch.randn(16, 64)
    got = compiled_matches_eager(prepared, x)
    with torch.no_grad():
        want = model(x)
    if weight_only:  # the same arithmetic
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    else:  # torchao scales activations by max|x| / 127.5, kiln by / 127
        assert sqnr(want, got) > 30
    with pytest.raises(ValueError, match="already quantized by torchao"):
        kiln.quant.prepare(model, kiln.quant.static_int8())


# --- models that read a quantized layer's weight --------------------------------


def _t5_encoder():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.T5Config(d_model=64, d_ff=128, num_layers=2, num_heads=4,
                                   vocab_size=128)
    return transformers.T5EncoderModel(config).eval()


@pytest.mark.parametrize("config", [kiln.quant.dynamic_int8, kiln.quant.weight_only_int4,
                                    kiln.quant.static_int8], ids=lambda c: c.__name__)
def test_hf_t5_reading_the_layer_weight_runs_and_compiles(config):
    """HF T5's feed-forward reads `wo.weight` (`isinstance(self.wo.weight,
    torch.Tensor)` before casting its input to the weight's dtype): the
    quantized layers expose `weight()` as a method, as torch.ao's do, so the
    prepared model runs eagerly (it raised AttributeError) and compiles to
    one graph (isinstance of a bound method is answered at capture)."""
    model = _t5_encoder()
    ids = torch.randint(0, 128, (2, 12))
    prepared = kiln.quant.prepare(model, config(group_size=32) if config is
                                  kiln.quant.weight_only_int4 else config())
    with torch.no_grad():
        if config is kiln.quant.static_int8:
            prepared(ids)  # calibration reads the observed layers' float weight
            prepared = kiln.quant.convert(prepared)
        assert callable(prepared.encoder.block[0].layer[1].DenseReluDense.wo.weight)
        want = prepared(ids).last_hidden_state
        kiln.reset()
        got = kiln.compile(prepared)(ids).last_hidden_state
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert_compiled(graphs=1, eager_calls=0)


def test_quantized_layer_weight_method_dequantizes():
    """`layer.weight()` is the float weight the values and scales stand for."""
    linear = nn.Linear(64, 32)
    for config in (kiln.quant.dynamic_int8(), kiln.quant.fp8(),
                   kiln.quant.weight_only_int4(group_size=32)):
        q = kiln.quant.prepare(nn.Sequential(linear), config)[0]
        w = q.weight()
        assert w.shape == (32, 64) and w.dtype == torch.float32
        tol = {"dynamic_int8": 0.01, "fp8": 0.07, "weight_only_int4": 0.15}[config.scheme]
        assert (w - linear.weight).abs().max() <= tol * linear.weight.abs().max(), config.scheme
