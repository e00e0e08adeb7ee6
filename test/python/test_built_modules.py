# SPDX-License-Identifier: Apache-2.0
"""nn.Modules constructed inside compiled code (issue 15).

`loss_fct = CrossEntropyLoss(ignore_index=-100); loss_fct(logits, labels)`
(HuggingFace T5/BART heads with `labels`) builds a module on every call. kiln
builds it once at capture with the same constant arguments and inlines its
forward (frontend/csrc/capture/interp/BuiltModules.cpp): one graph, no break.
Where one object cannot stand for a fresh module per call (it has weights,
its arguments are tensors, it escapes the frame or is mutated) the capture
breaks with a category, and the result is eager's."""
import pytest
import torch
from torch import nn

import kiln
from conftest import assert_close, stats, whole_graph


def loss_in_frame(logits, labels):
    loss_fct = nn.CrossEntropyLoss(ignore_index=-100)
    return loss_fct(logits.view(-1, logits.size(-1)), labels.view(-1))


def test_loss_module_built_in_frame_is_one_graph():
    logits = torch.randn(2, 3, 5)
    labels = torch.tensor([[1, -100, 4], [0, 2, -100]])
    whole_graph(loss_in_frame, logits, labels)
    assert stats()["recompiles"] == 0


def test_modules_built_from_modules_and_options():
    def f(x):
        act = nn.Sequential(nn.Tanh(), nn.Softmax(dim=-1), nn.Identity())
        y = act(x)
        for m in act:  # iterating a Sequential built at capture
            y = y + m(x).sum()
        return nn.functional.mse_loss(y, x) + nn.MSELoss(reduction="sum")(y, x) \
            + nn.SmoothL1Loss(beta=0.5)(y, 2 * x) + nn.GELU(approximate="tanh")(x).mean()
    whole_graph(f, torch.randn(3, 4))


def test_loss_option_from_a_config_attribute_is_guarded():
    class Cfg:
        reduction = "mean"

    cfg = Cfg()

    def f(x, y):
        return nn.MSELoss(reduction=cfg.reduction)(x, y)

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    compiled = kiln.compile(f)
    assert_close(compiled(x, y), f(x, y))
    Cfg.reduction = "none"  # the guard on the argument sees the change
    assert_close(compiled(x, y), f(x, y))
    assert compiled(x, y).shape == (3, 4)
    s = stats()
    assert s["graph_breaks"] == 0 and s["eager_calls"] == 0 and s["graphs_compiled"] == 2, s


def test_dropout_built_in_frame_trains_and_evaluates():
    def f(x):
        return nn.Dropout(p=0.0)(x) * 2 + nn.ReLU(inplace=False)(x)
    whole_graph(f, torch.randn(4, 4))


def breaks_of(fn, *args):
    report = kiln.explain(fn)(*args)
    return [(b.category, b.message) for b in report.break_records]


@pytest.mark.parametrize("case", ["weights", "buffers", "tensor_arg", "returned", "stored", "mutated",
                                  "user_class", "train_call"])
def test_modules_that_cannot_be_built_once_break_with_a_reason(case):
    class Holder:
        pass

    holder = Holder()

    class Custom(nn.Module):  # a user __init__: not run at capture
        def __init__(self):
            super().__init__()
            self.k = 1

        def forward(self, x):
            return x + 1

    def f(x):
        if case == "weights":
            return nn.Linear(4, 2)(x).shape[-1] + x  # new random weights per call
        if case == "buffers":
            return nn.BatchNorm1d(4).eval()(x)  # new (not random) tensors per call
        if case == "tensor_arg":
            return nn.CrossEntropyLoss(weight=x.abs()[0])(x, torch.tensor([0, 1, 2]))
        if case == "returned":
            return nn.ReLU(), x + 1
        if case == "stored":
            holder.act = nn.ReLU()
            return x + 1
        if case == "mutated":
            m = nn.LeakyReLU()
            m.negative_slope = 0.5
            return m(x)
        if case == "user_class":
            return Custom()(x)
        m = nn.Dropout(0.5)
        m.eval()
        return m(x)

    x = torch.randn(3, 4)
    compiled = kiln.compile(f)
    for _ in range(2):
        got, expected = compiled(x), f(x)
        if case == "returned":
            assert isinstance(got[0], nn.ReLU) and got[0] is not compiled(x)[0]
            assert_close(got[1], expected[1])
        elif case == "stored":
            assert isinstance(holder.act, nn.ReLU)
        else:
            assert_close(got, expected)
    reasons = breaks_of(f, x)
    assert reasons, case
    category, message = reasons[0]
    expected_category = {"weights": "random", "buffers": "python-builtin", "tensor_arg": "python-builtin",
                         "returned": "side-effect", "stored": "side-effect",
                         "mutated": "side-effect", "user_class": "python-builtin",
                         "train_call": "side-effect"}[case]
    assert category == expected_category, reasons
    assert "module" in message, reasons


def test_a_constructor_that_draws_random_numbers_leaves_the_generator_as_eager():
    def f(x):
        return nn.Linear(4, 2)(x)

    x = torch.randn(3, 4)
    torch.manual_seed(1)
    expected = [f(x) for _ in range(2)] + [torch.rand(3)]
    torch.manual_seed(1)
    compiled = kiln.compile(f)
    got = [compiled(x) for _ in range(2)] + [torch.rand(3)]
    assert_close(got, expected)


def test_a_patched_init_is_not_run_at_capture():
    real = nn.MSELoss.__init__
    calls = []

    def counting_init(self, *a, **k):  # user code: runs once per call, as in eager
        calls.append(1)
        real(self, *a, **k)

    nn.MSELoss.__init__ = counting_init
    try:
        compiled = kiln.compile(lambda x: nn.MSELoss()(x, x * 2))
        x = torch.randn(3)
        for _ in range(3):
            assert_close(compiled(x), nn.functional.mse_loss(x, x * 2))
    finally:
        nn.MSELoss.__init__ = real
    assert len(calls) == 3
    assert breaks_of(lambda x: nn.MSELoss()(x, x * 2), torch.randn(3)) == []  # real init again


def test_a_module_built_at_capture_is_not_kept_alive():
    import gc
    compiled = kiln.compile(loss_in_frame)
    compiled(torch.randn(2, 5), torch.tensor([1, 2]))
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o) is nn.CrossEntropyLoss]
