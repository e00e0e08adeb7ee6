# SPDX-License-Identifier: Apache-2.0
"""State that changes between two calls, as real programs change it:
``model.eval()``/``train()``, a config flag or a global flipped, a
parameter replaced or cast (``model.double()``), ``requires_grad_``
toggled, a method monkeypatched on the class or the instance, a hook
registered after the first call, a closure cell or a default argument
rebound, a non-contiguous or differently typed input. The second call must
see the change (each case's ``before(target, n)`` makes it before the call
at size n)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from capture_corpus._case import SIZES, case, randn

FIRST = SIZES[0]
_MODE = {"scale": 1.0}
_FLAGS = [False]


def _x(n):
    return (randn(n, 8),)


def _second(fn):
    """A `before` that runs fn(target) before the second call only."""
    def before(target, n):
        if n != FIRST:
            fn(target)
    return before


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.use_act = True

    def helper(self, x):
        return x * 2

    def forward(self, x):
        y = self.bn(self.lin(x))
        y = torch.relu(y) if self.use_act else y
        return self.helper(y)


@case("changes", _x, before=lambda m, n: m.train(n != FIRST))
class EvalThenTrain(Net):
    pass


@case("changes", _x, train=True, before=_second(lambda m: m.eval()))
class TrainThenEval(Net):
    pass


@case("changes", _x, before=_second(lambda m: setattr(m, "use_act", False)))
class FlagFlipped(Net):
    pass


def _unpatch():
    if "helper" in vars(MethodPatchedOnClass):
        del MethodPatchedOnClass.helper


@case("changes", _x, setup=_unpatch,
      before=_second(lambda m: setattr(type(m), "helper", lambda s, x: x - 1)))
class MethodPatchedOnClass(Net):
    pass


@case("changes", _x, before=_second(lambda m: setattr(m, "helper", lambda x: x + 100)))
class MethodPatchedOnInstance(Net):
    pass


def _replace_weight(m):
    m.lin.weight = nn.Parameter(torch.ones_like(m.lin.weight))


@case("changes", _x, before=_second(_replace_weight))
class ParameterReplaced(Net):
    pass


def _set_weight(m):
    with torch.no_grad():
        m.lin.weight.mul_(-1)


@case("changes", _x, before=_second(_set_weight))
class ParameterUpdatedInPlace(Net):
    pass


@case("changes", _x, before=_second(lambda m: m.lin.weight.requires_grad_(False)))
class RequiresGradToggled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8, bias=False)

    def forward(self, x):
        y = self.lin(x)
        return y, y.requires_grad


@case("changes", lambda n: (randn(n, 8, dtype=torch.float64 if n != FIRST else torch.float32),),
      before=_second(lambda m: m.double()))
class ModelDoubled(Net):
    pass


@case("changes", lambda n: (randn(n, 8, dtype=torch.float64 if n != FIRST else torch.float32),))
class InputDtypeChangedModelNot(Net):
    pass


@case("changes", lambda n: (randn(n, 8).half() if n != FIRST else randn(n, 8),))
class HalfInputIntoFloatLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x):
        return self.lin(x)


@case("changes", lambda n: (randn(8, n).t() if n != FIRST else randn(n, 8),))
def noncontiguous_second_input(x):
    return x.view(-1) if x.is_contiguous() else x.reshape(-1) * 2


@case("changes", _x, before=_second(lambda m: m.register_forward_hook(
    lambda mod, inp, out: out * 10)))
class HookAddedAfterFirstCall(Net):
    pass


@case("changes", _x, before=_second(lambda m: m.lin.register_forward_pre_hook(
    lambda mod, inp: (inp[0] + 1,))))
class SubmoduleHookAdded(Net):
    pass


def _global_hook(m):
    handle = nn.modules.module.register_module_forward_hook(lambda mod, inp, out: out)
    _HANDLES.append(handle)


_HANDLES = []


def _reset_hooks():
    while _HANDLES:
        _HANDLES.pop().remove()


@case("changes", _x, setup=_reset_hooks, after=_reset_hooks, before=_second(_global_hook))
class GlobalHookAdded(Net):
    pass


def _set_scale():
    _MODE["scale"] = 1.0


@case("changes", _x, setup=_set_scale,
      before=lambda f, n: _MODE.__setitem__("scale", 1.0 if n == FIRST else 3.0))
def global_dict_changed(x):
    return x * _MODE["scale"]


def _set_flag(n):
    _FLAGS[0] = n != FIRST


@case("changes", _x, setup=lambda: _set_flag(FIRST), before=lambda f, n: _set_flag(n))
def global_list_flag_changed(x):
    return F.gelu(x) if _FLAGS[0] else F.relu(x)


def _make_closure():
    state = {"k": 1.0}

    def fn(x):
        return x * state["k"]
    fn.state = state
    return fn


_CLOSURE = _make_closure()


@case("changes", _x, setup=lambda: _CLOSURE.state.__setitem__("k", 1.0),
      before=lambda f, n: _CLOSURE.state.__setitem__("k", 1.0 if n == FIRST else 5.0))
def closure_state_changed(x):
    return _CLOSURE(x)


def _defaults(x, scale=1.0):
    return x * scale


@case("changes", _x, setup=lambda: setattr(_defaults, "__defaults__", (1.0,)),
      before=lambda f, n: setattr(_defaults, "__defaults__", (1.0 if n == FIRST else 4.0,)))
def default_argument_changed(x):
    return _defaults(x)


@case("changes", _x, before=_second(lambda m: m.layers.append(nn.Identity())))
class ModuleListGrows(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x) + 1
        return x


@case("changes", _x, before=_second(lambda m: m.cfg.update(eps=0.5)))
class ConfigDictMutated(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = {"eps": 1e-5}

    def forward(self, x):
        return x / (x.norm(dim=-1, keepdim=True) + self.cfg["eps"])


@case("changes", _x, before=_second(lambda m: setattr(m, "drop", nn.Identity())))
class SubmoduleSwapped(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Tanh()

    def forward(self, x):
        return self.drop(x)


@case("changes", _x, before=_second(lambda m: m.register_buffer("shift", torch.full((8,), 2.0))))
class BufferReplaced(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("shift", torch.zeros(8))

    def forward(self, x):
        return x + self.shift


@case("changes", lambda n: (randn(n, 8), n != FIRST))
def python_bool_argument(x, flag):
    return x.exp() if flag else x.sin()


@case("changes", lambda n: (randn(n, 8), 0.5 if n == FIRST else 2))
def python_number_type_changes(x, k):
    return x * k, type(k).__name__


@case("changes", lambda n: ([randn(n, 8)] * (1 if n == FIRST else 3),))
def list_length_changes(xs):
    return sum(xs), len(xs)


@case("changes", lambda n: ({"a": randn(n, 8)} if n == FIRST else {"a": randn(n, 8), "b": randn(n, 8)},))
def dict_keys_change(d):
    return sum(d.values()), sorted(d)


@case("changes", lambda n: (randn(n, 8), None if n == FIRST else randn(n, 8)))
def optional_argument_given(x, mask=None):
    return x if mask is None else x * mask


@case("changes", lambda n: (randn(n, 8),) if n == FIRST else (randn(n, 8),),
      before=lambda f, n: torch.set_grad_enabled(n == FIRST))
def grad_mode_changed_outside(x):
    w = torch.ones(8, requires_grad=True)
    y = x * w
    torch.set_grad_enabled(True)
    return y.requires_grad
