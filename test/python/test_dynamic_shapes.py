# SPDX-License-Identifier: Apache-2.0
"""Dynamic shapes: kiln.compile(dynamic=True/False/None) and kiln.mark_dynamic.

Each case checks the results against eager AND the graph/recompile counts:
one `?` graph serves every size >= 2; sizes 0 and 1 are specialized (a new
graph), never run by the `?` graph; what cannot stay symbolic is specialized
with a logged reason.
"""
import pytest
import torch

import kiln
from kiln import explain


@pytest.fixture(autouse=True)
def _fresh():
    kiln.reset()
    yield
    kiln.reset()


def _counts():
    s = kiln.stats()
    return s["graphs_compiled"], s["recompiles"], s["dynamic_graphs"]


def _run(fn, shapes, dynamic, atol=1e-5):
    cf = kiln.compile(fn, dynamic=dynamic)
    for shape in shapes:
        x = torch.randn(*shape)
        torch.testing.assert_close(cf(x), fn(x), atol=atol, rtol=1e-4)
    return _counts()


def pointwise(x):
    return x.relu() + x.sigmoid() * x


def softmax_sum(x):
    return torch.softmax(x, -1) + x.sum(-1, keepdim=True)


def flatten_view(x):
    return x.view(x.shape[0], -1).relu()


BATCHES = [(4, 64), (8, 64), (16, 64), (3, 64)]


@pytest.mark.parametrize("fn", [pointwise, softmax_sum])
def test_dynamic_true_one_graph(fn):
    assert _run(fn, BATCHES, True) == (1, 0, 1)


@pytest.mark.parametrize("fn", [pointwise, softmax_sum])
def test_dynamic_false_recompiles_per_size(fn):
    assert _run(fn, BATCHES, False) == (4, 3, 0)


@pytest.mark.parametrize("fn", [pointwise, softmax_sum])
def test_dynamic_none_marks_after_first_change(fn):
    # 4: static; 8: recompile with dim 0 symbolic; 16, 3 reuse it.
    assert _run(fn, BATCHES, None) == (2, 1, 1)


def test_size_one_specializes_under_dynamic_true():
    # size 1 is not >= 2: a separate graph (its dim 1 stays symbolic).
    assert _run(pointwise, [(4, 64), (1, 64), (8, 64), (1, 64)], True) == (2, 1, 2)


def test_size_zero_specializes():
    cf = kiln.compile(pointwise, dynamic=True)
    cf(torch.randn(4, 8))
    x = torch.randn(0, 8)
    torch.testing.assert_close(cf(x), pointwise(x))
    graphs, recompiles, _ = _counts()
    assert recompiles == 1 and graphs <= 2


def test_size_one_after_auto_dynamic_recompiles():
    assert _run(softmax_sum, [(4, 64), (8, 64), (1, 64), (16, 64)], None) == (3, 2, 1)


def test_view_batch_flatten_dynamic_none():
    assert _run(flatten_view, [(4, 4, 16), (8, 4, 16), (16, 4, 16), (5, 4, 16)], None) == (2, 1, 1)


def test_view_two_symbolic_dims_specializes_with_reason():
    # dynamic=True makes all three dims symbolic; a view over two symbolic
    # dims cannot stay symbolic: specialized (one graph per shape), logged.
    logs = []
    kiln._C.set_log_sink(lambda ch, msg: logs.append((ch, msg)))
    try:
        with kiln.config.patch(logs=frozenset({"dynamic"})):
            counts = _run(flatten_view, [(4, 4, 16), (8, 4, 16)], True)
    finally:
        kiln._C.set_log_sink(None)
    assert counts == (2, 1, 0)
    assert kiln.stats()["dynamic_specialized"] == 2
    assert any(ch == "dynamic" and "specialized" in m and "reshape" in m for ch, m in logs)


def test_mark_dynamic_batch():
    cf = kiln.compile(flatten_view, dynamic=False)
    # (a batch equal to a static size, e.g. 4 or 16 here, would stay static)
    for b in (3, 5, 9):
        x = torch.randn(b, 4, 16)
        kiln.mark_dynamic(x, 0)
        torch.testing.assert_close(cf(x), flatten_view(x))
    assert _counts() == (1, 0, 1)


def test_mark_dynamic_checks_dim():
    with pytest.raises(IndexError):
        kiln.mark_dynamic(torch.randn(2, 3), 2)
    with pytest.raises(TypeError):
        kiln.mark_dynamic([1, 2], 0)


def test_size_read_as_python_int_specializes():
    # The product of two symbolic sizes is a reshape target with two
    # symbolic dims on the input side: specialized.
    def f(x):
        return x.reshape(x.shape[0] * x.shape[1]).relu()
    assert _run(f, [(4, 8), (6, 8)], True) == (2, 1, 0)
    assert kiln.stats()["dynamic_specialized"] == 2


def test_python_branch_on_size_is_guarded():
    # The branch is decided at capture and guarded (s0 > 5): one `?` graph
    # per side (test_dynamic_arith.py has more of these).
    def f(x):
        if x.shape[0] > 5:
            return x.relu()
        return x.sigmoid()
    assert _run(f, [(4, 8), (8, 8), (3, 8)], True) == (2, 1, 2)


def test_len_of_symbolic_dim_specializes():
    def f(x):
        return x[: len(x) // 2].relu()
    assert _run(f, [(4, 8), (6, 8)], True) == (2, 1, 0)


def test_equal_sizes_are_guarded_equal():
    # x and y share the symbolic batch (equal at capture): a call where they
    # differ must not run that graph (eager raises on the broadcast).
    def f(x, y):
        return x + y
    cf = kiln.compile(f, dynamic=True)
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    torch.testing.assert_close(cf(a, b), f(a, b))
    a, b = torch.randn(6, 8), torch.randn(6, 8)
    torch.testing.assert_close(cf(a, b), f(a, b))
    assert _counts() == (1, 0, 1)
    with pytest.raises(RuntimeError):
        cf(torch.randn(6, 8), torch.randn(5, 8))


def test_broadcast_between_two_symbolic_sizes():
    def f(x, y):
        return x.unsqueeze(1) * y.unsqueeze(0)
    cf = kiln.compile(f, dynamic=True)
    for n, m in ((3, 5), (7, 2), (4, 4)):
        x, y = torch.randn(n), torch.randn(m)
        torch.testing.assert_close(cf(x, y), f(x, y))
    graphs, _, dyn = _counts()
    assert dyn >= 1 and graphs <= 2


def test_reduction_over_symbolic_dim():
    def f(x):
        return x.mean(0) + x.amax(0)
    assert _run(f, [(4, 8), (9, 8), (17, 8)], True) == (1, 0, 1)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_argmax_over_symbolic_dims_keeps_one_graph(dim, keepdim):
    """argmax/argmin results take their dims from the input's (they were
    "an expression of symbolic sizes" and specialized every size)."""
    def fn(x):
        return torch.argmax(x * 2, dim, keepdim) + torch.argmin(x, dim, keepdim)
    cf = kiln.compile(fn, dynamic=True)
    for n in (4, 9, 13):
        x = torch.randn(n, n + 3)
        torch.testing.assert_close(cf(x), fn(x))
    assert _counts() == (1, 0, 1)


def test_parameters_stay_static_under_dynamic_true():
    lin = torch.nn.Linear(64, 32)
    def f(x):
        return torch.relu(lin(x))
    # x's 64 features equal the weight's: dim 1 stays static, dim 0 symbolic.
    assert _run(f, BATCHES, True, atol=1e-4) == (1, 0, 1)


def test_mlp_dynamic_vs_static():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(),
                              torch.nn.Linear(96, 10), torch.nn.Softmax(-1))
    cm = kiln.compile(mlp, dynamic=True)
    with torch.no_grad():
        for b in (4, 8, 16, 3):
            x = torch.randn(b, 64)
            torch.testing.assert_close(cm(x), mlp(x), atol=1e-4, rtol=1e-4)
    assert _counts() == (1, 0, 1)


def test_guards_report_symbolic_sizes():
    logs = []
    kiln._C.set_log_sink(lambda ch, msg: logs.append((ch, msg)))
    try:
        with kiln.config.patch(logs=frozenset({"guards"})):
            cf = kiln.compile(pointwise, dynamic=True)
            cf(torch.randn(4, 8))
    finally:
        kiln._C.set_log_sink(None)
    text = "\n".join(m for ch, m in logs if ch == "guards")
    assert "L['x'].size(0) >= 2" in text and "L['x'].size(1) >= 2" in text
    assert "sizes (?, ?)" in text


def test_explain_shows_symbolic_dims():
    report = explain(softmax_sum)(torch.randn(4, 8))
    assert report.graphs  # static by default: dynamic=None starts static
    kiln.reset()
    x = torch.randn(4, 8)
    kiln.mark_dynamic(x, 0)
    report = explain(softmax_sum)(x)
    assert "tensor<?x8xf32>" in report.graphs[0].ir
    assert "L['x'].size(0) >= 2" in str(report)


def test_dynamic_option_validated():
    with pytest.raises(ValueError):
        kiln.compile(pointwise, dynamic="sometimes")


def test_result_size_expression_equal_to_another_symbol_is_guarded_equal():
    """cat([a, a]) has 2*s0 elements; with a of 4 and b of 8 at capture that
    equals b's symbol. The result must not be sized by b where the two
    differ (it used to be: wrong shapes, then heap corruption): the graph is
    kept under a size guard `2*s0 == s1`, so (7, 14) reuses it and (5, 8)
    compiles another `?` graph."""
    def f(a, b):
        return torch.cat([a, a]) * 2, b + 1

    compiled = kiln.compile(f, dynamic=True)
    for n, m in [(4, 8), (5, 8), (6, 8), (4, 8), (7, 14), (3, 9)]:
        a, b = torch.randn(n), torch.randn(m)
        got, expected = compiled(a, b), f(a, b)
        assert got[0].shape == expected[0].shape
        torch.testing.assert_close(got, expected)
    s = kiln.stats()
    assert s["graphs_compiled"] == 2 and s["dynamic_graphs"] == 2, s


def fused_qkv(x, w):
    # GPT-2's attention input: one (n, 64) @ (64, 192) projection viewed back
    # to (1, n, 192) and split into q, k, v along the static 192.
    y = (x.view(-1, 64) @ w).view(1, -1, 192)
    q, k, v = y.split(64, dim=2)
    return q * k + v


def test_static_dim_that_is_a_multiple_of_the_symbol_stays_static():
    # At n = 12 (and every n dividing 192) the static 192 equals 16 * n: the
    # shadow capture that checks the `?` one took it for a merged symbolic
    # dim and split it another way, so the graph was specialized at n = 12
    # and 16 (GPT-2 across prompt lengths recompiled). One `?` graph now.
    cf = kiln.compile(fused_qkv)
    w = torch.randn(64, 192)
    for n in (8, 12, 16, 24, 20):
        x = torch.randn(1, n, 64)
        torch.testing.assert_close(cf(x, w), fused_qkv(x, w), rtol=1e-4, atol=1e-4)
    assert _counts() == (2, 1, 1), kiln.stats()


def test_gpt2_across_prompt_lengths_keeps_one_dynamic_graph():
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=128)
    model = tf.GPT2LMHeadModel(cfg).eval()
    cm = kiln.compile(model)
    with torch.no_grad():
        for n in (8, 12, 16, 20, 24):
            ids = torch.randint(1, 256, (1, n))
            torch.testing.assert_close(cm(ids, use_cache=False).logits,
                                       model(ids, use_cache=False).logits, rtol=1e-4, atol=1e-4)
    assert _counts() == (2, 1, 1), kiln.stats()
    assert kiln.stats()["eager_calls"] == 0 and kiln.stats()["graph_breaks"] == 0


def test_llama_across_batch_and_length_with_padding_keeps_one_dynamic_graph():
    """Batch and length both changing (a server's padded batches): the
    padding mask `mask[batch_idx, kv_idx]` under vmap indexes a tensor whose
    two sizes are symbolic (rows, then a gather: SymbolicIndexing.cpp); it
    specialized every (batch, length) before: 6 graphs for 6 calls."""
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = tf.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
                         max_position_embeddings=64, use_cache=False)
    model = tf.LlamaModel(cfg).eval()
    cm = kiln.compile(model)
    with torch.no_grad():
        for b, n in ((2, 5), (3, 9), (4, 17), (2, 7), (5, 11), (3, 13)):
            ids = torch.randint(0, 100, (b, n))
            mask = torch.ones(b, n, dtype=torch.long)
            mask[0, : n // 2] = 0  # left padding in the first row
            torch.testing.assert_close(cm(ids, attention_mask=mask).last_hidden_state,
                                       model(ids, attention_mask=mask).last_hidden_state,
                                       rtol=1e-4, atol=1e-5)
    s = kiln.stats()
    assert (s["graphs_compiled"], s["dynamic_graphs"], s["dynamic_specialized"]) == (2, 1, 0), s
    assert s["eager_calls"] == 0 and s["graph_breaks"] == 0


class _Holder:
    pass


def test_symbolic_sizes_returned_and_stored_as_ints():
    # `return logits, seq_len` and `self.n = x.shape[1] * 3` of a `?` dim:
    # Python ints evaluated per call from the inputs' sizes (they made the
    # capture fail, so every size had its own static graph).
    def f(x, holder):
        n = x.shape[1]
        holder.n = n * 3
        return x[:, -n:] * 2, n, -n, n // 2 + 1, [n, x.shape[0]]

    cf = kiln.compile(f)
    for s in (4, 6, 9, 13):
        x = torch.randn(2, s)
        mine, eager = _Holder(), _Holder()
        got, want = cf(x, mine), f(x, eager)
        torch.testing.assert_close(got[0], want[0])
        assert got[1:] == want[1:] and type(got[1]) is int
        assert mine.n == eager.n
    assert _counts() == (2, 1, 1), kiln.stats()


def _unsqueeze_in_place(x):
    x = x.clone()
    x.unsqueeze_(0)
    return x.shape


SIZE_RESULTS = {
    "shape": lambda x: x.shape,
    "size": lambda x: x.size(),
    "slice": lambda x: x.shape[1:],
    "reversed": lambda x: x.shape[::-1],
    "concat": lambda x: x.shape + (1,),
    "rconcat": lambda x: (1,) + x.shape,
    "repeat": lambda x: x.shape * 2,
    "tuple": lambda x: tuple(x.shape),
    "list": lambda x: list(x.shape),
    "literal": lambda x: (x.shape[0], x.shape[1]),
    "size_1": lambda x: x.size(1),
    "numel": lambda x: x.numel(),
    "view_shape": lambda x: x.view(x.shape[0], -1).shape,
    "unsqueeze_in_place": _unsqueeze_in_place,
}


@pytest.mark.parametrize("name", SIZE_RESULTS)
def test_returned_sizes_have_eager_type_and_value(name):
    # torch.Size stays torch.Size (its slices, sums and repeats too), a
    # tuple or list built from sizes stays one, at every size.
    fn = SIZE_RESULTS[name]
    cf = kiln.compile(fn)
    for s in (3, 5, 7):
        x = torch.randn(2, s)
        got, want = cf(x), fn(x)
        assert type(got) is type(want) and got == want, (got, want)
    # (unsqueeze_ is a graph break: its prefix and resume are `?` graphs)
    assert kiln.stats()["dynamic_graphs"] >= 1 and kiln.stats()["eager_calls"] == 0


def test_graph_break_prefix_and_resume_keep_symbolic_sizes():
    # A break no longer specializes the frame: its prefix is a `?` graph
    # (checked against its shadow static capture like a whole frame) and
    # the resume function becomes one too; a size live across the break is
    # passed on as an int (OutputSlot::SymSize). Before: a static prefix
    # per size, eager after the recompile limit.
    def f(x):
        y = x * 2
        print("", end="")  # a graph break (print is not replayed by default)
        return y.sum(1) + y.shape[1]

    cf = kiln.compile(f)
    for s in (3, 5, 7, 9, 11, 13, 15, 17, 19, 21):
        x = torch.randn(2, s)
        torch.testing.assert_close(cf(x), f(x))
    s = kiln.stats()
    assert s["graphs_compiled"] == 4 and s["dynamic_graphs"] == 2 and s["eager_calls"] == 0, s
