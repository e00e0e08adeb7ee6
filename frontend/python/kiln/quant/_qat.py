# SPDX-License-Identifier: Apache-2.0
"""Quantization-aware training: fake-quantized float layers, then int8 layers.

``kiln.quant.prepare_qat(model, static_int8())`` swaps each selected
``nn.Linear`` / ``nn.Conv2d`` for a ``QATLinear`` / ``QATConv2d``: the same
float layer (its parameters train as before) whose input and weight pass
through torch's fake-quantize ops in the forward, with the straight-through
gradient those ops define (1 where the value is inside the quantized range,
0 outside). The quantization is the one ``kiln.quant.convert`` then bakes
into ``StaticQuantizedLinear`` / ``StaticQuantizedConv2d``:

- the input: per-tensor affine uint8 in [0, 255], its range a moving
  average of each training batch's min and max (torch.ao's
  ``MovingAverageMinMaxObserver``, averaging constant 0.01, the first batch
  taken as it is; updated in training mode only), scale and zero point by
  torch.ao's formula;
- the weight: per output channel symmetric int8 in [-128, 127],
  ``scale = max|w| / 127.5`` of the current weight (torch.ao's
  ``PerChannelMinMaxObserver``), so the converted layer's int8 weight is
  exactly the fake-quantized weight of the last forward.

Under ``kiln.compile`` the fake-quantize ops are lowered like any other op
(kiln/_decompositions.py) and the observer's buffer updates are part of the
graph: a QAT training step is one graph with a compiled backward. BatchNorms
stay float layers during QAT (not folded: they train with batch
statistics); after conversion kiln folds an eval BatchNorm behind an int8
convolution into its output scales.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from kiln.quant import _ops
from kiln.quant._config import QuantConfig, static_int8
from kiln.quant._modules import (QuantizedLinear, QuantizedLinearInt4, checked_copy, conv1d_linears,
                                 selected_layers)
from kiln.quant._static import (StaticQuantizedConv2d, StaticQuantizedLinear, WrapsFloatLayer,
                                replace_module)

_EPS = torch.finfo(torch.float32).eps


class MovingAverageRange(nn.Module):
    """The input range of a QAT layer and its uint8 scale and zero point
    (torch.ao's ``MovingAverageMinMaxObserver`` with ``quint8``,
    ``per_tensor_affine``, ``reduce_range=False``). ``enabled = False``
    freezes the range."""

    def __init__(self, averaging_constant: float = 0.01):
        super().__init__()
        self.averaging_constant = float(averaging_constant)
        self.enabled = True
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    def forward(self, x: torch.Tensor) -> None:
        if not (self.training and self.enabled):
            return
        seen = x.detach()
        low, high = seen.amin(), seen.amax()
        first = torch.isinf(self.min_val)  # nothing observed yet
        c = self.averaging_constant
        self.min_val.copy_(torch.where(first, low, self.min_val + c * (low - self.min_val)))
        self.max_val.copy_(torch.where(first, high, self.max_val + c * (high - self.max_val)))

    def qparams(self):
        """(scale, zero point): float32 and int32 0-d tensors."""
        low = torch.clamp(self.min_val, max=0.0)
        high = torch.clamp(self.max_val, min=0.0)
        scale = torch.clamp((high - low) / 255.0, min=_EPS)
        zero_point = torch.clamp(-torch.round(low / scale), 0, 255)
        return scale, zero_point.to(torch.int32)

    def extra_repr(self):
        return f"averaging_constant={self.averaging_constant}, enabled={self.enabled}"


def fake_quantize_weight(weight: torch.Tensor) -> torch.Tensor:
    """The weight as its per-output-channel symmetric int8 values times their
    scales (``max|w| / 127.5``, values in [-128, 127]), straight-through
    gradient."""
    amax = weight.detach().abs().amax(dim=tuple(range(1, weight.dim())))
    scale = torch.clamp(amax / 127.5, min=_EPS)
    zero = torch.zeros(weight.shape[0], dtype=torch.int32, device=weight.device)
    return torch.fake_quantize_per_channel_affine(weight, scale, zero, 0, -128, 127)


class QATLinear(WrapsFloatLayer, nn.Module):
    """An ``nn.Linear`` trained with its input and weight fake-quantized."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.linear = linear
        self.activation_post_process = MovingAverageRange()

    def fake_quantized_input(self, input):
        self.activation_post_process(input)
        scale, zero_point = self.activation_post_process.qparams()
        return torch.fake_quantize_per_tensor_affine(input, scale, zero_point, 0, 255)

    def forward(self, input):
        return F.linear(self.fake_quantized_input(input), fake_quantize_weight(self.linear.weight),
                        self.linear.bias)

    def input_qparams(self, name):
        """(scale, zero point) as Python numbers; ValueError before any
        training batch was seen."""
        if torch.isinf(self.activation_post_process.min_val):
            raise ValueError(f"kiln.quant: {name!r} saw no training batch: train the model "
                             "prepare_qat returned (in training mode) before convert")
        scale, zero_point = self.activation_post_process.qparams()
        return float(scale), int(zero_point)

    def int8_layer(self, name):
        """The ``StaticQuantizedLinear`` this layer converts to."""
        return StaticQuantizedLinear.from_float(self.linear, *self.input_qparams(name))


class QATConv2d(QATLinear):
    """An ``nn.Conv2d`` trained with its input and weight fake-quantized
    (held as ``self.linear``, as in ``ObservedConv2d``)."""

    def forward(self, input):
        conv = self.linear
        return F.conv2d(self.fake_quantized_input(input), fake_quantize_weight(conv.weight),
                        conv.bias, conv.stride, conv.padding, conv.dilation, conv.groups)

    def int8_layer(self, name):
        """The ``StaticQuantizedConv2d`` this layer converts to."""
        return StaticQuantizedConv2d.from_float(self.linear, *self.input_qparams(name))


def _symmetric_fake_quantize(value: torch.Tensor, dim: int) -> torch.Tensor:
    """``value`` as kiln's symmetric int8 values times their scales
    (``max|v| / 127`` over ``dim``, the rounding of
    ``_ops.quantize_symmetric``), exactly the values the converted layer
    computes with; the gradient passes straight through (every value is
    inside the range its own maximum sets)."""
    v = value.detach()
    scale = _ops.symmetric_scale(v.abs().amax(dim=dim, keepdim=True))
    return _ops.quantize_symmetric(v, scale) * scale + (value - v)


class QATDynamicLinear(WrapsFloatLayer, nn.Module):
    """An ``nn.Linear`` trained as the ``QuantizedLinear`` of a
    ``dynamic_int8`` / ``weight_only_int8`` config computes: the weight
    per output channel symmetric int8, the input (unless ``"none"``, weight
    only) per token or per tensor symmetric int8, both fake-quantized with
    a straight-through gradient."""

    def __init__(self, linear: nn.Linear, activations: str):
        super().__init__()
        self.linear, self.activations = linear, activations

    def forward(self, input):
        weight = _symmetric_fake_quantize(self.linear.weight, 1)
        if self.activations == "per_token":
            input = _symmetric_fake_quantize(input, -1)
        elif self.activations == "per_tensor":
            flat = _symmetric_fake_quantize(input.reshape(1, -1), 1)
            input = flat.reshape(input.shape)
        return F.linear(input, weight, self.linear.bias)

    def int8_layer(self, name):
        """The ``QuantizedLinear`` this layer converts to."""
        return QuantizedLinear.from_float(self.linear, self.activations)

    def extra_repr(self):
        return f"activations={self.activations!r}"


class QATInt4Linear(WrapsFloatLayer, nn.Module):
    """An ``nn.Linear`` trained as the ``QuantizedLinearInt4`` of a
    ``weight_only_int4`` config computes: the weight symmetric int4 with
    one scale per output channel and group of ``group_size`` input
    features (``max|w| / 7``, values in [-7, 7]), fake-quantized with a
    straight-through gradient; the input stays float."""

    def __init__(self, linear: nn.Linear, group_size: int):
        super().__init__()
        self.linear, self.group_size = linear, group_size

    def forward(self, input):
        weight = self.linear.weight
        w = weight.detach()
        values, scale = QuantizedLinearInt4.quantize(w, self.group_size)
        n, k = w.shape
        fake = (values.reshape(n, k // self.group_size, self.group_size) * scale).reshape(n, k)
        return F.linear(input, fake.to(weight.dtype) + (weight - w), self.linear.bias)

    def int8_layer(self, name):
        """The ``QuantizedLinearInt4`` this layer converts to."""
        return QuantizedLinearInt4.from_float(self.linear, self.group_size)

    def extra_repr(self):
        return f"group_size={self.group_size}"


def prepare_qat(model: nn.Module, config: QuantConfig | None = None,
                inplace: bool = False) -> nn.Module:
    """``model`` (a copy unless ``inplace``) in training mode with every
    ``nn.Linear`` / ``nn.Conv2d`` that ``config`` (default
    ``static_int8()``) selects replaced by its ``QATLinear`` /
    ``QATConv2d`` (``dynamic_int8`` / ``weight_only_int8``: each
    ``nn.Linear`` by a ``QATDynamicLinear``; ``weight_only_int4``: by a
    ``QATInt4Linear``). Train it (eagerly or compiled by ``kiln.compile``),
    then ``kiln.quant.convert(model.eval())`` gives the quantized model.
    ``static_int8`` trains with its default ``"minmax"`` observer only (the
    range is a moving average of batch min/max); other configs (``fp8``)
    raise NotImplementedError naming themselves."""
    config = static_int8() if config is None else config
    trained = ("static_int8", "dynamic_int8", "weight_only_int8", "weight_only_int4")
    if isinstance(config, QuantConfig) and config.scheme not in trained:
        raise NotImplementedError(f"kiln.quant.prepare_qat: {config.scheme} is not implemented "
                                  f"for quantization-aware training ({', '.join(trained)})")
    if isinstance(config, QuantConfig) and config.scheme == "static_int8" and \
            config.observer != "minmax":
        raise NotImplementedError(f"kiln.quant.prepare_qat: observer={config.observer!r}: QAT "
                                  "ranges are moving averages of batch min/max "
                                  "(static_int8(observer='minmax') only)")
    model = checked_copy(model, config, inplace, "prepare_qat")
    conv1d_linears(model, config)
    for name, module in selected_layers(model, config, "prepare_qat"):
        if type(module) not in (nn.Linear, nn.Conv2d) or \
                type(module.weight) is not nn.Parameter:
            raise ValueError(f"kiln.quant.prepare_qat: {name!r} is already quantized "
                             f"({type(module).__name__}); QAT trains float layers")
        if config.scheme == "weight_only_int4":
            QuantizedLinearInt4.check_shape(module.in_features, config.group_size)
            layer = QATInt4Linear(module, config.group_size)
        elif config.scheme != "static_int8":
            layer = QATDynamicLinear(module, config.activations)
        else:
            layer = (QATConv2d if isinstance(module, nn.Conv2d) else QATLinear)(module)
        replace_module(model, name, layer)
    return model.train()
