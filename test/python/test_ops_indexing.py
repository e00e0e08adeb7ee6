# SPDX-License-Identifier: Apache-2.0
"""Indexing, slicing, concatenation, embedding and eval-mode batch_norm:
kiln.slice / kiln.concat / kiln.embedding and their frontend mappings,
compared with eager on several shapes (0-d, empty, non-contiguous inputs)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln
from conftest import assert_close, assert_compiled, stats


def check(fn, *args, rtol=None, atol=None):
    """Compiles fn, compares one call against eager, checks it ran compiled."""
    expected = fn(*args)
    compiled = kiln.compile(fn)
    assert_close(compiled(*args), expected, rtol, atol)
    assert_compiled(graphs=1, calls=1)
    return compiled


# ---- x[...] -------------------------------------------------------------------

INDEXERS = [
    lambda x: x[1:],
    lambda x: x[:, 1:3],
    lambda x: x[..., :2],
    lambda x: x[-1],
    lambda x: x[0, -2],
    lambda x: x[:, None, 1],
    lambda x: x[None, ..., None],
    lambda x: x[::2, 1::2],
    lambda x: x[-3:-1, ::3],
    lambda x: x[1:100],
    lambda x: x[3:1],
    lambda x: x[...],
    lambda x: x[:],
    lambda x: x[1, ..., 0],
]


@pytest.mark.parametrize("i", range(len(INDEXERS)))
@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 6)])
def test_getitem_matches_eager(i, shape):
    idx = INDEXERS[i]

    def f(x):
        return idx(x) * 2 + 1

    check(f, torch.randn(*shape))


def test_getitem_non_contiguous_input():
    def f(x):
        return x[1:, ::2] + x[0, ::2]

    check(f, torch.randn(5, 6).t())


def test_getitem_0d_and_empty():
    def f(x, e):
        return x[None] * 2, x[...] + 1, e[1:] + 1, e[:, :0] * 3

    check(f, torch.tensor(3.0), torch.randn(2, 3))
    kiln.reset()

    def g(e):
        return e[:, 1:] * 2

    check(g, torch.randn(0, 4))


def test_getitem_integer_tensor_and_computed_bounds():
    def f(x):
        n = x.shape[1] // 2
        return x[:, :n] + x[:, n:]

    check(f, torch.arange(24).reshape(4, 6))


def test_returned_slice_of_input_is_a_view():
    def f(x):
        return x[1:, ::2]

    x = torch.randn(4, 6)
    cf = kiln.compile(f)
    r = cf(x)
    assert_close(r, f(x))
    assert r.data_ptr() != 0 and r._base is x or r.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert stats()["graph_breaks"] == 0


@pytest.mark.parametrize("idx", [
    lambda x: x[5],            # out of range
    lambda x: x[::-1],         # negative step
    lambda x: x[0, 0, 0],      # too many indices
])
def test_invalid_index_raises_like_eager(idx):
    def f(x):
        return idx(x) + 1

    x = torch.randn(4, 3)
    cf = kiln.compile(f)
    with pytest.raises((IndexError, ValueError)):
        f(x)
    with pytest.raises((IndexError, ValueError)):
        cf(x)
    # f breaks at the call of idx, idx's own frame at the index, which then
    # raises eagerly
    assert stats()["graph_breaks"] == 2


def test_inplace_on_item_view_of_computed_tensor_reaches_it():
    # `z += 1` on `z = y[0]` is assigned into y (ops/InPlace.cpp).
    def f(x):
        y = x * 2
        z = y[0]
        z += 1
        return y

    x = torch.randn(3, 4)
    cf = kiln.compile(f)
    assert_close(cf(x), f(x))
    assert stats()["compiled_calls"] == 1 and stats()["graph_breaks"] == 0


# ---- narrow / select / chunk / split / unbind --------------------------------------

def test_narrow_select():
    def f(x):
        return (torch.narrow(x, 1, 1, 2) * 2, x.narrow(-1, -3, 3) + 1, x.select(0, -1) * 3,
                torch.select(x, 2, 0) - 1)

    check(f, torch.randn(3, 4, 5))


@pytest.mark.parametrize("shape,dim", [((6, 4), 0), ((5, 7), 1), ((2, 3, 5), -1)])
def test_chunk_split_unbind(shape, dim):
    def f(x):
        a = torch.chunk(x, 3, dim)
        b = x.split(2, dim=dim)
        c = x.unbind(dim)
        return [t * 2 for t in a], [t + 1 for t in b], [t - 1 for t in c]

    check(f, torch.randn(*shape))


def test_split_sections_and_empty_chunks():
    def f(x, e):
        a, b, c = torch.split(x, [1, 3, 2], dim=1)
        return a * 2, b + 1, c.sum(), [t + 1 for t in e.chunk(2)]

    check(f, torch.randn(3, 6), torch.randn(0, 2))


# ---- cat / stack ----------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim):
    def f(a, b, c):
        return torch.cat([a, b, c], dim) * 2, torch.concat((a, b), dim=dim) + 1

    check(f, torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3))


def test_cat_promotes_and_skips_legacy_empty():
    def f(a, b, e):
        return torch.cat([a, b]), torch.cat([e, a, e], dim=0)

    check(f, torch.randn(2, 3), torch.arange(6).reshape(2, 3), torch.randn(0))


def test_cat_non_contiguous_and_uneven():
    def f(a, b):
        return torch.cat([a, b], dim=1) + 1

    check(f, torch.randn(4, 2).t(), torch.randn(2, 5))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    def f(a, b):
        return torch.stack([a, b], dim) * 2, torch.stack((a,), dim=dim)

    check(f, torch.randn(3, 4), torch.randn(3, 4))


def test_stack_0d():
    def f(a, b):
        return torch.stack([a, b]) + 1

    check(f, torch.tensor(1.0), torch.tensor(2.0))


def test_cat_of_mismatched_shapes_raises_like_eager():
    def f(a, b):
        return torch.cat([a, b], dim=0)

    cf = kiln.compile(f)
    a, b = torch.randn(2, 3), torch.randn(2, 4)
    with pytest.raises(RuntimeError):
        cf(a, b)
    assert stats()["graph_breaks"] == 1  # torch.cat raises eagerly at the break


# ---- embedding ------------------------------------------------------------------------

@pytest.mark.parametrize("idx_shape", [(5,), (2, 3), ()])
@pytest.mark.parametrize("idx_dtype", [torch.int64, torch.int32])
def test_embedding_functional(idx_shape, idx_dtype):
    def f(i, w):
        return F.embedding(i, w) * 2

    w = torch.randn(10, 4)
    i = torch.randint(0, 10, idx_shape, dtype=idx_dtype)
    check(f, i, w)


def test_embedding_module_with_padding_idx_and_linear():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 8, padding_idx=0)
            self.proj = nn.Linear(8, 3)

        def forward(self, tokens):
            return self.proj(self.emb(tokens)[:, -1])

    m = M().eval()
    tokens = torch.randint(0, 20, (2, 6))
    tokens[0, 0] = 0
    with torch.no_grad():
        check(m, tokens)


def test_embedding_non_contiguous_weight():
    def f(i, w):
        return F.embedding(i, w)

    check(f, torch.tensor([[0, 3], [2, 1]]), torch.randn(6, 4).t())


def test_embedding_max_norm_falls_back():
    def f(i, w):
        return F.embedding(i, w, max_norm=1.0)

    cf = kiln.compile(f)
    i, w = torch.tensor([0, 1]), torch.randn(3, 4)
    assert_close(cf(i, w.clone()), f(i, w.clone()))
    assert stats()["graph_breaks"] == 1  # the embedding call runs eagerly


# ---- batch_norm (eval) -----------------------------------------------------------------

def _randomize_stats(bn):
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
        if bn.weight is not None:
            bn.weight.normal_()
            bn.bias.normal_()
    return bn


@pytest.mark.parametrize("bn,shape", [
    (lambda: nn.BatchNorm1d(4), (3, 4)),
    (lambda: nn.BatchNorm1d(4), (3, 4, 7)),
    (lambda: nn.BatchNorm2d(3), (2, 3, 5, 5)),
    (lambda: nn.BatchNorm2d(3, affine=False), (2, 3, 4, 4)),
])
def test_batch_norm_eval_module(bn, shape):
    m = _randomize_stats(bn()).eval()
    with torch.no_grad():
        check(m, torch.randn(*shape))


def test_batch_norm_conv_free_model_eval_non_contiguous():
    m = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4), nn.ReLU())
    _randomize_stats(m[1])
    m.eval()
    with torch.no_grad():
        check(m, torch.randn(6, 5).t())


def test_batch_norm_functional_eval():
    def f(x, mean, var, w, b):
        return F.batch_norm(x, mean, var, w, b, training=False, eps=1e-3)

    check(f, torch.randn(2, 3, 4), torch.randn(3), torch.rand(3) + 0.5, torch.randn(3), torch.randn(3))


def test_batch_norm_training_is_compiled_with_its_stats_updates():
    m = nn.BatchNorm1d(4).train()
    x = torch.randn(8, 4)
    ref = nn.BatchNorm1d(4).train()
    cm = kiln.compile(m)
    for _ in range(2):
        out = cm(x)
        expected = ref(x)
        assert_close(out.detach(), expected.detach())
    # the running stats are updated inside the graph, as eager's kernel does
    assert_close(m.running_mean, ref.running_mean)
    assert_close(m.running_var, ref.running_var)
    assert m.num_batches_tracked.item() == ref.num_batches_tracked.item() == 2
    assert stats()["graph_breaks"] == 0 and stats()["graphs_compiled"] == 1


def test_returned_strided_slices_of_computed_tensors():
    def f(x):
        y = x * 2
        return y[:, 1::2], y[1:3, 2:4].reshape(4), y[..., 0], torch.cat([y[:, :1], y[:, 3:]], 1)

    check(f, torch.randn(4, 6))


def test_embedding_sum_pooling_model():
    class Bag(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.norm = nn.LayerNorm(16)
            self.head = nn.Linear(32, 2)

        def forward(self, tokens):
            h = self.norm(self.emb(tokens))
            first, rest = h[:, 0], h[:, 1:]
            return self.head(torch.cat([first, rest.mean(1)], dim=-1)).softmax(-1)

    m = Bag().eval()
    with torch.no_grad():
        cm = check(m, torch.randint(0, 50, (3, 7)))
        t = torch.randint(0, 50, (3, 7))
        assert_close(cm(t), m(t))


def test_python_int_indices_are_guarded():
    def f(x, i, s):
        return x[i] * 2, x[:, s:] + 1, x.split(s, 1)[0] - 1

    cf = kiln.compile(f)
    x = torch.randn(4, 6)
    for i, s in [(1, 2), (2, 3), (1, 2), (-1, 4)]:
        assert_close(cf(x, i, s), f(x, i, s))
    s = stats()
    assert s["graphs_compiled"] == 3 and s["compiled_calls"] == 4 and s["graph_breaks"] == 0, s


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.bool])
def test_indexing_cat_embedding_dtypes(dtype):
    def f(x, w, i):
        return torch.cat([x[1:], x[:1]], 0), torch.stack([x[0], x[-1]], 1), F.embedding(i, w)

    x = (torch.randn(3, 3) * 4).to(dtype)
    w = (torch.randn(5, 2) * 4).to(dtype)
    check(f, x, w, torch.tensor([[4, 0], [1, 1]]))


@pytest.mark.parametrize("fn", [
    lambda x: x[:],
    lambda x: x[...],
    lambda x: x.narrow(0, 0, x.shape[0]),
    lambda x: x.split(10, 1)[0],
    lambda x: x[1:, ::2],
    lambda x: x[None, 0],
])
def test_returned_views_of_inputs_alias_like_eager(fn):
    x = torch.randn(6, 4).t()  # non-contiguous
    cf = kiln.compile(fn)
    r, e = cf(x), fn(x)
    assert_close(r, e)
    # same storage and layout (a size-1 dim's stride is irrelevant)
    assert [st for st, n in zip(r.stride(), r.shape) if n > 1] == \
        [st for st, n in zip(e.stride(), e.shape) if n > 1]
    assert r.data_ptr() == e.data_ptr()
    assert stats()["graph_breaks"] == 0
