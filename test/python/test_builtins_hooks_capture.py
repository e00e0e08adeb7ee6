# SPDX-License-Identifier: Apache-2.0
"""Python builtins and module hooks captured into one graph (issue 15):
nn.Module forward pre-/post-hooks (per-module and global, with kwargs,
mutating or replacing values) inlined and guarded so that adding, removing
or replacing a hook after compiling recompiles; `id()` of guarded objects
and of values made in the frame; dicts of the caller with tuple keys
mutated (replayed side effects). Each test compares with eager and asserts
kiln.stats() graph/break counts."""
import pytest
import torch
import torch.nn as nn
from torch.nn.modules import module as nn_module

import kiln
from conftest import assert_close, assert_compiled, whole_graph
from kiln import stats


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        return self.out(torch.relu(self.lin(x)))


@pytest.fixture
def handles():
    hs = []
    yield hs
    for h in hs:
        h.remove()


def _check(c, m, x):
    with torch.no_grad():
        assert_close(c(x), m(x))


def test_submodule_pre_hook_inlined(handles):
    m = Net()
    handles.append(m.lin.register_forward_pre_hook(lambda mod, inp: (inp[0] + 1,)))
    x = torch.randn(3, 4)
    with torch.no_grad():
        whole_graph(m, x)


def test_pre_hook_returning_a_tensor_and_post_hook_replacing_output(handles):
    m = Net()
    handles.append(m.lin.register_forward_pre_hook(lambda mod, inp: inp[0] * 2))
    handles.append(m.out.register_forward_hook(lambda mod, inp, out: out - inp[0].sum()))
    # A hook returning None leaves the output as it is.
    handles.append(m.out.register_forward_hook(lambda mod, inp, out: None))
    with torch.no_grad():
        whole_graph(m, torch.randn(3, 4))


def test_hooks_with_kwargs(handles):
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = Scaled()

        def forward(self, x):
            return self.s(x, scale=2.0)

    m = Outer()

    def pre(mod, args, kwargs):
        kwargs["scale"] = kwargs["scale"] * 3
        return args, kwargs

    def post(mod, args, kwargs, out):
        return out + kwargs["scale"]

    handles.append(m.s.register_forward_pre_hook(pre, with_kwargs=True))
    handles.append(m.s.register_forward_hook(post, with_kwargs=True))
    whole_graph(m, torch.randn(2, 3))


def test_global_hooks_inlined(handles):
    m = Net()
    handles.append(nn_module.register_module_forward_pre_hook(lambda mod, inp: None))
    handles.append(nn_module.register_module_forward_hook(lambda mod, inp, out: out * 2))
    with torch.no_grad():
        # Called from a compiled function, the top module's hooks are inlined
        # too (a compiled module runs its own hooks eagerly, around forward).
        whole_graph(lambda x: m(x), torch.randn(3, 4))


def test_hook_added_replaced_removed_after_compiling():
    m = Net()
    c = kiln.compile(m)
    x = torch.randn(3, 4)
    _check(c, m, x)
    h = m.lin.register_forward_hook(lambda mod, inp, out: out * 10)
    _check(c, m, x)  # added: recompiles, the hook is in the graph
    h.remove()
    h = m.lin.register_forward_hook(lambda mod, inp, out: out - 5)
    _check(c, m, x)  # replaced by another hook (same length): recompiles
    h.remove()
    _check(c, m, x)  # removed: the first entry matches again
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["graphs_compiled"] == 3 and s["recompiles"] == 2, s


def test_global_hook_added_after_compiling():
    m = Net()
    c = kiln.compile(lambda x: m(x))
    x = torch.randn(3, 4)
    _check(c, m, x)
    h = nn_module.register_module_forward_hook(lambda mod, inp, out: out + 1)
    try:
        _check(c, m, x)  # fires on Net, lin and out: all inside the graph
    finally:
        h.remove()
    _check(c, m, x)
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1, s


def test_with_kwargs_flag_change_recompiles():
    m = Net()

    def hook(mod, *a):
        return a[-1] * 3

    h = m.lin.register_forward_hook(hook)
    c = kiln.compile(m)
    x = torch.randn(3, 4)
    _check(c, m, x)
    h.remove()
    h = m.lin.register_forward_hook(hook, with_kwargs=True)  # same function, new signature
    _check(c, m, x)
    h.remove()
    assert stats()["graphs_compiled"] == 2, stats()


def test_backward_hook_still_breaks():
    m = Net()
    m.lin.register_full_backward_hook(lambda mod, gi, go: None)
    c = kiln.compile(m)
    x = torch.randn(3, 4, requires_grad=True)
    c(x).sum().backward()
    assert stats()["graph_breaks"] >= 1


def test_id_of_tensors_and_guarded_objects():
    def f(x):
        a = x
        b = x.view_as(x)
        y = x * 2
        seen = {id(a): a, id(y): y}
        return (a is b, id(a) == id(x), id(a) != id(b), id(y) == id(y), len(seen),
                seen[id(x)] + 1)

    got = whole_graph(f, torch.randn(3))
    assert got[:5] == (False, True, True, True, 2)


def test_id_of_a_module_and_none():
    lin = nn.Linear(2, 2)

    def f(x, m, other):
        return m(x), id(m) == id(other), id(None) == id(None)

    x = torch.randn(1, 2)
    c = kiln.compile(f)
    with torch.no_grad():
        assert_close(c(x, lin, lin), f(x, lin, lin))
        assert_close(c(x, lin, lin), f(x, lin, lin))
        assert_compiled(graphs=1)
        lin2 = nn.Linear(2, 2)
        assert_close(c(x, lin, lin2), f(x, lin, lin2))  # identity guarded: recompiles
    assert stats()["graphs_compiled"] == 2


def test_id_token_never_escapes():
    def f(x):
        y = x + 1
        return y, id(y)

    c = kiln.compile(f)
    out, i = c(torch.randn(2))
    assert isinstance(i, int) and i == id(out)
    assert stats()["graph_breaks"] >= 1 or stats()["eager_calls"] >= 1, stats()


_CACHE = {}


def test_global_dict_with_tuple_keys_memo():
    _CACHE.clear()

    def f(x):
        key = tuple(x.shape)
        if key not in _CACHE:
            _CACHE[key] = torch.ones(x.shape[1])
        return x * _CACHE[key]

    c = kiln.compile(f)
    x = torch.randn(3, 4)
    assert_close(c(x), x)
    assert list(_CACHE) == [(3, 4)]
    assert_close(c(x), x)
    assert list(_CACHE) == [(3, 4)]
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    # Filled by the first call: the second reads the stored tensor (recompile).
    assert s["graphs_compiled"] == 2, s


def test_kwargs_pre_hook_mutating_in_place_and_returning_none(handles):
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    s = Scaled()

    def pre(mod, args, kwargs):
        kwargs["scale"] = 5.0  # forward sees the mutated dict

    handles.append(s.register_forward_pre_hook(pre, with_kwargs=True))
    whole_graph(lambda x: s(x, scale=2.0), torch.randn(2, 3))


def test_hook_function_patched_after_compiling():
    m = Net()
    state = {"k": 2.0}

    def hook(mod, inp, out):
        return out * state["k"]

    h = m.lin.register_forward_hook(hook)
    c = kiln.compile(m)
    x = torch.randn(3, 4)
    try:
        _check(c, m, x)
        state["k"] = 7.0  # a value the hook reads changed: guarded
        _check(c, m, x)
        hook.__code__ = (lambda mod, inp, out: out - state["k"]).__code__  # the hook patched
        _check(c, m, x)
    finally:
        h.remove()
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_bool_of_containers_built_in_the_frame():
    def f(x):
        d, empty = {"a": x}, []
        return (x * 2 if bool(d) else x) + (1 if bool(empty) else 3), bool((x,))

    got = whole_graph(f, torch.randn(3))
    assert got[1] is True


def test_type_of_tensors_and_values_built_in_the_frame():
    # HF DistilBERT: `if type(sa_output) is not tuple: raise TypeError(...)`
    # on the tuple a submodule returned.
    def f(x):
        pair, rows = (x * 2, x), [x]
        assert type(pair) is tuple and type(rows) is list and type({"a": x}) is dict
        y = x + 1
        return y if type(y) is torch.Tensor and type(x) is torch.Tensor else x

    whole_graph(f, torch.randn(3))


def test_type_of_a_parameter_input_and_of_ops_on_it():
    lin = nn.Linear(3, 3)

    def f(x):
        w = lin.weight
        return (x @ w) * (2 if type(w) is nn.Parameter and type(w * 1) is torch.Tensor else 3)

    with torch.no_grad():
        whole_graph(f, torch.randn(2, 3))


def test_type_of_ops_on_a_tensor_subclass_is_not_assumed_plain():
    class Tagged(torch.Tensor):
        pass

    def f(x):
        y = x * 2
        return y + (1 if type(y) is torch.Tensor else 5)

    x = torch.randn(3).as_subclass(Tagged)
    expected = f(x)
    got = kiln.compile(f)(x)
    assert_close(got.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))


def test_submodule_hooks_registered_with_prepend_run_first():
    # Hook dicts are OrderedDicts; `prepend=True` reorders them with
    # move_to_end, which a plain dict walk does not see (kiln ran A then B).
    double = lambda mod, inputs, out: out * 2
    plus_one = lambda mod, inputs, out: out + 1

    def make():
        lin = torch.nn.Linear(1, 1)
        with torch.no_grad():
            lin.weight.fill_(1.0)
            lin.bias.zero_()
        return torch.nn.Sequential(lin)

    x = torch.ones(1, 1)
    for hooks_after_compile in (False, True):
        model, reference = make(), make()
        compiled = kiln.compile(model)
        if hooks_after_compile:
            compiled(x)
        for m in (model, reference):
            m[0].register_forward_hook(double)
            m[0].register_forward_hook(plus_one, prepend=True)
        assert reference(x).item() == 4.0
        assert compiled(x).item() == 4.0


def test_tensor_dunder_len_is_a_method():
    """`t.__len__` read as an attribute gave the int (kiln's own name for
    len(t)), so `t.__len__()` raised TypeError."""
    def f(a, b):
        return a + len(a) + b.__len__() + b.__len__.__call__()

    a, b = torch.randn(10, 10), torch.randn(7, 10)
    assert_close(kiln.compile(f)(a, b), f(a, b))
