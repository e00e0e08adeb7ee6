# SPDX-License-Identifier: Apache-2.0
"""Control flow and shapes: branches on tensor data and on shapes, loops
with early exit, shape arithmetic (view/reshape/size products, ``//``,
``%``), padding to a multiple, ``torch.where``, dtype mixes and
promotions, empty tensors, ``assert`` on shapes."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from capture_corpus._case import case, randn


def _x(n):
    return (randn(n, 8),)


@case("control", _x)
def branch_on_sum(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


@case("control", _x)
def branch_on_any_nan(x):
    if torch.isnan(x).any():
        x = torch.nan_to_num(x)
    return x.softmax(-1)


@case("control", _x)
def branch_on_shape(x):
    if x.shape[0] > 4:
        return x[:4]
    return F.pad(x, (0, 0, 0, 4 - x.shape[0]))


@case("control", _x)
def branch_on_ndim(x):
    if x.dim() == 2:
        x = x.unsqueeze(0)
    return x.sum(0)


@case("control", _x)
def branch_on_dtype(x):
    if x.dtype == torch.float16:
        return x.float()
    elif x.is_floating_point():
        return x * 0.5
    return x


@case("control", _x)
def branch_on_max_item(x):
    m = x.abs().max().item()
    scale = 1.0 / m if m > 1e-6 else 1.0
    return x * scale


@case("control", _x)
def while_loop_data_dependent(x):
    i = 0
    while x.norm() > 1.0 and i < 20:
        x = x * 0.5
        i += 1
    return x, i


@case("control", _x)
def loop_break_on_shape(x):
    out = x
    for k in range(10):
        if out.shape[0] <= 1:
            break
        out = out[::2] + out[1::2] if out.shape[0] % 2 == 0 else out[1:]
    return out


@case("control", _x)
def where_select(x):
    return torch.where(x > 0, x, torch.zeros_like(x)) + torch.where(x < -1, -1.0, 0.0)


@case("control", _x)
def clamp_by_python_min_max(x):
    lo, hi = -0.5, 0.5
    return x.clamp(min(lo, hi), max(lo, hi))


@case("control", _x)
def shape_arith_reshape(x):
    b, d = x.shape
    return x.reshape(b * d // 4, 4).t().reshape(-1)


@case("control", _x)
def size_numel_product(x):
    n = x.numel()
    total = math.prod(x.shape)
    return x.view(-1)[: n // 2] * (total == n)


@case("control", lambda n: (randn(2, n, 3),))
def pad_to_multiple(x, multiple=4):
    seq_len = x.shape[1]
    pad_len = (multiple - seq_len % multiple) % multiple
    if pad_len > 0:
        x = F.pad(x, (0, 0, 0, pad_len), value=0.0)
    return x, pad_len


@case("control", lambda n: (randn(2, n * 2, 3),))
def unfold_windows(x, size=2):
    return x.unfold(1, size, size).mean(-1)


@case("control", _x)
def assert_shape(x):
    assert x.ndim == 2, "expected a matrix"
    assert x.shape[1] == 8, f"got {x.shape}"
    return x.sum(1)


@case("control", _x)
def empty_slice(x):
    e = x[x.shape[0]:]
    return e.sum(0), e.shape


@case("control", _x)
def split_sizes_python(x):
    n = x.shape[0]
    sizes = [n // 2, n - n // 2]
    a, b = torch.split(x, sizes)
    return a.mean(0) - b.mean(0)


@case("control", _x)
def dtype_int_float_mix(x):
    i = torch.arange(x.shape[0])
    return x * i[:, None] + i.sum() / 3


@case("control", _x)
def dtype_bool_arith(x):
    m = x > 0
    return m.sum(), m.float().mean(), (m & (x < 1)).int()


@case("control", lambda n: (randn(n, 8, dtype=torch.float64), randn(n, 8)))
def dtype_double_float_promotion(a, b):
    return a + b, (a * b).dtype


@case("control", lambda n: (randn(n, 8).half(),))
def dtype_half_upcast(x):
    return x.float().softmax(-1).to(x.dtype)


@case("control", lambda n: (randn(n, 8).to(torch.bfloat16),))
def dtype_bf16_matmul(x):
    return (x @ x.t()).float()


@case("control", lambda n: (torch.randint(0, 10, (n, 8)),))
def int_division_semantics(x):
    return x // 3, x % 3, torch.div(x, 3, rounding_mode="floor"), x / 3


@case("control", lambda n: (torch.randint(-10, 10, (n, 8)),))
def int_negative_floor_div(x):
    return x // 4, torch.remainder(x, 4), torch.fmod(x, 4)


@case("control", _x)
def scalar_tensor_promotion(x):
    s = torch.tensor(2, dtype=torch.int64)
    return x * s, (s + 1.5).dtype


@case("control", lambda n: (randn(n, 8), torch.tensor(1.5, dtype=torch.float64)))
def zero_dim_double_with_float(x, s):
    return x * s


@case("control", _x)
def nonzero_dynamic(x):
    idx = torch.nonzero(x > 0.5)
    return idx.shape[0], x[x > 0.5].sum()


@case("control", _x)
def boolean_mask_select(x):
    return x[x.sum(1) > 0]


@case("control", _x)
def unique_counts(x):
    vals, counts = torch.unique((x > 0).int(), return_counts=True)
    return vals, counts


@case("control", _x)
def ternary_chain(x, mode="mean"):
    return x.mean() if mode == "mean" else x.sum() if mode == "sum" else x.max()


@case("control", _x, kwargs=lambda n: {"mode": "sum" if n > 4 else "max"})
def mode_string_switch(x, mode="mean"):
    if mode == "mean":
        return x.mean(0)
    elif mode == "sum":
        return x.sum(0)
    elif mode == "max":
        return x.max(0).values
    raise ValueError(mode)


@case("control", _x)
def max_with_indices_fields(x):
    r = torch.max(x, dim=1)
    return r.values * 2, r.indices


@case("control", _x)
def topk_named(x):
    res = x.topk(3, dim=-1)
    return res.values.sum(-1), res.indices[:, 0]


@case("control", _x)
def sort_then_gather(x):
    s, i = x.sort(dim=0, descending=True)
    return s[:2], torch.gather(x, 0, i[:2])


@case("control", lambda n: (randn(2, 3, n),))
def transpose_3d_t_error(x):
    return x.t()


@case("control", lambda n: (randn(n, 0),))
def amax_empty_dim_error(x):
    return x.amax(dim=1)


@case("control", lambda n: (randn(n, 8) > 0, randn(n, 8) > 0))
def bool_subtract_error(a, b):
    return a - b


@case("control", lambda n: (randn(n, 8, dtype=torch.float64), randn(8, 3)))
def matmul_dtype_mismatch_error(a, b):
    return a @ b


@case("control", _x)
def cumulative_ops(x):
    return x.cumsum(0), x.cumprod(1)[:, -1], torch.logcumsumexp(x, 0)


@case("control", _x)
def reductions_keepdim(x):
    return x.std(0, keepdim=True), x.var(1), x.logsumexp(1), x.norm(dim=1, p=1)


@case("control", _x)
def view_as_real_complex(x):
    c = torch.view_as_complex(x.reshape(x.shape[0], 4, 2).contiguous())
    return torch.view_as_real(c * c).flatten(1)


@case("control", _x)
def stride_contiguity(x):
    y = x.t()
    return y.is_contiguous(), y.contiguous().stride(), y.stride()


@case("control", lambda n: (randn(n, 8),))
def expand_as_and_broadcast(x):
    bias = torch.arange(8.0)
    return bias.expand_as(x) + x, torch.broadcast_shapes(x.shape, (1, 8))


@case("control", lambda n: (randn(n, 8),))
def new_ones_full_like(x):
    return x.new_ones(x.shape[0]), torch.full_like(x, 3.0), x.new_tensor([1.0, 2.0])
