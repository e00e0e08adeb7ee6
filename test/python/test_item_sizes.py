# SPDX-License-Identifier: Apache-2.0
"""`.item()` results used as factory sizes and indices (issue 15 item 5):
never a wrong answer. kiln does not specialize the graph on a number read
from a tensor; such a use is a data-dependent break whose reason names it,
and the rest resumes with the number as a guarded constant. Each test
compares with eager for several values and asserts the break counts."""
import pytest
import torch

import kiln
from conftest import assert_close, stats


def as_size(x, n):
    return torch.zeros(int(n.item())) + x.sum()


def as_index(x, n):
    return x[n.item()] * 2


def as_slice(x, n):
    return x[: n.item()] + 1


@pytest.mark.parametrize("fn", [as_size, as_index, as_slice])
def test_item_used_as_size_or_index_breaks_with_reason(fn):
    x = torch.randn(6, 3)
    compiled = kiln.compile(fn)
    for v in (3, 3, 5, 1):
        n = torch.tensor(v)
        assert_close(compiled(x, n), fn(x, n))
    s = stats()
    assert s["graph_breaks"] >= 1 and s["eager_calls"] == 0, s
    report = kiln.explain(fn)(x, torch.tensor(2))
    reasons = [(b.category, b.message) for b in report.break_records]
    # The use names the number's origin; a use the capture cannot resume
    # after (a slice bound) moves the break to the .item() read itself.
    assert any((c == "data-dependent" and "read from a tensor" in m) or "Tensor.item()" in m
               for c, m in reasons), reasons
    if fn is not as_slice:
        assert reasons[0][0] == "data-dependent", reasons
