# SPDX-License-Identifier: Apache-2.0
"""kiln.explain(fn)(*args) reports graphs, op counts, breaks with their
source line and guards of one call, without printing the log channels."""
import torch
from torch import nn

import kiln
from conftest import assert_close


def two_graphs(x):
    y = torch.relu(x) * 2
    print("explain: eager part")
    return y + 1


def test_explain_reports_graphs_breaks_and_guards(capfd):
    x = torch.randn(5)
    report = kiln.explain(two_graphs)(x)
    out, err = capfd.readouterr()
    assert "explain: eager part" in out
    assert "[kiln:" not in err  # collected, not printed
    assert_close(report.out, two_graphs(x))
    assert report.graph_count == 2 and report.graph_break_count == 1
    assert report.graph_count == report.stats["graphs_compiled"]
    (reason,) = report.graph_breaks
    assert "print" in reason and f"test_explain.py:{two_graphs.__code__.co_firstlineno + 2}" in reason
    assert [g.op_count for g in report.graphs] == [3, 2]  # relu, 2, mul | 1, add
    assert all("kiln." in g.ir for g in report.graphs)
    assert len(report.guards) == 2
    assert "L['x'] is a CPU tensor with dtype torch.float32, sizes (5)" in report.guards[0]
    text = str(report)
    assert "Graph count: 2" in text and "Graph break count: 1" in text and "print" in text


def test_explain_of_a_module_with_no_breaks():
    m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2)).eval()
    x = torch.randn(3, 4)
    with torch.no_grad():
        report = kiln.explain(m)(x)
        assert_close(report.out, m(x))
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert report.op_count >= 3
    assert report.stats["graph_breaks"] == 0


def test_explain_restores_logging(capfd):
    kiln.explain(two_graphs)(torch.randn(2))
    capfd.readouterr()
    with kiln.config.patch(logs=frozenset({"graph_breaks"})):
        kiln.reset()
        kiln.compile(two_graphs)(torch.randn(2))
    _, err = capfd.readouterr()
    assert "[kiln:graph_breaks]" in err
