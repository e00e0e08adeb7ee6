# SPDX-License-Identifier: Apache-2.0
"""Per-op fallback: a torch op kiln has no lowering for runs through torch
inside the compiled program (docs/architecture.md §3c) instead of breaking
the graph. Each case compares with eager and checks one graph, no break and
the number of fallback ops; random, mutating and data-dependent ops still
break (and stay exactly right)."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from conftest import assert_close, stats


def run(fn, *args, fallbacks=1, graphs=1, breaks=0, **compile_options):
    """Compiles fn, checks it against eager on `args` and on a second set of
    inputs of the same shapes (the cached entry), and checks the counters."""
    cf = kiln.compile(fn, **compile_options)
    assert_close(cf(*args), fn(*args))
    again = [torch.randn_like(a) if a.is_floating_point() else a for a in args]
    assert_close(cf(*again), fn(*again))
    s = stats()
    assert s["graphs_compiled"] == graphs, s
    assert s["graph_breaks"] == breaks, s
    assert s["fallback_ops"] == fallbacks, s
    # Each compiled call ran each fallback op once, through torch.
    assert s["fallback_calls"] == 2 * fallbacks, s
    assert s["cache_hits"] >= 1, s
    return cf


def test_special_function_between_mapped_ops():
    run(lambda x: torch.special.erfcx(x * 0.5) + 1, torch.randn(4, 5))


def test_tensor_method_fallback():
    run(lambda x: (torch.tanh(x) * 0.9).erfinv() * 2, torch.randn(3, 4))


def test_fft_shift_real_valued():
    run(lambda x: torch.fft.fftshift(x + 1, dim=-1).relu(), torch.randn(2, 6))


def test_linalg_inv():
    def f(a):
        m = a @ a.transpose(-1, -2) + 4 * torch.eye(4)
        return torch.linalg.inv(m).sum(-1)
    run(f, torch.randn(3, 4, 4))


def test_linalg_det_scalar_result():
    run(lambda a: torch.linalg.det(a + 3 * torch.eye(3)) * 2, torch.randn(3, 3))


def test_cdist_python_function_of_torch():
    run(lambda a, b: torch.cdist(a * 2, b).exp().neg(), torch.randn(5, 3), torch.randn(4, 3))


def test_searchsorted_int_result_then_mapped_ops():
    def f(s, v):
        idx = torch.searchsorted(s, v * 2)
        return idx.float() + v
    s = torch.sort(torch.randn(8)).values
    run(f, s, torch.randn(2, 3))


def test_interpolate_bicubic_handler_refusal():
    run(lambda x: F.interpolate(x * 2, scale_factor=2, mode="bicubic",
                                align_corners=False).sigmoid(), torch.randn(1, 2, 4, 4))


def test_kron():
    run(lambda a, b: torch.kron(a + 1, b) * 3, torch.randn(2, 3), torch.randn(2, 2))


def test_tuple_result():
    def f(x):
        lo, hi = torch.aminmax(x * 2, dim=1)
        return hi - lo
    run(f, torch.randn(4, 6))


def test_fallback_result_returned_directly_and_input_operand():
    def f(x):
        return torch.special.i0(x), x * 2
    run(f, torch.randn(5))


def test_two_fallbacks_in_a_row():
    run(lambda x: torch.special.i0e(torch.special.ndtri(torch.sigmoid(x))) + x,
        torch.randn(3, 3), fallbacks=2)


def test_same_tensor_twice_and_list_argument():
    def f(a, b):
        return torch.block_diag(a * 2, b, a).sum(0)
    run(f, torch.randn(2, 2), torch.randn(3, 1))


def test_fallback_inside_inlined_module():
    class Up(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 3, 3, padding=1)

        def forward(self, x):
            return self.conv(F.interpolate(x, size=(6, 6), mode="bicubic")).relu()
    m = Up().eval()
    with torch.no_grad():
        run(m, torch.randn(1, 2, 4, 4))


def test_random_op_still_breaks():
    # An unmapped random op never runs through torch inside a graph (it
    # would draw from eager's generator); mapped ones compile (test_random.py).
    def f(x):
        return torch.poisson(x.abs() * 2) * 0 + x
    cf = kiln.compile(f)
    x = torch.randn(4)
    assert_close(cf(x), x)
    assert stats()["graph_breaks"] == 1 and stats()["fallback_ops"] == 0
    assert stats()["fallback_calls"] == 0


def test_mutating_op_on_input_still_breaks_and_mutates():
    def f(x):
        y = x * 2
        x.fill_diagonal_(5.0)
        return y + x
    x, x_eager = torch.zeros(3, 3), torch.zeros(3, 3)
    out = kiln.compile(f)(x)
    expected = f(x_eager)
    assert_close(out, expected)
    assert_close(x, x_eager)
    assert stats()["graph_breaks"] == 1 and stats()["fallback_ops"] == 0
    assert stats()["fallback_calls"] == 0


def test_data_dependent_shape_still_breaks():
    def f(x):
        return torch.unique(x * 2).sum() + 1
    cf = kiln.compile(f)
    x = torch.tensor([1.0, 2.0, 1.0, 3.0])
    assert_close(cf(x), f(x))
    assert stats()["graph_breaks"] == 1 and stats()["fallback_ops"] == 0
    assert stats()["fallback_calls"] == 0


def test_fullgraph_accepts_fallback():
    run(lambda x: torch.special.erfcx(x) * 2, torch.randn(3), fullgraph=True)


def test_fullgraph_still_rejects_random_op():
    with pytest.raises(RuntimeError, match="fullgraph"):
        kiln.compile(lambda x: torch.poisson(x.abs()) + x, fullgraph=True)(torch.randn(3))


def test_training_mode_gradients_match_eager():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return torch.special.log_ndtr(self.lin(x)).sum(-1)
    m = M()
    x = torch.randn(3, 4, requires_grad=True)
    out = kiln.compile(m)(x)
    out.sum().backward()
    grads = [p.grad.clone() for p in m.parameters()] + [x.grad.clone()]
    for p in m.parameters():
        p.grad = None
    xe = x.detach().clone().requires_grad_(True)
    m(xe).sum().backward()
    for g, p in zip(grads, list(m.parameters()) + [xe]):
        assert_close(g, p.grad)
    assert stats()["graph_breaks"] == 0 and stats()["fallback_ops"] == 1
    assert stats()["fallback_calls"] == 1


def test_log_and_explain_list_fallback_ops(capfd):
    f = lambda x: torch.special.erfcx(x) + 1  # noqa: E731
    with kiln.config.patch(logs=frozenset({"fallbacks"})):
        kiln.compile(f)(torch.randn(3))
    _, err = capfd.readouterr()
    assert "torch.special.erfcx runs through torch (no kiln lowering)" in err
    out = kiln.explain(f)(torch.randn(3))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert len(out.fallback_ops) == 1 and "torch.special.erfcx" in out.fallback_ops[0]
    assert "Fallback ops" in str(out)
    assert stats()["fallback_calls"] >= 1


def test_compiled_ir_declares_fallback_with_constants():
    f = lambda x: torch.special.polygamma(2, x.abs() + 1)  # noqa: E731
    x = torch.rand(3)
    out = kiln.explain(f)(x)
    assert 'kiln.torch_op = "torch.special.polygamma(2, %0, )"' in out.graphs[0].ir
    assert_close(out.out, f(x))
    assert stats()["fallback_calls"] == 1 and stats()["graph_breaks"] == 0


def test_dynamic_shapes_with_fallback_specialize_and_match_eager():
    # The meta run needs static sizes: a dynamic capture holding a fallback
    # is retried with static sizes (one graph per size), still exact.
    f = lambda x: torch.special.erfcx(x * 0.5) + 1  # noqa: E731
    cf = kiln.compile(f, dynamic=True)
    for n in (4, 6):
        x = torch.randn(n, 5)
        assert_close(cf(x), f(x))
    s = stats()
    assert s["graphs_compiled"] == 2 and s["graph_breaks"] == 0, s
    assert s["dynamic_specialized"] == 2 and s["dynamic_graphs"] == 0, s
    assert s["fallback_ops"] == 2 and s["fallback_calls"] == 2, s


@pytest.mark.parametrize("case", ["contracted_into_static", "symbolic_segment_result",
                                  "symbolic_input_after_fallback"])
def test_dynamic_segments_around_a_static_fallback_match_eager(case):
    # The fallback's own operands are static, but the kiln segments around
    # it read or return values with a symbolic size. Segments have no
    # symbols to size them per call: this ran them with unbound sizes (a
    # ridge regression's x.t() @ x came back as zeros at the second batch
    # size, silently; a symbolic result raised). They are specialized now.
    def contracted_into_static(x):
        a = x.t() @ x + 0.1 * torch.eye(x.shape[1])
        return a, torch.linalg.solve(a, x.t() @ x[:, :1])

    def symbolic_segment_result(x):
        return x * 2, torch.linalg.inv(torch.eye(3) * 2)

    def symbolic_input_after_fallback(x):
        y = torch.linalg.inv(torch.eye(3) * 2)
        return x.sum(0) + y.sum(0)

    f = locals()[case]
    cf = kiln.compile(f)
    for n in (4, 6, 9):
        x = torch.randn(n, 3)
        assert_close(cf(x), f(x))
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0, s
    assert s["dynamic_graphs"] == 0 and s["dynamic_specialized"] >= 1, s
    assert s["fallback_calls"] == 3, s
