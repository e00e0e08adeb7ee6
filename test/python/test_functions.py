# SPDX-License-Identifier: Apache-2.0
"""Plain Python functions over tensors compiled with kiln.compile."""
import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import assert_close, assert_compiled, stats


def check(fn, *args, rtol=None, atol=None, graphs=1):
    """Compiles fn, compares one call against eager, checks it ran compiled."""
    expected = fn(*args)
    compiled = kiln.compile(fn)
    assert_close(compiled(*args), expected, rtol, atol)
    assert_compiled(graphs=graphs, calls=1)
    return compiled


def test_elementwise_chain_broadcasting_scalars():
    def f(x, y, b):
        return torch.tanh(x * 2.5 + y) - b / 3 + torch.exp(-x.abs()) * 0.5 - 1

    check(f, torch.randn(4, 1, 8), torch.randn(3, 1), torch.randn(8))


def test_unary_math():
    def f(x):
        p = x.abs() + 0.1
        return torch.sqrt(p) + torch.log(p) + torch.rsqrt(p) + torch.erf(x) + torch.sigmoid(x) \
            + F.silu(x) + x.relu() + p ** 2 + torch.pow(p, 0.5)

    check(f, torch.randn(5, 7))


@pytest.mark.parametrize("xdt,ydt", [(torch.int64, torch.float32), (torch.int32, torch.int64),
                                     (torch.bool, torch.int64), (torch.float32, torch.float64),
                                     (torch.bool, torch.float32)])
def test_dtype_promotion(xdt, ydt):
    def f(x, y):
        return x + y, x * y, x + 1, y * 2.0

    x = (torch.randn(6, 4) * 5).to(xdt) if xdt != torch.bool else torch.randn(6, 4) > 0
    y = (torch.randn(6, 4) * 5).to(ydt) if ydt != torch.bool else torch.randn(6, 4) > 0
    check(f, x, y)


def test_int_tensor_with_python_scalars():
    def f(x):
        return x * 3 + 1, x / 2, x * 0.5, x > 2, x >= 1

    check(f, torch.arange(12).reshape(3, 4))


def test_true_division_of_ints_is_float():
    def f(x, y):
        return x / y

    check(f, torch.arange(1, 9).reshape(2, 4), torch.full((2, 4), 3))


def test_comparisons_and_where():
    def f(x, y):
        m = x > y
        return torch.where(m, x, y), torch.where(x < 0, 0.0, x), x == y, x != 0.5, x <= y

    check(f, torch.randn(4, 5), torch.randn(5))


def test_maximum_minimum_clamp():
    def f(x, y):
        return torch.maximum(x, y), torch.minimum(x, y), torch.clamp(x, -0.5, 0.5), \
            x.clamp(min=0.1), torch.clamp(x, max=0.0)

    check(f, torch.randn(3, 4), torch.randn(3, 4))


def _reduce(x, dim, keepdim):
    if dim is None:
        return x.sum(), x.mean(), torch.amax(x)
    return x.sum(dim, keepdim=keepdim), torch.mean(x, dim=dim, keepdim=keepdim), \
        x.amax(dim=dim, keepdim=keepdim)


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), (-1, False),
                                         ((0, 2), True), ([1, 2], False)])
def test_reductions(dim, keepdim):
    check(_reduce, torch.randn(3, 4, 5), dim, keepdim)


def test_sum_of_int_tensor_is_int64():
    def f(x):
        return x.sum(1), (x > 3).sum(), x.sum(0, keepdim=True)

    check(f, torch.arange(12, dtype=torch.int32).reshape(3, 4))


def test_two_same_shape_reductions_returned():
    def f(x):
        return x.sum(), (x * 2).sum()

    check(f, torch.randn(4, 4))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(dim):
    def f(x, dim):
        return torch.softmax(x, dim=dim), F.softmax(x * 3, dim), x.softmax(dim)

    check(f, torch.randn(4, 6, 5) * 4, dim)


def test_softmax_large_values_stable():
    def f(x):
        return torch.softmax(x, -1)

    check(f, torch.tensor([[1000.0, 1001.0, 999.0], [-1000.0, 0.0, 5.0]]))


@pytest.mark.parametrize("a,b", [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((3, 5), (5, 4)),
                                 ((2, 3, 5), (2, 5, 4)), ((2, 3, 5), (5, 4)), ((5,), (2, 5, 4))])
def test_matmul_shapes(a, b):
    def f(x, y):
        return torch.matmul(x, y), x @ y

    check(f, torch.randn(*a), torch.randn(*b))


def test_mm_bmm_methods():
    def f(x, y, z):
        return torch.mm(x, y), torch.bmm(z, z.transpose(1, 2)), x.matmul(y)

    check(f, torch.randn(3, 4), torch.randn(4, 2), torch.randn(2, 3, 4))


def test_shape_ops():
    def f(x):
        a = x.transpose(0, 1).reshape(4, -1)
        b = x.permute(2, 0, 1).flatten(1)
        c = x.view(6, 4).unsqueeze(0).squeeze(0)
        d = torch.unsqueeze(x, -1).squeeze(-1)
        e = x.sum(-1).T
        g = torch.flatten(x)
        return a, b, c, d, e, g, x.permute(1, 2, 0).contiguous()

    check(f, torch.randn(2, 3, 4))


def test_expand_and_squeeze_dims():
    def f(x):
        return x.expand(3, 4, 5) * 2, x.expand(-1, 4, -1).squeeze(), x.squeeze(0).shape[0] + x

    check(f, torch.randn(1, 1, 5))


def test_shape_arithmetic_from_size():
    def f(x):
        b, t, c = x.shape
        y = x.reshape(b * t, c)
        return y * x.size(-1) + x.numel() / x.dim(), y.reshape(b, t, x.size(2))

    check(f, torch.randn(2, 3, 4))


def test_tuple_and_list_returns():
    def f(x, y):
        return x + y, x * y

    def g(x, y):
        return [x - y, y]

    check(f, torch.randn(3), torch.randn(3))
    kiln.reset()
    out = kiln.compile(g)(torch.ones(3), torch.full((3,), 2.0))
    assert isinstance(out, list) and len(out) == 2
    assert_close(out[0], torch.full((3,), -1.0))
    assert_compiled(graphs=1, calls=1)


def test_returning_input_unchanged():
    def f(x, y):
        return x, y * 2, 7

    x, y = torch.randn(4), torch.randn(4)
    out = kiln.compile(f)(x, y)
    assert out[0] is x
    assert_close(out[1], y * 2)
    assert out[2] == 7
    assert_compiled(graphs=1, calls=1)


def test_identity_function_returns_same_object():
    def f(x):
        return x

    x = torch.randn(2, 2)
    assert kiln.compile(f)(x) is x
    s = stats()
    assert s["graph_breaks"] == 0 and s["graphs_compiled"] == 1 and s["compiled_calls"] == 1


def _helper_scale(t, k=2.0):
    return t * k + 1


def _helper_two(t):
    return _helper_scale(t, k=0.5) + _helper_scale(t)


def test_helper_functions_are_inlined():
    def f(x):
        return torch.relu(_helper_two(x)) - _helper_scale(x, 3)

    check(f, torch.randn(4, 4))
    assert stats()["frames"] == 1  # helpers were inlined, not separate frames


def test_decorator_form():
    @kiln.compile
    def f(x, y):
        return torch.sigmoid(x) * y

    x, y = torch.randn(3, 3), torch.randn(3, 3)
    assert_close(f(x, y), torch.sigmoid(x) * y)
    assert_close(f(x, y), torch.sigmoid(x) * y)
    assert_compiled(graphs=1, calls=2)
    assert f.__name__ == "f"


def test_decorator_with_options():
    @kiln.compile(fullgraph=True)
    def f(x):
        return x.exp().sum(0)

    x = torch.randn(5, 2)
    assert_close(f(x), x.exp().sum(0))
    assert_compiled(graphs=1, calls=1)


def test_keyword_arguments_and_defaults():
    def f(x, y=None, *, scale=2.0):
        if y is None:
            y = x
        return x * scale + y

    compiled = kiln.compile(f)
    x, y = torch.randn(4), torch.randn(4)
    assert_close(compiled(x), f(x))
    assert_close(compiled(x, y, scale=3.0), f(x, y, scale=3.0))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["compiled_calls"] == 2 and s["graph_breaks"] == 0


def test_float64_inputs():
    def f(x, y):
        return torch.softmax(x @ y, -1).sum(0) + x.mean()

    check(f, torch.randn(4, 5, dtype=torch.float64), torch.randn(5, 6, dtype=torch.float64))


def test_casts():
    def f(x):
        return x.float() * 2, x.double(), (x > 0).long(), x.to(torch.int32), x.bool()

    check(f, torch.randn(3, 4) * 3)


def test_reductions_with_empty_dim_reduce_everything():
    def f(x):
        return torch.sum(x, dim=()), x.mean(dim=[]), x.amax(()), x.sum((), keepdim=True)

    check(f, torch.randn(3, 4))


def test_zero_dim_and_zero_size_tensors():
    def f(x, s, e):
        return x * s + 1, e.sum(0), torch.relu(e) * 2

    check(f, torch.arange(4), torch.tensor(2.5), torch.randn(0, 3))


def test_broadcast_batched_matmul():
    def f(a, b):
        return a @ b

    check(f, torch.randn(2, 1, 3, 4), torch.randn(5, 4, 2))


def test_nan_and_inf_propagation():
    def f(x):
        return x.amax(0), torch.relu(x), torch.clamp(x, 0, 1), torch.softmax(x, -1), \
            torch.maximum(x, x.T)

    nan, inf = float("nan"), float("inf")
    check(f, torch.tensor([[1.0, nan], [-inf, 3.0]]))


def test_view_output_aliases_input():
    def f(x):
        return x.view(-1)

    x, x_eager = torch.zeros(2, 2), torch.zeros(2, 2)
    y = kiln.compile(f)(x)
    assert stats()["compiled_calls"] == 1
    f(x_eager)[0] = 5.0
    y[0] = 5.0
    assert_close(x, x_eager)


def _make_scaler(scale, bias):
    def scaler(x):
        return x * scale + bias
    return scaler


def test_closures_are_captured_and_guarded():
    x = torch.randn(5)
    bias = torch.randn(5)
    two, three = kiln.compile(_make_scaler(2.0, bias)), kiln.compile(_make_scaler(3.0, bias))
    assert_close(two(x), x * 2.0 + bias)
    # Same code object, different closure cell: must not reuse scale=2.0.
    assert_close(three(x), x * 3.0 + bias)
    assert_close(two(x), x * 2.0 + bias)
    bias.add_(1.0)  # a captured tensor is a graph input, not a constant
    assert_close(two(x), x * 2.0 + bias)
    s = stats()
    assert s["graphs_compiled"] == 2 and s["compiled_calls"] == 4 and s["cache_hits"] == 2, s
    assert s["graph_breaks"] == 0, s


def test_nested_defs_lambdas_and_comprehensions():
    def f(x, ws, k=2):
        y = x * k

        def inner(t):
            return t * x + y

        scale = lambda t, a=0.5: t * a  # noqa: E731
        outs = [inner(w) for w in ws]
        return sum(outs, scale(x)), [scale(o, 2.0) for o in outs]

    x = torch.randn(4)
    ws = [torch.randn(4) for _ in range(3)]
    check(f, x, ws)


def test_generator_expression_is_captured():
    # The generator runs to completion at the call (capture/interp/Inlining.cpp).
    def f(x):
        return sum(x * k for k in range(3))

    x = torch.randn(3)
    assert_close(kiln.compile(f)(x), f(x))
    assert_compiled(graphs=1, calls=1)


def test_nested_return_structures():
    def f(x, y):
        h = x * y
        return h, (x, [h + 1, 3, (y.sum(), None)]), [], ()

    x, y = torch.randn(3), torch.randn(3)
    out = kiln.compile(f)(x, y)
    assert_close(out, f(x, y))
    assert out[1][0] is x
    assert isinstance(out[1][1], list) and isinstance(out[1][1][2], tuple)
    assert_compiled(graphs=1, calls=1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_elementwise(dtype):
    def f(x, y):
        return torch.relu(x * 2 + y) - 1

    x, y = torch.randn(8, 8).to(dtype), torch.randn(8).to(dtype)
    check(f, x, y, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("f", [
    lambda x: x * 1.1, lambda x: 1.1 * x, lambda x: torch.mul(x, 1.1), lambda x: x / 3.3,
    lambda x: x.div(3.3), lambda x: 3.3 / x, lambda x: x + 0.3, lambda x: 0.7 - x,
    lambda x: (x * 1.1 + 0.3) * 2.7, lambda x: torch.add(x, x.flip(0), alpha=1.1),
    lambda x: torch.sub(x, 0.3, alpha=2.2), lambda x: x * torch.tensor(1.1).item(),
    lambda x: x.abs() ** 1.3, lambda x: torch.clamp(x, min=0.3), lambda x: x > 0.3,
], ids=["mul", "rmul", "torch.mul", "div", "Tensor.div", "rdiv", "add", "rsub", "chain",
        "add-alpha", "sub-alpha", "item", "pow", "clamp", "gt"])
def test_half_precision_with_python_numbers_is_bitwise_eager(dtype, f):
    # Eager's mul/div take a Python number at f32 precision, add/sub/compare
    # round it to the tensor's dtype first, add/sub with alpha compute in f32
    # with alpha rounded: each rounds its result once, and so must kiln.
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)).to(dtype)
    check(f, x, rtol=0, atol=0)


def test_half_mean_of_many_elements():
    def f(x):
        return x.mean()

    check(f, torch.ones(70000, dtype=torch.float16))


def test_half_sum_accumulates_in_float():
    def f(x):
        return x.sum()

    check(f, torch.ones(60000, dtype=torch.float16), rtol=0, atol=0)


def test_star_args_calls():
    def f(x, dims):
        y = x.view(*x.shape[:-1], 2, -1)
        return y.permute(*dims), torch.maximum(*[x, x * 2]), _helper_scale(*(x, 3.0))

    check(f, torch.randn(3, 4), (2, 0, 1))


def test_clone_returns_a_distinct_tensor():
    def f(x):
        h = x * 2
        c = h.clone()
        c += 1            # in-place on a clone leaves h alone
        d = x.clone()
        d.mul_(3)         # ... and leaves the input alone
        return h, h.clone(), c, d, torch.clone(x)

    x = torch.ones(2)
    out = kiln.compile(f)(x)
    assert_close(out, f(torch.ones(2)))
    assert out[0] is not out[1] and out[4] is not x
    out[4].add_(5)        # writing to the returned clone must not touch x
    assert_close(x, torch.ones(2))
    s = stats()
    assert s["compiled_calls"] == 1 and s["graph_breaks"] == 0, s


def test_tensor_factories():
    def f(x):
        return (x + torch.zeros(x.shape), torch.ones(2, 3) * x,
                torch.full((2, 3), 1.5) + x, torch.full((2,), 7), torch.zeros_like(x) + 1,
                torch.ones_like(x, dtype=torch.int32), torch.full_like(x, 3),
                torch.arange(3) + x, torch.arange(0, 1, 0.25), torch.arange(5, 0, -2),
                torch.zeros(2, device=x.device) + torch.ones(2, device="cpu"))

    check(f, torch.randn(2, 3))


@pytest.mark.parametrize("call", ["torch.zeros(True)", "torch.randn(True)", "torch.ones([True, 2])",
                                  "torch.full((False,), 1.0)", "torch.zeros(2, True)",
                                  "torch.ones([2, True])"])
def test_bool_sizes_are_taken_or_refused_like_eager(call):
    # torch takes a bool as a later size (2, True) but refuses it as the
    # size or its first element; kiln used to build a (1,) tensor.
    fn = eval(f"lambda x: x.sum() + {call}")
    x = torch.ones(2)
    try:
        want = fn(x)
    except TypeError as e:
        with pytest.raises(TypeError, match="must be tuple of ints"):
            kiln.compile(fn)(x)
        assert stats()["graph_breaks"] == 1, (str(e), stats())
        return
    got = kiln.compile(fn)(x)
    assert got.shape == want.shape


def test_factory_with_requires_grad_falls_back():
    def f(x):
        return x + torch.zeros(3, requires_grad=True)

    x = torch.randn(3)
    out = kiln.compile(f)(x)
    assert out.requires_grad
    assert_close(out.detach(), x)
    # torch.zeros(..., requires_grad=True) runs eagerly, `x + _` is compiled
    assert stats()["graph_breaks"] == 1 and stats()["graphs_compiled"] == 2


def test_dicts_built_in_the_function():
    def f(x, y):
        d = {"a": x, "b": y * 2}
        extra = {}
        extra["c"] = x * 2
        outs = [x, y]
        outs[1] = y + 1
        total = 0
        for _, value in d.items():
            total = total + value
        return {"d": d, "c": extra["c"], "n": len(d), "has": "a" in d,
                "keys": list(d.keys()), "miss": extra.get("q", 5), "outs": outs, "total": total}

    x, y = torch.randn(3), torch.randn(3)
    got, expected = kiln.compile(f)(x, y), f(x, y)
    assert list(got) == list(expected) and list(got["d"]) == ["a", "b"]
    for k in ("c", "total"):
        assert_close(got[k], expected[k])
    assert_close(got["d"]["b"], expected["d"]["b"])
    assert got["d"]["a"] is x and got["n"] == 2 and got["has"] is True
    assert got["keys"] == ["a", "b"] and got["miss"] == 5
    assert_close(got["outs"], expected["outs"])
    assert_compiled(graphs=1, calls=1)


def test_view_outputs_match_eager_aliasing_and_strides():
    def f(x):
        return (x.view(-1), x.t(), x.T.contiguous(), x.unsqueeze(0).expand(3, 2, 2), x.float(),
                x.double(), x.permute(1, 0).reshape(-1), x * 2)

    x = torch.zeros(2, 2)
    got, expected = kiln.compile(f)(x), f(x)
    assert_close(got, expected)
    for g, e in zip(got, expected):
        assert (g.data_ptr() == x.data_ptr()) == (e.data_ptr() == x.data_ptr())
        assert g.stride() == e.stride()
    assert_compiled(graphs=1, calls=1)


def invert_mask(x, m):
    return torch.where(~m, x, -x) * (~3)


def test_unary_invert_on_bool_tensor_and_constant():
    x = torch.randn(4, 5)
    m = x > 0
    assert_close(kiln.compile(invert_mask)(x, m), invert_mask(x, m))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s


def invert_int(x):
    return ~x


def test_unary_invert_on_integer_tensor_runs_through_torch_and_matches_eager():
    # ~x maps to bitwise_not, which kiln does not lower: per-op fallback.
    x = torch.arange(-3, 3)
    assert torch.equal(kiln.compile(invert_int)(x), ~x)
    s = stats()
    assert s["graph_breaks"] == 0 and s["graphs_compiled"] == 1, s
    assert s["fallback_ops"] == 1 and s["fallback_calls"] == 1, s


def layout_checks(x):
    if x.is_nested or x.is_sparse or x.is_quantized or x.is_mkldnn:
        return x * 2
    return x + 1


def test_layout_attributes_of_dense_tensors_are_constants():
    x = torch.randn(3)
    assert_close(kiln.compile(layout_checks)(x), x + 1)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0, s


def test_sparse_input_runs_eagerly():
    f = kiln.compile(layout_checks)
    # A dense expanded input has the all-zero strides a sparse tensor
    # reports: the guard must still tell them apart.
    dense = torch.randn(1).expand(3, 3)
    assert_close(f(dense), dense + 1)
    x = torch.randn(3, 3).to_sparse()
    out = f(x)
    assert out.layout == torch.sparse_coo
    assert torch.equal(out.to_dense(), x.to_dense() * 2)
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 1, s


class _LinearBase(torch.nn.Linear):
    def forward(self, x):
        return super().forward(x).relu()


class _LinearChild(_LinearBase):
    def forward(self, x):
        return super().forward(x) * 2 + self.bias.sum()


def test_zero_argument_super_chain_is_captured_with_guarded_parameters():
    m = _LinearChild(4, 3)
    c = kiln.compile(m)
    x = torch.randn(2, 4)
    with torch.no_grad():
        assert_close(c(x), m(x))
        # Parameters reached through super() are graph inputs, not constants.
        m.weight.mul_(-1)
        m.bias.add_(1)
        assert_close(c(x), m(x))
    s = stats()
    assert s["graphs_compiled"] == 1 and s["graph_breaks"] == 0 and s["compiled_calls"] == 2, s


class _ParamCheck(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))
        self.register_buffer("b", torch.ones(4))

    def forward(self, x):
        return (x * self.w, isinstance(self.w, torch.nn.Parameter),
                isinstance(self.b, torch.nn.Parameter), isinstance(x * 2, torch.nn.Parameter),
                isinstance(self.w, torch.Tensor))


def test_isinstance_of_a_parameter_input_answers_as_the_parameter():
    m = _ParamCheck()
    x = torch.randn(4)
    expected = m(x)
    report = kiln.explain(m)(x)
    assert report.out[1:] == expected[1:] == (True, False, False, True)
    assert_close(report.out[0], expected[0])
    assert report.graph_count == 1 and report.graph_break_count == 0, report.graph_breaks


def test_float_floor_division_rounds_like_eager():
    # Eager's float floor division is fmod-based: 1.0 // 0.1 is 9, while
    # floor(1.0 / 0.1) is 10. kiln.floor_div computes it the same way
    # (compiled, no per-op fallback; more cases in test_division.py).
    def f(x):
        return torch.floor_divide(x, 0.1) + torch.div(x * 2, 0.1, rounding_mode="floor")

    for dtype in (torch.float32, torch.float64):
        x = torch.tensor([1.0, 5.3, -1.0, 7.0, 0.3], dtype=dtype)
        assert torch.equal(kiln.compile(f)(x), f(x))
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0 and s["fallback_ops"] == 0, s


@torch.jit.script
def _scripted_sigmoid_gate(x: torch.Tensor, k: float) -> torch.Tensor:
    return x * torch.sigmoid(k * x)


def test_torch_jit_script_function_is_inlined():
    # Its Python original (`_torchdynamo_inline`) is captured, as in Dynamo:
    # one graph, no break, no per-op fallback.
    def f(x):
        return _scripted_sigmoid_gate(x + 1, 1.702) * 2

    x = torch.randn(4, 5)
    assert_close(kiln.compile(f)(x), f(x))
    assert_compiled(graphs=1, fallback_ops=0, eager_calls=0)


def test_factory_sizes_by_keyword():
    # torch.zeros(size=...) names the varargs parameter (BEiT does).
    def f(x):
        return x + torch.zeros(size=(2, 3), dtype=x.dtype) + torch.ones(size=[3]) + torch.full(
            size=(2, 1), fill_value=2.0)

    x = torch.randn(2, 3)
    assert_close(kiln.compile(f)(x), f(x))
    assert_compiled(graphs=1, fallback_ops=0)
