# SPDX-License-Identifier: Apache-2.0
"""State changed after compiling is seen, as eager sees it.

Users update models between calls: items of nn.ParameterDict /
ParameterList replaced, ModuleList/ModuleDict children replaced or
appended, weights updated in place, buffers replaced, hooks added, configs
edited. Every case compiles, calls, mutates twin models the same way and
compares the next compiled call with eager's; where capture is the point
it also checks the graph has no break (the tensors are graph inputs read
per call, not constants baked in at capture).
"""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats


class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.pd = nn.ParameterDict({"a": nn.Parameter(torch.randn(4))})
        self.pl = nn.ParameterList([nn.Parameter(torch.randn(4))])
        self.md = nn.ModuleDict({"act": nn.ReLU()})
        self.ml = nn.ModuleList([nn.Linear(4, 4), nn.ReLU()])

    def forward(self, x):
        h = x * self.pd["a"] + self.pl[0]
        h = self.ml[0](h)
        h = self.ml[-1](h)
        return self.md["act"](h - 0.1)


MUTATIONS = {
    "paramdict item replaced": lambda m: m.pd.__setitem__("a", nn.Parameter(torch.full((4,), 3.0))),
    "paramdict item updated in place": lambda m: m.pd["a"].data.mul_(3),
    "paramlist item replaced": lambda m: m.pl.__setitem__(0, nn.Parameter(torch.full((4,), 2.0))),
    "moduledict child replaced": lambda m: m.md.__setitem__("act", nn.Tanh()),
    "modulelist child replaced": lambda m: m.ml.__setitem__(0, nn.Linear(4, 4)),
    "modulelist appended (ml[-1] moves)": lambda m: m.ml.append(nn.Sigmoid()),
    "linear weight replaced": lambda m: setattr(m.ml[0], "weight", nn.Parameter(torch.ones(4, 4))),
    "linear bias removed": lambda m: setattr(m.ml[0], "bias", None),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_container_state_changed_after_compiling(name):
    torch.manual_seed(0)
    eager_model = Containers()
    model = Containers()
    model.load_state_dict(eager_model.state_dict())
    compiled = kiln.compile(model)
    x = torch.randn(2, 4)
    assert_close(compiled(x), eager_model(x))
    assert stats()["graph_breaks"] == 0, stats()
    for m in (eager_model, model):
        torch.manual_seed(1)
        MUTATIONS[name](m)
    assert_close(compiled(x), eager_model(x))


def test_paramdict_items_are_graph_inputs_not_constants():
    model = Containers()
    compiled = kiln.compile(model)
    x = torch.randn(2, 4)
    compiled(x)
    with torch.no_grad():
        model.pd["a"].add_(1.0)  # same object, new values: no recompile
    assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["recompiles"] == 0, s


def test_tensor_read_at_capture_without_source_is_not_baked_in():
    # getattr(obj, name) on an object the capture cannot re-read per call
    # (here: built by a call evaluated at capture) must not freeze the tensor.
    holder = nn.ParameterDict({"w": nn.Parameter(torch.ones(3))})

    def f(x):
        return x * list(holder.values())[0]

    x = torch.randn(3)
    compiled = kiln.compile(f)
    assert_close(compiled(x), f(x))
    holder["w"] = nn.Parameter(torch.full((3,), 5.0))
    assert_close(compiled(x), f(x))
