# SPDX-License-Identifier: Apache-2.0
"""Read-modify-write through a subscript (`r[:, 0] += 5`, `r[i] *= 2`,
`r[k].add_(1)`) on tensors the graph computed, on views of them, on
`contiguous()` of them and on inputs, against eager: the results, the
input afterwards, aliasing between returned tensors, one graph. `r[:, 0]
+= 5` on a computed tensor used to break at its STORE_SUBSCR and resume
with the view rebuilt from the root's value before the update: the update
was lost (ops/InPlace.cpp retargetView); that store is now the no-op it is
in eager (interp/Containers.cpp)."""
import pytest
import torch

import kiln
from conftest import assert_compiled

BASES = {
    "computed": lambda x: x + 1,
    "contiguous-of-computed": lambda x: (x + 1).contiguous(),
    "transposed-view": lambda x: (x + 1).t(),
    "transposed-copy": lambda x: (x + 1).t().contiguous(),
    "row-slice": lambda x: (x + 1)[1:],
    "input": lambda x: x,
}
INDEXES = {
    "column": (slice(None), 0),
    "row": 0,
    "block": (slice(1, None), slice(1, None)),
    "last": (Ellipsis, -1),
    "strided": (slice(None), slice(None, None, 2)),
}


def update(r, index, op):
    if op == "iadd":
        r[index] += 5
    elif op == "imul":
        r[index] *= 2
    else:
        r[index].add_(1)


@pytest.mark.parametrize("op", ["iadd", "imul", "add_"])
@pytest.mark.parametrize("index", list(INDEXES))
@pytest.mark.parametrize("base", list(BASES))
def test_subscript_update_matches_eager(base, index, op):
    make, ix = BASES[base], INDEXES[index]

    def f(x):
        r = make(x)
        update(r, ix, op)
        return r, r[ix], r * 1

    torch.manual_seed(0)
    x = torch.randn(4, 6)
    xe, xk = x.clone(), x.clone()
    kiln.reset()
    want = f(xe)
    got = kiln.compile(f)(xk)
    for g, w in zip(got, want):
        assert torch.equal(g, w), (g, w)
    assert torch.equal(xk, xe)  # the input, written back when updated
    # r[ix] aliases r as in eager
    assert (got[1].data_ptr() - got[0].data_ptr()) == (want[1].data_ptr() - want[0].data_ptr())
    assert_compiled(graphs=1, eager_calls=0)
