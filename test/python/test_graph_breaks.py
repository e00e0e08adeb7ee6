# SPDX-License-Identifier: Apache-2.0
"""Graph breaks are structured records (capture/breaks/GraphBreak.h): a
category, a message that keeps the underlying Python error text, the user's
file:line and a hint. kiln.explain groups them by category and
KILN_LOGS=graph_breaks prints the same records, one line each."""
import re

import torch

import kiln
from conftest import assert_close, run_python


def _scale_of(text):
    try:
        # float("abc") raises ValueError; leaving a generator, it is not
        # caught at capture (a user-error break), only in eager (below).
        return next(float(t) for t in [text])
    except ValueError:
        return 2.0


def three_breaks(x, text):
    y = torch.relu(x) + 1
    print("three_breaks: eager part")  # python-builtin
    y = y * _scale_of(text)  # user-error: float("abc") raises in a generator kiln captures
    if y.sum() > 0:  # data-dependent
        y = y - 1
    return y * 3


def _line(fn, text):
    """The line of `fn`'s source that contains `text` (as file:line)."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    (offset,) = [i for i, line in enumerate(lines) if text in line]
    return f"{fn.__code__.co_filename}:{first + offset}"


def test_explain_groups_three_categories_with_lines_and_python_errors(capfd):
    x = torch.randn(6)
    report = kiln.explain(three_breaks)(x, "abc")
    out, err = capfd.readouterr()
    assert "[kiln:" not in err  # collected, not printed
    assert "three_breaks: eager part" in out
    assert_close(report.out, three_breaks(x, "abc"))
    counts = report.break_counts()
    assert {"python-builtin", "user-error", "data-dependent"} <= set(counts), report.break_records
    by_category = report.breaks_by_category()

    (builtin,) = by_category["python-builtin"]
    assert builtin.location == _line(three_breaks, 'print("three_breaks')
    assert "print" in builtin.message and builtin.hint and builtin.resumed

    # The Python exception kiln met while capturing is kept in the message.
    user = by_category["user-error"][0]
    assert user.location == _line(_scale_of, "float(t)")
    assert "ValueError: could not convert string to float: 'abc'" in user.message, user
    assert user.hint

    (branch,) = by_category["data-dependent"]
    assert branch.location == _line(three_breaks, "if y.sum() > 0")
    assert "tensor value" in branch.message and "torch.where" in branch.hint

    assert report.graph_break_count == len(report.break_records) == report.stats["graph_breaks"]
    assert report.graph_breaks == [str(b) for b in report.break_records]
    text = str(report)
    for category, n in counts.items():
        assert f"  {category} ({n}):" in text
    assert "could not convert string to float" in text and builtin.location in text


def test_log_prints_the_same_category_and_location():
    # A fresh interpreter: KILN_LOGS is read when kiln is imported.
    code = (
        "import torch, kiln\n"
        "def f(x):\n"
        "    y = x + 1\n"
        "    if y.sum() > 0:\n"
        "        y = y * 2\n"
        "    print('eager part')\n"
        "    return y\n"
        "x = torch.ones(3)\n"
        "torch.testing.assert_close(kiln.compile(f)(x), f(x))\n"
        "for b in kiln._C.graph_breaks():\n"
        "    print('RECORD', b['category'], b['location'])\n")
    r = run_python(code, {"KILN_LOGS": "graph_breaks"})
    assert r.returncode == 0, r.stderr
    records = re.findall(r"^RECORD (\S+) (\S+)$", r.stdout, re.M)
    assert [c for c, _ in records] == ["data-dependent", "python-builtin"], r.stdout
    logged = re.findall(r"^\[kiln:graph_breaks\] (\S+) at (\S+): (.*)$", r.stderr, re.M)
    assert [(c, loc) for c, loc, _ in logged] == records, r.stderr
    assert records[0][1] == "<string>:4" and records[1][1] == "<string>:6"
    assert "tensor value" in logged[0][2] and "(hint: " in logged[1][2]


def test_stats_keep_their_names():
    kiln.reset()
    s = kiln.stats()
    for name in ("frames", "graphs_compiled", "compiled_calls", "cache_hits", "recompiles",
                 "graph_breaks", "eager_calls", "compile_time_us", "capture_time_us",
                 "cache_hits_disk", "cache_misses_disk", "cache_corrupt_disk", "dynamic_graphs",
                 "dynamic_specialized", "fallback_ops", "fallback_calls"):
        assert s[name] == 0, (name, s)
    assert kiln._C.graph_breaks() == []


def test_random_op_is_its_own_category():
    gen = torch.Generator().manual_seed(0)

    def f(x):  # random ops compile (test_random.py); a generator= argument breaks
        return x + torch.rand(4, generator=gen)

    report = kiln.explain(f)(torch.zeros(4))
    assert report.out.shape == (4,)
    assert "random" in report.break_counts(), report.break_records


def test_an_import_in_an_eager_part_is_not_captured(tmp_path):
    # A module imported while a compiled call runs (after a break, or by a
    # library call that imports lazily) executes uncaptured: its body and
    # everything it calls (metaclasses, registries filled at import time).
    (tmp_path / "kiln_lazy_registry.py").write_text(
        "REGISTRY = {}\n"
        "def register(name, value):\n"
        "    REGISTRY[name] = value\n"
        "    return value\n"
        "class Meta(type):\n"
        "    def __new__(mcs, name, bases, ns):\n"
        "        cls = super().__new__(mcs, name, bases, ns)\n"
        "        register(name, cls)\n"
        "        return cls\n"
        "class A(metaclass=Meta):\n"
        "    pass\n"
        "for i in range(3):\n"
        "    register(f'v{i}', i)\n")
    code = f"""
import importlib, sys, torch, kiln
sys.path.insert(0, {str(tmp_path)!r})
def f(x):
    y = x + 1
    mod = importlib.import_module("kiln_lazy_registry")
    return y * len(mod.REGISTRY)
report = kiln.explain(f)(torch.ones(2))
assert report.out.tolist() == [8.0, 8.0], report.out
seen = {{g.name for g in report.graphs}} | {{b.function for b in report.break_records}}
assert not seen & {{"register", "Meta.__new__", "<module>"}}, seen
assert any(b.function == "f" for b in report.break_records), seen
print("ok")
"""
    r = run_python(code, {})
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


def _cat_of_chain(a, b, c):
    import itertools
    # itertools.chain built in the frame is captured (capture/interp/Iterators.cpp).
    return torch.cat(list(itertools.chain([a], (b, c))), 0)


def _cat_of(items):
    return torch.cat(list(items), 0)


def test_chain_built_in_the_frame_is_one_graph():
    x = torch.randn(2, 3)
    report = kiln.explain(_cat_of_chain)(x, x + 1, x + 2)
    assert_close(report.out, _cat_of_chain(x, x + 1, x + 2))
    assert report.graph_count == 1 and report.graph_break_count == 0, report.graph_breaks


def test_an_iterator_passed_in_is_consumed_once_as_in_eager():
    # The capture must not use up the caller's iterator (then the compiled
    # call would see an empty one): it breaks or reads it once, like eager.
    import itertools
    x = torch.randn(2, 3)
    for _ in range(2):
        it_eager = itertools.chain([x], (x + 1, x + 2))
        it_kiln = itertools.chain([x], (x + 1, x + 2))
        expected = _cat_of(it_eager)
        assert_close(kiln.compile(_cat_of)(it_kiln), expected)
        assert list(it_kiln) == list(it_eager) == []
