# SPDX-License-Identifier: Apache-2.0
"""The eager reference of kiln's int8 linear layer.

``linear_int8`` is what a ``kiln.quant.prepare``'d layer calls. Run eagerly
it computes, with torch ops, exactly what kiln's compiled kernel computes
(runtime/cpu/Int8Gemm.cpp); inside ``kiln.compile`` the capture maps this
function by identity (frontend/csrc/capture/ops/QuantOps.cpp) to kiln's
q/dq IR, which ``kiln-fold-quant`` turns into one integer GEMM.

Scheme (docs/quantization.md): int8 weights ``[N, K]`` with one symmetric
scale per output channel; activations (unless ``"none"``) quantized per
call, symmetric, one scale per row (``"per_token"``) or per tensor
(``"per_tensor"``): ``scale = max|x| / 127`` (1 for an all-zero group),
``q = clamp(round_half_even(x / scale), -127, 127)``; the int32 product
is dequantized by ``x_scale * w_scale`` and the bias added.
``linear_static_int8`` is the static (calibrated) variant: uint8 inputs with a
fixed scale and zero point (kiln/quant/_static.py).
"""
from __future__ import annotations

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed ops)

ACTIVATIONS = ("per_token", "per_tensor", "none")


def symmetric_scale(amax: torch.Tensor, qmax: float = 127.0) -> torch.Tensor:
    """``amax / qmax`` (127 for int8, FP8_MAX for fp8) where positive, 1 for
    an all-zero group, NaN for a group holding a NaN or an infinity (every
    output computed from the group is then NaN, as the kernels give it)."""
    scale = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
    return torch.where(torch.isfinite(amax), scale, torch.full_like(amax, float("nan")))


def activation_scale(x: torch.Tensor, activations: str, qmax: float = 127.0) -> torch.Tensor:
    """The symmetric scales of rows ``x`` ``[M, K]``: one per row ``[M, 1]``
    (``"per_token"``) or one for all ``[1, 1]`` (``"per_tensor"``)."""
    amax = x.abs().amax(dim=-1, keepdim=True)
    if activations == "per_tensor":
        amax = amax.amax().reshape(1, 1)
    return symmetric_scale(amax, qmax)


def quantize_symmetric(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``clamp(round_half_even(x / scale), -127, 127)`` as float values."""
    return torch.clamp(torch.round(x / scale), -127.0, 127.0)


#: The largest finite float8_e4m3fn value.
FP8_MAX = 448.0


def to_fp8(v: torch.Tensor) -> torch.Tensor:
    """``v`` clamped to ±448 and rounded to float8_e4m3fn (round half to
    even; NaN stays NaN)."""
    return torch.clamp(v, -FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def quantize_fp8(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``to_fp8(x / scale)``."""
    return to_fp8(x / scale)


def linear_fp8(input, qweight, weight_scale, bias=None, activations="per_token"):
    """``input [..., K] @ dequantize(qweight)^T + bias`` with float8_e4m3fn
    weights and activations (``kiln.quant.fp8()`` layers, for CUDA's fp8
    GEMMs). ``qweight``: e4m3 values ``[N, K]`` viewed as int32 ``[N, K / 4]``;
    ``weight_scale``: float32 ``[N, 1]``. The input is quantized per row
    (``"per_token"``) or per tensor with ``activation_scale``; the e4m3 products are
    summed in float32 (here exactly, in float64, then rounded), scaled by
    ``x_scale * w_scale`` and the bias added."""
    if activations not in ("per_token", "per_tensor"):
        raise ValueError(f"kiln.quant: fp8 activations={activations!r} is not one of "
                         "('per_token', 'per_tensor')")
    w = qweight.view(torch.float8_e4m3fn)
    k = w.shape[1]
    x = input.reshape(-1, k)
    scale = activation_scale(x, activations, FP8_MAX)
    q = quantize_fp8(x, scale)
    acc = (q.to(torch.float64) @ w.to(torch.float64).t()).to(torch.float32)
    y = acc * (scale * weight_scale.t())
    if bias is not None:
        y = y + bias
    return y.reshape(*input.shape[:-1], w.shape[0])


# Pure torch: where kiln does not capture it (a CPU graph: no fp8 kernel) it
# runs inside the graph as a per-op fallback (capture/ops/Fallback.cpp).
linear_fp8.kiln_fallback = True


def linear_int8(input, qweight, weight_scale, bias=None, activations="per_token"):
    """``input [..., K] @ dequantize(qweight)^T + bias`` as kiln computes it.

    ``qweight``: int8 values ``[N, K]`` viewed as int32 ``[N, K / 4]``;
    ``weight_scale``: float32 ``[N, 1]``; ``bias``: float32 ``[N]`` or None.
    """
    w = qweight.view(torch.int8)
    k = w.shape[1]
    x = input.reshape(-1, k)
    if activations == "none":
        y = x @ (w.to(torch.float32) * weight_scale).t()
    elif activations in ("per_token", "per_tensor"):
        scale = activation_scale(x, activations)
        q = quantize_symmetric(x, scale)
        # Exact integer products (|sum| < 2^53) in float64, then f32 as the kernel.
        acc = (q.to(torch.float64) @ w.to(torch.float64).t()).to(torch.float32)
        y = acc * (scale * weight_scale.t())
    else:
        raise ValueError(f"kiln.quant: activations={activations!r} is not one of {ACTIVATIONS}")
    if bias is not None:
        y = y + bias
    return y.reshape(*input.shape[:-1], w.shape[0])


def linear_static_int8(input, qweight, weight_scale, bias, input_scale, input_zero_point):
    """``linear_int8`` with the input quantized statically: per tensor,
    uint8, the calibrated ``input_scale`` (float) and ``input_zero_point``
    (int in [0, 255]), as ``torch.ops.quantized_decomposed.quantize_per_tensor``
    (kiln's kernel computes the same values); the int32 product of
    ``q - zero_point`` and the weight is dequantized by
    ``input_scale * weight_scale`` and the bias added."""
    w = qweight.view(torch.int8)
    k = w.shape[1]
    x = input.reshape(-1, k)
    q = torch.ops.quantized_decomposed.quantize_per_tensor(x, input_scale, input_zero_point, 0,
                                                           255, torch.uint8)
    acc = ((q.to(torch.float64) - input_zero_point) @ w.to(torch.float64).t()).to(torch.float32)
    y = acc * (torch.tensor(input_scale, dtype=torch.float32) * weight_scale.t())
    if bias is not None:
        y = y + bias
    return y.reshape(*input.shape[:-1], w.shape[0])


def quantize_dequantize_static(input, scale, zero_point):
    """The float values of static uint8 activations: ``quantized_decomposed``
    ``dequantize_per_tensor(quantize_per_tensor(input, scale, zero_point, 0,
    255, uint8))``. kiln captures it as ``kiln.quantize_static`` +
    ``kiln.dequantize``, which the static int8 layers after it read as
    their quantized input."""
    qd = torch.ops.quantized_decomposed
    q = qd.quantize_per_tensor(input, scale, zero_point, 0, 255, torch.uint8)
    return qd.dequantize_per_tensor(q, scale, zero_point, 0, 255, torch.uint8)


def conv2d_static_int8(input, qweight, weight_scale, bias, stride, padding, dilation, groups,
                       input_scale, input_zero_point):
    """A static int8 ``Conv2d`` as torch's reference quantized ops compute
    it: the input through ``quantized_decomposed.quantize_per_tensor`` /
    ``dequantize_per_tensor`` (uint8, the calibrated scale and zero point),
    the weight int8 values (held in int32 ``[F, C / groups, KH, KW]``)
    times per-channel scales ``[F, 1, 1, 1]``, a float convolution. kiln's
    compiled oneDNN call computes the same sum in int32."""
    qd = torch.ops.quantized_decomposed
    q = qd.quantize_per_tensor(input, input_scale, input_zero_point, 0, 255, torch.uint8)
    x = qd.dequantize_per_tensor(q, input_scale, input_zero_point, 0, 255, torch.uint8)
    w = qweight.to(torch.float32) * weight_scale
    return torch.nn.functional.conv2d(x, w, bias, stride, padding, dilation, groups)


def pack_int4(values: torch.Tensor) -> torch.Tensor:
    """int32 words ``[N, K / 8]`` holding int4 ``values`` ``[N, K]`` (integers
    in [-8, 7], K a multiple of 32) as ``kiln.int4_view`` reads them: every 32
    values are 16 bytes, byte j holding value j + 8 in its low nibble and
    value 16 + j + 8 in its high nibble."""
    n, k = values.shape
    blocks = (values.to(torch.int32) + 8).reshape(n, k // 32, 2, 16)
    packed = (blocks[:, :, 0] | (blocks[:, :, 1] << 4)).to(torch.uint8)
    return packed.reshape(n, k // 2).contiguous().view(torch.int32)


def unpack_int4(words: torch.Tensor) -> torch.Tensor:
    """The int4 values ``[N, K]`` (int32) of ``pack_int4``'s words."""
    n = words.shape[0]
    packed = words.contiguous().view(torch.uint8).to(torch.int32).reshape(n, -1, 16)
    values = torch.stack([packed & 0x0F, packed >> 4], dim=2) - 8
    return values.reshape(n, -1)


def group_scale(amax: torch.Tensor) -> torch.Tensor:
    """int4 group scales ``amax / 7`` (1 for an all-zero group, NaN for a
    group holding a NaN or an infinity)."""
    scale = torch.where(amax > 0, amax / 7.0, torch.ones_like(amax))
    return torch.where(torch.isfinite(amax), scale, torch.full_like(amax, float("nan")))


def linear_int4(input, qweight, weight_scale, bias=None, group_size=128):
    """``input [..., K] @ dequantize(qweight)^T + bias`` for int4 weights
    (``pack_int4`` words ``[N, K / 8]``) with one float32 scale per group of
    ``group_size`` values of K (``weight_scale`` ``[N, K / group_size]``), as
    kiln's compiled kernel computes it up to float summation order."""
    values = unpack_int4(qweight).to(torch.float32)
    n, k = values.shape
    w = (values.reshape(n, k // group_size, group_size) * weight_scale.unsqueeze(-1)).reshape(n, k)
    y = input.reshape(-1, k) @ w.t()
    if bias is not None:
        y = y + bias
    return y.reshape(*input.shape[:-1], n)
