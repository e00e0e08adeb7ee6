# SPDX-License-Identifier: Apache-2.0
"""Scatter-style ATen overloads composed from ops kiln lowers.

``scatter`` (``.src``/``.value``), ``scatter_add``, ``scatter_reduce.two``,
``index_put`` (with and without ``accumulate``; integer index tensors, or
one bool mask), ``select_scatter``,
``masked_scatter`` and ``embedding_dense_backward`` written as entries of
the overload table (kiln/_aten_table.py): each write is found by comparing
the index with an ``arange`` of the written dim (a one-hot match of shape
index x dim), then selected (``where``) or reduced (``sum``/``prod``/
``amax``/``amin``) over the index positions. Exact, with eager's rules:
the last write wins where an index repeats (eager's CPU order), NaNs
propagate through ``amax``/``amin``, integer ``mean`` goes to the per-op
fallback (kiln divides integers by constants only), and an
index out of range raises eager's error (an unused ``gather`` on the index
makes the graph check it, capture/ops/IndexChecks.cpp). The match costs
index x dim elements (times the trailing size for accumulations): above
``_LIMIT`` elements an entry raises NotImplementedError and the overload
runs through the per-op fallback instead.
"""
import torch

_LIMIT = 1 << 24


def _check_size(*sizes):
    n = 1
    for s in sizes:
        n *= max(int(s), 1)
    if n > _LIMIT:
        raise NotImplementedError("scatter match larger than kiln's one-hot limit")


def _prefix(t, shape):
    """t[:shape[0], :shape[1], ...]: the leading region of ``shape``."""
    return t[tuple(slice(0, k) for k in shape)]


def _into(full, part):
    """``full`` with its leading region replaced by ``part`` (same rank)."""
    if tuple(part.shape) == tuple(full.shape):
        return part
    pad, mask = [], torch.ones(part.shape, dtype=torch.bool)
    for k, n in zip(reversed(part.shape), reversed(full.shape)):
        pad += [0, n - k]
    grown = torch.nn.functional.pad(part, pad)
    inside = torch.nn.functional.pad(mask, pad)
    return torch.where(inside, grown, full)


def _match(self, dim, index):
    """(self with dim last, index with dim last, match[..., j, r]: index j
    writes row r) over index's leading region."""
    s = self.movedim(dim, -1)
    idx = index.movedim(dim, -1)
    n = s.shape[-1]
    _check_size(idx.numel(), n)
    sub = _prefix(s, tuple(idx.shape[:-1]) + (n,))
    torch.gather(sub, -1, idx)  # eager's index range error (the graph's check)
    match = idx.unsqueeze(-1) == torch.arange(n)
    return s, sub, match


def _last_write(match):
    """(hit[..., r], j[..., r]): whether any index writes row r, and the last
    index position that does."""
    m = match.shape[-2]
    pos = torch.arange(m).unsqueeze(-1)
    last = torch.where(match, pos, -1).amax(-2)
    return last >= 0, last.clamp(0)


def _finish(self, dim, s, new_sub):
    return _into(s, new_sub).movedim(-1, dim)


def _as_1d(fn):
    """Runs ``fn(self, dim, index, src, ...)`` on 1-d views of 0-d tensors."""
    def run(self, dim, index, src, *rest):
        if self.dim() > 0:
            return fn(self, dim, index, src, *rest)
        src = src.reshape(1) if isinstance(src, torch.Tensor) else src
        return fn(self.reshape(1), 0, index.reshape(1), src, *rest).reshape(())
    return run


@_as_1d
def _scatter_src(self, dim, index, src):
    if index.numel() == 0:
        return self.clone()
    s, sub, match = _match(self, dim, index)
    hit, last = _last_write(match)
    source = _prefix(src.movedim(dim, -1), index.movedim(dim, -1).shape).to(self.dtype)
    picked = torch.gather(source, -1, last)
    return _finish(self, dim, s, torch.where(hit, picked, sub))


def scatter_value(self, dim, index, value):
    if index.numel() == 0:
        return self.clone()
    return _scatter_src(self, dim, index, torch.full(index.shape, value, dtype=self.dtype))


def scatter_src(self, dim, index, src):
    return _scatter_src(self, dim, index, src)


def _identity(reduce, dtype):
    if reduce == "prod":
        return 1
    if reduce in ("sum", "mean"):
        return 0
    big = float("inf") if dtype.is_floating_point else torch.iinfo(dtype).max
    return -big if reduce == "amax" else big


@_as_1d
def _scatter_reduce(self, dim, index, src, reduce, include_self=True):
    if index.numel() == 0:
        return self.clone()
    if reduce == "mean" and not self.dtype.is_floating_point:
        raise NotImplementedError("integer scatter_reduce mean (kiln's integer division "
                                  "by a tensor runs through torch)")
    s, sub, match = _match(self, dim, index)
    _check_size(match.numel(), 1)
    source = _prefix(src.movedim(dim, -1), index.movedim(dim, -1).shape).to(self.dtype)
    spread = torch.where(match, source.unsqueeze(-1), _identity(reduce, self.dtype))
    if reduce in ("sum", "mean"):
        total = spread.sum(-2)
    elif reduce == "prod":
        total = spread.prod(-2)
    elif reduce == "amax":
        total = spread.amax(-2)
    elif reduce == "amin":
        total = spread.amin(-2)
    else:
        raise NotImplementedError(f"scatter_reduce with reduce={reduce!r}")
    hit = match.any(-2)
    if include_self:
        combine = {"sum": torch.add, "mean": torch.add, "prod": torch.mul,
                   "amax": torch.maximum, "amin": torch.minimum}[reduce]
        total = combine(sub, total)
    if reduce == "mean":
        count = match.sum(-2) + (1 if include_self else 0)
        count = count.clamp(1).to(self.dtype)
        total = total / count
    return _finish(self, dim, s, torch.where(hit, total.to(self.dtype), sub))


def scatter_add(self, dim, index, src):
    return _scatter_reduce(self, dim, index, src, "sum", True)


def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    return _scatter_reduce(self, dim, index, src, reduce, include_self)


def select_scatter(self, src, dim, index):
    n = self.shape[dim]
    at = torch.arange(n) == (index + n if index < 0 else index)
    shape = [1] * self.dim()
    shape[dim] = n
    return torch.where(at.reshape(shape), src.unsqueeze(dim).to(self.dtype), self)


def _flat_index(self, indices):
    """(first indexed dim, number of indexed dims, linear index over them)
    for index_put's Tensor?[] (one run of integer tensors)."""
    used = [i for i, t in enumerate(indices) if t is not None]
    if not used or used != list(range(used[0], used[-1] + 1)):
        raise NotImplementedError("index_put with separated or no index tensors")
    first, count = used[0], len(used)
    linear = None
    for k in range(count):
        t = indices[first + k]
        if t.dtype in (torch.bool, torch.uint8):
            raise NotImplementedError("index_put with a mask index (data-dependent)")
        n = self.shape[first + k]
        t = torch.where(t < 0, t + n, t)
        torch.gather(torch.zeros(n), 0, t.reshape(-1))  # eager's index range error
        linear = t if linear is None else linear * n + t
    return first, count, linear


def _mask_put(self, first, mask, values, accumulate):
    """index_put with one bool mask over dims [first, first + mask.dim()):
    a broadcast value as a ``where``; one value per true element (``self``'s
    leading dims only) read in order through a running count, the count
    checked against the values' length (eager's shape error) by a gather."""
    span = mask.dim()
    rest = tuple(self.shape[first + span:])
    m = mask.reshape(mask.shape + (1,) * len(rest))
    v = values.to(self.dtype)
    if v.dim() > len(rest) and not (first == 0 and v.dim() == len(rest) + 1):
        raise NotImplementedError("index_put: values for a mask after other dims")
    if v.dim() == len(rest) + 1 and v.shape[0] != 1:
        flat = mask.reshape(-1)
        pos = torch.cumsum(flat.to(torch.int64), 0)
        torch.gather(torch.zeros(1), 0, (v.shape[0] - pos[-1:]))  # count == len(values)
        pos = torch.where(flat, pos - 1, 0)
        v = v.reshape((v.shape[0], -1)).index_select(0, pos).reshape(self.shape)
    else:
        v = v.reshape(v.shape[1:]) if v.dim() == len(rest) + 1 else v
    if accumulate:
        return self + torch.where(m, v, 0)
    return torch.where(m, v, self)


def index_put(self, indices, values, accumulate=False):
    indices = list(indices)
    used = [i for i, t in enumerate(indices) if t is not None]
    if len(used) == 1 and indices[used[0]].dtype == torch.bool and indices[used[0]].dim() > 0:
        return _mask_put(self, used[0], indices[used[0]], values, accumulate)
    first, count, linear = _flat_index(self, indices)
    rows = 1
    for d in self.shape[first:first + count]:
        rows *= d
    rest = tuple(self.shape[first + count:])
    # self as (lead, rows, rest...), values as (lead, idx..., rest...)
    flat = self.reshape(self.shape[:first] + (rows,) + rest)
    want = self.shape[:first] + tuple(linear.shape) + rest
    v = values.to(self.dtype).expand(want) if values.dim() <= len(want) else values
    v = v.reshape(self.shape[:first] + (-1,) + rest).movedim(first, 0)
    j = linear.reshape(-1)
    _check_size(j.numel(), rows, *rest, *self.shape[:first])
    match = j.unsqueeze(-1) == torch.arange(rows)  # (J, rows)
    body = flat.movedim(first, 0)  # (rows, lead..., rest...)
    ones = [1] * (body.dim() - 1)
    if accumulate:
        spread = torch.where(match.reshape(match.shape + tuple(ones)), v.unsqueeze(1), 0)
        out = body + spread.sum(0).to(self.dtype)
    else:
        hit, last = _last_write(match)
        picked = v.index_select(0, last)
        out = torch.where(hit.reshape((rows,) + tuple(ones)), picked, body)
    return out.movedim(0, first).reshape(self.shape)


def index(self, indices):
    """aten.index.Tensor: one run of integer index tensors after other dims
    (``x[:, i]``) as an ``index_select`` on the run's linear index; other
    forms as Python indexing (kiln's getitem)."""
    indices = list(indices)
    used = [i for i, t in enumerate(indices) if t is not None]
    simple = used and used[0] > 0 and used == list(range(used[0], used[-1] + 1)) and all(
        indices[i].dtype not in (torch.bool, torch.uint8) for i in used)
    if not simple:
        return self[tuple(slice(None) if t is None else t for t in indices)]
    first, count, linear = _flat_index(self, indices)
    rows = 1
    for d in self.shape[first:first + count]:
        rows *= d
    rest = tuple(self.shape[first + count:])
    flat = self.reshape(self.shape[:first] + (rows,) + rest)
    picked = flat.index_select(first, linear.reshape(-1))
    return picked.reshape(self.shape[:first] + tuple(linear.shape) + rest)


def index_put_(self, indices, values, accumulate=False):
    """In place (``x[mask] = v`` in export IR): computed, then copied in."""
    return self.copy_(index_put(self, indices, values, accumulate))


def masked_scatter(self, mask, source):
    m = mask.expand(self.shape) if mask.dim() <= self.dim() else mask
    shape = m.shape
    if source.numel() == 0:
        return self.expand(shape).clone()
    flat = m.reshape(-1)
    pos = torch.cumsum(flat.to(torch.int64), 0) - 1
    pos = torch.where(flat, pos, 0)
    picked = source.reshape(-1).index_select(0, pos).reshape(shape)
    return torch.where(m, picked.to(self.dtype), self)


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    d = grad_output.shape[-1]
    idx = indices.reshape(-1)
    g = grad_output.reshape(idx.shape[0], d)
    _check_size(idx.numel(), num_weights, d)
    match = idx.unsqueeze(-1) == torch.arange(num_weights)  # (T, V)
    if padding_idx >= 0:
        match = match & (idx != padding_idx).unsqueeze(-1)
    torch.gather(torch.zeros(num_weights), 0, idx)  # eager's index range error
    total = torch.where(match.unsqueeze(-1), g.unsqueeze(1), 0).sum(0)
    if scale_grad_by_freq:
        count = (idx.unsqueeze(-1) == torch.arange(num_weights)).sum(0).clamp(1)
        total = total / count.unsqueeze(-1).to(total.dtype)
    return total.to(grad_output.dtype)


OVERLOADS = {
    "aten.scatter.src": scatter_src,
    "aten.scatter.value": scatter_value,
    "aten.scatter_add.default": scatter_add,
    "aten.scatter_reduce.two": scatter_reduce,
    "aten.select_scatter.default": select_scatter,
    "aten.index.Tensor": index,
    "aten.index_put.default": index_put,
    "aten.index_put_.default": index_put_,
    "aten.masked_scatter.default": masked_scatter,
    "aten.embedding_dense_backward.default": embedding_dense_backward,
}
