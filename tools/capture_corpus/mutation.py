# SPDX-License-Identifier: Apache-2.0
"""In-place updates: of inputs (``add_``, ``+=``, ``copy_``, ``fill_``,
index assignment, ``out=``, ``masked_fill_``, ``clamp_``), of views of
inputs, of buffers (running stats, KV caches written at an index), of
module attributes; inplace activations; aliasing inputs. The runner
compares the inputs after the call too."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from capture_corpus._case import case, randn


def _x(n):
    return (randn(n, 8),)


def _xy(n):
    return randn(n, 8), randn(n, 8)


@case("mutation", _x)
def add_inplace_input(x):
    x.add_(1)
    return x * 2


@case("mutation", _xy)
def iadd_input(x, y):
    x += y
    return x


@case("mutation", _xy)
def copy_into_input(x, y):
    x.copy_(y * 2)
    return x.sum()


@case("mutation", _x)
def fill_input(x):
    x.fill_(0.5)
    return x


@case("mutation", _x)
def zero_input(x):
    y = x.clone()
    x.zero_()
    return y


@case("mutation", _x)
def index_assign_input(x):
    x[0] = 0.0
    x[:, -1] = x[:, 0] * 2
    return x.sum(0)


@case("mutation", _x)
def masked_fill_input(x):
    x.masked_fill_(x < 0, 0.0)
    return x.mean()


@case("mutation", _x)
def clamp_inplace_input(x):
    x.clamp_(-0.5, 0.5)
    return x


@case("mutation", _xy)
def out_argument(x, y):
    torch.add(x, 1.0, out=y)
    return y * 2


@case("mutation", _x)
def view_of_input_mutated(x):
    row = x[1]
    row.mul_(10)
    return x


@case("mutation", _x)
def transpose_view_mutated(x):
    x.t().add_(1.0)
    return x.sum()


@case("mutation", _x)
def local_clone_mutated(x):
    y = x.clone()
    y[y > 0] = 1.0
    y.mul_(2)
    return y


@case("mutation", _x)
def inplace_activation_on_intermediate(x):
    y = x * 2
    F.relu(y, inplace=True)
    return y


@case("mutation", _x)
def relu_inplace_on_input(x):
    return F.relu_(x)


@case("mutation", _x)
def scatter_inplace_local(x):
    out = torch.zeros(x.shape[0], 8)
    idx = torch.arange(x.shape[0]).unsqueeze(1) % 8
    out.scatter_(1, idx, 1.0)
    return out + x


@case("mutation", _x)
def index_put_accumulate(x):
    out = torch.zeros(4, 8)
    idx = torch.arange(x.shape[0]) % 4
    out.index_put_((idx,), x, accumulate=True)
    return out


@case("mutation", _x)
def index_add_local(x):
    acc = torch.zeros(2, 8)
    return acc.index_add_(0, torch.arange(x.shape[0]) % 2, x)


@case("mutation", lambda n: (randn(2, n, 4),))
class KVCacheWrite(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(2, 16, 4))
        self.pos = 0

    def forward(self, k):
        t = k.shape[1]
        self.k_cache[:, self.pos:self.pos + t] = k
        self.pos += t
        return self.k_cache[:, :self.pos].sum(1)


@case("mutation", _x)
class RunningStatBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(8))
        self.register_buffer("count", torch.tensor(0))

    def forward(self, x):
        self.running.mul_(0.9).add_(x.mean(0), alpha=0.1)
        self.count += 1
        return x - self.running


@case("mutation", _x)
class ParameterInplaceNoGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(8))

    def forward(self, x):
        with torch.no_grad():
            self.w.mul_(0.5)
        return x * self.w


@case("mutation", _x)
class AttributeTensorRebind(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = torch.zeros(8)

    def forward(self, x):
        self.state = self.state + x.sum(0)
        return self.state.clone()


@case("mutation", lambda n: (randn(n, 8),))
def aliased_inputs(x):
    def body(a, b):
        a.add_(1)
        return b * 2
    return body(x, x)


@case("mutation", _xy)
def swap_rows_inplace(x, y):
    x[[0, 1]] = x[[1, 0]]
    y[0].copy_(x[0])
    return x - y


@case("mutation", _x)
def input_resize_like(x):
    buf = torch.empty(0)
    buf.resize_(x.shape)
    buf.copy_(x)
    return buf * 2


@case("mutation", _x)
def exp_inplace_chain(x):
    return x.clone().exp_().log_().sub_(x).abs_()


@case("mutation", _x)
def unsqueeze_inplace_input(x):
    x.unsqueeze_(0)
    return x.shape


@case("mutation", _x)
def detach_inplace_shares_storage(x):
    d = x.detach()
    d.mul_(2)
    return x
