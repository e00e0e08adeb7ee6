# SPDX-License-Identifier: Apache-2.0
"""Dynamic shapes: slices, negative indices and reshapes of symbolic dims.

A slice of a symbolic dim counted from the end (`x[:, 1:]`, `x[:, :-1]`,
`x[:, 1:-1]`, `x[:, -1]`, `x[:, -3:]`, `narrow(1, 1, s - 2)`) keeps one
`?` graph over sizes: kiln.slice bounds from the end, the length a derived
symbol `s - c` guarded >= 2 (like input symbols; shorter results are
specialized). Reshapes that merge static dims into a symbolic one and
split them out again (`view(-1, n)` ... `view(b, s, n)`, GPT-2's Conv1D,
shift-logits cross entropy) stay symbolic too. Each case compares with
eager at 3+ sizes AND checks the graph/recompile counts.
"""
import pytest
import torch
import torch.nn.functional as F

import kiln

from conftest import assert_close


def _counts():
    s = kiln.stats()
    return (s["graphs_compiled"], s["recompiles"], s["dynamic_graphs"], s["dynamic_specialized"],
            s["eager_calls"], s["graph_breaks"])


def _run(fn, sizes, make, dynamic=None):
    cf = kiln.compile(fn, dynamic=dynamic)
    for s in sizes:
        args = make(s)
        with torch.no_grad():
            assert_close(cf(*args), fn(*args))
    return _counts()


def seq(s):
    return (torch.randn(2, s, 16),)


SLICES = {
    "from_1": lambda x: x[:, 1:] * 2,
    "drop_last": lambda x: x[:, :-1] * 2,
    "inner": lambda x: x[:, 1:-1] * 2,
    "last": lambda x: x[:, -1] * 2,
    "last_3": lambda x: x[:, -3:] * 2,
    "last_5_step_2": lambda x: x[:, -5::2] * 2,
    "last_but_one_2": lambda x: x[:, -3:-1] + 1,
    "narrow_inner": lambda x: x.narrow(1, 1, x.shape[1] - 2) * 2,
    "narrow_const": lambda x: x.narrow(1, 1, 2) * 2,
    "shift": lambda x: x[:, :-1] - x[:, 1:],
    "from_1_int": lambda x: x[:, 1:, 0] + 1,
    "ellipsis_none": lambda x: x[..., None][:, 2:] * 2,
    "ellipsis_int": lambda x: x[..., 0] + 1,
}


@pytest.mark.parametrize("name", list(SLICES))
def test_slice_keeps_one_dynamic_graph(name):
    # 5: static; 8: the dim becomes symbolic; 13 (odd), 6, 11 reuse the `?` graph.
    assert _run(SLICES[name], [5, 8, 13, 6, 11], seq) == (2, 1, 1, 0, 0, 0)


def test_inner_slice_short_sizes_specialize():
    # [1:-1] of 1, 2, 3 has 0, 0, 1 elements: below the guard (>= 2), each
    # is a static graph of its own; 4 and 11 reuse the `?` graph.
    assert _run(SLICES["inner"], [6, 9, 1, 2, 3, 4, 11], seq) == (5, 4, 1, 2, 0, 0)


def test_from_end_clamped_start_specializes():
    # x[:, -3:] of a dim of 2 is clamped by eager: not the `?` graph.
    assert _run(SLICES["last_3"], [6, 9, 2, 7], seq) == (3, 2, 1, 1, 0, 0)


def test_dynamic_true_and_mark_dynamic():
    fn = SLICES["from_1"]
    # dynamic=True: one `?` graph; 2 (a length of 1) is specialized.
    assert _run(fn, [6, 9, 13, 2, 3], seq, dynamic=True) == (2, 1, 1, 1, 0, 0)
    kiln.reset()

    def marked(s):
        x = torch.randn(2, s, 16)
        kiln.mark_dynamic(x, 1)
        return (x,)

    assert _run(fn, [6, 9, 13], marked) == (1, 0, 1, 0, 0, 0)


@pytest.mark.parametrize("index", [lambda x: x[:, 1:], lambda x: x[:, :-1], lambda x: x[:, -1]])
def test_returned_slice_is_a_view_like_eager(index):
    cf = kiln.compile(index)
    for s in [5, 8, 13]:
        x = torch.randn(2, s, 3)
        out = cf(x)
        assert out._base is x and out.shape == index(x).shape
        x.add_(1)
        assert torch.equal(out, index(x))  # the view sees the update, as eager's
    assert _counts()[:3] == (2, 1, 1)


def test_step_slice_following_the_size_stays_specialized():
    # x[:, ::2] has ceil(s / 2) elements: not an affine size, specialized
    # (with the reason) and right for odd and even sizes.
    assert _run(lambda x: x[:, ::2] * 2, [6, 9, 4, 7], seq) == (4, 3, 0, 3, 0, 0)


def test_shift_logits_cross_entropy():
    # HF causal-LM loss: logits[:, :-1] against labels[:, 1:], flattened.
    def loss(logits, labels):
        v = logits.shape[-1]
        return F.cross_entropy(logits[:, :-1].reshape(-1, v), labels[:, 1:].reshape(-1))

    def make(s):
        return torch.randn(2, s, 10), torch.randint(0, 10, (2, s))

    assert _run(loss, [6, 9, 13, 7], make) == (2, 1, 1, 0, 0, 0)


def test_merge_and_split_back_batch_and_sequence():
    # GPT-2's Conv1D: view(-1, n) of [b, s, n], addmm, view(b, s, n).
    lin = torch.nn.Linear(16, 16).eval()

    def conv1d(x):
        b, s, n = x.shape
        y = torch.addmm(lin.bias, x.view(-1, n), lin.weight.t())
        return y.view(b, s, n)

    assert _run(conv1d, [4, 6, 9, 12], seq) == (2, 1, 1, 0, 0, 0)


def test_last_token_logits_and_masked_mean():
    w = torch.randn(16, 10)

    def head(h, m):
        pooled = (h * m[..., None]).sum(1) / m.sum(-1, keepdim=True)
        return h[:, -1, :] @ w, pooled

    def make(s):
        m = torch.ones(2, s)
        m[0, s // 2:] = 0
        return torch.randn(2, s, 16), m

    assert _run(head, [5, 8, 13, 1, 6], make) == (3, 2, 1, 0, 0, 0)


def test_slice_gradient_matches_eager():
    def fn(x):
        return (x[:, 1:] * x[:, :-1]).sum()

    cf = kiln.compile(fn)
    for s in [5, 8, 13]:
        x = torch.randn(2, s, 4, requires_grad=True)
        x2 = x.detach().clone().requires_grad_(True)
        cf(x).backward()
        fn(x2).backward()
        assert_close(x.grad, x2.grad)
    assert _counts()[:3] == (2, 1, 1)


SIZE_ARITH = {
    "mul_size": lambda x: x * x.shape[1],
    "mean_by_hand": lambda x: x.sum(1) / x.shape[1],
    "size_minus_1": lambda x: x + (x.shape[1] - 1),
    "floordiv": lambda x: x * (x.shape[1] // 2) - x.shape[1] % 3,
    "int_tensor": lambda x: torch.arange(3) * x.shape[1] + x.sum(),
    "var": lambda x: x.var(1),
    "std_biased": lambda x: x.std(1, unbiased=False),
    "var_mean_keepdim": lambda x: torch.var_mean(x, 1, keepdim=True),
    "var_correction_2": lambda x: x.var(dim=1, correction=2),
    "normalize_seq": lambda x: (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True),
}


@pytest.mark.parametrize("name", list(SIZE_ARITH))
def test_symbolic_size_as_operand_keeps_one_dynamic_graph(name):
    # A size used as a number next to tensors (and var/std's element count
    # over a symbolic dim) is computed in the graph; 5, 8, 13, 6 and 11
    # differ in // 2 and % 3.
    assert _run(SIZE_ARITH[name], [5, 8, 13, 6, 11], seq) == (2, 1, 1, 0, 0, 0)


def test_symbolic_size_operand_with_size_one():
    fn = SIZE_ARITH["mean_by_hand"]
    # 1 is specialized (its own graph), then the `?` graph serves 7 again.
    assert _run(fn, [5, 8, 1, 7], seq) == (3, 2, 1, 0, 0, 0)


ADVANCED = {
    # x[i, j] with data index tensors (j in range for every size, negative
    # ones wrapping), x[i] picking rows of a symbolic dim, a bool table.
    "rows_and_cols": (lambda x, i, j: x[i, j] * 2,
                      lambda s: (torch.randn(3, s), torch.tensor([0, 2, -1]),
                                 torch.tensor([[1], [s - 1], [-s]]))),
    "rows": (lambda x, i: x[i] + 1,
             lambda s: (torch.randn(s, 4), torch.tensor([[0, s - 1], [-s, 1]]))),
    "cols_symbolic": (lambda x, i: x[i] + 1,
                      lambda s: (torch.randn(3, s), torch.tensor([2, 0]))),
    "bool_table": (lambda x, i, j: x[i, j],
                   lambda s: (torch.rand(2, s) > 0.5, torch.tensor([0, 1]),
                              torch.tensor([1, s - 1]))),
    # Both dims symbolic (transformers' packed-sequence / padding masks
    # [batch, length] indexed under vmap): rows, then a gather in each
    # (no [B * S] view of two symbols); broadcast indices, negative ones.
    "both_symbolic": (lambda x, i, j: x[i, j] * 2,
                      lambda s: (torch.randn(s, s + 3), torch.tensor([[0], [s - 1], [-s]]),
                                 torch.tensor([1, s + 2, -(s + 3)]))),
    "both_symbolic_bool": (lambda x, i, j: x[i, j],
                           lambda s: (torch.rand(s, s + 1) > 0.5, torch.arange(s)[:, None],
                                      torch.arange(s + 1)[None, :])),
}


@pytest.mark.parametrize("name", list(ADVANCED))
def test_advanced_index_of_a_symbolic_dim_keeps_one_dynamic_graph(name):
    # Integer-tensor indexing of a tensor with a symbolic dim: one row
    # lookup with the dims' sizes read in the graph (SymbolicIndexing.cpp).
    fn, make = ADVANCED[name]
    assert _run(fn, [5, 8, 13, 6], make) == (2, 1, 1, 0, 0, 0)


@pytest.mark.parametrize("bad", ["column", "row"])
def test_advanced_index_of_two_symbolic_dims_raises_out_of_range(bad):
    """An index past its dim raises eager's IndexError from the `?` graph
    (a column past the end turns its row lookup into the failing one)."""
    def fn(x, i, j):
        return x[i, j] + 1
    cf = kiln.compile(fn)
    for s in (5, 8):  # the second size makes both dims symbolic
        args = (torch.randn(s, s + 1), torch.tensor([0, s - 1]), torch.tensor([1, s]))
        assert_close(cf(*args), fn(*args))
    assert kiln.stats()["dynamic_graphs"] == 1
    before = _counts()
    s = 11
    i, j = torch.tensor([0, s - 1]), torch.tensor([1, s])
    if bad == "column":
        j = torch.tensor([1, s + 1])
    else:
        i = torch.tensor([0, s])
    x = torch.randn(s, s + 1)
    with pytest.raises(IndexError):
        fn(x, i, j)
    with pytest.raises(IndexError):
        cf(x, i, j)
    assert _counts() == before  # raised by the `?` graph: no new graph, no eager frame


def test_advanced_index_mixed_with_a_slice_specializes():
    # Tensors mixed with slices are not supported with symbolic sizes: the
    # frame specializes (one graph per size) and still matches eager.
    counts = _run(lambda x, i: x[i, 1:] * 2, [5, 8, 13], lambda s: (torch.randn(s, 4),
                                                                    torch.tensor([0, 2])))
    assert counts[0] == 3 and counts[2] == 0 and counts[4:] == (0, 0), counts


def test_slice_from_minus_the_size_is_the_whole_dim():
    # `bias[:, :, -seq_len:, :]` (T5's relative position bias): -s as a
    # symbolic value, and a start at or before the front is the whole dim.
    def tail(x):
        n = x.shape[1]
        scores = x @ x.transpose(1, 2)
        return scores[:, -n:, :] + x.sum(-1, keepdim=True)

    assert _run(tail, (4, 6, 9, 13), seq) == (2, 1, 1, 0, 0, 0), kiln.stats()


def test_t5_encoder_across_lengths_keeps_one_dynamic_graph():
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = tf.T5Config(num_layers=2, d_model=64, num_heads=4, d_kv=16, d_ff=128, vocab_size=256)
    model = tf.T5EncoderModel(cfg).eval()
    cm = kiln.compile(model)
    with torch.no_grad():
        for n in (8, 12, 16, 24):
            ids = torch.randint(1, 256, (1, n))
            assert_close(cm(input_ids=ids).last_hidden_state, model(input_ids=ids).last_hidden_state,
                         rtol=1e-4, atol=1e-4)
    assert _counts() == (2, 1, 1, 0, 0, 0), kiln.stats()


def test_view_with_minus_one_for_the_second_symbol():
    # HF BERT's `x.view(bsz, -1, heads, head_dim)` with batch and sequence
    # both symbolic: the -1 stands for the sequence symbol.
    def heads(x):
        b = x.shape[0]
        q = x.view(b, -1, 4, 16).transpose(1, 2)
        return (q @ q.transpose(-1, -2)).softmax(-1).sum(1)

    sizes = [(3, 9), (5, 11), (7, 13), (6, 10)]
    assert _run(heads, range(len(sizes)), lambda i: (torch.randn(*sizes[i], 64),)) == \
        (2, 1, 1, 0, 0, 0), kiln.stats()
