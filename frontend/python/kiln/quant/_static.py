# SPDX-License-Identifier: Apache-2.0
"""Static (calibrated) int8: observed layers, then int8 layers.

``kiln.quant.prepare(model, static_int8())`` swaps each selected
``nn.Linear`` / ``nn.Conv2d`` for an ``ObservedLinear`` / ``ObservedConv2d``:
the float layer plus a torch.ao observer recording the inputs of
calibration batches run through the prepared model. ``convert`` (which
``kiln.compile`` calls on a model that still has observed layers) turns
each into a ``StaticQuantizedLinear`` / ``StaticQuantizedConv2d`` with the
parameters torch.ao's observers compute, as PT2E's ``X86InductorQuantizer``
does:

- activations: per-tensor affine uint8 in [0, 255] (``MinMaxObserver``,
  ``HistogramObserver`` or kiln's ``PercentileObserver``), applied as
  ``torch.ops.quantized_decomposed.quantize_per_tensor``;
- weights: per-output-channel symmetric int8 in [-128, 127]
  (``PerChannelMinMaxObserver``, ``scale = max|w| / 127.5``), quantized
  by ``quantize_per_channel``.

The converted layers call ``kiln.quant._ops.linear_static_int8`` /
``conv2d_static_int8``: eagerly the torch reference, under ``kiln.compile``
kiln's q/dq IR, then the int8 GEMM / oneDNN's int8 convolution.
"""
from __future__ import annotations

import sys

import torch
from torch import nn
from torch.ao.quantization import observer as ao_observer

from kiln.quant import _ops


class PercentileObserver(ao_observer.HistogramObserver):
    """torch.ao's histogram of the observed values, with the range cut at
    the ``percentile``-th and ``100 - percentile``-th percentiles (read from
    the histogram's cumulative counts: bin edges, so within one bin width,
    ``(max - min) / bins``, of the exact percentiles) instead of
    HistogramObserver's error search; scale and zero point from that range by
    torch.ao's own ``_calculate_qparams`` (which widens it to include 0)."""

    def __init__(self, percentile: float = 99.99, **kwargs):
        super().__init__(**kwargs)
        self.percentile = float(percentile)

    def percentile_range(self):
        """(low, high) float tensors: the cut range of the values seen."""
        total = self.histogram.sum()
        if total <= 0:
            return self.min_val, self.max_val
        cdf = torch.cumsum(self.histogram, 0) / total
        width = (self.max_val - self.min_val) / self.bins
        cut = torch.tensor([(100.0 - self.percentile) / 100.0, self.percentile / 100.0])
        low_bin, high_bin = torch.searchsorted(cdf, cut).clamp(max=self.bins - 1).tolist()
        low = torch.maximum(self.min_val + width * low_bin, self.min_val)
        high = torch.minimum(self.min_val + width * (high_bin + 1), self.max_val)
        return low, high

    def calculate_qparams(self):
        if self.min_val == float("inf") and self.max_val == float("-inf"):
            return super().calculate_qparams()  # torch.ao's default and warning
        return self._calculate_qparams(*self.percentile_range())

    def extra_repr(self):
        return f"percentile={self.percentile}"


OBSERVERS = {"minmax": ao_observer.MinMaxObserver, "histogram": ao_observer.HistogramObserver,
             "percentile": PercentileObserver}


def activation_observer(kind: str, percentile: float | None = None) -> nn.Module:
    """torch.ao's observer (or kiln's percentile one) for kiln's static
    activations (uint8 affine)."""
    extra = {"percentile": percentile} if kind == "percentile" else {}
    return OBSERVERS[kind](dtype=torch.quint8, qscheme=torch.per_tensor_affine, quant_min=0,
                           quant_max=255, reduce_range=False, **extra)


def quantize_weight_static(weight: torch.Tensor):
    """(int8 values [N, ...], float32 scales [N, 1, ...]) as torch.ao's
    per-channel symmetric int8 weight observer and quantize_per_channel."""
    obs = ao_observer.PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8,
                                               qscheme=torch.per_channel_symmetric,
                                               quant_min=-128, quant_max=127)
    w = weight.detach().to(torch.float32)
    obs(w)
    scale, zero = obs.calculate_qparams()
    values = torch.ops.quantized_decomposed.quantize_per_channel(
        w, scale, zero, 0, -128, 127, torch.int8)
    return values, scale.to(torch.float32).reshape(-1, *([1] * (w.dim() - 1)))


class WrapsFloatLayer:
    """Mixin of the layers that hold the float layer they stand for
    (``self.linear``) during calibration or quantization-aware training: its
    ``weight`` and ``bias`` read through, as code around an ``nn.Linear``
    expects (HuggingFace T5's feed-forward reads ``wo.weight.dtype``), as
    torch.ao's observed and QAT layers keep theirs."""

    @property
    def weight(self):
        return self.linear.weight

    @property
    def bias(self):
        return self.linear.bias


class ObservedLinear(WrapsFloatLayer, nn.Module):
    """A float ``nn.Linear`` recording its inputs for calibration."""

    def __init__(self, linear: nn.Module, observer: str, percentile: float | None = None):
        super().__init__()
        self.linear = linear
        self.activation_post_process = activation_observer(observer, percentile)

    def forward(self, input):
        self.activation_post_process(input.detach())
        return self.linear(input)

    def input_qparams(self, name):
        """(scale, zero point) of the observed inputs; ValueError before calibration."""
        obs = self.activation_post_process
        if not torch.isfinite(obs.min_val) or not torch.isfinite(obs.max_val):
            raise ValueError(f"kiln.quant: {name!r} saw no calibration data: run calibration "
                             "batches through the prepared model before kiln.compile / convert")
        scale, zero = obs.calculate_qparams()
        return float(scale), int(zero)

    def int8_layer(self, name):
        """The ``StaticQuantizedLinear`` this layer converts to."""
        return StaticQuantizedLinear.from_float(self.linear, *self.input_qparams(name))


class ObservedConv2d(ObservedLinear):
    """A float ``nn.Conv2d`` recording its inputs for calibration."""

    def int8_layer(self, name):
        """The ``StaticQuantizedConv2d`` this layer converts to."""
        return StaticQuantizedConv2d.from_float(self.linear, *self.input_qparams(name))


class StaticQuantizedConv2d(nn.Module):
    """An int8 ``nn.Conv2d`` with a calibrated input scale and zero point
    (inference only; weights held as int32 values for kiln's capture):
    int8 ``values`` ``[F, C / groups, KH, KW]`` with float32 per-channel
    ``weight_scale`` ``[F, 1, 1, 1]``."""

    def __init__(self, values, weight_scale, bias, stride, padding, dilation, groups,
                 input_scale: float, input_zero_point: int):
        super().__init__()
        self.stride, self.padding = tuple(stride), tuple(padding)
        self.dilation, self.groups = tuple(dilation), groups
        self.input_scale, self.input_zero_point = float(input_scale), int(input_zero_point)
        self.register_buffer("qweight", values.to(torch.int32).contiguous())
        self.register_buffer("weight_scale",
                             weight_scale.to(torch.float32).reshape(-1, 1, 1, 1).contiguous())
        bias = None if bias is None else bias.detach().to(torch.float32).clone()
        self.register_buffer("bias", bias)

    @classmethod
    def from_float(cls, conv: nn.Conv2d, input_scale: float, input_zero_point: int):
        """The int8 layer of ``conv`` (weights quantized here) with the given
        input qparams."""
        values, scale = quantize_weight_static(conv.weight)
        return cls(values, scale, conv.bias, conv.stride, conv.padding, conv.dilation,
                   conv.groups, input_scale, input_zero_point)

    def forward(self, input):
        return _ops.conv2d_static_int8(input, self.qweight, self.weight_scale, self.bias,
                                       self.stride, self.padding, self.dilation, self.groups,
                                       self.input_scale, self.input_zero_point)

    def extra_repr(self):
        return (f"{tuple(self.qweight.shape)}, stride={self.stride}, padding={self.padding}, "
                f"input_scale={self.input_scale!r}, input_zero_point={self.input_zero_point}")


class StaticQuantizedLinear(nn.Module):
    """An int8 ``nn.Linear`` with a calibrated input scale and zero point
    (inference only): see the module doc."""

    def __init__(self, in_features, out_features, input_scale=1.0, input_zero_point=0):
        super().__init__()
        if in_features % 4:
            raise ValueError(f"kiln.quant: in_features={in_features} is not a multiple of 4")
        self.in_features, self.out_features = in_features, out_features
        self.input_scale, self.input_zero_point = float(input_scale), int(input_zero_point)
        self.register_buffer("qweight", torch.zeros(out_features, in_features // 4,
                                                    dtype=torch.int32))
        self.register_buffer("weight_scale", torch.ones(out_features, 1))
        self.register_buffer("bias", None)

    @classmethod
    def from_float(cls, linear: nn.Linear, input_scale: float, input_zero_point: int):
        """The int8 layer of ``linear`` (weights quantized here) with the given input qparams."""
        values, wscale = quantize_weight_static(linear.weight)
        return cls.from_int8(values, wscale, linear.bias, input_scale, input_zero_point)

    @classmethod
    def from_int8(cls, values, weight_scale, bias, input_scale: float, input_zero_point: int):
        """The layer of int8 ``values`` ``[N, K]`` with float32 per-channel
        ``weight_scale`` (``N`` values) and a float ``bias`` or None."""
        q = cls(values.shape[1], values.shape[0], input_scale, input_zero_point)
        q.qweight = values.to(torch.int8).contiguous().view(torch.int32)
        q.weight_scale = weight_scale.to(torch.float32).reshape(-1, 1).contiguous()
        if bias is not None:
            q.bias = bias.detach().to(torch.float32).clone()
        return q

    def int8_weight(self) -> torch.Tensor:
        """The int8 weight values ``[N, K]`` (a view)."""
        return self.qweight.view(torch.int8)

    def weight(self) -> torch.Tensor:
        """The float32 weight ``[N, K]`` (a method, as for kiln.quant's
        dynamic layers and torch.ao's quantized ``Linear.weight()``)."""
        return self.int8_weight().to(torch.float32) * self.weight_scale

    def forward(self, input):
        return _ops.linear_static_int8(input, self.qweight, self.weight_scale, self.bias,
                                       self.input_scale, self.input_zero_point)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"input_scale={self.input_scale!r}, input_zero_point={self.input_zero_point}")


def fold_batchnorms(model: nn.Module, selects) -> list:
    """Folds, in place, each eval ``BatchNorm2d`` whose input is the output
    of a selected ``Conv2d`` and nothing else into that convolution
    (``torch.nn.utils.fusion.fuse_conv_bn_eval``; the BatchNorm becomes
    ``nn.Identity``), as PT2E folds them before quantizing weights. The
    pairs come from ``torch.fx.symbolic_trace``; a model it cannot trace,
    and modules called more than once, keep their BatchNorms (kiln then
    folds them into the int8 call's output scales: the same numbers except
    where a channel's largest weight meets a negative gain). Returns the
    (conv, BatchNorm) names folded."""
    try:
        graph = torch.fx.symbolic_trace(model).graph
    except Exception as e:  # noqa: BLE001  (any tracing failure: keep the model as it is)
        from kiln import config
        if "fallbacks" in config.logs:
            print(f"[kiln:fallbacks] kiln.quant: BatchNorms not folded before weight "
                  f"quantization (torch.fx cannot trace the model: {type(e).__name__}: {e})",
                  file=sys.stderr)
        return []
    modules = dict(model.named_modules())
    calls = {}
    for node in graph.nodes:
        if node.op == "call_module":
            calls[node.target] = calls.get(node.target, 0) + 1
    pairs = []
    for node in graph.nodes:
        bn = modules.get(node.target) if node.op == "call_module" else None
        src = node.args[0] if bn is not None and node.args else None
        if (not isinstance(bn, nn.BatchNorm2d) or bn.training or not bn.track_running_stats
                or not isinstance(src, torch.fx.Node) or src.op != "call_module"):
            continue
        conv = modules.get(src.target)
        if (isinstance(conv, nn.Conv2d) and len(src.users) == 1 and selects(src.target, conv)
                and calls[src.target] == 1 and calls[node.target] == 1):
            pairs.append((src.target, node.target))
    for conv_name, bn_name in pairs:
        fused = torch.nn.utils.fusion.fuse_conv_bn_eval(modules[conv_name], modules[bn_name])
        replace_module(model, conv_name, fused)
        replace_module(model, bn_name, nn.Identity())
    return pairs


def observe(model: nn.Module, chosen, observer: str, percentile: float | None = None) -> None:
    """Swaps each (name, nn.Linear or nn.Conv2d) of ``chosen`` in ``model``
    for its observed version."""
    for name, module in chosen:
        kind = ObservedConv2d if isinstance(module, nn.Conv2d) else ObservedLinear
        replace_module(model, name, kind(module, observer, percentile))


def has_observers(model: nn.Module) -> bool:
    """Whether ``model`` still has layers waiting for ``convert``."""
    return any(isinstance(m, ObservedLinear) for m in model.modules())


def convert(model: nn.Module) -> nn.Module:
    """Replaces, in place, every observed layer of a model prepared with
    ``static_int8()`` and calibrated, and every layer of a model prepared
    with ``prepare_qat`` and trained, by its int8 layer (each such layer's
    ``int8_layer(name)``); returns the model. ``kiln.compile`` calls it on a
    model that still has observed (calibration) layers; QAT layers, which
    ``kiln.compile`` also trains, are converted only by this call."""
    converted = [(n, m.int8_layer(n)) for n, m in model.named_modules()
                 if callable(getattr(m, "int8_layer", None))]
    for name, layer in converted:
        replace_module(model, name, layer)
    return model


def replace_module(model: nn.Module, name: str, module: nn.Module) -> None:
    """Sets the submodule ``name`` of ``model`` to ``module``."""
    parent_name, _, attr = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, attr, module)
