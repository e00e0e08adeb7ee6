# SPDX-License-Identifier: Apache-2.0
"""Operator-level calls: ``torch.ops.<ns>.<op>[.<overload>](...)`` in captured code.

The capture (frontend/csrc/capture/ops/AtenOps.cpp) meets an OpOverload or
OpOverloadPacket object as a callee (a constant read through its attribute
chain, so guarded by identity like any global) and asks ``plan`` what to do
with it, once per overload:

Each plan is ``(how, target, drops, returns_list)``; ``returns_list``: the
overload returns a list (``Tensor[]``, ``int[]``: a list in eager;
torch-level targets may return a tuple or a torch.Size).

- ``("inline", target, drops)``: call ``target`` with the same arguments as a
  torch-level call the capture already maps or inlines. Targets, in order:
  the overload table below (``OVERLOADS``: overloads whose torch-level
  spelling differs, each written once with the overload's exact schema
  semantics), the torch builtin of the same name (``torch.X``,
  ``torch._C._nn.X``, ``torch._C._special.X`` ...: Python's binding of the
  very same ATen overloads, so the same arguments select the same kernel)
  when kiln's op registry maps it, the canonical overload of an alias
  (``divide`` → ``div``), the ``torch.nn.functional`` function of the same
  name and parameters (``silu``, ``glu``), the Tensor method of the same name
  (``("method", name, drops)``: ``view``, in-place ``add_``), then torch's decomposition
  (``torch._decomp``) inlined as Python. ``drops``: keywords whose value is
  the schema's default and that torch-level calls need not see
  (``layout=torch.strided``, ``pin_memory=False`` ...). The C++ side checks
  the result's sizes and dtypes against the overload's own meta kernel, and
  runs the overload through the per-op fallback when the target breaks or
  disagrees: never silently different.
- ``("trusted", target, drops)``: a table entry for an overload whose meta
  kernel disagrees with eager's CPU kernel (batch norm's saved statistics in
  eval mode): not checked, and a break rather than a fallback on failure.
- ``("method", name, drops)``: Tensor method ``name`` on the first argument.
- ``("out", functional, ())``: an ``out=`` overload: ``functional`` (the
  overload with the same arguments but ``out``) computed, then stored.
``quantized_decomposed`` overloads (PT2E's quantize/dequantize) inline the
Python kernel torch registers for them (torch.ao.quantization.fx._decomposed).

- ``("fallback", None, ())``: the overload itself through the per-op fallback
  (kiln/_fallback.py: meta shapes; random, mutating and data-dependent
  overloads are refused there, naming the overload).
- ``("break", (category, reason), ())``: a graph break naming the overload
  (a custom op with no fake kernel, a mutating custom op).

``kind(op)`` classifies an overload for ``python -m kiln.coverage --aten``.
"""
from __future__ import annotations

import types

import torch

_aten = torch.ops.aten
_OPS_TYPES = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)

# Keywords of factory/conversion schemas whose default values torch-level
# calls may omit.
_DROPPABLE = (("layout", None), ("layout", torch.strided), ("pin_memory", None),
              ("pin_memory", False), ("memory_format", None), ("non_blocking", False),
              ("device", None), ("dtype", None), ("implicit", False))

# ---------------------------------------------------------------------------
# The overload table: ATen overloads whose torch-level spelling differs.
# ---------------------------------------------------------------------------


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


def _slice(self, dim=0, start=None, end=None, step=1):
    if dim < 0:
        dim = dim + self.dim()
    index = [slice(None)] * dim
    index.append(slice(start, end, step))
    return self[tuple(index)]


def _index(self, indices):
    index = []
    for i in indices:
        if i is None:
            index.append(slice(None))
        else:
            index.append(i)
    return self[tuple(index)]


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


def _max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1,
                             ceil_mode=False):
    return torch.nn.functional.max_pool2d(self, kernel_size, stride or None, padding, dilation,
                                          ceil_mode, True)


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
    return torch.nn.functional.embedding(indices, weight)


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
    if dim < 0:
        dim = dim + self.dim()
    index = [slice(None)] * dim
    index.append(slice(start, end, step))
    out = self.clone()
    out[tuple(index)] = src
    return out


def _index_put(self, indices, values, accumulate=False):
    if accumulate:
        raise NotImplementedError("index_put with accumulate=True")
    index = []
    for i in indices:
        if i is None:
            index.append(slice(None))
        else:
            index.append(i)
    out = self.clone()
    out[tuple(index)] = values
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


OVERLOADS = {
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
    "aten.index_put.default": _index_put,
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
    "aten.index.Tensor": _index,
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
    "aten.max_pool2d_with_indices.default": _max_pool2d_with_indices,
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

# prims whose torch builtin of the same name computes the same values for
# every input the prim accepts (prims.div truncates integers: not listed).
_PRIMS_SAME_NAME = {
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "erf",
    "exp", "expm1", "floor", "ceil", "log", "log1p", "log2", "log10", "neg", "sin", "sinh",
    "sqrt", "rsqrt", "tan", "tanh", "sign", "add", "sub", "mul", "maximum", "minimum", "eq", "ne",
    "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "where",
    "permute", "clone", "reciprocal", "round", "trunc", "digamma", "lgamma", "erfc", "exp2",
    "sigmoid", "pow", "fmod", "hypot", "nextafter", "imag", "real", "isfinite", "signbit",
}

_MODULES = (torch, torch._C._nn, torch._C._special, torch._C._linalg, torch._C._fft)
_mapped = None


def _mapped_callables():
    """ids of the torch callables and the Tensor method names kiln's op
    registry maps (kiln._C.mapped_ops())."""
    global _mapped
    if _mapped is None:
        from kiln import _C
        raw = _C.mapped_ops()
        ids = set()
        for module, name, _ in raw["functions"]:
            mod = __import__(module, fromlist=["_"])
            obj = getattr(mod, name, None)
            if obj is not None:
                ids.add(id(obj))
        methods = {n for n, _, _ in raw["methods"]}
        methods |= {n + "_" for n, _, inplace in raw["methods"] if inplace}
        _mapped = (ids, methods)
    return _mapped


def _same_name_function(op):
    """The torch builtin binding ``op``'s ATen packet, or None."""
    ns, name = op.namespace, op._schema.name.split("::")[-1]
    if ns == "prims":
        return getattr(torch, name, None) if name in _PRIMS_SAME_NAME else None
    if ns != "aten":
        return None
    for mod in _MODULES:
        fn = getattr(mod, name, None)
        if isinstance(fn, types.BuiltinFunctionType):
            return fn
    return None


# ATen alias packets (the same kernels under another name).
_ALIASES = {"divide": "div", "multiply": "mul", "subtract": "sub", "true_divide": "div",
            "absolute": "abs", "clip": "clamp", "greater": "gt", "greater_equal": "ge",
            "less": "lt", "less_equal": "le", "not_equal": "ne", "negative": "neg",
            "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arctan2": "atan2",
            "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc",
            "concat": "cat", "concatenate": "cat", "swapaxes": "transpose",
            "swapdims": "transpose", "moveaxis": "movedim", "special_expit": "sigmoid",
            "special_exp2": "exp2", "special_expm1": "expm1", "special_log1p": "log1p",
            "special_round": "round", "special_sinc": "sinc", "special_logit": "logit",
            "special_erf": "erf", "special_erfc": "erfc", "special_psi": "digamma",
            "special_digamma": "digamma", "special_gammaln": "lgamma"}


def _alias_of(op):
    """The overload of the canonical packet an alias overload names (same
    overload name and arguments), or None."""
    name = op._schema.name.split("::")[-1]
    canonical = _ALIASES.get(name)
    if op.namespace != "aten" or canonical is None:
        return None
    other = getattr(getattr(_aten, canonical), op._overloadname, None)
    if other is None:
        return None
    same = [(a.name, str(a.type)) for a in other._schema.arguments] == \
        [(a.name, str(a.type)) for a in op._schema.arguments]
    return other if same else None


def _functional_twin(op, ids):
    """``torch.nn.functional.<name>`` when kiln maps it and its positional
    parameters are the overload's (``self`` as ``input``), else None."""
    import inspect
    name = op._schema.name.split("::")[-1]
    fn = getattr(torch.nn.functional, name, None)
    if op.namespace != "aten" or fn is None or id(fn) not in ids:
        return None
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    names = ["input" if a.name == "self" else a.name for a in op._schema.arguments]
    if any(str(a.type) == "int" and a.name == "reduction" for a in op._schema.arguments):
        return None  # ATen's reduction is an enum int, F's a string
    return fn if params[:len(names)] == names else None


def _decomposition(op):
    try:
        from torch._decomp import decomposition_table
    except ImportError:  # pragma: no cover - torch without _decomp
        return None
    d = decomposition_table.get(op)
    # torch._refs entries sit behind a torch._dynamo.disable wrapper the
    # capture cannot enter: not worth a failed trace before the fallback.
    if d is None or (getattr(d, "__module__", "") or "").startswith("torch._refs"):
        return None
    return d


def _quantized_decomposed(op):
    """The Python kernel torch registers for a ``quantized_decomposed``
    overload (torch.ao.quantization.fx._decomposed: ``quantize_per_tensor``,
    ``quantize_per_tensor_tensor`` ...: PT2E's q/dq ops), or None."""
    try:
        import torch.ao.quantization.fx._decomposed as qd
    except ImportError:  # pragma: no cover - torch without torch.ao
        return None
    name = op._schema.name.split("::")[-1]
    if op._overloadname != "default":
        name = f"{name}_{op._overloadname}"
    fn = getattr(qd, name, None)
    return fn if isinstance(fn, types.FunctionType) else None


def _is_custom(op):
    return op.namespace not in ("aten", "prims", "quantized_decomposed", "quantized")


def _custom_plan(op):
    name = op._schema.name
    if op._schema.is_mutable:
        return ("break", ("side-effect", f"custom op {op} mutates its arguments"), ())
    has_meta = any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k)
                   for k in ("Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd"))
    if not has_meta:
        return ("break", ("unsupported-op",
                          f"custom op {op} has no fake (meta) kernel: register one with "
                          "torch.library.register_fake to run it inside compiled graphs"), ())
    return ("fallback", None, ())


_plans: dict = {}


def plan(op):
    """What the capture does with a call of OpOverload ``op`` (module doc)."""
    p = _plans.get(op)
    if p is None:
        returns = op._schema.returns
        as_list = len(returns) == 1 and str(returns[0].type).startswith("List[")
        p = _plans[op] = _plan(op) + (as_list,)
    return p


# Overloads whose meta kernel disagrees with eager's CPU kernel on result
# sizes: their table entry is not checked against it and never falls back.
_META_DIFFERS = {"aten.native_dropout.default",
                 "aten._native_batch_norm_legit_no_training.default",
                 "aten._native_batch_norm_legit.default", "aten.native_batch_norm.default",
                 "aten._native_batch_norm_legit_functional.default"}
# Overloads whose fallback would be wrong (meta result sizes differ from
# eager's, data-dependent).
_REFUSED = {"aten._embedding_bag.default": "its result sizes depend on the data",
            "aten._embedding_bag_forward_only.default": "its result sizes depend on the data"}


def _out_functional(op):
    """The functional overload an ``out=`` overload computes into ``out``
    (same arguments without the out ones), or None."""
    args = op._schema.arguments
    outs = [a for a in args if a.is_out]
    if len(outs) != 1 or outs[0].name != "out":
        return None
    want = [(a.name, str(a.type)) for a in args if not a.is_out]
    packet = getattr(torch.ops, op.namespace)
    packet = getattr(packet, op._schema.name.split("::")[-1])
    for name in packet.overloads():
        other = getattr(packet, name)
        if other is not op and [(a.name, str(a.type)) for a in other._schema.arguments] == want:
            return other
    return None


def _plan(op):
    if _is_custom(op):
        return _custom_plan(op)
    key = str(op)
    if key in _REFUSED:
        return ("break", ("data-dependent", f"{op}: {_REFUSED[key]}"), ())
    if key in OVERLOADS:
        return ("trusted" if key in _META_DIFFERS else "inline", OVERLOADS[key], _DROPPABLE)
    if op.namespace == "quantized_decomposed":
        fn = _quantized_decomposed(op)
        return ("inline", fn, ()) if fn is not None else ("fallback", None, ())
    if any(a.is_out for a in op._schema.arguments):
        functional = _out_functional(op)
        if functional is not None:
            return ("out", functional, ())
        return ("fallback", None, ())
    name = op._schema.name.split("::")[-1]
    if op._schema.is_mutable and not name.endswith("_"):
        return ("break", ("side-effect", f"{op} mutates its arguments"), ())
    ids, methods = _mapped_callables()
    fn = _same_name_function(op)
    if fn is not None and id(fn) in ids:
        return ("inline", fn, _DROPPABLE)
    alias = _alias_of(op)
    if alias is not None:
        return plan(alias)[:3]
    twin = _functional_twin(op, ids)
    if twin is not None:
        return ("inline", twin, _DROPPABLE)
    if op.namespace == "aten" and name in methods and _first_is_self(op):
        return ("method", name, _DROPPABLE)
    decomp = _decomposition(op)
    if decomp is not None:
        return ("inline", decomp, ())
    return ("fallback", None, ())


def _first_is_self(op):
    args = op._schema.arguments
    return bool(args) and args[0].name == "self" and not args[0].kwarg_only


def resolve_packet(packet, args, kwargs):
    """The overload of ``packet`` torch would pick for these arguments (meta
    tensors standing in for graph tensors); None when none matches."""
    try:
        name = torch._C._jit_resolve_packet(packet._qualified_op_name, *args, **kwargs)
    except Exception:  # noqa: BLE001 - no overload accepts them
        return None
    return getattr(packet, name or "default", None)


def meta_result(op, args, kwargs):
    """((sizes, dtype) or None per result) of ``op`` run on meta tensors, or
    None when it does not run there (the check is then skipped)."""
    try:
        with torch.no_grad():
            out = op(*args, **kwargs)
    except Exception:  # noqa: BLE001 - no meta kernel, data-dependent ...
        return None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple((tuple(o.shape), o.dtype) if isinstance(o, torch.Tensor) else None
                 for o in outs)


def _custom_op_def_type():
    try:
        from torch._library.custom_ops import CustomOpDef
    except ImportError:  # pragma: no cover - torch without torch.library.custom_op
        return ()
    return (CustomOpDef,)


# What the capture treats as an operator object (AtenOps.cpp).
OPERATOR_TYPES = _OPS_TYPES + _custom_op_def_type()


def as_overload(obj):
    """The OpOverload (or packet) behind operator object ``obj``."""
    if isinstance(obj, _OPS_TYPES):
        return obj
    return getattr(obj, "_opoverload", None)


def kind(op):
    """'lowered', 'decomposed', 'fallback' or 'unsupported' (static: what
    ``plan`` chose; the measured run is kiln.coverage --aten --measure)."""
    how, target = plan(op)[:2]
    if how == "break":
        return "unsupported"
    if how == "fallback":
        return "fallback"
    if how == "out":
        return kind(target)
    if target is _decomposition(op) and str(op) not in OVERLOADS:
        return "decomposed"
    return "lowered"
