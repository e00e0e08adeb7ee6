# SPDX-License-Identifier: Apache-2.0
"""``kiln.quant.prepare``: swaps selected layers for int8 (or int4) ones.

Each selected ``nn.Linear`` (and transformers' ``Conv1D``, as the Linear it
computes) becomes a ``QuantizedLinear`` holding its weight as int8 values
(one symmetric scale per output channel, ``max|w| / 127``) viewed as int32
(kiln's capture has no int8 dtype yet; the IR reads them back through
``kiln.int8_view``), the scales and the bias; layers torch.ao's
``quantize_dynamic`` or torchao's ``quantize_`` already quantized keep
their int8 weights and scales. Its forward calls
``kiln.quant._ops.linear_int8``: eagerly the torch reference, under
``kiln.compile`` kiln's q/dq IR and int8 GEMM. ``weight_only_int4`` makes
``QuantizedLinearInt4`` layers (``kiln.int4_view``, one scale per group of
input features), ``fp8`` ``QuantizedLinearFP8`` layers (float8_e4m3fn
weights and activations, for CUDA's fp8 GEMMs).
"""
from __future__ import annotations

import copy
import sys

import torch
from torch import nn

from kiln.quant import _ops, _static
from kiln.quant._config import QuantConfig


def quantize_weight(weight: torch.Tensor):
    """(int8 values [N, K], float32 scales [N, 1]) of a float weight, per
    output channel, symmetric."""
    w = weight.detach().to(torch.float32)
    scale = _ops.symmetric_scale(w.abs().amax(dim=1, keepdim=True))
    return _ops.quantize_symmetric(w, scale).to(torch.int8), scale


class _ByteWeightLinear(nn.Module):
    """A linear layer whose ``[N, K]`` weight is one byte per value (int8 or
    float8 e4m3) viewed as int32 words ``[N, K / 4]`` (kiln's capture has no
    such dtypes), with one float32 scale per output channel and a bias."""

    def __init__(self, in_features, out_features, activations="per_token"):
        super().__init__()
        if in_features % 4:
            raise ValueError(f"kiln.quant: in_features={in_features} is not a multiple of 4")
        self.in_features, self.out_features, self.activations = in_features, out_features, activations
        self.register_buffer("qweight", torch.zeros(out_features, in_features // 4,
                                                    dtype=torch.int32))
        self.register_buffer("weight_scale", torch.ones(out_features, 1))
        self.register_buffer("bias", None)

    @classmethod
    def _of(cls, values, scale, bias, activations):
        """The layer holding byte ``values`` ``[N, K]``, ``scale`` (``N``
        values) and ``bias`` (a tensor or None)."""
        n, k = values.shape
        q = cls(k, n, activations)
        q.qweight = values.contiguous().view(torch.int32)
        q.weight_scale = scale.detach().to(torch.float32).reshape(n, 1).contiguous()
        if bias is not None:
            q.bias = bias.detach().to(torch.float32).clone()
        return q

    def weight(self) -> torch.Tensor:
        """The float32 weight ``[N, K]`` the values and scales stand for. A
        method, as torch.ao's quantized ``Linear.weight()``: code that tests
        ``isinstance(layer.weight, torch.Tensor)`` before casting its input
        to the weight's dtype (HuggingFace T5's feed-forward) leaves the
        input alone, as for torch.ao's layers."""
        return self.values().to(torch.float32) * self.weight_scale

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"activations={self.activations!r}")


class QuantizedLinear(_ByteWeightLinear):
    """An int8 ``nn.Linear`` (inference only): see the module doc."""

    @classmethod
    def from_float(cls, linear: nn.Linear, activations="per_token"):
        values, scale = quantize_weight(linear.weight)
        return cls._of(values, scale, linear.bias, activations)

    @classmethod
    def from_torch_ao(cls, module, activations="per_token"):
        """The layer with the int8 weights, scales and bias of a torch.ao
        dynamic quantized Linear (``quantize_dynamic``: qint8, zero points 0,
        per tensor or per channel); activations then follow kiln's scheme."""
        weight = module.weight()
        if module._packed_params.dtype != torch.qint8:
            raise ValueError(f"kiln.quant: torch.ao dynamic Linear with "
                             f"{module._packed_params.dtype} weights (qint8 only)")
        n, k = weight.shape
        if weight.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            zero = weight.q_zero_point() == 0
            scale = torch.full((n, 1), weight.q_scale(), dtype=torch.float32)
        else:
            zero = bool((weight.q_per_channel_zero_points() == 0).all())
            scale = weight.q_per_channel_scales()
        if not zero:
            raise ValueError("kiln.quant: torch.ao weights with nonzero zero points "
                             "(kiln's weights are symmetric)")
        return cls._of(weight.int_repr(), scale, module.bias(), activations)

    @classmethod
    def from_torchao(cls, linear: nn.Linear, activations="per_token"):
        """The layer with the int8 values, scales and bias of a Linear that
        torchao's ``quantize_`` (``Int8WeightOnlyConfig``,
        ``Int8DynamicActivationInt8WeightConfig``) left with an ``Int8Tensor``
        weight (symmetric, one scale per output channel); activations then
        follow ``activations``."""
        weight = linear.weight
        return cls._of(weight.qdata, weight.scale, linear.bias, activations)

    def int8_weight(self) -> torch.Tensor:
        """The int8 weight values ``[N, K]`` (a view)."""
        return self.qweight.view(torch.int8)

    values = int8_weight

    def forward(self, input):
        return _ops.linear_int8(input, self.qweight, self.weight_scale, self.bias,
                                self.activations)


class QuantizedLinearInt4(nn.Module):
    """An ``nn.Linear`` with int4 weights (inference only): one symmetric
    scale per output channel and group of ``group_size`` input features
    (``max|w| / 7``, values in [-7, 7]), packed eight per int32 word
    (``kiln.quant._ops.pack_int4``). Its forward calls
    ``kiln.quant._ops.linear_int4``: eagerly the torch reference, under
    ``kiln.compile`` kiln's int4 kernel."""

    def __init__(self, in_features, out_features, group_size=128):
        super().__init__()
        self.check_shape(in_features, group_size)
        self.in_features, self.out_features = in_features, out_features
        self.group_size = group_size
        self.register_buffer("qweight", torch.zeros(out_features, in_features // 8,
                                                    dtype=torch.int32))
        self.register_buffer("weight_scale", torch.ones(out_features, in_features // group_size))
        self.register_buffer("bias", None)

    @staticmethod
    def check_shape(in_features, group_size):
        """Raises ValueError unless ``in_features`` splits into groups of
        ``group_size`` (a multiple of 32)."""
        if group_size <= 0 or group_size % 32 or in_features % group_size:
            raise ValueError(f"kiln.quant: in_features={in_features} is not a multiple of "
                             f"group_size={group_size} (a multiple of 32)")

    @staticmethod
    def quantize(weight: torch.Tensor, group_size: int):
        """The int4 values ``[N, K]`` (floats in [-7, 7]) and group scales
        ``[N, K / group_size, 1]`` of a float ``weight`` ``[N, K]``."""
        n, k = weight.shape
        w = weight.to(torch.float32).reshape(n, k // group_size, group_size)
        scale = _ops.group_scale(w.abs().amax(dim=-1, keepdim=True))
        return torch.clamp(torch.round(w / scale), -7.0, 7.0).reshape(n, k), scale

    @classmethod
    def from_float(cls, linear: nn.Linear, group_size=128):
        q = cls(linear.in_features, linear.out_features, group_size)
        n, k = linear.weight.shape
        values, scale = cls.quantize(linear.weight.detach(), group_size)
        # A NaN group (NaN scale) stores zeros; its scale makes its outputs NaN.
        q.qweight = _ops.pack_int4(torch.nan_to_num(values).to(torch.int32))
        q.weight_scale = scale.reshape(n, k // group_size).contiguous()
        if linear.bias is not None:
            q.bias = linear.bias.detach().to(torch.float32).clone()
        return q

    def weight(self) -> torch.Tensor:
        """The float32 weight ``[N, K]`` the int4 values and group scales
        stand for (a method, as for the int8 layers)."""
        n, k = self.out_features, self.in_features
        values = _ops.unpack_int4(self.qweight).to(torch.float32).reshape(n, k // self.group_size,
                                                                          self.group_size)
        return (values * self.weight_scale.unsqueeze(-1)).reshape(n, k)

    def forward(self, input):
        return _ops.linear_int4(input, self.qweight, self.weight_scale, self.bias,
                                self.group_size)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"group_size={self.group_size}")


class QuantizedLinearFP8(_ByteWeightLinear):
    """An ``nn.Linear`` with float8_e4m3fn weights (inference only; the
    ``kiln.quant.fp8()`` layers): one scale per output channel (``max|w| /
    448``). Its forward calls ``kiln.quant._ops.linear_fp8``: eagerly (and in
    CPU graphs) the torch reference, in CUDA graphs kiln's fp8 GEMM
    (cuBLASLt)."""

    @classmethod
    def from_float(cls, linear: nn.Linear, activations="per_token"):
        w = linear.weight.detach().to(torch.float32)
        scale = _ops.symmetric_scale(w.abs().amax(dim=1, keepdim=True), _ops.FP8_MAX)
        # A NaN row (NaN scale) stores zeros; its scale makes its outputs NaN.
        return cls._of(_ops.to_fp8(torch.nan_to_num(w / scale)), scale, linear.bias, activations)

    def fp8_weight(self) -> torch.Tensor:
        """The float8_e4m3fn weight values ``[N, K]`` (a view)."""
        return self.qweight.view(torch.float8_e4m3fn)

    values = fp8_weight

    def forward(self, input):
        return _ops.linear_fp8(input, self.qweight, self.weight_scale, self.bias,
                               self.activations)

    def extra_repr(self):
        return super().extra_repr() + ", fp8 e4m3"


def torchao_weight_problem(linear) -> str | None:
    """None when ``linear``'s weight is a torchao ``Int8Tensor`` kiln's
    layers hold as they are (int8 values, one scale per output channel,
    zero points 0); else what differs. Not called for plain float weights."""
    w = linear.weight
    k = w.qdata.shape[-1] if hasattr(w, "qdata") else None
    if type(w).__name__ != "Int8Tensor" or k is None:
        return f"a torchao {type(w).__name__} weight (int8 Int8Tensor only)"
    if list(getattr(w, "block_size", ())) != [1, k]:
        return f"torchao block_size {list(w.block_size)} (one scale per output channel only)"
    if w.zero_point is not None and bool(w.zero_point.ne(0).any()):
        return "torchao weights with nonzero zero points (kiln's weights are symmetric)"
    return None


def is_torchao_linear(module) -> bool:
    """An ``nn.Linear`` whose weight is a torchao quantized tensor subclass."""
    return (isinstance(module, nn.Linear)
            and type(module.weight).__module__.split(".")[0] == "torchao")


def _is_ao_linear(module) -> bool:
    return isinstance(module, torch.ao.nn.quantized.dynamic.Linear)


def _why_not_conv(module):
    if module.padding_mode != "zeros":
        return f"padding_mode={module.padding_mode!r} (zeros only)"
    if isinstance(module.padding, str):
        return f"padding={module.padding!r} (give the padding as numbers)"
    return None


def _why_not(module, config):
    if _is_ao_linear(module):
        return None if module.in_features % 4 == 0 else (
            f"in_features={module.in_features} is not a multiple of 4")
    if is_torchao_linear(module):
        if config.scheme not in ("dynamic_int8", "weight_only_int8"):
            return (f"already quantized by torchao ({type(module.weight).__name__}): "
                    "dynamic_int8() or weight_only_int8() keep its int8 weights")
        return torchao_weight_problem(module)
    if module.weight.dtype != torch.float32:
        return f"weight dtype {module.weight.dtype} (float32 only)"
    if module.weight.device.type != "cpu":
        return f"device {module.weight.device} (CPU only)"
    if isinstance(module, nn.Conv2d):
        return _why_not_conv(module)
    if config.group_size and module.in_features % config.group_size:
        return (f"in_features={module.in_features} is not a multiple of "
                f"group_size={config.group_size}")
    if module.in_features % 4:
        return f"in_features={module.in_features} is not a multiple of 4"
    return None


def checked_copy(model: nn.Module, config: QuantConfig, inplace: bool, who: str) -> nn.Module:
    """``model`` (a copy unless ``inplace``) after checking the arguments of
    ``kiln.quant.<who>``."""
    if not isinstance(config, QuantConfig):
        raise TypeError(f"kiln.quant.{who}: config must come from kiln.quant.dynamic_int8(), "
                        f"static_int8(), weight_only_int8() or weight_only_int4(), got "
                        f"{type(config).__name__}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"kiln.quant.{who}: expected an nn.Module, got {type(model).__name__}")
    if config.selects("", model):
        raise ValueError(f"kiln.quant.{who}: the root module itself is a Linear; wrap it")
    prepared = [n for n, m in model.named_modules() if callable(getattr(m, "int8_layer", None))]
    if prepared:
        raise ValueError(f"kiln.quant.{who}: the model is already prepared ({prepared[0]!r} "
                         "waits for kiln.quant.convert)")
    return model if inplace else copy.deepcopy(model)


def _hf_conv1d_type():
    """transformers' ``Conv1D`` (GPT-2's linear layers) when transformers is loaded."""
    utils = sys.modules.get("transformers.pytorch_utils")
    return getattr(utils, "Conv1D", None)


def conv1d_linears(model: nn.Module, config: QuantConfig) -> list:
    """Replaces, in place, each HuggingFace ``Conv1D`` that ``config`` selects
    as an ``nn.Linear`` (GPT-2's attention and MLP layers: ``addmm(bias, x,
    W)`` with ``W`` stored [in, out]) by the ``nn.Linear`` computing the same
    (``W`` transposed; the same device and dtype); returns their names."""
    conv1d = _hf_conv1d_type()
    if conv1d is None or nn.Linear not in config.module_types:
        return []
    found = [(n, m) for n, m in model.named_modules()
             if n and type(m) is conv1d and config.selects(n, m, as_type=nn.Linear)]
    for name, module in found:
        k, n = module.weight.shape
        linear = nn.Linear(k, n, bias=module.bias is not None, device=module.weight.device,
                           dtype=module.weight.dtype)
        with torch.no_grad():
            linear.weight.copy_(module.weight.t())
            if module.bias is not None:
                linear.bias.copy_(module.bias)
        _static.replace_module(model, name, linear)
    return [n for n, _ in found]


def selected_layers(model: nn.Module, config: QuantConfig, who: str) -> list:
    """(name, module) of every layer of ``model`` ``config`` selects; a
    selected layer kiln cannot quantize raises ValueError naming it and why."""
    chosen = [(n, m) for n, m in model.named_modules() if n and config.selects(n, m)]
    # Layers torch.ao's quantize_dynamic already quantized keep their int8 weights.
    if nn.Linear in config.module_types and config.scheme in ("dynamic_int8", "weight_only_int8"):
        chosen += [(n, m) for n, m in model.named_modules()
                   if n and _is_ao_linear(m) and config.selects(n, m, as_type=nn.Linear)]
    for name, module in chosen:
        why = _why_not(module, config)
        if why:
            raise ValueError(f"kiln.quant.{who}: cannot quantize {name!r}: {why}")
    return chosen


def prepare(model: nn.Module, config: QuantConfig, inplace: bool = False) -> nn.Module:
    """``model`` (a copy unless ``inplace``) with every module ``config``
    selects replaced by its int8 version, in eval mode; for
    ``static_int8()`` by an observed float layer, converted to int8 after
    calibration (kiln/quant/_static.py). A selected module kiln cannot
    quantize raises ValueError naming it and why."""
    model = checked_copy(model, config, inplace, "prepare")
    conv1d_linears(model, config)
    if config.scheme == "static_int8":  # BatchNorms folded before weight quantization
        _static.fold_batchnorms(model.eval(), config.selects)
    chosen = selected_layers(model, config, "prepare")
    if config.scheme == "static_int8":
        _static.observe(model, chosen, config.observer, config.percentile)
        return model.eval()
    for name, module in chosen:
        if config.scheme == "weight_only_int4":
            layer = QuantizedLinearInt4.from_float(module, config.group_size)
        elif config.scheme == "fp8":
            layer = QuantizedLinearFP8.from_float(module, config.activations)
        elif _is_ao_linear(module):
            layer = QuantizedLinear.from_torch_ao(module, config.activations)
        elif is_torchao_linear(module):
            layer = QuantizedLinear.from_torchao(module, config.activations)
        else:
            layer = QuantizedLinear.from_float(module, config.activations)
        _static.replace_module(model, name, layer)
    return model.eval()
