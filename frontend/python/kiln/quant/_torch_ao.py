# SPDX-License-Identifier: Apache-2.0
"""``kiln.quant.from_torch_ao``: a model torch.ao's eager-mode static
quantization converted, rewritten for kiln's int8 kernels.

``torch.ao.quantization.convert`` (after ``prepare`` and calibration) leaves
modules that pass *quantized tensors* between them: ``Quantize`` (from a
``QuantStub``), ``quantized.Conv2d`` / ``ConvReLU2d`` / ``Linear`` /
``LinearReLU`` whose packed int8 weights requantize their outputs to their
own scale and zero point, ``QFunctional`` adds, quantized activations,
``DeQuantize``. kiln's capture has no quantized dtype, so compiled as it is
such a model breaks at the first ``quantize_per_tensor`` and runs eagerly.

``from_torch_ao(model, example_inputs)`` runs the model once on the example
inputs to record the scale and zero point every layer's input and output
carry (in eager-mode quantization they are fixed per layer), then returns
a copy where quantized tensors become float tensors holding the same values
(``dequantize(q)``):

- ``Quantize`` -> ``FakeQuantize`` (quantize and dequantize with its scale
  and zero point), ``DeQuantize`` -> ``nn.Identity``;
- ``Conv2d`` / ``ConvReLU2d`` / ``Linear`` / ``LinearReLU`` -> kiln's
  ``StaticQuantizedConv2d`` / ``StaticQuantizedLinear`` with torch.ao's int8
  weights and scales as they are and the recorded input scale and zero
  point (the same u8 x s8 arithmetic, compiled into oneDNN's int8
  convolution / kiln's int8 GEMM), then the ReLU, then a ``FakeQuantize``
  to the layer's output scale and zero point (``Requantized``);
- ``QFunctional`` -> ``FloatFunctionalRequantized`` (float add / mul / cat
  / matmul, then a ``FakeQuantize`` to its scale and zero point);
- quantized activations and BatchNorm (``Hardswish``, ``ReLU6``,
  ``LeakyReLU``, ``Sigmoid``, ``ELU``, ``BatchNorm2d``, ``BNReLU2d``) -> the
  float module, then a ``FakeQuantize`` to the recorded output qparams;
- float modules that ran on quantized tensors keep running, in float: those
  exact on grid values (ReLU, max pooling, flatten, dropout, identity) as
  they are, the others (average pooling, upsampling, ...) followed by a
  ``FakeQuantize`` to the output qparams eager gave them.

Outputs equal the torch.ao model's up to rounding ties (torch's quantized
kernels and the float path round a few values one step apart); functional
calls in ``forward`` that round on quantized tensors in eager (e.g.
``F.avg_pool2d`` or ``x.mean()`` on a quantized tensor) compute the exact
float value instead (within half a step). A quantized module kiln does not
know, a layer the example inputs did not reach, or a layer seen with two
different input scales raises a ValueError naming it.
"""
from __future__ import annotations

import copy

import torch
from torch import fx, nn
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq

from kiln.quant import _ops, _torch_ao_fx
from kiln.quant._static import StaticQuantizedConv2d, StaticQuantizedLinear, replace_module

_RANGES = {torch.quint8: (0, 255), torch.qint8: (-128, 127)}
_EXACT_ON_GRID = (nn.ReLU, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.Identity, nn.Flatten,
                  nn.Unflatten, nn.Dropout, nn.Dropout2d, nnq.Dropout)
_FUNCTIONAL_OPS = ("add", "add_relu", "mul", "cat", "matmul")


class FakeQuantize(nn.Module):
    """The float values of quantizing to ``scale`` / ``zero_point`` in
    ``[quant_min, quant_max]``: kiln's static uint8 activations
    (``_ops.quantize_dequantize_static``, which the int8 layers after it
    read as their quantized input) for [0, 255], else
    ``torch.fake_quantize_per_tensor_affine``."""

    def __init__(self, scale: float, zero_point: int, quant_min: int, quant_max: int):
        super().__init__()
        self.scale, self.zero_point = float(scale), int(zero_point)
        self.quant_min, self.quant_max = int(quant_min), int(quant_max)

    @classmethod
    def of(cls, qparams):
        """The fake quantization of recorded ``(scale, zero point, dtype)``."""
        scale, zero, dtype = qparams
        return cls(scale, zero, *_RANGES[dtype])

    def forward(self, input):
        if (self.quant_min, self.quant_max) == (0, 255):  # kiln's static uint8 activations
            return _ops.quantize_dequantize_static(input, self.scale, self.zero_point)
        return torch.fake_quantize_per_tensor_affine(input, self.scale, self.zero_point,
                                                     self.quant_min, self.quant_max)

    def extra_repr(self):
        return (f"scale={self.scale!r}, zero_point={self.zero_point}, "
                f"range=[{self.quant_min}, {self.quant_max}]")


class Requantized(nn.Module):
    """``layer`` computed in float, its output quantized as eager's
    quantized module quantizes it (``output``, a ``FakeQuantize``)."""

    def __init__(self, layer: nn.Module, output: FakeQuantize):
        super().__init__()
        self.layer, self.output = layer, output

    def forward(self, *args, **kwargs):
        return self.output(self.layer(*args, **kwargs))


class FloatFunctionalRequantized(nn.Module):
    """torch.ao's ``QFunctional`` on float tensors holding quantized values:
    the float op, then quantized to its scale and zero point."""

    def __init__(self, output: FakeQuantize):
        super().__init__()
        self.output = output

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. "
                           "Please use the underlying operation")

    def add(self, x, y):
        return self.output(x + y)

    def add_relu(self, x, y):
        return self.output(torch.relu(x + y))

    def mul(self, x, y):
        return self.output(x * y)

    def cat(self, x, dim: int = 0):
        return self.output(torch.cat(x, dim=dim))

    def matmul(self, x, y):
        return self.output(torch.matmul(x, y))


def _qparams(value):
    """``(scale, zero point, dtype)`` of a per-tensor quantized tensor, the
    string ``"per-channel"`` for another quantized tensor, else None."""
    if not isinstance(value, torch.Tensor) or not value.is_quantized:
        return None
    if value.qscheme() not in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        return "per-channel"
    return float(value.q_scale()), int(value.q_zero_point()), value.dtype


class Unreached(nn.Module):
    """A quantized layer the example inputs did not reach (e.g. an auxiliary
    head used only in training): its input scale is unknown, so calling it
    raises."""

    def __init__(self, name: str, kind: str):
        super().__init__()
        self.name, self.kind = name, kind

    def forward(self, *args, **kwargs):
        raise RuntimeError(f"kiln.quant.from_torch_ao: the example inputs did not reach "
                           f"{self.name!r} ({self.kind}), so its scales are unknown: convert "
                           "with example inputs that run it")

    def extra_repr(self):
        return f"{self.name!r}, {self.kind}"


class _Unknown(Exception):
    """A layer's scales were not recorded."""


class _Recorder:
    """The qparams of every module's first input and output over the
    example run, and the ``QFunctional`` methods it called."""

    def __init__(self, model: nn.Module):
        self.seen, self.methods, self._undo = {}, {}, []
        for name, module in model.named_modules():
            if not name:
                continue
            if isinstance(module, nnq.QFunctional):
                for method in _FUNCTIONAL_OPS + ("add_scalar", "mul_scalar"):
                    self._wrap(name, module, method)
            elif not list(module.children()) or _is_quantized_module(module):
                self._undo.append(module.register_forward_hook(self._hook(name)).remove)

    def _hook(self, name):
        def hook(module, args, output):
            first = args[0] if args else None
            self.seen.setdefault(name, set()).add((_qparams(first), _qparams(output)))
        return hook

    def _wrap(self, name, module, method):
        original = getattr(module, method)

        def recorded(*args, **kwargs):
            out = original(*args, **kwargs)
            self.methods.setdefault(name, set()).add(method)
            self.seen.setdefault(name, set()).add((None, _qparams(out)))
            return out
        setattr(module, method, recorded)
        self._undo.append(lambda: delattr(module, method))

    def remove(self):
        for undo in self._undo:
            undo()


def _is_quantized_module(module) -> bool:
    path = type(module).__module__
    return path.startswith(("torch.ao.nn.quantized", "torch.ao.nn.intrinsic.quantized",
                            "torch.nn.quantized", "torch.nn.intrinsic.quantized"))


class _Layers:
    """The replacement of each module of the recorded model."""

    def __init__(self, recorder: _Recorder):
        self.recorder = recorder

    def qparams(self, name, module, which: int, required: bool = True):
        """The one ``(scale, zero, dtype)`` the module's input (0) or output
        (1) carried; ValueError when it was not reached or varied."""
        calls = self.recorder.seen.get(name)
        if not calls:
            if not required:
                return None
            raise _Unknown()
        values = {call[which] for call in calls}
        if len(values) != 1:
            raise ValueError(f"kiln.quant.from_torch_ao: {name!r} ({type(module).__name__}) ran "
                             f"with different {'input' if which == 0 else 'output'} "
                             f"quantizations: {sorted(map(str, values))}")
        value = values.pop()
        if value == "per-channel" or (value is not None and value[2] not in _RANGES):
            raise ValueError(f"kiln.quant.from_torch_ao: {name!r}: a {value} quantized tensor "
                             "(per-tensor quint8/qint8 only)")
        return value

    def input_u8(self, name, module):
        q = self.qparams(name, module, 0)
        if q is None or q[2] != torch.quint8:
            raise ValueError(f"kiln.quant.from_torch_ao: {name!r} ({type(module).__name__}) has "
                             f"a {'float' if q is None else q[2]} input (quint8 only)")
        return q[0], q[1]

    def requantized(self, name, module, layer):
        out = self.qparams(name, module, 1)
        if out is None:
            raise ValueError(f"kiln.quant.from_torch_ao: {name!r} ({type(module).__name__}) "
                             "returned a float tensor")
        return Requantized(layer, FakeQuantize.of(out))

    def replacement(self, name, module):
        """The module replacing ``module``; None to keep it."""
        try:
            return self._replacement(name, module)
        except _Unknown:
            return Unreached(name, type(module).__name__)

    def _replacement(self, name, module):
        if isinstance(module, nnq.Quantize):
            if module.dtype not in _RANGES:
                raise ValueError(f"kiln.quant.from_torch_ao: {name!r} quantizes to "
                                 f"{module.dtype} (quint8/qint8 only)")
            return FakeQuantize(float(module.scale), int(module.zero_point),
                                *_RANGES[module.dtype])
        if isinstance(module, nnq.DeQuantize):
            return nn.Identity()
        if type(module) in (nnq.Conv2d, nniq.ConvReLU2d):
            return self.requantized(name, module, _relu_after(self.conv(name, module),
                                                              type(module) is nniq.ConvReLU2d))
        if type(module) in (nnq.Linear, nniq.LinearReLU):
            return self.requantized(name, module, _relu_after(self.linear(name, module),
                                                              type(module) is nniq.LinearReLU))
        if type(module) is nnq.QFunctional:
            unsupported = self.recorder.methods.get(name, set()) - set(_FUNCTIONAL_OPS)
            if unsupported:
                raise ValueError(f"kiln.quant.from_torch_ao: {name!r} calls QFunctional."
                                 f"{sorted(unsupported)[0]} (supported: {_FUNCTIONAL_OPS})")
            out = self.qparams(name, module, 1, required=False)
            return FloatFunctionalRequantized(FakeQuantize.of(
                out or (module.scale, module.zero_point, torch.quint8)))
        activation = _float_activation(module)
        if activation is not None:
            return self.requantized(name, module, activation)
        if isinstance(module, _EXACT_ON_GRID):
            return nn.Identity() if isinstance(module, nnq.Dropout) else None
        if _is_quantized_module(module):
            dynamic = ".dynamic." in type(module).__module__
            raise ValueError(f"kiln.quant.from_torch_ao: {name!r} is a "
                             f"{type(module).__module__}.{type(module).__name__}, which kiln does "
                             "not convert" + (" (dynamically quantized models: kiln.quant.prepare"
                                              " with dynamic_int8())" if dynamic else ""))
        out = self.qparams(name, module, 1, required=False)
        if out is not None and not list(module.children()):
            return Requantized(module, FakeQuantize.of(out))
        return None

    def conv(self, name, module):
        if module.padding_mode != "zeros":
            raise ValueError(f"kiln.quant.from_torch_ao: {name!r} has padding_mode="
                             f"{module.padding_mode!r} (zeros only)")
        values, scales = _int8_weight(name, module.weight())
        return StaticQuantizedConv2d(values, scales, module.bias(), module.stride,
                                     module.padding, module.dilation, module.groups,
                                     *self.input_u8(name, module))

    def linear(self, name, module):
        values, scales = _int8_weight(name, module.weight())
        if values.shape[1] % 4:
            raise ValueError(f"kiln.quant.from_torch_ao: {name!r} has in_features="
                             f"{values.shape[1]}, not a multiple of 4")
        return StaticQuantizedLinear.from_int8(values, scales, module.bias(),
                                               *self.input_u8(name, module))


def _relu_after(layer, relu: bool):
    return nn.Sequential(layer, nn.ReLU()) if relu else layer


def _int8_weight(name, weight):
    """(int8 values, float32 per-output-channel scales) of a quantized
    qint8 weight with zero points 0 (per tensor or along axis 0)."""
    if weight.dtype != torch.qint8:
        raise ValueError(f"kiln.quant.from_torch_ao: {name!r} has {weight.dtype} weights "
                         "(qint8 only)")
    scheme = weight.qscheme()
    if scheme in (torch.per_channel_affine, torch.per_channel_symmetric):
        zeros, scales = weight.q_per_channel_zero_points(), weight.q_per_channel_scales()
        if weight.q_per_channel_axis() != 0:
            raise ValueError(f"kiln.quant.from_torch_ao: {name!r} has weight scales along "
                             f"axis {weight.q_per_channel_axis()} (output channels only)")
    else:
        zeros = torch.tensor([weight.q_zero_point()])
        scales = torch.full((weight.shape[0],), weight.q_scale(), dtype=torch.float64)
    if bool(zeros.ne(0).any()):
        raise ValueError(f"kiln.quant.from_torch_ao: {name!r} has weight zero points other "
                         "than 0 (symmetric weights only)")
    return weight.int_repr(), scales.to(torch.float32)


def _float_activation(module):
    """The float module computing a quantized activation / BatchNorm's
    values (before its output quantization); None for other modules."""
    simple = {nnq.Hardswish: nn.Hardswish, nnq.ReLU6: nn.ReLU6, nnq.Sigmoid: nn.Sigmoid}
    if type(module) in simple:
        return simple[type(module)]()
    if type(module) is nnq.LeakyReLU:
        return nn.LeakyReLU(module.negative_slope)
    if type(module) is nnq.ELU:
        return nn.ELU(module.alpha)
    if type(module) in (nnq.BatchNorm2d, nniq.BNReLU2d):
        bn = nn.BatchNorm2d(module.num_features, module.eps).eval()
        with torch.no_grad():
            for attr in ("weight", "bias", "running_mean", "running_var"):
                getattr(bn, attr).copy_(getattr(module, attr))
        return _relu_after(bn, type(module) is nniq.BNReLU2d)
    return None


def from_torch_ao(model: nn.Module, example_inputs) -> nn.Module:
    """A copy of a model converted by torch.ao's eager-mode static
    quantization (``torch.ao.quantization.convert``) or FX-mode one
    (``convert_fx``: its functional steps too, kiln/quant/_torch_ao_fx.py)
    that computes on float
    tensors holding the quantized values, with kiln's int8 layers (see the
    module doc); ``example_inputs`` (a tuple of the model's arguments, or
    one tensor) run it once to record each layer's scales. Run the copy
    eagerly or ``kiln.compile`` it."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"kiln.quant.from_torch_ao: expected an nn.Module, got "
                        f"{type(model).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise TypeError("kiln.quant.from_torch_ao: example_inputs must be a tuple of the "
                        f"model's arguments, got {type(example_inputs).__name__}")
    model = copy.deepcopy(model).eval()
    recorder = _Recorder(model)
    graph = isinstance(model, fx.GraphModule)  # convert_fx: functional steps too
    runner = _torch_ao_fx.NodeRecorder(model, _qparams) if graph else None
    try:
        with torch.no_grad():
            runner.run(*example_inputs) if graph else model(*example_inputs)
    finally:
        recorder.remove()
    layers = _Layers(recorder)
    replaced = {}
    for name, module in model.named_modules():
        if name and not any(name.startswith(done + ".") for done in replaced):
            new = layers.replacement(name, module)
            if new is not None:
                replaced[name] = new
    for name, new in replaced.items():
        replace_module(model, name, new)
    if graph:
        _torch_ao_fx.rewrite_graph(model, runner.out, FakeQuantize.of)
    model.kiln_int8_layers = sum(
        isinstance(m, (StaticQuantizedConv2d, StaticQuantizedLinear)) for m in model.modules())
    return model
