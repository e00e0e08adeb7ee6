# SPDX-License-Identifier: Apache-2.0
"""`Tensor.storage_offset()` (issue 15 item 7): a guarded constant for a
graph input (the input's offset, compared per call), computed for views of
inputs (replayed on a meta tensor, plus the input's offset). Each test
compares with eager and asserts graph/break counts."""
import torch

import kiln
from conftest import assert_close, stats, whole_graph


def offsets(x):
    v = x[1:, 2:]
    return x * x.storage_offset() + v.storage_offset() + x.t()[3:].storage_offset()


def test_offsets_of_input_and_views_are_one_graph():
    whole_graph(offsets, torch.randn(4, 6))


def test_input_with_an_offset_recompiles_on_change():
    base = torch.randn(40)
    compiled = kiln.compile(offsets)
    for start in (0, 6, 6, 12):
        x = base[start:start + 24].view(4, 6)
        assert_close(compiled(x), offsets(x))
    s = stats()
    # offsets 0, 6 and 12: one graph each (the offset is a constant of it)
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["graphs_compiled"] == 3 and s["recompiles"] == 2, s


def test_offset_used_as_a_size():
    def f(x):
        n = x[2:].storage_offset()  # 2 * 3
        return x.flatten()[:n] + 1

    whole_graph(f, torch.randn(5, 3))
