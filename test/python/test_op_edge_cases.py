# SPDX-License-Identifier: Apache-2.0
"""Edge cases found by running torch's OpInfo samples (op_db, float32 CPU)
through kiln.compile and comparing with eager: each was a silent
difference or an error where eager runs."""
import pytest
import torch

import kiln
from conftest import assert_close, stats, whole_graph


def test_squeeze_with_an_empty_dim_tuple_squeezes_nothing():
    x = torch.randn(1, 3, 1)
    got = whole_graph(lambda t: t.squeeze(()) * 2, x)
    assert got.shape == (1, 3, 1)
    kiln.reset()
    assert whole_graph(lambda t: torch.squeeze(t, (0, 2)) * 2, x).shape == (3,)


def test_fallback_result_the_graph_never_reads_is_not_checked():
    """native_batch_norm in eval returns empty saved statistics on CPU and
    (C,)-sized ones on meta; only the output is read, so the call runs."""
    def f(x, w, b, mean, var):
        return torch.native_batch_norm(x, w, b, mean, var, False, 0.1, 1e-5)[0] * 2

    args = (torch.randn(2, 3, 4), torch.rand(3), torch.rand(3), torch.rand(3), torch.rand(3) + 1)
    assert_close(kiln.compile(f)(*args), f(*args))
    assert stats()["fallback_ops"] >= 1 and stats()["graph_breaks"] == 0


def test_fallback_result_read_with_other_sizes_still_raises():
    """Returning the mismatching statistics themselves is still refused loudly
    (the capture may have used the meta sizes)."""
    def f(x, w, b, mean, var):
        return torch.native_batch_norm(x, w, b, mean, var, False, 0.1, 1e-5)[1]

    args = (torch.randn(2, 3, 4), torch.rand(3), torch.rand(3), torch.rand(3), torch.rand(3) + 1)
    with pytest.raises(RuntimeError, match="differs from the one seen at capture"):
        kiln.compile(f)(*args)


def test_eye_and_linspace_with_a_dtype_kiln_lacks_keep_it():
    """dtype=torch.uint8 read as "no dtype": float32 results."""
    for fn in [lambda x: torch.eye(3, dtype=torch.uint8) + x, lambda x: torch.linspace(0, 9, 4, dtype=torch.uint8) + x]:
        kiln.reset()
        x = torch.ones((), dtype=torch.uint8)
        got = kiln.compile(fn)(x)
        assert got.dtype == torch.uint8
        assert torch.equal(got, fn(x))


NAN = float("nan")


@pytest.mark.parametrize("name,f", [
    ("clamp_max", lambda t: t.clamp(max=NAN)),
    ("clamp_min", lambda t: t.clamp(min=NAN)),
    ("clip_max", lambda t: torch.clip(t, max=NAN)),
    ("both_bounds", lambda t: t.clamp(0.5, NAN)),
    ("clamp_max_fn", lambda t: torch.clamp_max(t, NAN)),
    ("clamp_min_method", lambda t: t.clamp_min(NAN)),
    ("tensor_bound", lambda t: t.clamp(max=torch.tensor(NAN))),
])
def test_clamp_with_a_nan_bound_follows_eager(name, f):
    """clamp/clip with one Python-number NaN bound keeps x with a zero
    gradient; two bounds, tensor bounds and clamp_min/clamp_max give NaN
    (eager's kernels differ, kiln gave NaN for all)."""
    x = torch.tensor([0.0, 1.0, NAN, -3.0, float("inf")], requires_grad=True)
    got, want = whole_graph(f, x), f(x)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert got.requires_grad == want.requires_grad
    (g,) = torch.autograd.grad(got.nan_to_num().sum(), x)
    (w,) = torch.autograd.grad(want.nan_to_num().sum(), x)
    torch.testing.assert_close(g, w)


@pytest.mark.parametrize("f", [
    lambda t: torch.transpose(t, 0, 0) + 1,
    lambda t: t.transpose(-1, -1) * 2,
    lambda t: t.swapaxes(0, 0) - 1,
    lambda t: t.movedim(0, 0) + 3,
])
def test_transpose_of_a_0d_tensor(f):
    """kiln crashed (SIGSEGV) normalizing the dims of a 0-d transpose."""
    x = torch.tensor(3.0)
    assert_close(whole_graph(f, x), f(x))


def test_cosine_similarity_with_an_input_broadcast_along_dim():
    """The norm of an input broadcast along the reduced dim was taken before
    broadcasting: results sqrt(2) too large (above 1)."""
    f = lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim=0)
    a, b = torch.randn(2, 3), torch.randn(1, 3)
    assert_close(whole_graph(f, a, b), f(a, b))
    kiln.reset()
    a, b = torch.randn(4, 1, 5), torch.randn(3, 5)
    g = lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim=-1)
    assert_close(whole_graph(g, a, b), g(a, b))


@pytest.mark.parametrize("f", [
    lambda t: torch.nn.functional.threshold(t, 0.5, -9.0),
    lambda t: torch.nn.functional.threshold(t.clone(), 0.5, -9.0, inplace=True),
    lambda t: torch.nn.functional.hardshrink(t, 0.5),
    lambda t: torch.nn.functional.softshrink(t, 0.5),
])
def test_threshold_and_shrinks_keep_nan(f):
    """threshold gave `value` and hardshrink/softshrink 0 for NaN inputs."""
    x = torch.tensor([NAN, 1.0, -1.0, 0.5, -0.5, 0.2, float("inf"), -float("inf")])
    torch.testing.assert_close(whole_graph(f, x), f(x), equal_nan=True)


def test_diff_with_n_0_is_a_new_tensor():
    """diff(x, n=0) returned x itself: writes through the result changed x."""
    x = torch.arange(4.0)
    y = kiln.compile(lambda t: torch.diff(t, n=0))(x)
    y.add_(100)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("args", [(0, 10, 2.5), (0.5, 4.7), (2.9,), (0, -5.5, -1.5), (-2.5, 3)])
def test_arange_with_float_bounds_and_an_integer_dtype(dtype, args):
    """Eager truncates start and step (and for int64 the end) to integers;
    kiln stepped in floats: arange(0, 10, 2.5, dtype=int64) gave 0, 2, 5, 7."""
    f = lambda x: x + torch.arange(*args, dtype=dtype)
    x = torch.zeros((), dtype=dtype)
    assert whole_graph(f, x).tolist() == f(x).tolist()


def test_float64_to_bfloat16_in_a_graph():
    """f64 -> bf16 became a call of `__truncdfbf2`, which the JIT could not
    link ("Symbols not found"): the frame ran eagerly with errors printed.
    Converted through float as torch does (a double just above a bf16 tie
    rounds as the tie)."""
    x = torch.tensor([1.00390625 + 2**-40, -(1.00390625 + 2**-40), 1e39, 3.5e-45, NAN, 0.1],
                     dtype=torch.float64)
    f = lambda t: (t * 1.0).to(torch.bfloat16)
    torch.testing.assert_close(whole_graph(f, x), f(x), equal_nan=True, rtol=0, atol=0)
    kiln.reset()
    g = lambda b, s: b + s
    b, s = torch.randn(16).bfloat16(), torch.tensor(1.0078125 + 2**-12, dtype=torch.float64)
    torch.testing.assert_close(whole_graph(g, b, s), g(b, s))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name,f", [
    ("addcmul", lambda a, b, c: torch.addcmul(a, b, c, value=0.3)),
    ("addcdiv", lambda a, b, c: torch.addcdiv(a, b, c, value=-0.7)),
    ("lerp", lambda a, b, c: torch.lerp(a, b, 0.3)),
])
def test_half_precision_fused_ops_round_once(dtype, name, f):
    """addcmul/addcdiv/lerp of bf16/f16 compute in float32 with the Python
    number in float32, as torch's kernels: kiln rounded the number and each
    intermediate to bf16 (a quarter of the elements differed from eager, up
    to 44% near cancellation). What remains is FMA contraction (1 ulp)."""
    torch.manual_seed(0)
    a, b = (torch.randn(4096) * 3).to(dtype), (torch.randn(4096) * 3).to(dtype)
    c = (torch.rand(4096) + 0.5).to(dtype)
    got, want = whole_graph(f, a, b, c, compare=lambda *_: None), f(a, b, c)
    differ = got != want
    assert differ.sum().item() <= 16
    ulp = torch.finfo(dtype).eps * want.float().abs().clamp_min(torch.finfo(dtype).tiny)
    assert ((got.float() - want.float()).abs() <= ulp)[differ].all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("start,end,steps", [(0.02, 0.3, 7), (-3, 5.5, 100), (1e-3, 7.7, 4097)])
def test_linspace_values_are_eagers(dtype, start, end, steps):
    """kiln computed linspace's values in double and rounded them once:
    eager computes in the dtype's own arithmetic (vectorized), so some
    float32 values were an ulp off (0.02..0.3 in 7 steps: 4 of 7)."""
    def f(x):
        return x + torch.linspace(start, end, steps, dtype=dtype)

    x = torch.zeros(steps, dtype=dtype)
    got = whole_graph(f, x, compare=lambda *_: None)
    assert torch.equal(got, f(x))


def test_decomposition_refusal_is_not_a_user_visible_exception():
    """A Python decomposition (kiln/_decompositions.py) raises
    NotImplementedError for calls it does not cover; that reached user code
    as if torch had raised it: here the `except` branch ran and returned
    x + 1 where eager raises torch's RuntimeError. It is now a graph break
    (unsupported-op) and the call runs in torch."""
    def f(x):
        try:
            return torch.diff(x, n=-1)
        except NotImplementedError:
            return x + 1

    x = torch.randn(5)
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        f(x)
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        kiln.compile(f)(x)
