# SPDX-License-Identifier: Apache-2.0
"""The symbolic interpreter's opcode table (frontend/csrc/capture/interp/
Opcodes.def): its rows name real CPython opcodes, and an opcode with no row
is one graph break that names it, after which the function still gives
eager's result."""
import dis
import pathlib
import re
import sys

import pytest
import torch

import kiln
from conftest import assert_close

OPCODES_DEF = (pathlib.Path(__file__).resolve().parents[2] / "frontend" / "csrc" / "capture" /
               "interp" / "Opcodes.def")


def table_rows():
    """(name, handler) of each KILN_OPCODE row, split at the 3.12 section."""
    text = OPCODES_DEF.read_text()
    primary, _, variants = text.partition("// --- Python 3.12 variants ---")
    row = re.compile(r"^KILN_OPCODE\((\w+), (\w+), (\w+), (true|false)\)$", re.M)
    return row.findall(primary), row.findall(variants)


def test_table_names_are_cpython_opcodes():
    primary, variants = table_rows()
    names = [r[0] for r in primary + variants]
    assert len(names) == len(set(names)), "an opcode has two rows"
    assert len(primary) > 70 and variants
    if sys.version_info[:2] == (3, 11):
        # CACHE and the 3.11 names are dis's own; the 3.12 rows are not 3.11 opcodes.
        assert [r[0] for r in primary if r[0] not in dis.opmap] == []
    lazy = {r[0] for r in primary + variants if r[3] == "true"}
    assert lazy == {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_METHOD",
                    "LOAD_DEREF", "BINARY_SUBSCR"}


def unary_plus(x):
    y = torch.relu(x) * 2
    z = +y  # UNARY_POSITIVE (3.12: CALL_INTRINSIC_1): no row in the opcode table
    return z + 1


UNARY_PLUS_OPCODE = "UNARY_POSITIVE" if sys.version_info < (3, 12) else "CALL_INTRINSIC_1"


def test_unsupported_opcode_is_one_graph_break_naming_it():
    assert UNARY_PLUS_OPCODE in {i.opname for i in dis.get_instructions(unary_plus)}
    x = torch.randn(3, 4)
    report = kiln.explain(unary_plus)(x)
    assert_close(report.out, unary_plus(x))
    # The graph before the break and the one after it (the resumed rest).
    assert report.graph_count == 2 and report.graph_break_count == 1, report.graph_breaks
    (reason,) = report.graph_breaks
    assert f"opcode {UNARY_PLUS_OPCODE} is not supported" in reason
    assert f"test_opcodes.py:{unary_plus.__code__.co_firstlineno + 2}" in reason


def match_sizes(x):
    y = torch.relu(x)
    match x.shape:  # MATCH_SEQUENCE: no row in the opcode table
        case (a, _):
            n = a
        case _:
            n = 0
    return y * n


def test_unsupported_opcode_kiln_cannot_resume_after_runs_the_frame_eagerly():
    x = torch.randn(3, 4)
    report = kiln.explain(match_sizes)(x)
    assert_close(report.out, match_sizes(x))
    (reason,) = report.graph_breaks
    assert "opcode MATCH_SEQUENCE is not supported" in reason
    assert f"test_opcodes.py:{match_sizes.__code__.co_firstlineno + 3}" in reason


def set_in_a_loop(x, n):
    for i in range(n):
        x = x + len({i, i + 1})
    return x


def test_unsupported_opcode_in_a_loop_matches_eager():
    x = torch.randn(5)
    f = kiln.compile(set_in_a_loop)
    for n in (1, 3):
        assert_close(f(x, n), set_in_a_loop(x, n))


def test_fullgraph_raises_naming_the_opcode():
    with pytest.raises(RuntimeError, match=f"opcode {UNARY_PLUS_OPCODE} is not supported"):
        kiln.compile(unary_plus, fullgraph=True)(torch.randn(3, 4))


class _Record:
    pass


def builds_with_object_new(x):
    y = x + 1
    print("break")  # the rest runs in a resume function
    obj = object.__new__(_Record)  # LOAD_METHOD on a type: (NULL, object.__new__)
    obj.value = 2
    return y * obj.value, type(obj).__name__


def test_object_new_on_a_class_calls_objects_new():
    # `object.__new__` is a builtin bound to `object` found in object's own
    # dict; resumed after the break, it must not become type.__new__(object, cls).
    x = torch.randn(3)
    report = kiln.explain(builds_with_object_new)(x)
    out = report.out
    assert out[1] == "_Record"
    assert_close(out[0], builds_with_object_new(x)[0])
    assert report.graph_count >= 1 and report.graph_break_count >= 1


def identity_in_graph(x):
    a = x
    f = x.float()  # a cast to x's own dtype returns x itself
    return a is x, f is x, f is a, (x + 1) is x


def identity_of_view(x):
    b = x.view_as(x)
    return b is x, x.detach() is x, x.view_as(x) is x


def identity_of_contiguous(x):
    return x.contiguous() is x


def test_is_of_tensors_matches_eager():
    x = torch.randn(4, 3)
    expected = identity_in_graph(x)
    assert expected == (True, True, True, False)
    report = kiln.explain(identity_in_graph)(x)
    assert report.out == expected
    assert report.graph_count == 1 and report.graph_break_count == 0, report.graph_breaks
    # A view folded to its input's value is still a new object (True was returned).
    report = kiln.explain(identity_of_view)(x)
    assert report.out == identity_of_view(x) == (False, False, False)
    assert report.graph_count == 1 and report.graph_break_count == 0, report.graph_breaks
    # contiguous() is its input only where the input is contiguous: a break;
    # of a strided input it is a copy (known from the guarded strides).
    for t, breaks in ((x, 1), (x.t(), 0)):
        report = kiln.explain(identity_of_contiguous)(t)
        assert report.out == identity_of_contiguous(t)
        assert report.graph_break_count == breaks, report.graph_breaks


def returns_detached_and_view(x):
    return x.detach(), x.view_as(x), x.float()


def test_a_returned_no_op_view_of_an_input_is_a_new_object():
    x = torch.randn(4, 3, requires_grad=True)
    detached, view, same = kiln.compile(returns_detached_and_view)(x)
    # detach() was returned as the input itself, requiring grad.
    assert detached is not x and not detached.requires_grad
    assert detached.data_ptr() == x.data_ptr()
    assert view is not x and view.requires_grad and view.data_ptr() == x.data_ptr()
    assert same is x
