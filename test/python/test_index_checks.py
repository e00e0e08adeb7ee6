# SPDX-License-Identifier: Apache-2.0
"""Out-of-range indices that come from data (ops/IndexChecks.cpp): kiln's
gathers clamp so no read leaves the tensor, and the compiled call raises
eager's IndexError instead of returning the clamped values. In-range
indices (negative ones where eager wraps them) give eager's results from
one graph, and a failed call leaves the compiled code usable."""
import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import assert_close, assert_compiled


def index(x, i):
    return x[i] * 2


def index_pair(x, ij):
    return x[ij[0], ij[1]] * 2


def index_select(x, i):
    return torch.index_select(x, 0, i) + 1


def gather(x, i):
    return torch.gather(x, 1, i) - 1


def embedding(w, i):
    return F.embedding(i, w) * 3


def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


CASES = [
    # fn, args in range, a bad index, eager's exception
    (index, (torch.randn(5, 3), torch.tensor([4, -5, 0])), torch.tensor([4, 5, 0]), IndexError),
    (index, (torch.randn(5, 3), torch.tensor([1])), torch.tensor([-6]), IndexError),
    # x[1, 5] of a 3x5 x: outside dim 1, though row 1 * 5 + 5 is inside x.
    (index_pair, (torch.randn(3, 5), torch.tensor([[1, -3], [4, -5]])),
     torch.tensor([[1, 0], [5, 0]]), IndexError),
    (index_pair, (torch.randn(3, 5), torch.tensor([[1, -3], [4, -5]])),
     torch.tensor([[1, 0], [-6, 0]]), IndexError),
    (index_select, (torch.randn(5, 3), torch.tensor([0, 4])), torch.tensor([-1, 0]), IndexError),
    (gather, (torch.randn(4, 6), torch.tensor([[0], [5], [2], [1]])),
     torch.tensor([[0], [6], [2], [1]]), RuntimeError),
    (embedding, (torch.randn(10, 4), torch.tensor([[1, 9], [0, 3]])),
     torch.tensor([[1, 10], [0, 3]]), IndexError),
    (cross_entropy, (torch.randn(3, 5), torch.tensor([0, 4, 2])), torch.tensor([0, 5, 2]),
     IndexError),
]


@pytest.mark.parametrize("fn,args,bad,eager_error", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_out_of_range_index_raises_like_eager(fn, args, bad, eager_error):
    compiled = kiln.compile(fn)
    assert_close(compiled(*args), fn(*args))
    with pytest.raises(eager_error):
        fn(args[0], bad)
    with pytest.raises(eager_error):  # torch.gather: RuntimeError, the others IndexError
        compiled(args[0], bad)
    assert_close(compiled(*args), fn(*args))  # still usable after the error
    assert_compiled(graphs=1, eager_calls=0)


def test_index_from_a_computation_is_checked():
    def f(x, i):
        return x[(i * 3) % 7]  # 6 is out of range for 5 rows

    compiled = kiln.compile(f)
    x = torch.randn(5, 2)
    ok = torch.tensor([0, 1])  # 0, 3
    assert_close(compiled(x, ok), f(x, ok))
    with pytest.raises(IndexError):
        compiled(x, torch.tensor([2]))


def test_error_comes_before_in_place_write_back_of_outputs():
    # The flag is read before results are returned: nothing of the failed
    # call reaches the caller.
    def f(x, i):
        return x[i].sum(), x * 2

    compiled = kiln.compile(f)
    x = torch.randn(4)
    with pytest.raises(IndexError):
        compiled(x, torch.tensor([7]))
    assert_close(compiled(x, torch.tensor([3])), f(x, torch.tensor([3])))


def test_constant_indices_need_no_check():
    # flip's reversed index is a constant: in range by construction.
    def f(x):
        return torch.flip(x, [0]) + 1

    x = torch.randn(6, 2)
    assert_close(kiln.compile(f)(x), f(x))
    assert_compiled(graphs=1)


def test_transformer_embedding_in_range_is_unchanged():
    emb = torch.nn.Embedding(50, 8)

    def f(ids):
        return emb(ids).mean(1)

    compiled = kiln.compile(f)
    ids = torch.randint(0, 50, (2, 7))
    with torch.no_grad():
        assert_close(compiled(ids), f(ids))
        with pytest.raises(IndexError):
            compiled(torch.full((2, 7), 50))


def test_training_graph_raises_too():
    # The compiled forward of a training graph (kiln-autodiff) keeps the check.
    model = torch.nn.Sequential(torch.nn.Embedding(30, 8), torch.nn.Linear(8, 2))
    compiled = kiln.compile(model)
    ids = torch.randint(0, 30, (3, 4))
    compiled(ids).sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    model(ids).sum().backward()
    for g, p in zip(got, model.parameters()):
        assert_close(g, p.grad)
    with pytest.raises(IndexError):
        compiled(torch.full((3, 4), 30))


LITERAL_CASES = [
    # index tensors written in the function: checked at capture
    lambda x: x[torch.tensor([6])],
    lambda x: x[torch.tensor([-6])],
    lambda x: torch.index_select(x, 0, torch.tensor([7])),
    lambda x: torch.index_select(x, 0, torch.tensor([-1])),
    lambda x: torch.gather(x, 1, torch.tensor([[5]])),
    lambda x: F.embedding(torch.tensor([9]), x),
]


@pytest.mark.parametrize("fn", LITERAL_CASES)
def test_a_literal_index_out_of_range_raises_as_in_eager(fn):
    x = torch.randn(5, 3)
    with pytest.raises(Exception) as eager:
        fn(x)
    with pytest.raises(type(eager.value)):
        kiln.compile(fn)(x)


def test_literal_indices_in_range_compile_without_a_check():
    def f(x):
        return x[torch.tensor([4, -5, 0])] + torch.index_select(x, 0, torch.tensor([2]))

    x = torch.randn(5, 3)
    compiled = kiln.compile(f)
    for _ in range(2):
        assert_close(compiled(x), f(x))
    assert_compiled(graphs=1, eager_calls=0)


def test_gather_out_of_range_raises_runtime_error_like_eager():
    def f(x, i):
        return torch.gather(x, 1, i) * 2

    compiled = kiln.compile(f)
    x = torch.randn(2, 3)
    ok = torch.tensor([[0, 2], [1, 0]])
    assert_close(compiled(x, ok), f(x, ok))
    bad = torch.tensor([[0, 3], [1, 0]])
    with pytest.raises(RuntimeError):
        f(x, bad)
    with pytest.raises(RuntimeError, match="gather"):
        compiled(x, bad)


@pytest.mark.parametrize("labels", [[0, -1, 2], [0, 3, 1]])
def test_one_hot_class_out_of_range_raises_like_eager(labels):
    def f(y):
        return torch.nn.functional.one_hot(y, 3).float() * 2

    compiled = kiln.compile(f)
    good = torch.tensor([0, 2, 1])
    assert_close(compiled(good), f(good))
    bad = torch.tensor(labels)
    with pytest.raises(RuntimeError, match="Class values"):
        f(bad)
    with pytest.raises(RuntimeError, match="Class values"):  # was a silent row of zeros
        compiled(bad)


def test_index_into_a_symbolic_dim_is_checked_against_its_size():
    # The table's rows are a symbolic size: the check reads that size when
    # the graph runs, so the `?` graph raises eager's IndexError too.
    def f(x, i):
        return x[i] * 2

    compiled = kiln.compile(f)
    for n in [5, 8, 11]:
        i = torch.tensor([0, n - 1, -n])
        x = torch.randn(n, 3)
        assert_close(compiled(x, i), f(x, i))
    for bad in (torch.tensor([0, 9, 1]), torch.tensor([-10, 0, 1])):
        x = torch.randn(9, 3)
        with pytest.raises(IndexError):
            f(x, bad)
        with pytest.raises(IndexError):
            compiled(x, bad)
    x = torch.randn(9, 3)
    assert_close(compiled(x, torch.tensor([8, -9, 0])), f(x, torch.tensor([8, -9, 0])))
    s = kiln.stats()
    assert (s["graphs_compiled"], s["dynamic_graphs"], s["eager_calls"]) == (2, 1, 0), s


def test_pair_index_into_a_symbolic_dim_is_checked_per_dim():
    # x[i, j] with x's dim 1 symbolic: j == size raises though i * size + j
    # is inside x.
    compiled = kiln.compile(index_pair)
    for n in [5, 8, 11]:
        x, ij = torch.randn(3, n), torch.tensor([[0, 2, -1], [n - 1, -n, 1]])
        assert_close(compiled(x, ij), index_pair(x, ij))
    x, bad = torch.randn(3, 9), torch.tensor([[0, 1, 0], [1, 9, 0]])
    with pytest.raises(IndexError):
        index_pair(x, bad)
    with pytest.raises(IndexError):
        compiled(x, bad)
    s = kiln.stats()
    assert (s["graphs_compiled"], s["dynamic_graphs"], s["eager_calls"]) == (2, 1, 0), s
