# SPDX-License-Identifier: Apache-2.0
"""NumPy interop captured as tensor ops (issue 15 item 6): `.numpy()`,
`torch.from_numpy`/`as_tensor`, `np.*` functions, ndarray methods and
operators, ndarray graph inputs and constant arrays run inside one graph,
with NumPy's dtype rules and memory sharing; what kiln does not map is a
`numpy` break. Each case compares with eager (dtypes included) and asserts
kiln.stats()."""
import numpy as np
import pytest
import torch

import kiln
from conftest import assert_compiled, run_whole_graph, stats


def same(actual, expected):
    """Recursive comparison: ndarrays and NumPy scalars by type, dtype and
    value; tensors by dtype and value."""
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            same(a, e)
        return
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, (np.ndarray, np.generic)):
        assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    elif isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
        torch.testing.assert_close(actual, expected)
    else:
        assert actual == expected


def whole(fn, *args):
    return run_whole_graph(fn, *args, compare=same)[0]


def x8():
    return torch.randn(4, 8)


def test_numpy_roundtrip():
    def f(x):
        a = x.numpy()
        b = np.tanh(a) * 2
        return torch.from_numpy(b)

    out = whole(f, x8())
    assert out.dtype == torch.float32


def test_ndarray_input_and_result():
    def f(a):
        t = torch.as_tensor(a)
        return (t * 2).numpy()

    arr = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = whole(f, arr)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32


def test_numpy_constant_array_folded():
    def f(x):
        w = np.linspace(0, 1, 8, dtype=np.float32)
        return x * torch.from_numpy(w)

    whole(f, x8())


def test_numpy_scalars_times_tensor():
    def f(x):
        return x * np.float32(2.0) + np.sqrt(4.0)

    out = whole(f, x8())
    assert out.dtype == torch.float32


@pytest.mark.parametrize("op", [
    lambda a: a / 2,                 # int true division: float64
    lambda a: a + 1.5,               # int array + Python float: float64
    lambda a: a * 3,                 # NEP 50: stays int32
    lambda a: np.mean(a),            # mean of ints: a float64 scalar
    lambda a: np.sum(a, axis=0),     # int32 sum: int64
    lambda a: a.max(axis=1, keepdims=True),
    lambda a: a.astype(np.float64).std(),
    lambda a: (a > 3) & (a < 20),
    lambda a: np.maximum(a, a.T.T * 2) - a.T.T,
])
def test_numpy_dtype_rules_on_int_arrays(op):
    def f(x):
        return op(x.numpy())

    whole(f, torch.arange(24, dtype=torch.int32).reshape(4, 6))


def test_float32_array_with_float64_numpy_scalar_promotes():
    def f(x):
        a = x.numpy()
        return a * np.float64(2.0), np.exp(a).sum(), a.reshape(2, 16).shape

    out = whole(f, x8())
    assert out[0].dtype == np.float64 and type(out[1]) is np.float32


def test_numpy_shares_memory_with_tensor():
    # An in-place update of the tensor is seen through its .numpy() array.
    def f(x):
        a = x.numpy()
        x.add_(1)
        return torch.from_numpy(a) * 1

    x0 = x8()
    xe, xk = x0.clone(), x0.clone()
    compiled = kiln.compile(f)
    expected = f(xe)
    got = compiled(xk)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(xk, xe)
    assert_compiled(graphs=1, eager_calls=0)


def test_ndarray_input_guarded_on_dtype_and_shape():
    def f(a):
        return np.sqrt(a) + 1

    compiled = kiln.compile(f)
    for arr in (np.ones((2, 3), np.float32), np.ones((2, 3), np.float32) * 4,
                np.ones((2, 3), np.float64), np.ones((3, 3), np.float64)):
        same(compiled(arr), f(arr))
    s = stats()
    assert s["graphs_compiled"] == 3 and s["graph_breaks"] == 0, s


GLOBAL_W = np.ones(8, dtype=np.float32)


def test_global_array_is_an_input_and_changes_are_seen():
    def f(x):
        return x * torch.from_numpy(GLOBAL_W)

    compiled = kiln.compile(f)
    x = x8()
    torch.testing.assert_close(compiled(x), f(x))
    GLOBAL_W[:] = 3.0  # mutated after compiling: read again on every call
    try:
        torch.testing.assert_close(compiled(x), f(x))
    finally:
        GLOBAL_W[:] = 1.0
    assert_compiled(graphs=1, eager_calls=0)


def break_categories(fn, *args):
    report = kiln.explain(fn)(*args)
    same(report.out, fn(*args))
    return report.break_counts()


def test_unmapped_numpy_function_is_a_numpy_break():
    def f(x):
        a = x.numpy()
        return torch.from_numpy(np.fft.fft(a).real.astype(np.float32)) + 1

    counts = break_categories(f, x8())
    assert counts.get("numpy", 0) >= 1, counts


def test_inplace_on_ndarray_is_a_numpy_break():
    def f(x):
        a = x.numpy() * 2
        a += 1
        return a

    counts = break_categories(f, x8())
    assert counts.get("numpy", 0) >= 1, counts


def test_mixing_ndarray_and_tensor_raises_like_eager():
    # ndarray + tensor raises TypeError in eager; kiln breaks there (numpy),
    # so the eager rest raises the same, never a silent result.
    def f(x):
        a = x.numpy() * 2
        return a + x

    with pytest.raises(TypeError):
        f(x8())
    with pytest.raises(TypeError):
        kiln.compile(f)(x8())


def test_inplace_on_tensor_of_ndarray_input_writes_the_callers_array():
    def f(a):
        t = torch.from_numpy(a)
        t.add_(1)
        return a * 2

    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    ae, ak = base.copy(), base.copy()
    compiled = kiln.compile(f)
    expected = f(ae)
    got = compiled(ak)
    same(got, expected)
    np.testing.assert_array_equal(ak, ae)  # the caller's array was updated in place
    assert_compiled(graphs=1, eager_calls=0)


@pytest.mark.parametrize("fn", [
    lambda a: np.where(a > 0, a, 0.0),
    lambda a: np.concatenate([a, a * 2], axis=0),
    lambda a: np.stack((a, a.T.T), 1),
    lambda a: np.clip(a, -0.5, 0.5).astype(np.float16),
    lambda a: torch.as_tensor(a, dtype=torch.float64) + 1,
    lambda a: a.sum(axis=1) + a.mean(),
])
def test_more_mapped_numpy_ops(fn):
    whole(fn, np.random.randn(3, 4).astype(np.float32))


def test_floor_division_on_arrays_is_a_numpy_break():
    def f(x):
        return x.numpy() // 2

    counts = break_categories(f, torch.arange(8, dtype=torch.int32))
    assert counts.get("numpy", 0) >= 1, counts
