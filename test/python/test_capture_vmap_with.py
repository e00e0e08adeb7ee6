# SPDX-License-Identifier: Apache-2.0
"""Capture features real HuggingFace code needs (issue 3): torch.vmap by
broadcasting, with-blocks on Python context managers and on the transparent
TransformGetItemToIndex mode, advanced indexing with integer tensors,
torch.diff, callable()/slice()/dict.pop/inspect.signature, Tensor.type and
& | ^ on tensors. Each case checks eager parity and the graph/break/
recompile counts."""
import contextlib
import inspect
import threading

import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats, whole_graph


def counts():
    s = stats()
    return s["graphs_compiled"], s["graph_breaks"], s["recompiles"]


def check_one_graph(f, *args, **tol):
    """Two compiled calls match eager: one graph, no break, no recompile."""
    expected = f(*args)
    compiled = kiln.compile(f)
    for _ in range(2):
        got = compiled(*args)
        if isinstance(expected, tuple):
            for g, e in zip(got, expected):
                assert g.dtype == e.dtype and g.shape == e.shape
                assert_close(g, e, **tol)
        else:
            assert got.dtype == expected.dtype and got.shape == expected.shape
            assert_close(got, expected)
    assert counts() == (1, 0, 0), stats()


# --- advanced indexing ---------------------------------------------------


def test_advanced_indexing_with_integer_tensors():
    def f(x, i, j):
        return x[i, j] + 1, x[i], (x > 0)[i.view(2, 1), j.view(1, 2)], x[i.view(2, 1)]

    check_one_graph(f, torch.randn(4, 5, 3), torch.tensor([0, -1]), torch.tensor([1, 4]))


def test_bool_mask_indexing_breaks_with_reason():
    def f(x):
        return x[x > 0] * 2

    x = torch.randn(6)
    report = kiln.explain(f)(x)
    assert_close(report.out, f(x))
    assert any("bool tensor" in b for b in report.graph_breaks), report.graph_breaks


# --- torch.vmap ----------------------------------------------------------


def causal(b, h, q, kv):
    return kv <= q


def padding(mask):
    def inner(b, h, q, kv):
        return mask[b, kv]
    return inner


def both(*fns):
    def combined(b, h, q, kv):
        result = q.new_ones((), dtype=torch.bool)
        for fn in fns:
            result = result & fn(b, h, q, kv).to(result.device)
        return result
    return combined


def vmap_bhqkv(fn):
    for dims in [(None, None, None, 0), (None, None, 0, None), (None, 0, None, None),
                 (0, None, None, None)]:
        fn = torch.vmap(fn, in_dims=dims, out_dims=0)
    return fn


def sdpa_like_mask(mask, positions):
    """transformers' sdpa mask: causal & padding over (batch, head, q, kv)."""
    fn = both(causal, padding(mask.bool()))
    b = torch.arange(mask.shape[0])
    h = torch.arange(1)
    kv = torch.arange(mask.shape[1])
    return vmap_bhqkv(fn)(b, h, positions, kv)


def test_vmap_nested_mask_functions_one_graph():
    # The shape of transformers' sdpa mask: four nested vmaps over index
    # functions with integer-tensor indexing and & of bool results.
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 4:] = 0
    check_one_graph(sdpa_like_mask, mask, torch.arange(7))


def test_vmap_mask_over_a_growing_length_is_one_dynamic_graph():
    # The same mask while a decode loop grows the kv length: `mask[b, kv]`
    # indexes a tensor with a symbolic dim by batched integer tensors
    # (SymbolicIndexing.cpp's advanced index), so one `?` graph serves
    # every later length.
    compiled = kiln.compile(sdpa_like_mask)
    for n in [6, 7, 9, 12, 13]:
        mask = torch.ones(2, n, dtype=torch.long)
        mask[1, :3] = 0
        positions = torch.tensor([n - 1])
        assert torch.equal(compiled(mask, positions), sdpa_like_mask(mask, positions))
    s = stats()
    assert (s["graphs_compiled"], s["recompiles"], s["dynamic_graphs"]) == (2, 1, 1), s
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s


def test_vmap_single_level_and_unbatched_result():
    w = torch.randn(())

    def f(x, y):
        a = torch.vmap(lambda u, v: (u * 2 + v) > w)(x, y)
        const = torch.vmap(lambda u: w + 1, in_dims=0)(x)  # expanded to the batch
        return a, const

    check_one_graph(f, torch.randn(5), torch.randn(5))


def test_vmap_of_per_example_rows():
    # Per-example vectors (rank 1) batched along dim 0, mixed with an
    # unbatched vector of the same per-example shape.
    bias = torch.randn(3)

    def f(x):
        return torch.vmap(lambda row: row * 2 - bias)(x)

    check_one_graph(f, torch.randn(4, 3))


def test_vmap_reduction_breaks_with_reason():
    def f(x):
        return torch.vmap(lambda row: row.sum())(x) + 1

    x = torch.randn(4, 3)
    report = kiln.explain(f)(x)
    assert_close(report.out, f(x))
    assert any("torch.vmap" in b for b in report.graph_breaks), report.graph_breaks


# --- with-blocks ---------------------------------------------------------


class Scale:
    def __init__(self, k):
        self.k = k

    def __enter__(self):
        return self.k

    def __exit__(self, *exc):
        return False


SCALE = Scale(3.0)
TWO = contextlib.nullcontext(2.0)  # made outside: building objects in the frame is not captured yet


def test_with_python_context_manager_is_inlined():
    def f(x):
        with SCALE as k:
            y = x * k
        with TWO as two:
            y = y + two
        return y

    check_one_graph(f, torch.randn(4))


def test_with_transform_getitem_to_index_is_transparent():
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    def f(x, i):
        with TransformGetItemToIndex():
            y = x[i] * 2
        return y + 1

    check_one_graph(f, torch.randn(5, 3), torch.tensor([4, 0]))


LOCK = threading.Lock()


def test_with_c_context_manager_breaks_with_reason():
    def f(x):
        with LOCK:
            y = x * 2
        return y

    x = torch.randn(3)
    report = kiln.explain(f)(x)
    assert_close(report.out, f(x))
    assert any("with-block" in b for b in report.graph_breaks), report.graph_breaks


# --- torch.diff and small Python builtins --------------------------------


def test_torch_diff_decomposition():
    def f(x, p):
        return (torch.diff(x), torch.diff(x, n=2, dim=0), torch.diff(p, prepend=p[:, :1] - 1, dim=-1),
                torch.diff(x > 0, dim=1))

    check_one_graph(f, torch.randn(4, 6), torch.arange(12).view(2, 6))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def chunk(self, x):
        return self.lin(x)

    def forward(self, x):
        extra = {"scale": 2.0, "unused": None}
        scale = extra.pop("scale")
        assert extra.pop("missing", "dflt") == "dflt" and list(extra) == ["unused"]
        fn = self.chunk
        assert callable(fn) and callable(lambda: 0) and not callable(x)
        nargs = len(inspect.signature(fn).parameters)
        y = fn(x)[slice(1, None)] * scale * nargs
        mask = (y > 0) & (x[1:] < 1) | (y < -1) ^ (x[1:] > 2)
        as_int = mask.to(device=x.device, dtype=torch.int64) + mask.to(x.device)
        return y.type(torch.float64), mask, as_int


def test_small_builtins_and_dict_pop_and_signature():
    net = Net().eval()
    with torch.no_grad():
        check_one_graph(net, torch.randn(3, 4), rtol=1e-5, atol=1e-6)


def test_vmap_batched_value_escaping_breaks():
    leaked = []

    def f(x):
        def keep(u):
            leaked.append(u)
            return u * 2
        out = torch.vmap(keep)(x)
        return out, leaked[0]

    x = torch.randn(3)
    report = kiln.explain(f)(x)
    assert report.graph_break_count >= 1
    assert any("vmap" in b for b in report.graph_breaks), report.graph_breaks


def test_vmap_result_updated_in_place_is_not_captured_wrongly():
    # vmap of the identity may return (a view of) its argument: an in-place
    # update of the result must not be applied to a copy only.
    def f(x):
        t = x * 2
        y = torch.vmap(lambda u: u)(t)
        y += 1
        return t, y

    x = torch.randn(4)
    report = kiln.explain(f)(x)
    assert_close(report.out, f(x))


# --- torch.inference_mode: a grad-mode region like no_grad ----------------

def test_inference_mode_block_is_one_graph():
    lin = nn.Linear(4, 4)

    def f(x):
        with torch.inference_mode():
            y = lin(x)
        return y * 2, torch.is_grad_enabled()

    x = torch.randn(2, 4)
    out, grad_on = whole_graph(f, x)
    assert grad_on is True  # the caller's mode after the block, as eager
    assert not out.requires_grad


def test_inference_mode_false_is_enable_grad():
    lin = nn.Linear(4, 4)

    def f(x):
        with torch.no_grad():
            with torch.inference_mode(mode=False):
                y = lin(x)
        return y

    x = torch.randn(2, 4)
    out = kiln.compile(f)(x)
    assert out.requires_grad == f(x).requires_grad == True  # noqa: E712
    assert_close(out, f(x))


def test_inference_mode_decorated_helper_is_inlined():
    @torch.inference_mode()
    def helper(x):
        return torch.tanh(x) + 1

    def f(x):
        return helper(x) * 3

    whole_graph(f, torch.randn(5))
