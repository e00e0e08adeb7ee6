# SPDX-License-Identifier: Apache-2.0
"""OpInfo-style conformance of the mapped torch ops (issue 4).

For every Entry of conformance_table.py and every dtype it lists, one
function running all of the entry's callables on all of its samples
(several shapes, broadcasting, 0-d, empty and non-contiguous inputs) is
compiled with kiln.compile, must run compiled (no graph break) and must
match eager PyTorch within tolerances suited to the dtype (exact for
integers and bools). nn.Module callables get parameters of the tested
dtype. A second part checks that invalid calls raise the exception type
eager raises, and that the suite covers at least 120 distinct torch
callables, each mapped in kiln's op table.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln
from conformance_table import BF16, ENTRIES, F16, F32, covered
from conftest import stats

DEFAULT_TOL = {F32: (1e-4, 1e-5), F16: (1e-3, 1e-3), BF16: (1e-2, 1e-2), torch.float64: (1e-10, 1e-12)}


def _runner(fns, arities):
    """One function applying every callable to every sample, taking the
    samples' tensors as flat positional arguments (generated source with
    plain calls: capture does not follow `f(*args)` into Python functions)."""
    params, calls, at = [], [], 0
    for n in arities:
        args = [f"a{at + i}" for i in range(n)]
        params += args
        at += n
        calls += [f"f{j}({', '.join(args)})" for j in range(len(fns))]
    src = f"def run({', '.join(params)}):\n    return [{', '.join(calls)}]\n"
    scope = {f"f{j}": fn for j, fn in enumerate(fns)}
    exec(src, scope)  # noqa: S102
    return scope["run"]


def _plain(x):
    """Namedtuples (torch.return_types.*) as tuples, recursively."""
    if isinstance(x, (tuple, list)):
        return type(x)(_plain(v) for v in x) if type(x) in (tuple, list) else tuple(_plain(v) for v in x)
    return x


def _compare(actual, expected, tols, where):
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, tols, f"{where}[{i}]")
        return
    assert isinstance(actual, torch.Tensor), (where, type(actual))
    assert actual.dtype == expected.dtype, (where, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (where, actual.shape, expected.shape)
    rtol, atol = tols.get(expected.dtype, DEFAULT_TOL.get(expected.dtype, (0, 0)))
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{where}: {m}")


def _fns_for(entry, dtype):
    fns = []
    for fn in entry.fns:
        if isinstance(fn, nn.Module):
            fn = copy.deepcopy(fn)
            if dtype.is_floating_point:
                fn = fn.to(dtype)
        fns.append(fn)
    return fns


CASES = [(e, dt) for e in ENTRIES for dt in e.dtypes]


@pytest.mark.parametrize("entry,dtype", CASES, ids=[f"{e.name}-{str(dt)[6:]}" for e, dt in CASES])
def test_conformance(entry, dtype):
    torch.manual_seed(0)
    samples = entry.samples(dtype)
    if dtype != entry.dtypes[0]:  # every shape once (first dtype), then a few per dtype
        samples = samples[:1] + samples[1:][-(entry.other_samples - 1):] if entry.other_samples > 1 else samples[:1]
    fns = _fns_for(entry, dtype)
    run = _runner(fns, [len(s) for s in samples])
    flat = [t for s in samples for t in s]
    expected = _plain(run(*flat))
    actual = _plain(kiln.compile(run)(*flat))
    s = stats()
    assert s["graph_breaks"] == 0 and s["compiled_calls"] == 1, (entry.name, s)
    _compare(actual, expected, entry.tol, entry.name)


def test_covers_at_least_120_mapped_callables():
    names = covered()
    assert len(names) >= 120, len(names)
    raw = kiln._C.mapped_ops()
    functions = {(m, n) for m, n, _ in raw["functions"]}
    methods = {n for n, _, _ in raw["methods"]}
    for name in names:
        head, _, attr = name.partition(".")
        attr = attr.split("(")[0]
        if head == "torch" and "." not in attr:
            assert ("torch", attr) in functions, name
        elif head == "F":
            assert ("torch.nn.functional", attr) in functions, name
        elif head == "Tensor" and not attr.startswith("__"):
            assert attr in methods, name


# ---- invalid calls raise eager's exception type -------------------------------------------------

INVALID = [
    ("conv2d channels", lambda x, w: F.conv2d(x, w), (torch.randn(1, 3, 8, 8), torch.randn(4, 2, 3, 3))),
    ("conv2d same+stride", lambda x, w: F.conv2d(x, w, stride=2, padding="same"), (torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3))),
    ("max_pool2d padding", lambda x: F.max_pool2d(x, 2, padding=2), (torch.randn(1, 3, 8, 8),)),
    ("avg_pool2d too small", lambda x: F.avg_pool2d(x, 9), (torch.randn(1, 3, 8, 8),)),
    ("hardswish int", lambda x: F.hardswish(x), (torch.arange(4),)),
    ("argmax bool", lambda x: x.argmax(), (torch.ones(3, dtype=torch.bool),)),
    ("gather index rank", lambda x, i: x.gather(0, i), (torch.randn(3), torch.zeros(2, 2, dtype=torch.long))),
    ("index_select float index", lambda x, i: x.index_select(0, i), (torch.randn(3), torch.zeros(2))),
    ("reflect pad too large", lambda x: F.pad(x, (4, 4), mode="reflect"), (torch.randn(1, 2, 3),)),
    ("glu odd dim", lambda x: F.glu(x), (torch.randn(2, 3),)),
    ("group_norm groups", lambda x: F.group_norm(x, 2), (torch.randn(2, 3, 4),)),
    ("cross_entropy float index", lambda x, t: F.cross_entropy(x, t), (torch.randn(4, 5), torch.zeros(4, dtype=torch.int32))),
    ("tril 1-D", lambda x: torch.tril(x), (torch.randn(3),)),
    ("roll mismatched", lambda x: torch.roll(x, (1, 2), (0,)), (torch.randn(3, 4),)),
    ("var int", lambda x: torch.var(x), (torch.arange(4),)),
    ("cumsum dim range", lambda x: x.cumsum(2), (torch.randn(3, 4),)),
    ("lerp int", lambda x: torch.lerp(x, x, 0.5), (torch.arange(4),)),
]


@pytest.mark.parametrize("name,fn,args", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_call_raises_like_eager(name, fn, args):
    with pytest.raises(Exception) as eager:
        fn(*args)
    with pytest.raises(Exception) as compiled:
        kiln.compile(fn)(*args)
    assert type(compiled.value) is type(eager.value), (name, compiled.value, eager.value)


# ---- whole models made of the new ops compile into one graph -------------------------------------

class _SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=2), nn.GroupNorm(4, 32), nn.Hardswish(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10), nn.LogSoftmax(-1))

    def forward(self, x):
        return self.body(x)


class _CausalAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.qkv, self.out = nn.RMSNorm(32), nn.Linear(32, 96), nn.Linear(32, 32)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, -1)
        q = q.view(b, t, 4, 8).transpose(1, 2)
        k = k.view(b, t, 4, 8).transpose(1, 2)
        v = v.view(b, t, 4, 8).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.out(F.gelu(y.transpose(1, 2).reshape(b, t, 32)))


@pytest.mark.parametrize("model,shape", [(_SmallCNN, (2, 3, 32, 32)), (_CausalAttention, (2, 6, 32))],
                         ids=["cnn", "attention"])
def test_models_of_new_ops_compile_to_one_graph(model, shape):
    torch.manual_seed(0)
    m = model().eval()
    x = torch.randn(shape)
    with torch.no_grad():
        expected = m(x)
        actual = kiln.compile(m)(x)
    s = stats()
    assert s["graph_breaks"] == 0 and s["compiled_calls"] == 1, s
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
