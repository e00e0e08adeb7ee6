# SPDX-License-Identifier: Apache-2.0
"""Network ATen overloads composed from ops kiln lowers.

``convolution_backward`` (non-transposed convolutions, any groups): the
input gradient as the transposed convolution of the output gradient, written
as a convolution (zeros inserted for the stride, the flipped weight), sized
back to the input, the weight gradient as a
convolution of the input with the output gradient over the batch (stride
and dilation swapped, cut to the kernel), the bias gradient a sum.
``_cdist_forward`` with eager's algorithms (p = 2 by the matrix-product
expansion where eager uses it, else the direct p-norm of differences; p = 0
counts, p = inf takes the maximum), ``_pdist_forward`` as the direct form
over the pairs i < j, and ``grid_sampler_2d`` (bilinear and nearest, zeros
and border padding) as gathers of the four (one) neighbours.
"""
import torch


def _conv(n):
    return (torch.conv1d, torch.conv2d, torch.conv3d)[n - 1]


def _grad_weight(grad_output, input, kernel, stride, padding, dilation, groups):
    """d(loss)/d(weight) of a convolution: for each group, the input's
    channels convolved with the output gradient's over the batch."""
    n = len(kernel)
    conv = _conv(n)
    cin, cout = input.shape[1] // groups, grad_output.shape[1] // groups
    parts = []
    for g in range(groups):
        x = input.narrow(1, g * cin, cin).transpose(0, 1)  # (Cin, N, ...)
        w = grad_output.narrow(1, g * cout, cout).transpose(0, 1)  # (Cout, N, ...)
        r = conv(x, w, None, dilation, padding, stride)  # (Cin, Cout, k'...)
        for j, k in enumerate(kernel):
            r = r.narrow(2 + j, 0, k)
        parts.append(r.transpose(0, 1))
    return parts[0] if groups == 1 else torch.cat(parts, 0)


def _grad_input(grad_output, weight, stride, padding, dilation, extra, groups):
    """d(loss)/d(input) of a convolution: the transposed convolution as a
    convolution of the output gradient with zeros inserted for the stride,
    padded by dilation * (k - 1) - padding (plus ``extra`` at the end), with
    the weight flipped and its channel dims swapped per group."""
    n = weight.dim() - 2
    g = grad_output
    for j in range(n):
        axis, s = 2 + j, stride[j]
        if s > 1:
            length = (g.shape[axis] - 1) * s + 1
            z = torch.zeros_like(g)
            g = torch.stack([g] + [z] * (s - 1), axis + 1).flatten(axis, axis + 1)
            g = g.narrow(axis, 0, length)
        lo = dilation[j] * (weight.shape[2 + j] - 1) - padding[j]
        hi = lo + extra[j]
        if lo < 0:
            g = g.narrow(axis, -lo, g.shape[axis] + lo)
        if hi < 0:
            g = g.narrow(axis, 0, g.shape[axis] + hi)
        pad = [0, 0] * (g.dim() - axis - 1) + [max(lo, 0), max(hi, 0)]
        g = torch.nn.functional.pad(g, pad)
    cout, cin = weight.shape[0] // groups, weight.shape[1]
    w = weight.flip(list(range(2, weight.dim())))
    w = w.reshape([groups, cout, cin] + list(weight.shape[2:])).transpose(1, 2)
    w = w.reshape([groups * cin, cout] + list(weight.shape[2:]))
    return _conv(n)(g, w, None, 1, 0, dilation, groups)


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    if transposed:
        raise NotImplementedError("convolution_backward of a transposed convolution")
    n = weight.dim() - 2
    kernel = list(weight.shape[2:])
    stride, padding, dilation = (list(v) * (n if len(v) == 1 else 1)
                                 for v in (stride, padding, dilation))
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        extra = []
        for j in range(n):
            used = (grad_output.shape[2 + j] - 1) * stride[j] - 2 * padding[j] \
                + dilation[j] * (kernel[j] - 1) + 1
            extra.append(input.shape[2 + j] - used)
        grad_input = _grad_input(grad_output, weight, stride, padding, dilation, extra, groups)
    if output_mask[1]:
        grad_weight = _grad_weight(grad_output, input, kernel, stride, padding, dilation, groups)
    if output_mask[2]:
        grad_bias = grad_output.sum([0] + list(range(2, grad_output.dim())))
    return grad_input, grad_weight, grad_bias


def _pnorm(diff, p):
    """The p-norm of ``diff`` over its last dim, as eager's cdist/pdist."""
    a = diff.abs()
    if p == 0:
        return (a != 0).to(diff.dtype).sum(-1)
    if p == float("inf"):
        return a.amax(-1) if a.shape[-1] else a.sum(-1)
    if p == 1:
        return a.sum(-1)
    if p == 2:
        return (a * a).sum(-1).sqrt()
    return a.pow(p).sum(-1).pow(1.0 / p)


def _cdist_forward(x1, x2, p, compute_mode):
    r1, r2 = x1.shape[-2], x2.shape[-2]
    mm = p == 2 and (compute_mode == 1 or (compute_mode in (None, 0) and (r1 > 25 or r2 > 25)))
    if mm:
        n1 = (x1 * x1).sum(-1, keepdim=True)
        n2 = (x2 * x2).sum(-1, keepdim=True)
        a = torch.cat([x1 * -2, n1, torch.ones_like(n1)], -1)
        b = torch.cat([x2, torch.ones_like(n2), n2], -1)
        return torch.matmul(a, b.transpose(-1, -2)).clamp_min(0).sqrt()
    return _pnorm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


def _pdist_forward(self, p=2):
    n = self.shape[0]
    first = [i for i in range(n) for j in range(i + 1, n)]
    second = [j for i in range(n) for j in range(i + 1, n)]
    if not first:
        return self.new_zeros((0,))
    a = self.index_select(0, torch.tensor(first))
    b = self.index_select(0, torch.tensor(second))
    return _pnorm(a - b, p)


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _tap(flat, iy, ix, h, w, weight):
    """weight * input[.., iy, ix] (0 outside the input, as eager's corners)."""
    inside = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
    index = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).reshape(iy.shape[0], 1, -1)
    got = torch.gather(flat, 2, index.expand(flat.shape[0], flat.shape[1], index.shape[2]))
    got = got.reshape(flat.shape[:2] + iy.shape[1:])
    weight = torch.where(inside, weight, 0)
    got = torch.where(inside.unsqueeze(1), got, 0)
    return got * weight.unsqueeze(1)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    if interpolation_mode not in (0, 1) or padding_mode not in (0, 1):
        raise NotImplementedError("grid_sampler_2d: bicubic or reflection padding")
    h, w = input.shape[2], input.shape[3]
    x = _unnormalize(grid[..., 0], w, align_corners)
    y = _unnormalize(grid[..., 1], h, align_corners)
    if padding_mode == 1:
        x, y = x.clamp(0, w - 1), y.clamp(0, h - 1)
    # far-off and NaN coordinates to just outside (every tap then reads 0, as
    # eager's bounds checks give; bilinear NaN is NaN below), so the integer
    # conversion stays defined
    nan = torch.isnan(x) | torch.isnan(y)
    x = torch.where(nan, -2.0, x.clamp(-2.0, w + 1.0))
    y = torch.where(nan, -2.0, y.clamp(-2.0, h + 1.0))
    flat = input.reshape(input.shape[0], input.shape[1], h * w)
    if interpolation_mode == 1:
        ix, iy = torch.round(x).to(torch.int64), torch.round(y).to(torch.int64)
        return _tap(flat, iy, ix, h, w, torch.ones_like(x))
    x0, y0 = torch.floor(x), torch.floor(y)
    dx, dy = x - x0, y - y0
    ix, iy = x0.to(torch.int64), y0.to(torch.int64)
    out = _tap(flat, iy, ix, h, w, (1 - dx) * (1 - dy))
    out = out + _tap(flat, iy, ix + 1, h, w, dx * (1 - dy))
    out = out + _tap(flat, iy + 1, ix, h, w, (1 - dx) * dy)
    out = out + _tap(flat, iy + 1, ix + 1, h, w, dx * dy)
    return torch.where(nan.unsqueeze(1), float("nan"), out)  # eager's NaN weights


OVERLOADS = {
    "aten.convolution_backward.default": convolution_backward,
    "aten._cdist_forward.default": _cdist_forward,
    "aten._pdist_forward.default": _pdist_forward,
    "aten.grid_sampler_2d.default": grid_sampler_2d,
}
