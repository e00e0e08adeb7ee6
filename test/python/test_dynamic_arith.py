# SPDX-License-Identifier: Apache-2.0
"""Arithmetic on symbolic sizes (capture/values/SymbolicSizes.cpp,
SymbolicIndexing.cpp): Python ints read from a `?` dim flow through
+ - * // %, comparisons and branches (guarded), factories (arange, zeros,
ones, full, new_*, *_like), indexing and slicing by a symbolic bound,
expand, tril and causal attention, without a recompile per size.

Each case checks eager parity for several sizes AND the counters: at most
two graphs (the first static one, then one `?` graph under dynamic=None)
and no recompiles after the dynamic one.
"""
import pytest
import torch

import kiln


@pytest.fixture(autouse=True)
def _fresh():
    kiln.reset()
    yield
    kiln.reset()


def _counts():
    s = kiln.stats()
    return s["graphs_compiled"], s["recompiles"], s["dynamic_graphs"], s["dynamic_specialized"]


def _run(fn, make, sizes, atol=1e-5):
    """Calls compiled `fn` (dynamic=None) on make(n) for each size n;
    returns the counters after each call."""
    cf = kiln.compile(fn)
    seen = []
    with torch.no_grad():
        for n in sizes:
            args = make(n)
            got, want = cf(*args), fn(*args)
            if isinstance(want, torch.Tensor):
                got, want = (got,), (want,)
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w, atol=atol, rtol=1e-4)
            seen.append(_counts())
    return seen


SIZES = [8, 12, 16, 20]
ONE_DYNAMIC = (2, 1, 1, 0)  # static graph, then one `?` graph for every later size


def _assert_one_dynamic(seen):
    assert seen[0] == (1, 0, 0, 0), seen
    assert all(s == ONE_DYNAMIC for s in seen[1:]), seen


def test_arange_positions():
    def f(x):
        pos = torch.arange(x.shape[1])
        return x + pos.unsqueeze(0).float()
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(2, n),), SIZES))


def test_arange_with_offset_and_sum():
    def f(x):
        past = 3
        s = x.shape[1]
        return x + torch.arange(past, past + s, dtype=torch.float32)
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(2, n),), SIZES))


def test_causal_mask_from_ones_tril():
    def f(x):
        s = x.shape[1]
        mask = torch.ones(s, s).tril()
        return x @ mask
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(2, n),), SIZES))


def test_zeros_full_new_ones_like():
    def f(x):
        b, s = x.shape
        z = torch.zeros(b, s) + torch.full((s,), 2.0) + x.new_ones(s) + torch.ones_like(x)
        return x * z
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(3, n),), SIZES))


def test_view_split_heads_with_floordiv():
    heads = 4

    def f(x):
        b, s, d = x.shape
        q = x.view(b, s, heads, d // heads).transpose(1, 2)
        return (q * 2).transpose(1, 2).reshape(b, s, d)
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(2, n, 16),), SIZES))


def test_view_with_symbolic_arithmetic():
    def f(x):
        n = x.numel()
        return x.view(n // 8, 8) * 2
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(n, 8),), SIZES))


def test_slice_by_symbolic_bound():
    buf = torch.arange(64.0).view(1, 64)

    def f(x):
        s = x.shape[1]
        return x + buf[:, :s] + buf[:, 2:s + 2]
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(2, n),), SIZES))


def test_slice_by_symbolic_bound_past_the_end_recompiles():
    # Eager clamps buf[:, :s] at 64: the `?` graph is guarded s <= 64.
    buf = torch.arange(64.0).view(1, 64)

    def f(x):
        return x[:, :4] + buf[:, :x.shape[1]].sum()
    seen = _run(f, lambda n: (torch.randn(2, n),), [8, 12, 16, 70])
    assert seen[2] == ONE_DYNAMIC, seen
    assert seen[3][1] == 2, seen  # a new graph for s = 70


def test_index_symbolic_dim_and_new_axes():
    def f(x):
        return x[:, 0] * 2, x[:, None, None, :] + 1, x[..., :3]
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(2, n),), SIZES))


def test_expand_to_symbolic_size():
    buf = torch.zeros(1, 64, dtype=torch.long)

    def f(ids):
        b, s = ids.shape
        return ids + buf[:, :s].expand(b, s)
    _assert_one_dynamic(_run(f, lambda n: (torch.randint(0, 9, (2, n)),), SIZES))


def test_causal_attention_symbolic_length():
    def f(q):
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(2, 4, n, 8),), SIZES, atol=1e-4))


def test_branch_on_size_is_guarded():
    # `s > 10` is decided at capture and guarded: a size on the other side
    # recompiles (a second `?` graph), never reuses the wrong branch.
    def f(x):
        s = x.shape[0]
        if s > 10:
            return x * 2
        return x * 3
    cf = kiln.compile(f)
    for n in (4, 6, 8):  # static, then `?` with s > 10 False
        x = torch.randn(n, 3)
        torch.testing.assert_close(cf(x), f(x))
    assert _counts() == (2, 1, 1, 0), _counts()
    for n in (12, 16):  # guard fails: one more `?` graph, True branch
        x = torch.randn(n, 3)
        torch.testing.assert_close(cf(x), f(x))
    assert _counts() == (3, 2, 2, 0), _counts()
    for n in (5, 20):  # both graphs reused
        x = torch.randn(n, 3)
        torch.testing.assert_close(cf(x), f(x))
    assert _counts() == (3, 2, 2, 0), _counts()


def test_size_arithmetic_guard_reported():
    def f(x):
        if x.shape[0] // 2 + 1 >= 3:
            return x + 1
        return x - 1
    logs = []
    kiln._C.set_log_sink(lambda ch, msg: logs.append((ch, msg)))
    try:
        with kiln.config.patch(logs=frozenset({"guards", "recompiles"})):
            cf = kiln.compile(f)
            x = torch.randn(6, 3)
            kiln.mark_dynamic(x, 0)
            torch.testing.assert_close(cf(x), f(x))
            x = torch.randn(2, 3)  # 2 // 2 + 1 = 2: the guard fails, recompiles
            kiln.mark_dynamic(x, 0)
            torch.testing.assert_close(cf(x), f(x))
    finally:
        kiln._C.set_log_sink(None)
    text = "\n".join(m for ch, m in logs)
    assert "(((s0 // 2) + 1) >= 3) is True" in text, text
    assert "size relation (((s0 // 2) + 1) >= 3) is True failed" in text, text
    assert "(((s0 // 2) + 1) >= 3) is False" in text, text
    assert kiln.stats()["recompiles"] == 1 and kiln.stats()["dynamic_graphs"] == 2


def test_unsupported_use_still_specializes():
    # A symbolic size used where kiln cannot follow it (a power) specializes
    # with a reason instead of guessing.
    def f(x):
        return x * (x.shape[0] ** 2)
    seen = _run(f, lambda n: (torch.randn(n, 3),), [4, 6, 8])
    assert seen[-1][3] >= 1 and seen[-1][2] == 0, seen


def test_size_as_float_number():
    # True division and float arithmetic of a size give a Python float,
    # computed in the graph: one `?` graph.
    def f(x):
        return x * (x.shape[0] / 2) + x.shape[1] * 0.5 - 1.5 * x.shape[0]
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(n, 3),), SIZES))


def test_chunk_and_select_along_static_dim_of_symbolic_tensor():
    def f(x):
        q, k, v = x.chunk(3, dim=-1)
        return q * k + v.narrow(-1, 1, 2).sum(-1, keepdim=True) + x.select(2, 0).unsqueeze(-1)
    _assert_one_dynamic(_run(f, lambda n: (torch.randn(2, n, 15),), SIZES))


def test_transformer_encoder_layer_no_recompile_per_sequence_length():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0).eval()
    _assert_one_dynamic(_run(layer, lambda n: (torch.randn(2, n, 64),), SIZES, atol=2e-5))


transformers = pytest.importorskip("transformers")


def _hf_run(model, sizes):
    model.eval()
    cf = kiln.compile(model)
    seen = []
    torch.manual_seed(0)
    with torch.no_grad():
        for n in sizes:
            ids = torch.randint(0, 1000, (2, n))
            got, want = cf(ids), model(ids)
            torch.testing.assert_close(got.last_hidden_state, want.last_hidden_state,
                                       rtol=1e-4, atol=2e-5)
            seen.append(_counts())
    return seen


def test_bert_no_recompile_per_sequence_length():
    cfg = transformers.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                  intermediate_size=128, vocab_size=1000,
                                  max_position_embeddings=64)
    torch.manual_seed(0)
    _assert_one_dynamic(_hf_run(transformers.BertModel(cfg), SIZES))


def test_constant_slice_of_symbolic_dim_both_sides():
    # x[:, :10] has 10 columns while s >= 10 and s columns below: each side
    # is its own guarded `?` graph.
    def f(x):
        return x[:, :10] * 2
    seen = _run(f, lambda n: (torch.randn(2, n),), [12, 16, 20, 4, 6, 30])
    assert seen[2] == ONE_DYNAMIC, seen
    assert seen[-1] == (3, 2, 2, 0), seen


def test_derived_size_equal_to_another_input_size():
    # A decode step: the mask is one longer than the cache, and
    # arange(cache + 1) has the mask's captured length: the same symbol,
    # with a size guard that the two stay equal (SymbolicSizes.cpp).
    def f(mask, cache):
        return mask * torch.arange(cache.shape[0] + 1) + cache.sum()

    _assert_one_dynamic(_run(f, lambda n: (torch.randn(n + 1), torch.randn(n)), SIZES))
    mask, cache = torch.randn(1), torch.randn(6)  # no longer equal: the guard fails
    torch.testing.assert_close(kiln.compile(f)(mask, cache), f(mask, cache))
    assert _counts()[0] == 3, _counts()
