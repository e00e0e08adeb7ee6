# SPDX-License-Identifier: Apache-2.0
"""User torch function / dispatch modes active around a compiled call
(FlopCounterMode, a mode rewriting ops, torch.set_default_device's
DeviceContext) see every op: the frame runs eagerly while one is on the
stack (guarded on the stacks' depths), and compiles again once it is gone.
kiln used to run its graph under the mode (the mode saw nothing), and a
`torch.device("meta")` context made the output buffers meta tensors
(a segfault)."""
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import kiln


class TimesTenAdds(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out * 10 if func in (torch.add, torch.Tensor.add, torch.Tensor.__add__) else out


class CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def f(x):
    return (x + 1) * 2


def test_torch_function_mode_sees_the_ops():
    x = torch.ones(2)
    cf = kiln.compile(f)
    torch.testing.assert_close(cf(x), f(x))
    with TimesTenAdds():
        expected = f(x)
        got = cf(x)
    torch.testing.assert_close(got, expected)
    assert got[0].item() == 40.0
    torch.testing.assert_close(cf(x), f(x))  # the mode is gone: compiled again
    s = kiln.stats()
    assert s["eager_calls"] >= 1 and s["compiled_calls"] >= 2, s


def test_dispatch_mode_counts_the_ops():
    x = torch.randn(4, 4)
    cf = kiln.compile(lambda a: (a @ a).relu())
    cf(x)
    with CountOps() as eager_mode:
        (x @ x).relu()
    with CountOps() as kiln_mode:
        cf(x)
    assert kiln_mode.count == eager_mode.count > 0


def test_flop_counter_mode():
    from torch.utils.flop_counter import FlopCounterMode

    a = torch.randn(8, 16)
    b = torch.randn(16, 4)
    cf = kiln.compile(lambda a, b: a @ b)
    cf(a, b)
    with FlopCounterMode(display=False) as counter:
        cf(a, b)
    assert counter.get_total_flops() == 2 * 8 * 16 * 4


def test_default_device_context():
    x = torch.ones(3)
    cf = kiln.compile(lambda t: t * 2 + 1)
    torch.testing.assert_close(cf(x), x * 2 + 1)
    with torch.device("meta"):
        out = cf(x)  # eager: a CPU input gives a CPU result
    assert out.device.type == "cpu"
    torch.testing.assert_close(out, x * 2 + 1)
    torch.set_default_device("meta")
    try:
        out = cf(x)
    finally:
        torch.set_default_device(None)
    torch.testing.assert_close(out, x * 2 + 1)


def test_cpu_default_device_keeps_compiling():
    x = torch.ones(3)
    cf = kiln.compile(lambda t: t * 2 + torch.ones(3))
    torch.set_default_device("cpu")
    try:
        torch.testing.assert_close(cf(x), x * 2 + 1)
    finally:
        torch.set_default_device(None)
    s = kiln.stats()
    assert s["eager_calls"] == 0 and s["compiled_calls"] == 1, s
