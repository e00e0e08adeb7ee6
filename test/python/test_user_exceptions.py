# SPDX-License-Identifier: Apache-2.0
"""User exceptions raised inside compiled regions come out as eager raises
them, with fullgraph=True and without: the same type and message, the same
__cause__ / __context__ (`raise ... from ...`, a raise inside `except`) and
a traceback that contains the user's own line. kiln runs such a frame in
CPython (a user-error graph break), so the exception is the real one, never
a RuntimeError wrapping it. Each case runs in a subprocess with a timeout (a
regression must fail, not hang or crash the suite) and asserts through
kiln.stats() that the break was recorded.
"""
import json
import textwrap

import pytest

from conftest import run_python

CASES = textwrap.dedent('''
    import torch
    def raise_value_error(x):
        y = x + 1
        raise ValueError("bad value %d" % 3)
    def failing_assert(x):
        y = x * 2
        assert x.shape[0] == 5, "shape must be 5"
        return y
    def index_error(x):
        items = [1, 2]
        return x + items[5]
    def key_error(x):
        d = {"a": 1}
        return x + d["b"]
    def zero_division(x):
        return x + 1 / 0
    def raise_from(x):
        try:
            {}["k"]
        except KeyError as e:
            raise ValueError("wrapped") from e
    def raise_in_except(x):
        y = x.sin()
        try:
            [][1]
        except IndexError:
            raise RuntimeError("while handling")
    def tensor_index_error(x):
        return x[7] * 2
''')

DRIVER = CASES + textwrap.dedent('''
    import json, sys, traceback, kiln
    def describe(e, fn):
        lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.name == fn.__name__]
        kind = lambda v: type(v).__name__ if v is not None else None
        return [type(e).__name__, str(e), kind(e.__cause__), kind(e.__context__), lines]
    fn = globals()[sys.argv[1]]
    fullgraph = sys.argv[2] == "1"
    x = torch.randn(4)
    try:
        fn(x)
        eager = None
    except Exception as e:
        eager = describe(e, fn)
    out = []
    for call in range(2):  # the first call captures, the second hits the cache
        try:
            kiln.compile(fn, fullgraph=fullgraph)(x)
            out.append(None)
        except Exception as e:
            out.append(describe(e, fn))
    print(json.dumps({"eager": eager, "kiln": out, "breaks": kiln.stats()["graph_breaks"]}))
''')

NAMES = ["raise_value_error", "failing_assert", "index_error", "key_error", "zero_division",
         "raise_from", "raise_in_except", "tensor_index_error"]


@pytest.mark.parametrize("fullgraph", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_user_exception_is_the_eager_one(name, fullgraph):
    r = run_python(DRIVER, args=[name, int(fullgraph)], timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    eager = got["eager"]
    assert eager is not None and eager[4], got  # eager raised, at a line of the function
    for result in got["kiln"]:
        assert result is not None, got
        # Type, message, cause and context as in eager; the user's line is
        # in the traceback (a resume function may add a frame of the same
        # name at the same line).
        assert result[:4] == eager[:4], got
        assert eager[4][-1] in result[4], got
    assert got["breaks"] >= 1, got
