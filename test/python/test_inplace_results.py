# SPDX-License-Identifier: Apache-2.0
"""Results computed straight into the graph input they update
(hook/InPlaceResults.h, codegen/cpu/InPlaceOutputs.cpp): the input keeps its
memory and object, its version counter moves as in eager, and reads of the
old value after the update still see the old value."""
import pytest
import torch

import kiln

from conftest import assert_compiled


def _twice(f, *make):
    """Runs f eagerly and compiled (twice) on fresh copies of the inputs;
    returns (eager inputs, eager result, compiled inputs, compiled result)."""
    compiled = kiln.compile(f)
    for _ in range(2):
        eager_in = [m.clone() for m in make]
        got_in = [m.clone() for m in make]
        ptrs = [t.data_ptr() for t in got_in]
        expected = f(*eager_in)
        got = compiled(*got_in)
        assert [t.data_ptr() for t in got_in] == ptrs  # updated in their own memory
        assert [t._version for t in got_in] == [t._version for t in eager_in]
    return eager_in, expected, got_in, got


def test_update_chain_written_in_place():
    def f(p, g, b):
        b.mul_(0.9).add_(g)
        p.sub_(0.1 * b)

    e_in, _, g_in, _ = _twice(f, torch.randn(64, 32), torch.randn(64, 32), torch.randn(64, 32))
    for a, b in zip(g_in, e_in):
        torch.testing.assert_close(a, b)
    assert_compiled(graphs=1, eager_calls=0)


def test_old_value_read_after_update():
    def f(x, y):
        old = x * 3
        x.add_(y)
        return old + x, torch.flip(old, [0])

    e_in, expected, g_in, got = _twice(f, torch.randn(16, 8), torch.randn(16, 8))
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(g_in[0], e_in[0])


def test_transposed_read_of_updated_input():
    def f(x):
        x.copy_(x.t() * 2)

    e_in, _, g_in, _ = _twice(f, torch.randn(8, 8))
    torch.testing.assert_close(g_in[0], e_in[0])


def test_updated_input_returned():
    def f(x, y):
        x.mul_(y)
        return x, x.sum()

    e_in, expected, g_in, got = _twice(f, torch.randn(5, 7), torch.randn(5, 7))
    torch.testing.assert_close(got, expected)
    assert got[0] is g_in[0]


def test_index_error_leaves_the_updated_input_as_eager_does():
    # The index check raises after the graph ran: a result computed
    # straight into `x` would have updated it although eager raised first.
    def f(x, w, idx):
        y = w[idx]
        x.add_(1)
        return y

    compiled = kiln.compile(f)
    w = torch.randn(5, 4)
    x = torch.zeros(4)
    compiled(x, w, torch.tensor([0, 1]))
    assert torch.equal(x, torch.ones(4))
    x = torch.zeros(4)
    with pytest.raises(IndexError):
        f(x.clone(), w, torch.tensor([0, 7]))
    with pytest.raises(IndexError):
        compiled(x, w, torch.tensor([0, 7]))
    assert torch.equal(x, torch.zeros(4)) and x._version == 0
