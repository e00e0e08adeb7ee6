# SPDX-License-Identifier: Apache-2.0
"""Views and strided ops inside the graph (issue 15).

View ops kiln has no lowering for (`unfold`, `as_strided`, `meshgrid`,
`diagonal` ...) run once at capture on stand-ins whose elements are their own
positions and become constant-index gathers (kiln/_fallback.py view_plan);
`as_strided` of a graph input (or a view of one) reads eager's layout.
In-place updates of views write through to the viewed tensor and every other
live view of it (ops/ViewWrites.cpp). Each test compares with eager and
asserts kiln.stats() graph/break counts; what kiln cannot do exactly breaks.
"""
import pytest
import torch

import kiln
from conftest import assert_close, assert_compiled, stats, whole_graph


def longformer_chunk(h, w=4):
    h = h.view(h.size(0), h.size(1) // (w * 2), w * 2, h.size(2))
    size = list(h.size())
    size[1] = size[1] * 2 - 1
    stride = list(h.stride())
    stride[1] = stride[1] // 2
    return h.as_strided(size=size, stride=stride)


def test_longformer_as_strided_overlapping_chunks():
    x = torch.randn(1, 64, 3)
    out = whole_graph(longformer_chunk, x)
    assert out.shape == (1, 15, 8, 3)
    assert out.stride() == longformer_chunk(x).stride()


def test_as_strided_result_aliases_the_input():
    x = torch.randn(1, 64, 2)
    out = kiln.compile(longformer_chunk)(x)
    assert out.stride() == longformer_chunk(x).stride()
    x.add_(1)  # eager's result is a view of x: it sees the update
    assert_close(out, longformer_chunk(x))
    assert_compiled(graphs=1)


def test_as_strided_of_a_transposed_input_reads_its_storage():
    def f(x):
        return x.t().as_strided((3, 2), (1, 3)) * 2

    whole_graph(f, torch.randn(4, 3))
    kiln.reset()
    whole_graph(f, torch.randn(3, 4).t())  # a non-contiguous input


def test_as_strided_with_offset_and_windows():
    def f(x):
        return x.as_strided((5, 4), (2, 1), 1).sum(-1)

    whole_graph(f, torch.randn(16))


def test_as_strided_of_a_computed_tensor_breaks():
    def f(x):
        return (x * 2).as_strided((2, 2), (1, 2)) + 1

    x = torch.randn(4, 4)
    assert_close(kiln.compile(f)(x), f(x))
    assert stats()["graph_breaks"] >= 1


def test_as_strided_outside_the_input_breaks():
    def f(x):
        return x.as_strided((4,), (1,), 0) + 1

    base = torch.randn(8)
    x = base[:2]
    assert_close(kiln.compile(f)(x), f(x))
    assert stats()["graph_breaks"] >= 1


@pytest.mark.parametrize("size,step", [(2, 2), (3, 1), (4, 2)])
def test_unfold_windows(size, step):
    def f(x):
        return x.unfold(1, size, step).mean(-1)

    whole_graph(f, torch.randn(3, 8))


def test_unfold_of_a_computed_tensor_and_view_of_view():
    def f(x):
        y = (x + 1).t()
        return y.unfold(0, 2, 1).diagonal(0, 1, 2) * 3

    whole_graph(f, torch.randn(4, 6))


def test_meshgrid_grid_sample():
    import torch.nn.functional as F

    def f(x):
        B, C, H, W = x.shape
        ys = torch.linspace(-1, 1, H)
        xs = torch.linspace(-1, 1, W)
        gy, gx = torch.meshgrid(ys, xs, indexing="ij")
        grid = torch.stack((gx, gy), -1).unsqueeze(0).expand(B, -1, -1, -1)
        return F.grid_sample(x, grid, align_corners=True)

    whole_graph(f, torch.randn(2, 3, 5, 6))


def test_meshgrid_of_inputs_xy():
    def f(a, b):
        gx, gy = torch.meshgrid(a, b, indexing="xy")
        return gx * 10 + gy

    whole_graph(f, torch.randn(3), torch.randn(4))


def test_diagonal_and_int_tensors():
    def f(x):
        return torch.diagonal(x, 1) + x.diagonal(-1).sum()

    whole_graph(f, torch.arange(20).view(4, 5))


def test_view_as_complex_breaks_cleanly():
    def f(x):
        c = torch.view_as_complex(x.reshape(x.shape[0], 4, 2).contiguous())
        return torch.view_as_real(c * c).flatten(1)

    x = torch.randn(3, 8)
    assert_close(kiln.compile(f)(x), f(x))
    assert stats()["graph_breaks"] >= 1


def _mutating(f, *make):
    """Runs `f` eagerly and compiled on equal fresh inputs twice; the results
    and the inputs after the call match, one graph, no break."""
    compiled = kiln.compile(f)
    for _ in range(2):
        args = [m() for m in make]
        e_args = [a.clone() for a in args]
        got, expected = compiled(*args), f(*e_args)
        assert_close(got, expected)
        for a, b in zip(args, e_args):
            assert_close(a, b)
    assert_compiled(graphs=1, eager_calls=0)
    return args, got


def test_transpose_view_of_input_mutated():
    def f(x):
        x.t().add_(1.0)
        return x.sum()

    _mutating(f, lambda: torch.randn(3, 4))


def test_detach_inplace_shares_storage():
    def f(x):
        d = x.detach()
        d.mul_(2)
        return x

    (x,), out = _mutating(f, lambda: torch.randn(3, 4))
    assert out is x


def test_slice_view_of_input_mutated_and_other_views_see_it():
    def f(x):
        row = x[1]
        col = x[:, 2]
        row.mul_(10)
        return col + 0, row.sum()

    _mutating(f, lambda: torch.randn(3, 4))


def test_view_of_computed_tensor_mutated_updates_base():
    def f(x):
        y = x * 2
        y.t()[1:].zero_()
        v = y[0]
        v += 5
        return y

    _mutating(f, lambda: torch.randn(4, 3))


def test_returned_view_aliases_after_write_through():
    def f(x):
        y = x + 1
        v = y.t()
        v.mul_(3)
        return y, v

    x = torch.randn(2, 3)
    y, v = kiln.compile(f)(x)
    ey, ev = f(x)
    assert_close(y, ey)
    assert_close(v, ev)
    y.add_(1)  # eager's v is a view of y
    ey.add_(1)
    assert_close(v, ev)
    assert_compiled(graphs=1)


def test_mutating_a_returned_unfold_view_reaches_the_input():
    def f(x):
        return x.unfold(0, 2, 2)

    x = torch.randn(6)
    out = kiln.compile(f)(x)
    out.zero_()
    assert (x == 0).all()
    assert_compiled(graphs=1)


def test_root_updated_while_views_live():
    def f(x):
        col = x[:, 2]
        t = x.t()
        x.mul_(10)
        return col + 0, t[1] * 1

    _mutating(f, lambda: torch.randn(3, 4))


def test_mutating_an_expanded_view_breaks():
    def f(x):
        v = x[:1].expand(3, 4)
        v.add_(1)
        return x

    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError):
        f(x.clone())
    with pytest.raises(RuntimeError):
        kiln.compile(f)(x.clone())


def test_in_place_through_a_zero_dim_tensor_index():
    # `a[i]` with a 0-d integer tensor `i` is a view in eager (a basic
    # index); kiln gathers it, so an update through it breaks instead of
    # changing a copy (it used to leave `a` unchanged).
    def through_input(a, i):
        a[i].add_(1)
        return a

    def through_temporary(a):
        b = a * 1
        b[b.sum(1).argmax()].zero_()
        return b

    def read_only(a, i):
        return a[i] * 2 + a[i, 0]

    i = torch.tensor(1)
    a, b = torch.zeros(3, 2), torch.zeros(3, 2)
    kiln.compile(through_input)(a, i)
    through_input(b, i)
    assert torch.equal(a, b)
    x = torch.arange(6.0).view(3, 2)
    assert torch.equal(kiln.compile(through_temporary)(x), through_temporary(x))
    y = torch.randn(3, 2)
    torch.testing.assert_close(kiln.compile(read_only)(y, i), read_only(y, i))


def test_cat_with_a_skipped_empty_tensor_is_a_new_tensor():
    # torch.cat skips legacy 1-D empty tensors; the one tensor left was
    # returned as the input itself when the empty one came first.
    def f(e, b):
        return torch.cat([e, b])

    b, e = torch.zeros(2, 3), torch.empty(0)
    out = kiln.compile(f)(e, b)
    out.add_(1)
    assert b.sum().item() == 0.0
    assert out.data_ptr() != b.data_ptr()
