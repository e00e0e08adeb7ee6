# SPDX-License-Identifier: Apache-2.0
"""The ATen overload table: overloads whose torch-level spelling differs.

Each entry of ``OVERLOADS`` is a Python function with the overload's schema
(argument names, order and defaults) computing what the overload computes
from torch-level calls kiln maps (or composes them, as ``asin`` from
``atan``); the capture inlines it (kiln/_aten.py plans, capture/ops/
AtenOps.cpp applies and checks it against the overload's meta kernel).
Anything outside what an entry covers raises NotImplementedError, and the
overload then runs through the per-op fallback. Families of overloads
composed from kiln's ops live in their own modules and join the table at
the end: sorting and integer bitwise ops (kiln/_aten_sort.py), scatters
(kiln/_aten_scatter.py), pooling and its backward (kiln/_aten_pool.py),
convolution backward, distances and grid sampling (kiln/_aten_nn.py).
``META_DIFFERS``: entries
not checked against the meta kernel (it disagrees with eager's CPU kernel);
``REFUSED``: overloads that must neither be lowered nor fall back.
"""
import torch

from kiln._aten_nn import OVERLOADS as _NN
from kiln._aten_pool import OVERLOADS as _POOL
from kiln._aten_scatter import OVERLOADS as _SCATTER
from kiln._aten_sort import OVERLOADS as _SORT


def _softmax(self, dim, half_to_float):
    if half_to_float:
        return torch.softmax(self, dim, dtype=torch.float32)
    return torch.softmax(self, dim)


def _log_softmax(self, dim, half_to_float):
    if half_to_float:
        return torch.log_softmax(self, dim, dtype=torch.float32)
    return torch.log_softmax(self, dim)


def _to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    r = self.clone()
    if dtype is not None:
        r = r.to(dtype)
    if device is not None:
        r = r.to(device)
    return r


def _slice_index(self, dim, start, end, step):
    """The indexing tuple of slice.Tensor's view (dim normalized)."""
    if dim < 0:
        dim = dim + self.dim()
    index = [slice(None)] * dim
    index.append(slice(start, end, step))
    return tuple(index)


def _slice(self, dim=0, start=None, end=None, step=1):
    return self[_slice_index(self, dim, start, end, step)]


def _alias(self):
    return self.view(self.shape)


def _copy(self, src, non_blocking=False):
    return src.to(self.dtype).expand(self.shape).clone()


def _expand(self, size, implicit=False):
    return self.expand(size)


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    n = weight.dim() - 2
    if not transposed:
        conv = (torch.conv1d, torch.conv2d, torch.conv3d)[n - 1]
        return conv(input, weight, bias, stride, padding, dilation, groups)
    conv = (torch.conv_transpose1d, torch.conv_transpose2d, torch.conv_transpose3d)[n - 1]
    return conv(input, weight, bias, stride, padding, output_padding, groups, dilation)


def _native_layer_norm(input, normalized_shape, weight, bias, eps):
    axis = input.dim() - len(normalized_shape)
    dims = list(range(axis, input.dim()))
    var, mean = torch.var_mean(input, dims, correction=0, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    out = torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)
    return out, mean, rstd


def _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """native_batch_norm / _native_batch_norm_legit: eager's CPU kernel gives
    empty saved statistics in eval mode (the meta kernel says (C,))."""
    out = torch.nn.functional.batch_norm(input, running_mean, running_var, weight, bias,
                                         training, momentum, eps)
    if not training:
        empty = input.new_zeros((0,))
        return out, empty, empty.clone()
    dims = [0] + list(range(2, input.dim()))
    var, mean = torch.var_mean(input, dims, correction=0)
    return out, mean, torch.rsqrt(var + eps)


def _batch_norm_functional(input, weight, bias, running_mean, running_var, training, momentum,
                           eps):
    """_native_batch_norm_legit_functional: the running statistics updated
    out of place, returned after the saved ones."""
    rm, rv = running_mean.clone(), running_var.clone()
    out, mean, rstd = _batch_norm(input, weight, bias, rm, rv, training, momentum, eps)
    return out, mean, rstd, rm, rv


def _batch_norm_aten(input, weight, bias, running_mean, running_var, training, momentum, eps,
                     cudnn_enabled):
    return torch.nn.functional.batch_norm(input, running_mean, running_var, weight, bias,
                                          training, momentum, eps)


def _batch_norm_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    return _batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps)


def _adaptive_avg_pool2d(self, output_size):
    return torch.nn.functional.adaptive_avg_pool2d(self, output_size)


def _sym_size(self, dim):
    return self.size(dim)


def _sym_numel(self):
    return self.numel()


def _lift_fresh_copy(self):
    return self.clone()


def _unsafe_view(self, size):
    return self.reshape(size)


def _scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    return torch.tensor(s, dtype=torch.float32 if dtype is None else dtype)


def _split_with_sizes(self, split_sizes, dim=0):
    return tuple(torch.split(self, list(split_sizes), dim))


def _split(self, split_size, dim=0):
    return tuple(torch.split(self, split_size, dim))


def _convert_element_type(a, dtype):
    return a.to(dtype)


def _broadcast_in_dim(a, shape, broadcast_dimensions):
    s = list(shape)
    v = a
    for d in range(len(s)):
        if d not in broadcast_dimensions:
            v = v.unsqueeze(d)
    return v.expand(s)


def _elu(self, alpha=1, scale=1, input_scale=1):
    if scale != 1 or input_scale != 1:
        raise NotImplementedError("elu with scale or input_scale")
    return torch.nn.functional.elu(self, alpha)


def _hardtanh(self, min_val=-1, max_val=1):
    return torch.nn.functional.hardtanh(self, min_val, max_val)


def _leaky_relu(self, negative_slope=0.01):
    return torch.nn.functional.leaky_relu(self, negative_slope)


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    # The gradient-only arguments reach kiln-autodiff's rule (-1: no padding row).
    return torch.nn.functional.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                                         scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _constant_pad_nd(self, pad, value=0):
    return torch.nn.functional.pad(self, pad, "constant", value)


def _upsample_nearest(self, output_size, scale_factors):
    return torch.nn.functional.interpolate(self, output_size, scale_factors, "nearest")


def _upsample_bilinear(self, output_size, align_corners, scale_factors):
    return torch.nn.functional.interpolate(self, output_size, scale_factors, "bilinear",
                                           align_corners)


def _native_dropout(input, p, train):
    if train:
        raise NotImplementedError("native_dropout in training mode")
    # eager's mask of an empty input has the input's dtype
    mask_dtype = input.dtype if input.numel() == 0 else torch.bool
    return input.clone(), torch.ones_like(input, dtype=mask_dtype)


def _pad_mode(mode):
    def pad(self, padding):
        return torch.nn.functional.pad(self, padding, mode)
    return pad


def _native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    out = torch.nn.functional.group_norm(input, group, weight, bias, eps)
    grouped = input.reshape(N, group, -1)
    var, mean = torch.var_mean(grouped, [2], correction=0)
    return out, mean, torch.rsqrt(var + eps)


def _slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    out = self.clone()
    out[_slice_index(self, dim, start, end, step)] = src
    return out


def _sym_stride(self, dim):
    return self.stride(dim)


def _local_scalar_dense(self):
    return self.item()


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    expected, step = [], 1
    for n in reversed(list(size)):
        expected.insert(0, step)
        step = step * max(n, 1)
    if list(stride) != expected:
        raise NotImplementedError("empty_strided with non-contiguous strides")
    return torch.empty(size, dtype=dtype)


# Inverse trigonometric and hyperbolic functions in ops kiln lowers (atan,
# log1p, sqrt), in forms accurate to float32 rounding over their domains.
def _float(x):
    """x in the dtype its math runs in (narrow floats in float32, integers in
    the default dtype), and the dtype of the result."""
    if x.dtype in (torch.float16, torch.bfloat16):
        return x.float(), x.dtype
    if not x.is_floating_point():
        return x.to(torch.get_default_dtype()), torch.get_default_dtype()
    return x, x.dtype


def _negative(v):
    """v < 0, -0.0 included (1 / -0.0 is -inf)."""
    return (v < 0) | ((v == 0) & (1 / v < 0))


def _asin(self):
    x, dtype = _float(self)
    return torch.atan(x / torch.sqrt((1 - x) * (1 + x))).to(dtype)


def _acos(self):
    x, dtype = _float(self)
    return (2 * torch.atan(torch.sqrt((1 - x) / (1 + x)))).to(dtype)


def _atanh(self):
    x, dtype = _float(self)
    a = x.abs()  # odd: computed on |x|, where log1p's argument is >= 0
    r = 0.5 * torch.log1p(2 * a / (1 - a))
    return torch.where(_negative(x), -r, r).to(dtype)


def _asinh(self):
    x, dtype = _float(self)
    a = x.abs()
    big = a > 1e18
    small = torch.where(big, torch.zeros_like(a), a)
    r = torch.log1p(small + small * small / (1 + torch.sqrt(1 + small * small)))
    r = torch.where(big, torch.log(a) + 0.6931471805599453, r)
    return torch.where(_negative(x), -r, r).to(dtype)


def _acosh(self):
    x, dtype = _float(self)
    big = x > 1e18
    y = torch.where(big, torch.ones_like(x), x)
    r = torch.log1p((y - 1) + torch.sqrt((y - 1) * (y + 1)))
    r = torch.where(big, torch.log(x) + 0.6931471805599453, r)
    return torch.where(x < 1, torch.full_like(r, float("nan")), r).to(dtype)


def _atan2(self, other):
    """atan2 from atan on |y| / |x| in [0, pi/2], then the quadrant from the
    signs (signed zeros as C's atan2: atan2(-0., -1.) = -pi); 0/0 and
    inf/inf handled apart, NaNs propagate."""
    dtype = (self + other).dtype  # torch.result_type (the unused sum is dead code)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    compute = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    y, x = self.to(compute), other.to(compute)
    a, b = y.abs(), x.abs()
    t = torch.atan(a / b)
    t = torch.where((a == 0) & (b == 0), torch.zeros_like(t), t)
    t = torch.where(torch.isinf(a) & torch.isinf(b), torch.full_like(t, 0.7853981633974483), t)
    r = torch.where(_negative(x), 3.141592653589793 - t, t)
    return torch.where(_negative(y), -r, r).to(dtype)


def _flash_attention_cpu(query, key, value, dropout_p=0.0, is_causal=False, attn_mask=None,
                         scale=None):
    """_scaled_dot_product_flash_attention_for_cpu (AOTAutograd's SDPA):
    (output, logsumexp of the scaled, masked scores over the keys)."""
    if dropout_p != 0.0:
        raise NotImplementedError("flash attention with dropout")
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask, 0.0,
                                                           is_causal, scale=scale)
    factor = scale if scale is not None else 1.0 / query.shape[-1] ** 0.5
    scores = torch.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        n, m = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(n, m, dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    return out, torch.logsumexp(scores.float(), -1)


def _gelu_backward(grad_output, self, approximate="none"):
    if approximate != "none":
        raise NotImplementedError("gelu_backward with the tanh approximation")
    cdf = 0.5 * (1 + torch.erf(self * 0.7071067811865476))
    pdf = torch.exp(-0.5 * self * self) * 0.3989422804014327
    return grad_output * (cdf + self * pdf)


def _threshold_backward(grad_output, self, threshold):
    return torch.where(self <= threshold, torch.zeros_like(grad_output), grad_output)


def _assert_tensor_metadata(a, size=None, stride=None, dtype=None, device=None, layout=None):
    """torch.export's metadata assertion, checked at capture on the graph's
    static sizes and dtype (strides are the compiled code's own)."""
    if dtype is not None and a.dtype != dtype:
        raise AssertionError(f"Tensor dtype mismatch: expected {dtype}, got {a.dtype}")
    if size is not None and list(a.shape) != list(size):
        raise AssertionError(f"Tensor size mismatch: expected {size}, got {a.shape}")
    return None


def _to_dtype_layout(self, dtype=None, layout=None, device=None, pin_memory=None,
                     non_blocking=False, copy=False, memory_format=None):
    if device is not None and torch.device(device) != self.device:
        raise NotImplementedError("to(device=...) moving to another device")
    r = self.to(dtype) if dtype is not None else self
    return r.clone() if copy else r


def _detach_(self):
    """In-place detach: nothing to do on a tensor without gradients."""
    if self.requires_grad:
        raise NotImplementedError("detach_ of a tensor that requires grad")
    return self


def _diff(self, n=1, dim=-1, prepend=None, append=None):
    parts = [t for t in (prepend, self, append) if t is not None]
    x = torch.cat(parts, dim) if len(parts) > 1 else self
    for _ in range(n):
        length = x.shape[dim] - 1
        if length < 0:
            break
        a, b = x.narrow(dim, 1, length), x.narrow(dim, 0, length)
        x = torch.logical_xor(a, b) if x.dtype == torch.bool else a - b
    return x


def _layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)


OVERLOADS = {
    "aten.layer_norm.default": _layer_norm,
    "aten.diff.default": _diff,
    "aten.to.dtype_layout": _to_dtype_layout,
    "aten.detach_.default": _detach_,
    "aten._assert_tensor_metadata.default": _assert_tensor_metadata,
    "aten.gelu_backward.default": _gelu_backward,
    "aten.threshold_backward.default": _threshold_backward,
    "aten._scaled_dot_product_flash_attention_for_cpu.default": _flash_attention_cpu,
    "aten.atan2.default": _atan2,
    "aten.asin.default": _asin,
    "aten.acos.default": _acos,
    "aten.atanh.default": _atanh,
    "aten.asinh.default": _asinh,
    "aten.acosh.default": _acosh,
    "aten.reflection_pad1d.default": _pad_mode("reflect"),
    "aten.reflection_pad2d.default": _pad_mode("reflect"),
    "aten.reflection_pad3d.default": _pad_mode("reflect"),
    "aten.replication_pad1d.default": _pad_mode("replicate"),
    "aten.replication_pad2d.default": _pad_mode("replicate"),
    "aten.replication_pad3d.default": _pad_mode("replicate"),
    "aten.native_group_norm.default": _native_group_norm,
    "aten.slice_scatter.default": _slice_scatter,
    "aten.sym_stride.int": _sym_stride,
    "aten._local_scalar_dense.default": _local_scalar_dense,
    "aten.empty_strided.default": _empty_strided,
    "aten.elu.default": _elu,
    "aten.hardtanh.default": _hardtanh,
    "aten.leaky_relu.default": _leaky_relu,
    "aten.embedding.default": _embedding,
    "aten.constant_pad_nd.default": _constant_pad_nd,
    "aten.upsample_nearest2d.vec": _upsample_nearest,
    "aten.upsample_bilinear2d.vec": _upsample_bilinear,
    "aten.native_dropout.default": _native_dropout,
    "aten._softmax.default": _softmax,
    "aten._log_softmax.default": _log_softmax,
    "aten._to_copy.default": _to_copy,
    "aten.slice.Tensor": _slice,
    "aten.alias.default": _alias,
    "aten.copy.default": _copy,
    "aten.expand.default": _expand,
    "aten.convolution.default": _convolution,
    "aten.native_layer_norm.default": _native_layer_norm,
    "aten._native_batch_norm_legit_no_training.default": _batch_norm_no_training,
    "aten.native_batch_norm.default": _batch_norm,
    "aten.batch_norm.default": _batch_norm_aten,
    "aten._native_batch_norm_legit.default": _batch_norm,
    "aten._native_batch_norm_legit_functional.default": _batch_norm_functional,
    "aten._adaptive_avg_pool2d.default": _adaptive_avg_pool2d,
    "aten.sym_size.int": _sym_size,
    "aten.sym_numel.default": _sym_numel,
    "aten.lift_fresh_copy.default": _lift_fresh_copy,
    "aten._unsafe_view.default": _unsafe_view,
    "aten.scalar_tensor.default": _scalar_tensor,
    "aten.split_with_sizes.default": _split_with_sizes,
    "aten.split.Tensor": _split,
    "prims.convert_element_type.default": _convert_element_type,
    "prims.broadcast_in_dim.default": _broadcast_in_dim,
}


# Overload families written in their own modules.
OVERLOADS.update(_NN)
OVERLOADS.update(_POOL)
OVERLOADS.update(_SCATTER)
OVERLOADS.update(_SORT)

# Overloads whose meta kernel disagrees with eager's CPU kernel on result
# sizes: their table entry is not checked against it and never falls back.
META_DIFFERS = {"aten.native_dropout.default",
                 "aten._native_batch_norm_legit_no_training.default",
                 "aten._native_batch_norm_legit.default", "aten.native_batch_norm.default",
                 "aten._native_batch_norm_legit_functional.default"}
# Overloads whose fallback would be wrong (meta result sizes differ from
# eager's, data-dependent).
REFUSED = {"aten._embedding_bag.default": "its result sizes depend on the data",
            "aten._embedding_bag_forward_only.default": "its result sizes depend on the data"}
