# SPDX-License-Identifier: Apache-2.0
"""Python decompositions of fused torch ops the capture inlines.

Some torch functions are single C++ kernels with no kiln lowering but are
compositions of ops kiln maps (linear, softmax, layer_norm, activations).
When the interpreter meets one of the callables in DECOMPOSITIONS it
inlines the Python function here instead, so the call becomes part of the
graph. Each function follows the ATen kernel's semantics (argument order,
mask conventions, where the residuals are added), checked against eager by
test/python/test_models_transformers.py. Anything outside what the kernel
is known to do raises, which the capture reports as a graph break.
"""
import math

import torch
import torch.nn.functional as F


def _masked_softmax(scores, mask, mask_type, batch, heads):
    """ATen's masked_softmax: a mask is converted to bool (nonzero = masked
    out, so a float mask of 0/-inf masks the -inf entries) and broadcast by
    mask_type (0: (T, S); 1: key padding (B, S); 2: (B, H, T, S)); a row
    masked everywhere is all zeros."""
    if mask is None:
        return torch.softmax(scores, -1)
    masked = mask if mask.dtype == torch.bool else mask != 0
    if mask_type == 1:
        masked = masked.reshape(batch, 1, 1, masked.shape[-1])
    elif mask_type == 0 or mask_type == 2:
        pass
    else:
        raise NotImplementedError("_native_multi_head_attention: a mask without mask_type")
    scores = scores.masked_fill(masked, float("-inf"))
    probs = torch.softmax(scores, -1)
    row_masked = masked.all(-1, keepdim=True)
    return probs.masked_fill(row_masked, 0.0)


def native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                                proj_weight, proj_bias, mask=None, need_weights=True,
                                average_attn_weights=True, mask_type=None):
    """torch._native_multi_head_attention (the eval fast path of
    nn.MultiheadAttention, batch first): returns (output, weights or None)."""
    if query.dim() != 3:
        raise NotImplementedError("_native_multi_head_attention expects batched (B, T, E) input")
    batch, tq, _ = query.shape
    ts = key.shape[1]
    head_dim = embed_dim // num_head
    if query is key and key is value:
        q, k, v = F.linear(query, qkv_weight, qkv_bias).chunk(3, -1)
    else:
        wq, wk, wv = qkv_weight.chunk(3)
        bq, bk, bv = qkv_bias.chunk(3)
        q = F.linear(query, wq, bq)
        k = F.linear(key, wk, bk)
        v = F.linear(value, wv, bv)
    q = q.reshape(batch, tq, num_head, head_dim).transpose(1, 2)
    k = k.reshape(batch, ts, num_head, head_dim).transpose(1, 2)
    v = v.reshape(batch, ts, num_head, head_dim).transpose(1, 2)
    scores = torch.matmul(q / math.sqrt(head_dim), k.transpose(-2, -1))
    probs = _masked_softmax(scores, mask, mask_type, batch, num_head)
    ctx = torch.matmul(probs, v).transpose(1, 2).reshape(batch, tq, embed_dim)
    out = F.linear(ctx, proj_weight, proj_bias)
    if not need_weights:
        return out, None
    if average_attn_weights:
        probs = probs.mean(1)
    return out, probs


def _add_into(x, y):
    """The kernel's `x.add_(y)` without mutating x: the sum in the promoted
    dtype, returned in x's (under CPU autocast x is the attention's or the
    feed-forward's bf16 while y is float32)."""
    return torch.add(x, y).to(x.dtype)


def transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                  proj_bias, use_gelu, norm_first, eps, norm_weight_1,
                                  norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
                                  ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None,
                                  mask_type=None):
    """torch._transformer_encoder_layer_fwd (nn.TransformerEncoderLayer's
    inference fast path): attention and feed-forward blocks with residuals,
    layer norms before (norm_first) or after each block."""
    x = src
    if norm_first:
        x = F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)
    x = native_multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias,
                                    proj_weight, proj_bias, mask, False, True, mask_type)[0]
    x = _add_into(x, src)
    if not norm_first:
        x = F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)
    residual = x
    if norm_first:
        x = F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)
    x = F.linear(x, ffn_weight_1, ffn_bias_1)
    x = F.gelu(x) if use_gelu else F.relu(x)
    x = _add_into(F.linear(x, ffn_weight_2, ffn_bias_2), residual)
    if not norm_first:
        x = F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)
    return x


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """torch.diff: the n-th forward difference along dim, after
    concatenating prepend/append (tensors) along it."""
    if not isinstance(n, int) or n < 0:
        raise NotImplementedError("torch.diff: n must be a non-negative int")
    x = input
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, x, append) if t is not None]
        x = torch.cat(parts, dim)
    if n == 0:  # a new contiguous tensor, never the input itself
        return x.clone(memory_format=torch.contiguous_format)
    for _ in range(n):
        length = x.shape[dim]
        after = x.narrow(dim, 1, length - 1)
        before = x.narrow(dim, 0, length - 1)
        x = torch.logical_xor(after, before) if x.dtype == torch.bool else after - before
    return x


def _fake_quantize(x, scale, zero_point, quant_min, quant_max, per_channel):
    """torch's fake-quantize kernels with their straight-through gradient:
    ``q = round_half_even(x * f32(1 / scale)) + f32(zero_point)``,
    ``(clamp(q, quant_min, quant_max) - f32(zero_point)) * scale``, all in
    float32 as the kernels' vector loops (their scalar tails subtract the
    zero point in integers: for zero points past 2**24 eager's own
    elements disagree, and kiln follows the vector loop); the input's
    gradient passes where ``q`` is in range and is 0 elsewhere (scale and
    zero point get none). Non-finite values as eager's CPU kernels: the
    per-tensor one saturates (NaN to ``quant_min``), the per-channel one
    converts to int64 first (NaN and values past int64 to ``quant_min``).
    ``zero_point``: an integer tensor."""
    if x.dtype != torch.float32:
        raise NotImplementedError(f"fake quantization of {x.dtype} (float32 only in kiln)")
    if quant_min > quant_max:
        raise NotImplementedError("fake quantization with quant_min > quant_max (eager raises)")
    rounded = torch.round(x * (1.0 / scale))
    valid = rounded.abs() < 2.0**63 if per_channel else ~torch.isnan(rounded)
    q = torch.where(valid, rounded + zero_point.to(torch.float32), float("-inf"))
    in_range = valid & (q >= quant_min) & (q <= quant_max)
    value = (torch.clamp(q, quant_min, quant_max) - zero_point.to(torch.float32)) * scale
    # The straight-through term is +0.0 in value (value - 0 keeps a -0.0,
    # value + 0 would not) and passes grad * in_range, eager's gradient
    # (signed zeros included); non-finite inputs (never in range) read 0.
    finite = torch.where(torch.isfinite(x), x, 0.0)
    return value.detach() - (finite.detach() - finite) * in_range.to(x.dtype)


def _integer_zero_point(zero_point, what, dtypes=None):
    """``zero_point`` as an integer tensor; NotImplementedError (a break:
    torch then runs or rejects the call) for floating-point zero points
    (the learnable kernels) and, given ``dtypes``, other dtypes."""
    if not isinstance(zero_point, torch.Tensor):
        return torch.full((), zero_point, dtype=torch.int64)
    if zero_point.dtype.is_floating_point or (dtypes and zero_point.dtype not in dtypes):
        raise NotImplementedError(f"{what} with a {zero_point.dtype} zero point")
    return zero_point


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """torch.fake_quantize_per_tensor_affine (float or tensor qparams)."""
    if not isinstance(zero_point, torch.Tensor) and not quant_min <= zero_point <= quant_max:
        raise NotImplementedError("fake_quantize_per_tensor_affine: zero point out of range "
                                  "(eager raises)")
    if not isinstance(scale, torch.Tensor):
        scale = torch.full((), scale, dtype=torch.float32)
    zero_point = _integer_zero_point(zero_point, "fake_quantize_per_tensor_affine")
    return _fake_quantize(input, scale.to(torch.float32).reshape(()), zero_point.reshape(()),
                          quant_min, quant_max, per_channel=False)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """torch.fake_quantize_per_channel_affine (int32 zero points, float32
    scales: what eager accepts; zero points inside [quant_min, quant_max],
    which eager checks and kiln assumes)."""
    zero_point = _integer_zero_point(zero_point, "fake_quantize_per_channel_affine",
                                     (torch.int32,))
    if not 0 <= axis < input.dim():  # eager raises (no negative axis either)
        raise NotImplementedError("fake_quantize_per_channel_affine: axis out of range")
    channels = input.shape[axis]
    if scale.dtype != torch.float32 or scale.dim() != 1 or scale.shape[0] != channels or \
            zero_point.dim() != 1 or zero_point.shape[0] != channels:
        raise NotImplementedError("fake_quantize_per_channel_affine: float32 scales and int32 "
                                  "zero points of one dim, one per channel (eager raises)")
    shape = [1] * input.dim()
    shape[axis] = channels
    return _fake_quantize(input, scale.reshape(shape), zero_point.reshape(shape), quant_min,
                          quant_max, per_channel=True)


_SMALL_SCALE = 6.1e-5  # float32 6.1e-5 below, as torch's SMALL_SCALE_THRESHOLD


def _choose_qparams(low, high, quant_min, quant_max, symmetric):
    """torch's ``quant_utils::ChooseQuantizationParams`` (fbgemm's twin,
    what its CPU observer kernels call) elementwise: float32 ranges in,
    (float32 scale, int32 zero point) out. A symmetric range is centred
    first; the range widened to hold 0; the scale in double (0.1 when it
    rounds to 0 or its reciprocal overflows, raised to 6.1e-5 with the
    range scaled along); the zero point from the end with the smaller
    error (the middle for a symmetric range), nudged into [quant_min,
    quant_max]."""
    levels = quant_max - quant_min
    if symmetric:
        half = levels // 2
        straddles = (low < 0) & (high > 0)
        widest = torch.maximum((low / -(half + 1)).abs(), (high / half).abs()).double()
        low = torch.where(straddles, (widest * -(half + 1)).float(), low)
        high = torch.where(straddles, (widest * half).float(), high)
    low, high = torch.clamp(low, max=0.0), torch.clamp(high, min=0.0)
    scale = (high.double() - low.double()) / levels
    rounded = scale.float()
    scale = torch.where((rounded == 0) | torch.isinf(1.0 / rounded), 0.1, scale)
    small_f32 = torch.full((), _SMALL_SCALE, dtype=torch.float32)
    small = scale < small_f32.double()
    amplifier = small_f32 / scale.float()
    low_small = torch.where(high == 0, -(small_f32 * levels), low * amplifier)
    high_small = torch.where(low == 0, small_f32 * levels, high * amplifier)
    low_small = torch.where(low == 0, low, low_small)
    high_small = torch.where((low != 0) & (high == 0), high, high_small)
    low, high = torch.where(small, low_small, low), torch.where(small, high_small, high)
    scale = torch.where(small, small_f32.double(), scale)
    from_min, from_max = quant_min - low.double() / scale, quant_max - high.double() / scale
    error_min = abs(quant_min) - (low.double() / scale).abs()
    error_max = abs(quant_max) - (high.double() / scale).abs()
    zero = torch.where(error_min < error_max, from_min, from_max)
    if symmetric:
        zero = torch.where((low < 0) & (high > 0), (quant_min + quant_max) / 2, zero)
    zero = torch.round(torch.clamp(zero, quant_min, quant_max))
    return scale.float(), zero.to(torch.int32)


def fused_moving_avg_obs_fake_quant(self, observer_on, fake_quant_on, running_min, running_max,
                                    scale, zero_point, averaging_const, quant_min, quant_max,
                                    ch_axis, per_row_fake_quant=False, symmetric_quant=False):
    """torch.fused_moving_avg_obs_fake_quant (torch.ao's FusedMovingAvgObsFakeQuantize,
    its default QAT observer): while ``observer_on``, the running min/max
    move by ``averaging_const`` towards this batch's (taken as they are
    the first time); while ``fake_quant_on``, ``scale``/``zero_point`` are
    chosen from them and the input is fake-quantized with them (else
    returned as it is). The running ranges, scale and zero point are
    written in place, as the kernel does."""
    x = self
    if x.dtype != torch.float32 or scale.dtype != torch.float32:
        raise NotImplementedError("fused_moving_avg_obs_fake_quant: float32 only in kiln")
    if quant_min > quant_max or ch_axis >= x.dim():
        raise NotImplementedError("fused_moving_avg_obs_fake_quant: quant_min > quant_max or "
                                  "ch_axis >= the input's dims (eager raises)")
    if per_row_fake_quant:
        if ch_axis != 0 or x.dim() != 2 or running_min.numel() != x.shape[0] or \
                scale.numel() != x.shape[0] or zero_point.dtype != torch.int32:
            raise NotImplementedError(
                "fused_moving_avg_obs_fake_quant: per-channel ranges of a 2-D input along dim 0 "
                "only, into sized buffers (torch.ao sizes a per-channel observer's buffers in "
                "its first call: run the model once eagerly before kiln.compile for one graph)")
        low, high = x.detach().amin(dim=1), x.detach().amax(dim=1)
    else:
        if running_min.numel() != 1 or scale.numel() != 1:
            raise NotImplementedError("fused_moving_avg_obs_fake_quant: per-tensor buffers")
        low, high = x.detach().amin().reshape(running_min.shape), \
            x.detach().amax().reshape(running_max.shape)
    # The kernel reads the flags with .item().toInt(): truncated toward zero.
    observe = observer_on.reshape(()).to(torch.int64) != 0
    quantize = fake_quant_on.reshape(()).to(torch.int64) != 0
    for running, seen in ((running_min, low), (running_max, high)):
        moved = torch.where(torch.isinf(running), seen, running + averaging_const * (seen - running))
        running.copy_(torch.where(observe, moved, running))
    new_scale, new_zero = _choose_qparams(running_min.reshape(-1), running_max.reshape(-1),
                                          quant_min, quant_max, symmetric_quant)
    scale.copy_(torch.where(quantize, new_scale.reshape(scale.shape), scale))
    zero_point.copy_(torch.where(quantize, new_zero.reshape(zero_point.shape).to(zero_point.dtype),
                                 zero_point))
    shape = (-1, 1) if per_row_fake_quant else ()
    out = _fake_quantize(x, new_scale.reshape(shape), new_zero.reshape(shape), quant_min,
                         quant_max, per_channel=per_row_fake_quant)
    return torch.where(quantize, out, x)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.vmap: a function whose calls the capture runs once on batched
    values (capture/ops/Vmap.cpp: elementwise ops, casts and integer-tensor
    indexing are batched by broadcasting; anything else breaks the graph)."""
    if randomness not in ("error", "different", "same"):
        raise NotImplementedError("torch.vmap: unknown randomness")

    def vmapped(*args, **kwargs):
        return vmap_call(func, in_dims, out_dims, args, kwargs)

    return vmapped


def vmap_call(func, in_dims, out_dims, args, kwargs):
    """Marker the interpreter evaluates (capture/ops/Vmap.cpp); never runs."""
    raise RuntimeError("kiln._decompositions.vmap_call only runs inside a kiln capture")


_MAX_BAG_ONE_HOT = 1 << 24


def _bag_reduce(rows, member, mode):
    """rows [N, D]; member [B, N] bool (element n is in bag b): eager's
    per-bag sum/mean/max, an empty bag all zeros."""
    if member.numel() * (rows.shape[1] if mode == "max" else 1) > _MAX_BAG_ONE_HOT:
        raise NotImplementedError("embedding_bag: too many bags x elements for a one-hot reduction")
    count = member.sum(1, keepdim=True)
    if mode == "max":
        picked = torch.where(member[:, :, None], rows[None, :, :], float("-inf")).amax(1)
        return torch.where(count > 0, picked, 0.0)
    total = member.to(rows.dtype) @ rows
    return total if mode == "sum" else total / count.clamp_min(1).to(rows.dtype)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """F.embedding_bag as gathers and per-bag reductions (torch.embedding_bag
    falls back badly: its meta kernel's auxiliary results have other sizes
    than the CPU kernel's). 2-D input: fixed-length bags reduced over dim 1;
    1-D input with offsets: bag membership as a [bags, elements] one-hot.
    Padding entries are left out of sums, counts and maxima; an empty bag
    gives zeros (eager). Weight renorm (max_norm) mutates, sparse and
    scale_grad_by_freq change the gradient: those raise (graph break)."""
    if max_norm is not None or sparse or scale_grad_by_freq or mode not in ("sum", "mean", "max"):
        raise NotImplementedError("embedding_bag with max_norm, sparse or scale_grad_by_freq")
    if input.is_nested or weight.dim() != 2 or input.dim() not in (1, 2):
        raise NotImplementedError("embedding_bag: nested or unusual input")
    if per_sample_weights is not None and (mode != "sum" or per_sample_weights.shape != input.shape):
        raise NotImplementedError("embedding_bag: per_sample_weights outside mode='sum'")
    if (input.dim() == 2) != (offsets is None) or input.dtype not in (torch.int32, torch.int64):
        raise NotImplementedError("embedding_bag: offsets with 2-D input, or none with 1-D")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    flat = input.reshape(-1)
    rows = F.embedding(flat, weight)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    keep = None if padding_idx is None else flat != padding_idx
    if input.dim() == 2:
        bags, length = input.shape
        member = torch.ones(bags, length, dtype=torch.bool) if keep is None else keep.reshape(bags, length)
        member = torch.eye(bags, dtype=torch.bool)[:, :, None] & member[None, :, :]
        return _bag_reduce(rows, member.reshape(bags, bags * length), mode)
    starts = offsets[:-1] if include_last_offset else offsets
    position = torch.arange(flat.shape[0], dtype=offsets.dtype)
    ends = torch.cat([starts[1:], offsets[-1:] if include_last_offset
                      else torch.full((1,), flat.shape[0], dtype=offsets.dtype)])
    member = (position[None, :] >= starts[:, None]) & (position[None, :] < ends[:, None])
    if keep is not None:
        member = member & keep[None, :]
    return _bag_reduce(rows, member, mode)


def _atleast(shape_of, tensors):
    """torch.atleast_Nd: each tensor with fewer dims viewed to `shape_of(t)`
    (a view, so writes through the result reach the input), the others
    returned as they are (eager returns the input itself); one tensor gives
    a tensor, several (or one list/tuple) a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(shape_of, tuple(tensors[0])))
    out = tuple(t if shape_of(t) is None else t.view(shape_of(t)) for t in tensors)
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors):
    return _atleast(lambda t: (1,) if t.dim() == 0 else None, tensors)


def atleast_2d(*tensors):
    return _atleast(lambda t: (1, 1) if t.dim() == 0 else (1, t.shape[0]) if t.dim() == 1
                    else None, tensors)


def atleast_3d(*tensors):
    def shape_of(t):
        if t.dim() == 0:
            return (1, 1, 1)
        if t.dim() == 1:
            return (1, t.shape[0], 1)
        if t.dim() == 2:
            return (t.shape[0], t.shape[1], 1)
        return None
    return _atleast(shape_of, tensors)


DECOMPOSITIONS = {
    torch.atleast_1d: atleast_1d,
    torch.atleast_2d: atleast_2d,
    torch.atleast_3d: atleast_3d,
    torch.vmap: vmap,
    torch.diff: diff,
    torch.fake_quantize_per_tensor_affine: fake_quantize_per_tensor_affine,
    torch.fake_quantize_per_channel_affine: fake_quantize_per_channel_affine,
    torch.fused_moving_avg_obs_fake_quant: fused_moving_avg_obs_fake_quant,
    F.embedding_bag: embedding_bag,
    torch._native_multi_head_attention: native_multi_head_attention,
    torch._transformer_encoder_layer_fwd: transformer_encoder_layer_fwd,
}
