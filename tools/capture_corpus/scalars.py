# SPDX-License-Identifier: Apache-2.0
"""Scalars, randomness and NumPy: ``.item()``/``.tolist()``/``int()``/
``float()``/``bool()`` of tensors used in Python arithmetic and sizes,
``torch.tensor`` of computed data, random ops and dropout in training
mode (compared by shape, dtype and moments), NumPy arrays to and from
tensors, ``.cpu()``/``.to()`` on CPU tensors, ``stride()``."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from capture_corpus._case import case, randn


def _x(n):
    return (randn(n, 8),)


@case("scalars", _x)
def item_in_arithmetic(x):
    m = x.mean().item()
    return x - m, type(m).__name__


@case("scalars", _x)
def item_as_size(x):
    k = int((x > 0).sum().item()) % 4 + 1
    return torch.zeros(k), x[:k]


@case("scalars", _x)
def tolist_of_shape_tensor(x):
    vals = x[0, :3].tolist()
    return [round(v, 3) for v in vals], sum(vals)


@case("scalars", _x)
def int_float_bool_of_tensor(x):
    s = x.sum()
    return int(s > 0), float(s), bool(x.numel())


@case("scalars", lambda n: (torch.tensor([n, 2]),))
def tensor_sizes_from_tensor(sizes):
    h, w = sizes.tolist()
    return torch.ones(h, w).cumsum(0)


@case("scalars", _x)
def torch_tensor_of_graph_values(x):
    a, b = x.shape
    return torch.tensor([a, b, a * b]), torch.tensor([x.sum(), x.mean()])


@case("scalars", _x)
def as_tensor_of_list(x):
    ws = [0.1 * i for i in range(8)]
    return x * torch.as_tensor(ws)


@case("scalars", _x)
def repeat_interleave_tensor_repeats(x):
    reps = torch.tensor([1, 2, 1, 2])
    return torch.repeat_interleave(x[:4], reps, dim=0)


@case("scalars", _x)
def cpu_on_cpu_tensor(x):
    return (x.cpu() * 2).to("cpu").to(x.device).detach().cpu()


@case("scalars", _x)
def to_same_dtype_copy(x):
    return x.to(torch.float32), x.to(dtype=torch.float32, copy=True).add_(1)


@case("scalars", _x)
def stride_and_offset(x):
    y = x[1:, ::2]
    return y.stride(), y.storage_offset(), y.is_contiguous()


@case("scalars", _x)
def numpy_roundtrip(x):
    a = x.numpy()
    b = np.tanh(a) * 2
    return torch.from_numpy(b)


@case("scalars", _x)
def numpy_stats_to_python(x):
    a = x.detach().cpu().numpy()
    return float(np.mean(a)), a.shape, np.argmax(a, axis=1)


@case("scalars", _x)
def numpy_constant_array(x):
    w = np.linspace(0, 1, 8, dtype=np.float32)
    return x * torch.from_numpy(w)


@case("scalars", _x)
def numpy_array_from_tolist(x):
    arr = np.array(x.tolist())
    return torch.tensor(arr.sum(axis=0), dtype=torch.float32)


@case("scalars", _x)
def numpy_scalar_mult(x):
    return x * np.float32(2.0) + np.sqrt(4.0)


@case("scalars", lambda n: (np.arange(n * 8, dtype=np.float32).reshape(n, 8),))
def ndarray_input(a):
    t = torch.as_tensor(a)
    return (t * 2).numpy()


@case("scalars", _x, random=True)
def rand_like_noise(x):
    return x + 0.1 * torch.randn_like(x)


@case("scalars", _x, random=True)
def rand_mask(x):
    keep = torch.rand(x.shape) > 0.5
    return x * keep


@case("scalars", _x, random=True)
def dropout_functional_training(x):
    return F.dropout(x, p=0.5, training=True)


@case("scalars", _x, random=True, train=True)
class DropoutModuleTrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        return self.drop(self.lin(x))


@case("scalars", _x)
class DropoutModuleEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        return self.drop(self.lin(x))


@case("scalars", _x, random=True)
def randint_indices(x):
    idx = torch.randint(0, x.shape[0], (3,))
    return x[idx]


@case("scalars", _x, random=True)
def randperm_shuffle(x):
    perm = torch.randperm(x.shape[0])
    return x[perm].sort(0).values


@case("scalars", _x, random=True)
def bernoulli_mask(x):
    p = torch.full_like(x, 0.3)
    return torch.bernoulli(p) * x


@case("scalars", _x, random=True)
def multinomial_sampling(x):
    probs = x.softmax(-1)
    return torch.multinomial(probs, num_samples=1).shape


@case("scalars", lambda n: (randn(2, 2, n, 4), randn(2, 2, n, 4), randn(2, 2, n, 4)),
      random=True)
def sdpa_with_dropout(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)


@case("scalars", _x, random=True)
def manual_seed_inside(x):
    torch.manual_seed(123)
    return x + torch.rand(x.shape)


@case("scalars", _x, random=True)
def generator_object(x):
    g = torch.Generator().manual_seed(7)
    return x + torch.randn(x.shape, generator=g)


@case("scalars", _x, random=True)
def normal_init_inplace(x):
    w = torch.empty(8, 4)
    nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    return x @ w


@case("scalars", _x, random=True)
def gumbel_softmax_hard(x):
    return F.gumbel_softmax(x, tau=0.5, hard=True).sum(-1)


@case("scalars", _x)
def item_then_branch(x):
    if x[0, 0].item() > 0:
        return x + 1
    return x - 1


@case("scalars", _x)
def nonzero_tolist_loop(x):
    idx = (x[:, 0] > 0).nonzero().flatten().tolist()
    return [x[i].sum() for i in idx]


@case("scalars", _x)
def max_item_for_range(x):
    k = int(x.abs().argmax().item()) % 3 + 1
    return sum(x[i] for i in range(k))


@case("scalars", _x)
def python_float_scalar_ops(x):
    eps = float(torch.finfo(x.dtype).eps)
    return x / (x.norm() + eps), eps > 0
