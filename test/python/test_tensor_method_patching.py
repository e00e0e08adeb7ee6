# SPDX-License-Identifier: Apache-2.0
"""torch.Tensor methods and operators replaced by the user (a monkeypatch,
a debugging library) are what eager runs, so compiled code runs them too:
every capture is guarded on torch.Tensor's type version tag
(TensorTypeGuard.h), a replaced method that is a Python function is
inlined, a replaced operator runs the frame eagerly. kiln used to map
`x.relu()` and `x + y` by name whatever the class said."""
import pytest
import torch

import kiln


@pytest.fixture
def restore_tensor_class():
    saved = dict(torch.Tensor.__dict__)
    yield
    for name in list(torch.Tensor.__dict__):
        if name not in saved:
            delattr(torch.Tensor, name)
    for name, value in saved.items():
        if torch.Tensor.__dict__.get(name) is not value:
            setattr(torch.Tensor, name, value)


def test_method_replaced_after_compiling(restore_tensor_class):
    def f(x):
        return x.relu() + x

    x = torch.randn(16)
    cf = kiln.compile(f)
    torch.testing.assert_close(cf(x), f(x))
    original = torch.Tensor.relu
    torch.Tensor.relu = lambda self: original(self) * 2 - 1
    torch.testing.assert_close(cf(x), f(x))
    assert kiln.stats()["recompiles"] >= 1
    torch.Tensor.relu = original
    torch.testing.assert_close(cf(x), f(x))


def test_method_replaced_before_compiling_is_inlined(restore_tensor_class):
    torch.Tensor.sigmoid = lambda self: self.tanh() + 100

    def g(x):
        return x.sigmoid() * 3

    x = torch.randn(16)
    torch.testing.assert_close(kiln.compile(g)(x), g(x))
    stats = kiln.stats()
    assert stats["graphs_compiled"] == 1 and stats["graph_breaks"] == 0, stats


def test_deleted_override_uses_the_base_method(restore_tensor_class):
    # torch.Tensor.split (Python, torch/_tensor.py) over TensorBase.split.
    def f(x):
        return x.split([2, 6])[1] * 2

    x = torch.randn(8)
    cf = kiln.compile(f)
    torch.testing.assert_close(cf(x), f(x))
    del torch.Tensor.split
    torch.testing.assert_close(cf(x), f(x))
    assert kiln.stats()["recompiles"] >= 1


def test_operator_replaced_runs_eagerly(restore_tensor_class):
    def h(x):
        return x + x * 2

    x = torch.randn(16)
    ch = kiln.compile(h)
    torch.testing.assert_close(ch(x), h(x))
    torch.Tensor.__add__ = lambda a, b: torch.sub(a, b)
    torch.testing.assert_close(ch(x), x - x * 2)
    del torch.Tensor.__add__  # back to TensorBase.__add__


def test_printing_and_new_helpers_keep_the_graph(restore_tensor_class):
    def h(x):
        return (x * 2).exp()

    x = torch.randn(16)
    ch = kiln.compile(h)
    ch(x)
    torch.Tensor.__repr__ = lambda self: "T"  # lovely-tensors style
    torch.Tensor.my_helper = lambda self: self
    torch.testing.assert_close(ch(x), h(x))
    before = kiln.stats()
    for _ in range(3):
        torch.testing.assert_close(ch(x), h(x))
    after = kiln.stats()
    assert after["recompiles"] == before["recompiles"]
    assert after["eager_calls"] == before["eager_calls"] == 0, after


def test_steady_state_models_do_not_recompile():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    m = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.randn(1, 3, 32, 32)
    cm = kiln.compile(m)
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(cm(x), m(x), rtol=1e-4, atol=1e-4)
    assert kiln.stats()["recompiles"] == 0, kiln.stats()
