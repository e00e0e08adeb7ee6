# SPDX-License-Identifier: Apache-2.0
"""Pooling-style ATen overloads composed from ops kiln lowers.

Windows are unrolled over the kernel's offsets: for each offset, a strided
slice of the zero-padded input holds that offset's element of every window
(``_window_slices``). ``max_pool{2,3}d_with_indices`` keep eager's CPU scan
(a later element replaces the maximum when greater or NaN; the index is the
flat position in the unpadded plane, starting at the window's first valid
element); ``avg_pool3d`` sums the offsets and divides by eager's divisor
(per-dim counts with or without padding, or ``divisor_override``);
``_adaptive_avg_pool3d`` sums each dim's windows. Backward overloads and
``col2im`` spread values back with ``_place`` (zeros inserted between
values for the stride, then padded or cropped into the input's extent), so
no scatter is needed.
"""

import torch


def _tuple(v, n, default=None):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    if not v:
        v = list(default)
    return v * n if len(v) == 1 else v


def _out_size(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _axis_shape(x, axis, n):
    shape = [1] * x.dim()
    shape[axis] = n
    return shape


def _window_slices(x, kernel, stride, padding, dilation, ceil_mode):
    """(outs, [(offsets, slice)]): per kernel offset, the padded input's
    strided slice over the last len(kernel) dims (one element per window)."""
    n = len(kernel)
    sizes = list(x.shape[-n:])
    outs = [_out_size(sz, k, s, p, d, ceil_mode)
            for sz, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    pad = []
    for sz, k, s, p, d, o in reversed(list(zip(sizes, kernel, stride, padding, dilation, outs))):
        pad += [p, max(0, (o - 1) * s + (k - 1) * d + 1 - sz - p)]
    xp = torch.nn.functional.pad(x, pad)
    slices = []
    for offsets in _offsets(kernel):
        index = [slice(None)] * (x.dim() - n)
        for off, s, d, o in zip(offsets, stride, dilation, outs):
            index.append(slice(off * d, off * d + (o - 1) * s + 1, s))
        slices.append((offsets, xp[tuple(index)]))
    return outs, slices


def _offsets(kernel):
    found = [()]
    for k in kernel:
        found = [f + (i,) for f in found for i in range(k)]
    return found


def _positions(x_dim, n, outs, offsets, stride, padding, dilation):
    """Per spatial dim, the input position each window reads at ``offsets``
    (int64, shaped to broadcast over that dim)."""
    found = []
    for j, (o, off, s, p, d) in enumerate(zip(outs, offsets, stride, padding, dilation)):
        pos = torch.arange(o) * s + (off * d - p)
        shape = [1] * x_dim
        shape[x_dim - n + j] = o
        found.append(pos.reshape(shape))
    return found


def _max_pool_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode, n):
    kernel = _tuple(kernel_size, n)
    stride = _tuple(stride, n, kernel)
    padding, dilation = _tuple(padding, n), _tuple(dilation, n)
    sizes = list(self.shape[-n:])
    outs, slices = _window_slices(self, kernel, stride, padding, dilation, ceil_mode)
    best = index = seen = None
    for offsets, cand in slices:
        pos = _positions(self.dim(), n, outs, offsets, stride, padding, dilation)
        valid, flat = None, None
        for p, size in zip(pos, sizes):
            ok = (p >= 0) & (p < size)
            valid = ok if valid is None else valid & ok
            flat = p if flat is None else flat * size + p
        if best is None:
            best, index, seen = cand, flat.expand(cand.shape), valid
            continue
        take = valid & (~seen | (cand > best) | torch.isnan(cand))
        best = torch.where(take, cand, best)
        index = torch.where(take, flat, index)
        seen = seen | valid
    return best.clone(), index.clone()


def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return _max_pool_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode, 2)


def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return _max_pool_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode, 3)


def _avg_divisor(sizes, outs, kernel, stride, padding, count_include_pad, like):
    """eager's avg-pool divisor per window, as a tensor broadcasting over
    the last len(kernel) dims of ``like``."""
    total = None
    for j, (sz, o, k, s, p) in enumerate(zip(sizes, outs, kernel, stride, padding)):
        counts = []
        for i in range(o):
            start = i * s - p
            end = min(start + k, sz + p)
            pool = end - start
            counts.append(pool if count_include_pad else min(end, sz) - max(start, 0))
        shape = [1] * like.dim()
        shape[like.dim() - len(kernel) + j] = o
        c = torch.tensor(counts, dtype=like.dtype).reshape(shape)
        total = c if total is None else total * c
    return total


def avg_pool3d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    kernel = _tuple(kernel_size, 3)
    stride, padding = _tuple(stride, 3, kernel), _tuple(padding, 3)
    outs, slices = _window_slices(self, kernel, stride, padding, [1, 1, 1], ceil_mode)
    total = slices[0][1]
    for _, cand in slices[1:]:
        total = total + cand
    if divisor_override:
        return total / divisor_override
    sizes = list(self.shape[-3:])
    return total / _avg_divisor(sizes, outs, kernel, stride, padding, count_include_pad, total)


def _adaptive_bounds(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive_avg_pool3d(self, output_size):
    x, count = self, None
    for j, out in enumerate(output_size):
        axis = self.dim() - 3 + j
        bounds = _adaptive_bounds(self.shape[axis], out)
        x = torch.cat([x.narrow(axis, a, b - a).sum(axis, keepdim=True) for a, b in bounds], axis)
        c = torch.tensor([b - a for a, b in bounds], dtype=self.dtype)
        c = c.reshape(_axis_shape(self, axis, out))
        count = c if count is None else count * c
    return x / count


def _place(x, axis, start, step, length):
    """x's elements at ``start + i * step`` along ``axis`` of a zero tensor of
    ``length`` there (elements outside [0, length) dropped)."""
    if step > 1:
        z = torch.zeros_like(x)
        x = torch.stack([x] + [z] * (step - 1), axis + 1).flatten(axis, axis + 1)
    n = x.shape[axis]
    if start < 0:
        x = x.narrow(axis, min(-start, n), n - min(-start, n))
        start, n = 0, x.shape[axis]
    keep = max(0, min(n, length - start))
    x = x.narrow(axis, 0, keep)
    pad = [0, 0] * (x.dim() - axis - 1) + [min(start, length), length - min(start, length) - keep]
    return torch.nn.functional.pad(x, pad)


def _spread(parts, sizes, stride, padding, dilation, like):
    """sum over ``(offsets, value)`` of values placed back on the input grid
    (``sizes``, the last dims of ``like``) at each window's element."""
    n = len(sizes)
    total = torch.zeros_like(like)
    for offsets, v in parts:
        for j, (off, s, p, d, sz) in enumerate(zip(offsets, stride, padding, dilation, sizes)):
            v = _place(v, like.dim() - n + j, off * d - p, s, sz)
        total = total + v
    return total


def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    kernel = _tuple(kernel_size, 2)
    stride, padding = _tuple(stride, 2, kernel), _tuple(padding, 2)
    sizes = list(self.shape[-2:])
    outs = list(grad_output.shape[-2:])
    if divisor_override:
        g = grad_output / divisor_override
    else:
        g = grad_output / _avg_divisor(sizes, outs, kernel, stride, padding, count_include_pad,
                                       grad_output)
    parts = [(off, g) for off in _offsets(kernel)]
    return _spread(parts, sizes, stride, padding, [1, 1], self).to(grad_output.dtype)


def _adaptive_avg_pool2d_backward(grad_output, self):
    g = grad_output
    for j in range(2):
        axis = self.dim() - 2 + j
        size, out = self.shape[axis], g.shape[axis]
        total = None
        for i, (a, b) in enumerate(_adaptive_bounds(size, out)):
            piece = g.narrow(axis, i, 1) / (b - a)
            shape = list(piece.shape)
            shape[axis] = b - a
            pad = [0, 0] * (g.dim() - axis - 1) + [a, size - b]
            v = torch.nn.functional.pad(piece.expand(shape), pad)
            total = v if total is None else total + v
        g = total
    return g


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    kernel = _tuple(kernel_size, 2)
    stride = _tuple(stride, 2, kernel)
    padding, dilation = _tuple(padding, 2), _tuple(dilation, 2)
    sizes = list(self.shape[-2:])
    outs = list(grad_output.shape[-2:])
    parts = []
    for off in _offsets(kernel):
        ph, pw = _positions(grad_output.dim(), 2, outs, off, stride, padding, dilation)
        hit = indices == ph * sizes[1] + pw
        parts.append((off, torch.where(hit, grad_output, 0)))
    return _spread(parts, sizes, stride, padding, dilation, self)


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    kernel = _tuple(kernel_size, 2)
    dilation, padding, stride = _tuple(dilation, 2), _tuple(padding, 2), _tuple(stride, 2)
    sizes = list(output_size)
    outs = [_out_size(sz, k, s, p, d, False)
            for sz, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    lead = list(self.shape[:-2])
    channels = self.shape[-2] // (kernel[0] * kernel[1])
    cols = self.reshape(lead + [channels, kernel[0], kernel[1]] + outs)
    like = torch.zeros(lead + [channels] + sizes, dtype=self.dtype)
    parts = [(off, cols[(Ellipsis, off[0], off[1], slice(None), slice(None))])
             for off in _offsets(kernel)]
    return _spread(parts, sizes, stride, padding, dilation, like)


OVERLOADS = {
    "aten.max_pool2d_with_indices.default": max_pool2d_with_indices,
    "aten.max_pool3d_with_indices.default": max_pool3d_with_indices,
    "aten.avg_pool3d.default": avg_pool3d,
    "aten._adaptive_avg_pool3d.default": _adaptive_avg_pool3d,
    "aten.avg_pool2d_backward.default": avg_pool2d_backward,
    "aten._adaptive_avg_pool2d_backward.default": _adaptive_avg_pool2d_backward,
    "aten.max_pool2d_with_indices_backward.default": max_pool2d_with_indices_backward,
    "aten.col2im.default": col2im,
}
