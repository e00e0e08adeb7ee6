# SPDX-License-Identifier: Apache-2.0
"""Sorting and integer bitwise ATen overloads composed from ops kiln lowers.

``sort``, ``topk`` and ``randperm``: each element's rank along the dim is
the number of elements ordered before it (a pairwise comparison, dim x dim
per row), which gives eager's stable order exactly: ties keep their index
order, NaNs sort after every number (before, descending) and among
themselves by index, ``-0.0`` ties ``0.0``. The permutation is read back
by matching ranks with positions, then the values gathered. ``topk`` with a
small k selects instead: k rounds of the greatest element not yet taken.
Equal values in ``topk`` may come in another index order than eager's (its
order of ties is unspecified and differs between its kernels). Rows longer
than ``_SORT_LIMIT`` raise NotImplementedError (the per-op fallback runs
them: the comparison grows with the square of the row).

``bitwise_and/or/xor/not`` on integers: ``and`` from the operands' 4-bit
digits (``floor_divide`` by 16, then a 16 x 16 table of digit ands), ``or`` and
``xor`` from the identities ``a + b = (a ^ b) + 2 (a & b) = (a | b) +
(a & b)`` in wrapping integer arithmetic, ``not a = -1 - a``. Bool operands
go to the torch-level ops kiln maps.
"""
import torch

_SORT_LIMIT = 2048
# topk with k up to this many rounds of selection (k x dim) instead of a sort
_SELECT_K = 16


def _ranks(a, descending):
    """Each element's position in the stable order along the last dim: the
    numbers before it (greater or less, then equal at a lower index) by
    pairwise comparison; NaN compares false there, so NaNs (after the
    numbers, before them descending, in index order) are ranked apart
    with a running count."""
    n = a.shape[-1]
    pos = torch.arange(n)
    ai, aj = a.unsqueeze(-1), a.unsqueeze(-2)
    earlier = pos.unsqueeze(-2) < pos.unsqueeze(-1)  # [i, j]: j < i
    before = (aj > ai) if descending else (aj < ai)
    rank = (before | ((aj == ai) & earlier)).sum(-1)
    if not a.is_floating_point():
        return rank
    nan = torch.isnan(a)
    nans_before = torch.cumsum(nan.to(torch.int64), -1) - 1
    count = nan.sum(-1, keepdim=True)
    if descending:
        return torch.where(nan, nans_before, rank + count)
    return torch.where(nan, (n - count) + nans_before, rank)


def _sorted_last(a, descending):
    """(values, indices) of ``a`` sorted along its last dim, stably."""
    n = a.shape[-1]
    if n > _SORT_LIMIT:
        raise NotImplementedError(f"sort of rows longer than {_SORT_LIMIT}")
    keys = a.to(torch.int32) if a.dtype == torch.bool else a
    rank = _ranks(keys, descending)
    pos = torch.arange(n)
    at = rank.unsqueeze(-2) == pos.unsqueeze(-1)  # at[..., k, i]: element i goes to k
    order = torch.where(at, pos, 0).sum(-1)
    return torch.gather(a, -1, order), order


def sort(self, dim=-1, descending=False):
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64)
    values, order = _sorted_last(self.movedim(dim, -1), descending)
    return values.movedim(-1, dim), order.movedim(-1, dim)


def _select_last(a, k, largest):
    """topk of ``a`` along its last dim by k rounds of selection (the
    greatest element not yet taken, NaN greatest, the first of equals)."""
    n = a.shape[-1]
    pos = torch.arange(n)
    taken = torch.zeros(a.shape, dtype=torch.bool)
    bound = float("-inf") if largest else float("inf")
    if not a.is_floating_point():
        info = torch.iinfo(a.dtype)
        bound = info.min if largest else info.max
    values, order = [], []
    nan = torch.isnan(a) if a.is_floating_point() else None
    for _ in range(k):
        if largest:  # amax propagates NaN: NaN is the greatest
            best = torch.where(taken, bound, a).amax(-1, keepdim=True)
        else:  # the least number left; NaN only when nothing else is left
            best = torch.where(taken | nan, bound, a).amin(-1, keepdim=True) \
                if nan is not None else torch.where(taken, bound, a).amin(-1, keepdim=True)
            if nan is not None:
                numbers = (~taken & ~nan).any(-1, keepdim=True)
                best = torch.where(numbers, best, float("nan"))
        same = a == best
        if nan is not None:
            same = same | (nan & torch.isnan(best))
        first = torch.where(same & ~taken, pos, n).amin(-1, keepdim=True)
        values.append(best)
        order.append(first)
        taken = taken | (pos == first)
    return torch.cat(values, -1), torch.cat(order, -1)


def topk(self, k, dim=-1, largest=True, sorted=True):
    if not sorted:
        raise NotImplementedError("topk(sorted=False): eager's order is unspecified")
    if self.dim() == 0:
        return sort(self, dim, largest)
    a = self.movedim(dim, -1)
    if 0 < k <= _SELECT_K and a.shape[-1] > 0 and a.dtype != torch.bool:
        values, order = _select_last(a, k, largest)
    else:
        values, order = _sorted_last(a, largest)
        values, order = values.narrow(-1, 0, k), order.narrow(-1, 0, k)
    return values.movedim(-1, dim), order.movedim(-1, dim)


def randperm(n, dtype=torch.int64, layout=None, device=None, pin_memory=None):
    keys = torch.rand(n, dtype=torch.float64)
    return _sorted_last(keys, False)[1].to(torch.int64 if dtype is None else dtype)


def _bits(dtype):
    info = torch.iinfo(dtype)
    return info.bits, info.min < 0


def _nibbles(a):
    """a's 4-bit digits, low first, each in [0, 16) as int64 (floor division
    keeps two's complement digits for negative values)."""
    width, _ = _bits(a.dtype)
    q = a.to(torch.int64)
    digits = []
    for _ in range(width // 4):
        n = torch.floor_divide(q, 16)
        digits.append(q - 16 * n)
        q = n
    return digits


def _from_nibbles(parts, like):
    """sum(part_k << 4k) in ``like``'s dtype (the top digit wraps into the
    sign, as integer arithmetic does)."""
    out = torch.zeros_like(like)
    for k, p in enumerate(parts):
        if p is not None:
            out = out + p.to(like.dtype) * (1 << 4 * k)
    return out


_AND4 = [i & j for i in range(16) for j in range(16)]


def _and_int(a, b):
    """a & b for integer tensors of one dtype (broadcasting): a 16 x 16
    table of 4-bit ands, read per digit."""
    a, b = torch.broadcast_tensors(a, b)
    table = torch.tensor(_AND4, dtype=torch.int64)
    parts = [table[x * 16 + y] for x, y in zip(_nibbles(a), _nibbles(b))]
    return _from_nibbles(parts, a)


def _and_const(a, c):
    """a & c for an integer tensor and a Python int: c's digits known."""
    parts = []
    for k, x in enumerate(_nibbles(a)):
        d = c >> 4 * k & 15
        if d == 0:
            parts.append(None)
        elif d == 15:
            parts.append(x)
        else:
            parts.append(torch.tensor([i & d for i in range(16)], dtype=torch.int64)[x])
    return _from_nibbles(parts, a)


def _operands(self, other):
    """(self, other) in the result dtype of the bitwise op, or None when the
    result is bool (the torch-level op kiln maps handles it)."""
    other_bool = other.dtype == torch.bool if isinstance(other, torch.Tensor) \
        else isinstance(other, bool)
    if self.dtype == torch.bool and other_bool:
        return None
    dtype = (self + other).dtype  # torch.result_type (the unused sum is dead code)
    if dtype.is_floating_point:
        raise NotImplementedError("bitwise op on floating-point values")
    if isinstance(other, torch.Tensor):
        return self.to(dtype), other.to(dtype), dtype
    return self.to(dtype), int(other), dtype


def _bitwise(name, combine):
    def run(self, other):
        ops = _operands(self, other)
        if ops is None:
            return getattr(torch, name)(self, other)
        a, b, _ = ops
        both = _and_const(a, b) if isinstance(b, int) else _and_int(a, b)
        return combine(a, b, both)
    return run


def bitwise_not(self):
    if self.dtype == torch.bool:
        return torch.logical_not(self)
    if self.dtype.is_floating_point:
        raise NotImplementedError("bitwise_not of floating-point values")
    width, signed = _bits(self.dtype)
    return (-1 if signed else (1 << width) - 1) - self


OVERLOADS = {
    "aten.sort.default": sort,
    "aten.topk.default": topk,
    "aten.randperm.default": randperm,
    "aten.bitwise_and.Tensor": _bitwise("bitwise_and", lambda a, b, both: both),
    "aten.bitwise_and.Scalar": _bitwise("bitwise_and", lambda a, b, both: both),
    "aten.bitwise_or.Tensor": _bitwise("bitwise_or", lambda a, b, both: a + b - both),
    "aten.bitwise_or.Scalar": _bitwise("bitwise_or", lambda a, b, both: a + b - both),
    "aten.bitwise_xor.Tensor": _bitwise("bitwise_xor", lambda a, b, both: a + b - 2 * both),
    "aten.bitwise_xor.Scalar": _bitwise("bitwise_xor", lambda a, b, both: a + b - 2 * both),
    "aten.bitwise_not.default": bitwise_not,
}
