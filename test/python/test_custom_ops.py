# SPDX-License-Identifier: Apache-2.0
"""Custom operators inside compiled graphs (issue 16, part 2).

An op registered with ``torch.library.custom_op`` and ``register_fake`` (or
a C++ TORCH_LIBRARY op with a Meta kernel) runs as an opaque per-op-fallback
call inside the graph: its shapes come from the fake kernel, the graph does
not break, and kiln ops on either side stay compiled. An op without a fake
kernel breaks with that reason; a mutating one breaks too.

The C++ op is built with torch.utils.cpp_extension.load_inline (about a
minute of g++ on torch's headers the first time, then torch's extension
cache); set KILN_SKIP_CPP_EXTENSION=1 to skip it.
"""
import os

import pytest
import torch

import kiln
from conftest import assert_close, stats, whole_graph


@torch.library.custom_op("kiln_test::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _(x, scale):
    return torch.empty_like(x)


@torch.library.custom_op("kiln_test::pair", mutates_args=())
def pair(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x + y, (x * y).sum(-1)


@pair.register_fake
def _(x, y):
    return torch.empty_like(x), x.new_empty(x.shape[:-1])


@torch.library.custom_op("kiln_test::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


@torch.library.custom_op("kiln_test::bump", mutates_args=("x",))
def bump(x: torch.Tensor) -> None:
    x.add_(1)


@bump.register_fake
def _(x):
    return None


def _fallback_only_custom():
    s = stats()
    assert s["graph_breaks"] == 0 and s["fallback_ops"] >= 1, s


def test_custom_op_def_in_graph():
    x = torch.randn(3, 4)
    whole_graph(lambda a: scaled_tanh(a.relu() + 1, 2.0) * 3, x)
    _fallback_only_custom()


def test_custom_op_through_torch_ops_with_tuple_result():
    x, y = torch.randn(3, 4), torch.randn(3, 4)

    def f(a, b):
        s, p = torch.ops.kiln_test.pair.default(a * 2, b)
        return s - 1, p + torch.ops.kiln_test.pair(a, b)[1]

    whole_graph(f, x, y)
    _fallback_only_custom()


def test_custom_op_without_fake_kernel_breaks_with_reason():
    x = torch.randn(3, 4)
    out = kiln.explain(lambda a: no_fake(a + 1) * 2)(x)
    assert any("no fake" in b and "kiln_test" in b for b in out.graph_breaks), out.graph_breaks
    compiled = kiln.compile(lambda a: no_fake(a + 1) * 2)
    assert_close(compiled(x), torch.sin(x + 1) * 2)


def test_mutating_custom_op_breaks():
    x = torch.randn(3, 4)
    out = kiln.explain(lambda a: bump(a))(x.clone())
    assert any("mutates" in b for b in out.graph_breaks), out.graph_breaks


_CPP = r"""
#include <torch/extension.h>

torch::Tensor kiln_square_plus(const torch::Tensor &x, double c) { return x * x + c; }
torch::Tensor kiln_square_plus_meta(const torch::Tensor &x, double c) {
  return torch::empty_like(x);
}

TORCH_LIBRARY(kiln_cpp, m) { m.def("square_plus(Tensor x, float c) -> Tensor"); }
TORCH_LIBRARY_IMPL(kiln_cpp, CPU, m) { m.impl("square_plus", &kiln_square_plus); }
TORCH_LIBRARY_IMPL(kiln_cpp, Meta, m) { m.impl("square_plus", &kiln_square_plus_meta); }
"""


@pytest.fixture(scope="module")
def cpp_op():
    if os.environ.get("KILN_SKIP_CPP_EXTENSION"):
        pytest.skip("KILN_SKIP_CPP_EXTENSION is set")
    from torch.utils.cpp_extension import load_inline
    try:  # built once into torch's extension cache, reused by later runs
        load_inline("kiln_cpp_op", cpp_sources=_CPP, functions=None,
                    is_python_module=False, verbose=False)
    except Exception as e:  # noqa: BLE001 - no compiler / headers
        pytest.skip(f"cpp_extension build failed: {e}")
    return torch.ops.kiln_cpp.square_plus


def test_cpp_torch_library_op_in_graph(cpp_op):
    x = torch.randn(3, 4)
    whole_graph(lambda a: cpp_op(a.exp(), 0.5) - 1, x)
    _fallback_only_custom()
