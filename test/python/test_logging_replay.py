# SPDX-License-Identifier: Apache-2.0
"""kiln.config.reorderable_logging_functions (issue 15 item 7): calls of the
listed functions inside compiled code run after the graph with the values
their arguments had at the call, instead of breaking the graph; unlisted,
they stay graph breaks. Each test compares printed output and results with
eager and asserts the graph/break counts."""
import logging

import torch

import kiln
from conftest import assert_close, assert_compiled, stats


def outputs(fn, make_args, capsys):
    """(eager result, eager output, compiled result, compiled output), each
    run on fresh arguments."""
    expected = fn(*make_args())
    eager_out = capsys.readouterr().out
    got = kiln.compile(fn)(*make_args())
    return expected, eager_out, got, capsys.readouterr().out


def f(x):
    y = x * 2
    print("y is", y, y.sum().item(), sep="|")
    y.add_(1)  # after the call: the replay must show the value at the call
    print(y, end="!\n")
    return y + 1


def test_print_breaks_the_graph_by_default(capsys):
    expected, eager_out, got, out = outputs(f, lambda: (torch.ones(3),), capsys)
    assert out == eager_out and "y is|tensor([2., 2., 2.])|6.0" in out
    assert_close(got, expected)
    assert stats()["graph_breaks"] >= 1


def test_listed_print_is_replayed_after_one_graph(capsys):
    with kiln.config.patch(reorderable_logging_functions={print}):
        expected, eager_out, got, out = outputs(f, lambda: (torch.ones(3),), capsys)
    assert out == eager_out == "y is|tensor([2., 2., 2.])|6.0\ntensor([3., 3., 3.])!\n"
    assert_close(got, expected)
    assert_compiled(graphs=1, calls=1, eager_calls=0)


def test_printed_input_shows_its_value_before_a_later_in_place_update(capsys):
    def g(x):
        print("in", x)
        x.mul_(3)
        print("after", x)
        return x.sum()

    with kiln.config.patch(reorderable_logging_functions={print}):
        expected, eager_out, got, out = outputs(g, lambda: (torch.ones(2),), capsys)
        x = torch.ones(2)
        kiln.compile(g)(x)
    assert out == eager_out == "in tensor([1., 1.])\nafter tensor([3., 3.])\n"
    assert_close(got, expected)
    assert torch.equal(x, torch.full((2,), 3.0))
    assert_compiled(graphs=1, calls=2, eager_calls=0)


def test_logger_methods_listed_unbound_or_bound(caplog):
    log = logging.getLogger("kiln.test.logging_replay")

    def h(x):
        log.warning("shape %s, max %s", tuple(x.shape), x.max().item())
        return x.relu()

    x = torch.tensor([-1.0, 2.0])
    for listed in (logging.Logger.warning, log.warning):
        kiln.reset()
        caplog.clear()
        with kiln.config.patch(reorderable_logging_functions={listed}):
            assert_close(kiln.compile(h)(x), h(x))
        assert [r.getMessage() for r in caplog.records] == ["shape (2,), max 2.0"] * 2
        assert_compiled(graphs=1, calls=1, eager_calls=0)


def test_an_argument_that_cannot_be_replayed_breaks(capsys):
    def k(x):
        print([x.sum(), 1])  # a list built in the frame
        return x * 2

    with kiln.config.patch(reorderable_logging_functions={print}):
        expected, eager_out, got, out = outputs(k, lambda: (torch.ones(2),), capsys)
    assert out == eager_out
    assert_close(got, expected)
    assert stats()["graph_breaks"] >= 1


def test_the_knob_is_read_at_capture(capsys):
    def p(x):
        print("hi")
        return x + 1

    x = torch.ones(2)
    with kiln.config.patch(reorderable_logging_functions={print}):
        compiled = kiln.compile(p)
        compiled(x)
    compiled(x)  # the graph captured with print listed still replays it
    assert capsys.readouterr().out == "hi\nhi\n"
    assert_compiled(graphs=1, calls=2, eager_calls=0)
