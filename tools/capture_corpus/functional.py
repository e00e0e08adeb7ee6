# SPDX-License-Identifier: Apache-2.0
"""Functions as values: closures, decorators (functools.wraps, lru_cache),
functools.partial/reduce, lambdas, default arguments, ``*args``/``**kwargs``
forwarding, recursion, global reads and mutation, string formatting and
logging, ``try``/``except``/``finally``, raising ValueError on bad input,
``warnings``."""
from __future__ import annotations

import functools
import logging
import operator
import warnings

import torch
import torch.nn.functional as F

from capture_corpus._case import case, randn

_log = logging.getLogger("capture_corpus")
_STEP = [0]
_SCALE = 2.0
_CACHE = {}
_SEEN = []


def _x(n):
    return (randn(n, 8),)


def _reset_globals():
    global _SCALE
    _STEP[0] = 0
    _SCALE = 2.0
    _CACHE.clear()
    _SEEN.clear()


def scaled(factor):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs) * factor
        return wrapper
    return deco


def logged(fn):
    def inner(x):
        _SEEN.append(fn.__name__)
        return fn(x)
    return inner


@case("functional", _x)
def closure_captures_tensor(x):
    w = torch.linspace(0, 1, 8)

    def apply(t):
        return t * w
    return apply(x) + apply(x * 2)


@case("functional", _x)
def closure_nonlocal_counter(x):
    count = 0

    def bump(t):
        nonlocal count
        count += 1
        return t + count
    y = bump(bump(x))
    return y, count


@case("functional", _x)
@scaled(3.0)
def decorated_with_wraps(x):
    return x.relu()


@case("functional", _x, setup=_reset_globals, after=lambda: list(_SEEN))
@logged
def decorated_logging_global(x):
    return x.sigmoid()


@case("functional", _x)
def partial_activation(x):
    act = functools.partial(F.leaky_relu, negative_slope=0.2)
    return act(x)


@case("functional", _x)
def reduce_sum_of_list(x):
    parts = [x * i for i in range(1, 4)]
    return functools.reduce(operator.add, parts)


@case("functional", _x)
def lambda_map_list(x):
    fns = [lambda t: t + 1, lambda t: t * 2, torch.tanh]
    return [f(x) for f in fns]


@case("functional", _x)
def lambda_sorted_key(x):
    rows = [x[i] for i in range(x.shape[0])]
    order = sorted(range(len(rows)), key=lambda i: -i)
    return torch.stack([rows[i] for i in order])


@case("functional", _x)
def args_kwargs_forwarding(x):
    def inner(a, b=1.0, *rest, scale=1.0, **extra):
        return (a + b + sum(rest)) * scale + extra.get("shift", 0.0)

    def outer(*args, **kwargs):
        return inner(*args, **kwargs)
    return outer(x, 2.0, 3.0, scale=0.5, shift=1.0)


@case("functional", _x)
def default_mutable_argument(x, acc=None):
    acc = [] if acc is None else acc
    acc.append(x.sum())
    return torch.stack(acc)


@case("functional", _x)
def recursion_depth(x, depth=3):
    if depth == 0:
        return x
    return recursion_depth(torch.sin(x), depth - 1) + 1


@case("functional", _x, setup=_reset_globals)
def global_read(x):
    return x * _SCALE


@case("functional", _x, setup=_reset_globals, after=lambda: _STEP[0])
def global_list_mutation(x):
    _STEP[0] += 1
    return x + _STEP[0]


@case("functional", _x, setup=_reset_globals, after=lambda: _SCALE)
def global_rebind(x):
    global _SCALE
    _SCALE = _SCALE * 2
    return x * _SCALE


@case("functional", _x, setup=_reset_globals, after=lambda: sorted(_CACHE))
def global_dict_memo(x):
    key = tuple(x.shape)
    if key not in _CACHE:
        _CACHE[key] = torch.ones(x.shape[1])
    return x * _CACHE[key]


@case("functional", _x)
def lru_cache_helper(x):
    return x * _freq(x.shape[1])[None]


@functools.lru_cache(maxsize=None)
def _freq(n):
    return torch.arange(n).float() / n


@case("functional", _x)
def fstring_unused(x):
    name = f"layer_{x.shape[0]}_{x.dtype}"
    return x * len(name)


@case("functional", _x)
def string_formatting_returned(x):
    return x.mean(), "shape={} mean={:.3f}".format(tuple(x.shape), 0.5), "%d rows" % x.shape[0]


@case("functional", _x)
def string_keyed_dispatch(x, act="gelu"):
    table = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}
    return table[act.lower()](x)


@case("functional", _x)
def string_methods(x):
    spec = "conv3x3_bn_relu"
    parts = spec.split("_")
    k = int(parts[0].replace("conv", "").split("x")[0])
    return x * k, parts[-1].upper(), spec.startswith("conv")


@case("functional", _x)
def logging_debug_call(x):
    _log.debug("input %s", x.shape)
    return x + 1


@case("functional", _x)
def print_in_forward(x):
    y = x * 2
    if False:
        print("never")
    return y


@case("functional", _x)
def warnings_warn(x):
    if x.shape[0] > 100:
        warnings.warn("large batch")
    return x.abs()


@case("functional", _x)
def try_except_keyerror(x):
    d = {"a": x}
    try:
        y = d["b"]
    except KeyError:
        y = x * 2
    return y


@case("functional", _x)
def try_finally(x):
    out = []
    try:
        out.append(x + 1)
    finally:
        out.append(x - 1)
    return out


@case("functional", _x)
def raise_value_error(x):
    if x.shape[-1] != 7:
        raise ValueError(f"expected 7 features, got {x.shape[-1]}")
    return x


@case("functional", _x)
def except_runtime_error_from_op(x):
    try:
        y = x.view(3, -1)
    except RuntimeError:
        y = x.reshape(-1)
    return y


@case("functional", _x)
def assert_raises_assertion(x):
    assert x.shape[0] < 0, "always fails"
    return x


@case("functional", _x)
def exception_object_message(x):
    try:
        raise ValueError("bad")
    except ValueError as e:
        msg = str(e)
    return x * len(msg)


@case("functional", _x)
def nested_function_defaults(x):
    def f(t, k=x.shape[0]):
        return t * k
    return f(x)


@case("functional", _x)
def operator_module(x):
    ops = [operator.mul, operator.sub, operator.truediv]
    return [op(x, 2.0) for op in ops], operator.getitem(x, 0)


@case("functional", _x)
def map_filter_builtin(x):
    rows = list(map(lambda r: r * 2, x.unbind(0)))
    big = list(filter(lambda r: r.shape[0] == 8, rows))
    return torch.stack(big).sum(0)


@case("functional", _x)
def getattr_torch_function_by_name(x):
    names = ["sin", "cos", "exp"]
    return [getattr(torch, n)(x) for n in names]


@case("functional", _x)
def min_max_abs_builtins(x):
    n = x.shape[0]
    return x[: max(1, min(n, 3))] * abs(-2) + round(2.6) + pow(2, 3)
