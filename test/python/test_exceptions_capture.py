# SPDX-License-Identifier: Apache-2.0
"""try/except inside the compiled frame (Python 3.11 exception tables).

Exceptions kiln knows eager raises at capture (a missing key of a dict built
in the frame, next() of an exhausted iterator, IndexError/AttributeError on
values it models, `raise` of an exception built from constants, a pure
builtin raising on constants) are caught by the frame's own handlers as
CPython does, so the code stays one graph. Each test compares with eager
and asserts the graph/break counts; exceptions that depend on tensor values,
or that leave the frame, stay breaks and come out as eager raises them.
"""
import pytest
import torch

import kiln
from conftest import assert_close, stats, whole_graph


def test_keyerror_of_a_dict_built_here_is_caught():
    def f(x):
        d = {"a": x}
        try:
            y = d["b"]
        except KeyError:
            y = x * 2
        try:
            z = d["a"] + 1
        except KeyError:
            z = x * 0
        return y, z

    whole_graph(f, torch.randn(3))


def test_else_and_finally_run_in_eager_order():
    def f(x):
        log = []
        for key in ("a", "b"):
            d = {"a": 1.0}
            try:
                v = d[key]
            except KeyError:
                log.append(x * -1)
            else:
                log.append(x + v)
            finally:
                log.append(x * 10)
        return log

    whole_graph(f, torch.randn(3))


def test_finally_runs_on_return_inside_try():
    def g(x, out):
        try:
            return x + 1
        finally:
            out.append(x * 3)

    def f(x):
        out = []
        y = g(x, out)
        return y, out

    whole_graph(f, torch.randn(3))


def test_nested_handlers_and_exceptions_raised_in_handlers():
    def f(x):
        y = x
        try:
            try:
                [][0]
            except KeyError:  # does not match: the outer handler catches
                y = y + 100
        except IndexError:
            y = y + 1
        try:
            try:
                {}["k"]
            except KeyError:
                raise ValueError("from the handler")
        except ValueError as e:
            y = y * len(str(e))
            chained = isinstance(e.__context__, KeyError)
        return y, chained

    whole_graph(f, torch.randn(3))


def test_except_as_reads_message_args_and_cause():
    def f(x):
        try:
            raise ValueError("bad", 3)
        except (TypeError, ValueError) as e:
            msg, n = e.args[0], e.args[1]
        try:
            try:
                raise KeyError("k")
            except KeyError as inner:
                raise LookupError("outer") from inner
        except LookupError as e:
            cause = type(e.__cause__).__name__
        try:
            raise AttributeError("x") from None
        except AttributeError as e:
            suppressed = e.__suppress_context__ and e.__cause__ is None
        return x * len(msg) + n, cause, suppressed

    whole_graph(f, torch.randn(3))


def test_bare_reraise_is_caught_by_the_outer_handler():
    def f(x):
        try:
            try:
                raise KeyError("inner")
            except KeyError:
                x = x + 1
                raise
        except LookupError as e:
            x = x * 2 + len(e.args)
        return x

    whole_graph(f, torch.randn(3))


def helper_lookup(d, key):
    return d[key] * 2


def helper_raises(x):
    if x.shape[0] > 1:
        raise RuntimeError("too long")
    return x


def test_exceptions_from_inlined_functions_are_caught_by_the_caller():
    def f(x):
        d = {"a": x}
        try:
            y = helper_lookup(d, "missing")
        except KeyError:
            y = helper_lookup(d, "a")
        try:
            z = helper_raises(x)
        except RuntimeError as e:
            z = x - len(str(e))
        return y, z

    whole_graph(f, torch.randn(3))


def test_stop_iteration_from_next_ends_the_loop():
    def f(x):
        it = iter(x.unbind(0))
        out = []
        while True:
            try:
                out.append(next(it) * 2)
            except StopIteration:
                break
        last = next(it, None)
        return torch.stack(out), last is None

    whole_graph(f, torch.randn(3, 4))


class Point:
    def __init__(self, x):
        self.x = x


class Lazy:
    def __getattr__(self, name):
        if name.startswith("t"):
            return 1.5
        raise AttributeError(name)


def test_index_and_attribute_errors_are_caught():
    def f(x):
        items = [x, x + 1]
        try:
            y = items[5]
        except IndexError:
            y = items[-1]
        p = Point(x)
        try:
            z = p.y
        except AttributeError:
            z = p.x * 3
        lazy = Lazy()
        w = getattr(lazy, "missing", 2.0) + lazy.tau
        return y, z, w, hasattr(lazy, "other"), hasattr(lazy, "tx")

    whole_graph(f, torch.randn(3))


def test_builtin_raising_on_constants_is_caught():
    def f(x):
        try:
            n = int("not a number")
        except ValueError as e:
            n = len(str(e)) % 7
        try:
            q = 1 // 0
        except ZeroDivisionError:
            q = 2
        return x * n + q

    whole_graph(f, torch.randn(3))


class MyError(ValueError):
    code = 7


def test_user_exception_class_raised_and_caught():
    def f(x):
        try:
            raise MyError("custom")
        except MyError as e:
            return x * e.code + len(e.args[0])

    whole_graph(f, torch.randn(3))


def test_with_block_inside_try_restores_grad_mode():
    def f(x):
        d = {}
        try:
            with torch.no_grad():
                y = x * 2
                d["missing"]
        except KeyError:
            pass
        return y, x * 3

    x = torch.randn(3, requires_grad=True)
    compiled = kiln.compile(f)
    for _ in range(2):
        (y, z), (ey, ez) = compiled(x), f(x)
        assert_close(y.detach(), ey.detach())
        assert_close(z.detach(), ez.detach())
        assert y.requires_grad == ey.requires_grad and z.requires_grad == ez.requires_grad
    s = stats()
    assert (s["graphs_compiled"], s["graph_breaks"], s["eager_calls"]) == (1, 0, 0), s


def test_uncaught_or_unmatched_exception_is_the_eager_one():
    def f(x):
        try:
            raise ValueError("boom")
        except KeyError:
            return x
        return x + 1

    compiled = kiln.compile(f)
    for _ in range(2):
        with pytest.raises(ValueError, match="boom"):
            compiled(torch.randn(2))
    assert stats()["graph_breaks"] >= 1


def test_exception_from_a_torch_op_stays_a_break():
    def f(x):
        try:
            y = x.view(3, -1)
        except RuntimeError:
            y = x.reshape(-1)
        return y * 2

    x = torch.randn(4, 5).t()
    compiled = kiln.compile(f)
    for _ in range(2):
        assert_close(compiled(x), f(x))
    assert stats()["graph_breaks"] >= 1


def test_stop_iteration_inside_a_generator_is_not_caught_outside():
    def gen(it):
        yield next(it)
        yield next(it)  # StopIteration here is a RuntimeError in eager

    def f(x):
        try:
            return list(gen(iter([x])))
        except StopIteration:
            return [x * 0]
        except RuntimeError:
            return [x * 5]

    x = torch.randn(3)
    compiled = kiln.compile(f)
    for _ in range(2):
        assert_close(compiled(x), f(x))
    assert stats()["graph_breaks"] >= 1


def test_returned_exception_object_breaks():
    def f(x):
        try:
            raise ValueError("v")
        except ValueError as e:
            err = e
        return x + 1, err

    x = torch.randn(3)
    compiled = kiln.compile(f)
    for _ in range(2):
        (y, err), (ey, eerr) = compiled(x), f(x)
        assert_close(y, ey)
        assert type(err) is type(eerr) and err.args == eerr.args
        assert err.__traceback__ is not None
    assert stats()["graphs_compiled"] == 0 or stats()["graph_breaks"] >= 1
