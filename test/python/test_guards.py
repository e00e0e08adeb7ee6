# SPDX-License-Identifier: Apache-2.0
"""Guards: every assumption a compiled graph makes is re-checked per call."""
import torch
from torch import nn

import kiln
from conftest import assert_close, assert_compiled, stats


def affine(x, w):
    return torch.tanh(x @ w) * 2 + 1


def test_dtype_change_recompiles():
    f = kiln.compile(affine)
    x32, w32 = torch.randn(4, 5), torch.randn(5, 3)
    assert_close(f(x32, w32), affine(x32, w32))
    x64, w64 = x32.double(), w32.double()
    out = f(x64, w64)
    assert out.dtype == torch.float64
    assert_close(out, affine(x64, w64))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["compiled_calls"] == 2, s


def test_int_dtype_change_recompiles():
    def f(x):
        return x * 2 + 1

    cf = kiln.compile(f)
    a = torch.arange(6, dtype=torch.int64)
    b = torch.arange(6, dtype=torch.int32)
    assert_close(cf(a), f(a))
    assert_close(cf(b), f(b))
    assert_close(cf(a.float()), f(a.float()))
    s = stats()
    assert s["graphs_compiled"] == 3 and s["recompiles"] == 2, s


def test_non_contiguous_input():
    def f(x, y):
        return torch.relu(x) + y * 2

    cf = kiln.compile(f)
    base = torch.randn(6, 4)
    xt = base.t()  # 4x6, strides (1, 4)
    assert not xt.is_contiguous()
    y = torch.randn(4, 6)
    assert_close(cf(xt, y), f(xt, y))
    assert_compiled(graphs=1, calls=1)
    # Same shape but contiguous: different strides → a new graph, still right.
    xc = xt.contiguous()
    assert_close(cf(xc, y), f(xc, y))
    assert_close(cf(xt, y), f(xt, y))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["cache_hits"] == 1, s


def test_non_contiguous_inputs_sliced_and_expanded():
    def f(x, y):
        return x * y - x.sum(0)

    cf = kiln.compile(f)
    x = torch.randn(3, 8)[:, ::2]          # strided slice
    y = torch.randn(1, 4).expand(3, 4)     # stride-0 broadcast view
    assert_close(cf(x, y), f(x, y))
    assert_compiled(graphs=1, calls=1)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = 2.0

    def forward(self, x):
        return self.lin(x) * self.scale


def test_module_float_attribute_change_recompiles():
    model = Scaled().eval()
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
        model.scale = 5.0
        out = compiled(x)
        assert_close(out, model.lin(x) * 5.0)
        assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["cache_hits"] == 1, s


def test_parameter_values_are_not_baked_in():
    model = Scaled().eval()
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    with torch.no_grad():
        compiled(x)
        model.lin.weight.mul_(3.0)   # same tensor, new values: no recompile needed
        model.lin.bias.zero_()
        assert_close(compiled(x), model(x))
    assert_compiled(graphs=1, calls=2)


def test_replacing_a_parameter_tensor_recompiles_or_rereads():
    model = Scaled().eval()
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    with torch.no_grad():
        compiled(x)
        model.lin.weight = nn.Parameter(torch.randn(4, 4))
        assert_close(compiled(x), model(x))
    s = stats()
    assert s["compiled_calls"] == 2 and s["graph_breaks"] == 0, s


def test_replacing_submodule_recompiles():
    model = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 2)).eval()
    compiled = kiln.compile(model)
    x = torch.randn(2, 5)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
        model[1] = nn.Tanh()
        assert_close(compiled(x), model(x))
        assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["cache_hits"] == 1, s


def test_appending_to_sequential_recompiles():
    model = nn.Sequential(nn.Linear(5, 5), nn.ReLU()).eval()
    compiled = kiln.compile(model)
    x = torch.randn(2, 5)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
        model.append(nn.Linear(5, 3))
        out = compiled(x)
        assert out.shape == (2, 3)
        assert_close(out, model(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1, s


class DropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.drop = nn.Dropout(p=0.0)

    def forward(self, x):
        return self.drop(torch.relu(self.lin(x)))


def test_eval_train_swap_with_dropout_p0():
    model = DropNet()
    compiled = kiln.compile(model)
    x = torch.randn(4, 6)
    with torch.no_grad():
        for mode in ["eval", "train", "eval", "train"]:
            getattr(model, mode)()
            assert_close(compiled(x), model(x))
    s = stats()
    # training flag of both modules is guarded: one graph per mode
    assert s["graphs_compiled"] == 2 and s["cache_hits"] == 2 and s["graph_breaks"] == 0, s


def test_requires_grad_change_under_no_grad():
    def f(x):
        return (x * 3).sum(-1)

    cf = kiln.compile(f)
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert_close(cf(x), f(x))
        xr = x.clone().requires_grad_(True)
        out = cf(xr)
        assert not out.requires_grad
        assert_close(out, f(x))
    s = stats()
    assert s["compiled_calls"] == 2 and s["graph_breaks"] == 0, s


def test_global_tensor_is_an_input_not_a_constant():
    global _G_BIAS
    _G_BIAS = torch.ones(3)

    def f(x):
        return x + _G_BIAS

    cf = kiln.compile(f)
    x = torch.randn(3)
    assert_close(cf(x), x + 1)
    _G_BIAS.fill_(5.0)  # in-place: new values, same tensor
    assert_close(cf(x), x + 5)
    _G_BIAS = torch.full((3,), -1.0)  # rebinding the global
    assert_close(cf(x), x - 1)
    s = stats()
    assert s["compiled_calls"] == 3 and s["graph_breaks"] == 0, s


def test_list_argument_mutated_in_place_recompiles():
    def f(x, scales):
        for s in scales:
            x = x * s
        return x

    cf = kiln.compile(f)
    x = torch.randn(4)
    scales = [2.0, 3.0]
    assert_close(cf(x, scales), x * 6)
    scales[1] = 0.5   # same list object, new contents
    assert_close(cf(x, scales), x * 1)
    scales.append(4.0)
    assert_close(cf(x, scales), x * 4)
    s = stats()
    assert s["graphs_compiled"] == 3 and s["compiled_calls"] == 3, s


def test_list_of_tensors_length_change_recompiles():
    def f(xs):
        total = xs[0] * 0
        for t in xs:
            total = total + t
        return total

    cf = kiln.compile(f)
    xs = [torch.randn(3) for _ in range(3)]
    assert_close(cf(xs), sum(xs))
    xs.append(torch.randn(3))
    assert_close(cf(xs), sum(xs))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1, s


def test_recompile_limit_falls_back_to_eager():
    def f(x, k):
        return x * k

    cf = kiln.compile(f)
    x = torch.randn(2)
    # (a float that changes would become a graph input: test_dynamic_numbers.py)
    with kiln.config.patch(recompile_limit=2, automatic_dynamic_numbers=False):
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for k in range(4):
                assert_close(cf(x, float(k)), x * float(k))
        assert any("recompile limit" in str(m.message) for m in w)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["eager_calls"] == 2, s


class HookNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_hook_registered_on_submodule_after_compile_runs():
    model = HookNet().eval()
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    calls = []

    def hook(mod, inputs, output):
        calls.append(mod)
        return output * 0

    with torch.no_grad():
        compiled(x)
        handle = model.fc1.register_forward_hook(hook)
        out = compiled(x)
        handle.remove()
        expected_with_hook = model.fc2(torch.zeros(3, 4))
    assert calls == [model.fc1]
    assert_close(out, expected_with_hook)
    s = stats()
    # HookNet.forward recompiles with fc1's hook inlined (ModuleHooks.cpp):
    # its list.append is a replayed side effect, no break.
    assert s["recompiles"] == 1 and s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_hooks_on_the_compiled_module_itself_run():
    model = HookNet().eval()
    compiled = kiln.compile(model)
    x = torch.randn(3, 4)
    seen = []
    model.register_forward_pre_hook(lambda mod, inputs: (inputs[0] * 2,))
    model.register_forward_hook(lambda mod, inputs, out: seen.append(out.shape) or out + 1)
    with torch.no_grad():
        expected = model(x)
        assert seen == [(3, 2)]
        got = compiled(x)
        got2 = compiled(x)
    assert seen == [(3, 2)] * 3
    assert_close(got, expected)
    assert_close(got2, expected)
    s = stats()
    # forward itself (called by Module.__call__ between the hooks) and the
    # pre-hook are compiled; the forward hook's list.append is a replayed
    # side effect (no break) that reads neither the list's length nor its
    # contents, so the growing list does not recompile the hook
    # (docs/architecture.md, test_side_effects_lazy.py).
    assert (s["graphs_compiled"] == 3 and s["compiled_calls"] == 6 and s["graph_breaks"] == 0
            and s["recompiles"] == 0), s


CONFIG = {"scale": 2.0, "acts": ["relu"]}


def configured(x):
    y = x * CONFIG["scale"]
    if CONFIG["acts"][0] == "relu":
        y = torch.relu(y)
    return y


def test_mutated_global_dict_and_nested_list_recompile():
    cf = kiln.compile(configured)
    x = torch.randn(6)
    try:
        assert_close(cf(x), configured(x))
        CONFIG["scale"] = 5.0             # same dict, new value
        assert_close(cf(x), configured(x))
        CONFIG["acts"][0] = "none"        # same nested list, new item
        assert_close(cf(x), configured(x))
    finally:
        CONFIG["scale"], CONFIG["acts"] = 2.0, ["relu"]
    s = stats()
    assert s["graphs_compiled"] == 3 and s["recompiles"] == 2, s


class PlainListActs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.acts = [torch.relu, torch.tanh]  # a plain list, not a ModuleList

    def forward(self, x):
        x = self.lin(x)
        for act in self.acts:
            x = act(x)
        return x


def test_item_of_plain_list_attribute_replaced_recompiles():
    model = PlainListActs().eval()
    compiled = kiln.compile(model)
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
        model.acts[1] = torch.sigmoid
        assert_close(compiled(x), model(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1, s


_DEFAULT_W = torch.ones(3)


def _weighted(x, w=_DEFAULT_W):
    return x * w


def test_tensor_default_argument_of_helper_is_an_input():
    def f(x):
        return _weighted(x) + 1

    cf = kiln.compile(f)
    x = torch.randn(3)
    assert_close(cf(x), f(x))
    _DEFAULT_W.mul_(3)  # new values in the default tensor: no stale constant
    try:
        assert_close(cf(x), f(x))
    finally:
        _DEFAULT_W.fill_(1.0)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["compiled_calls"] == 2 and s["graph_breaks"] == 0, s


def test_default_dtype_change_recompiles():
    def f(x):
        return x * 0.5, x / 2, torch.exp(x), torch.zeros(2), torch.arange(0, 1, 0.5)

    cf = kiln.compile(f)
    x = torch.arange(3)
    assert_close(cf(x), f(x))
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        got = cf(x)
        assert all(t.dtype == torch.float64 for t in got)
        assert_close(got, f(x))
    finally:
        torch.set_default_dtype(old)
    assert_close(cf(x), f(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["recompiles"] == 1 and s["cache_hits"] == 1, s
