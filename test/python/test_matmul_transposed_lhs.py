# SPDX-License-Identifier: Apache-2.0
"""A matmul whose left operand is the transpose of a computed tensor
(`(a * 2).t() @ b`, the weight gradient `g^T x` of a linear layer) reads
that tensor through a transposed view: kiln-cpu-linalg-to-blas drops the
transpose copy and the BLAS shim calls the GEMM with transA
(test/codegen/cpu/kiln-cpu-linalg-to-blas-transposed-lhs.mlir). Results
against eager at odd and degenerate sizes, and the IR shape checked on the
debug dump."""
import glob
import os

import pytest
import torch

import kiln
from conftest import assert_compiled


def transposed_lhs(a, b):
    """Folded: the matmul reads `a * 2` through a transposed view."""
    return (a * 2).t() @ b


def slot_reused(a, b):
    """Not folded: `b + 1` is planned into the arena bytes of `a * 2`, which
    the transpose copy was their last reader of (the pass checks this)."""
    return (a * 2).t() @ (b + 1)


@pytest.mark.parametrize("f", [transposed_lhs, slot_reused])
@pytest.mark.parametrize("k,m,n", [(64, 16, 32), (7, 13, 5), (1, 9, 4), (9, 1, 4), (9, 4, 1),
                                   (300, 200, 33)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transposed_lhs_matches_eager(f, k, m, n, dtype):
    a, b = torch.randn(k, m, dtype=dtype), torch.randn(k, n, dtype=dtype)
    out = kiln.compile(f)(a, b)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(out, f(a, b), rtol=tol, atol=tol * k)
    assert_compiled(graphs=1, calls=1, eager_calls=0)


@pytest.mark.parametrize("f,folded", [(transposed_lhs, True), (slot_reused, False)])
def test_fold_only_where_safe(f, folded, tmp_path):
    with kiln.config.patch(debug_dir=str(tmp_path), cache_dir=""):
        kiln.compile(f)(torch.randn(7, 13), torch.randn(7, 5))
    (dump,) = glob.glob(os.path.join(str(tmp_path), "*", "*kiln-cpu-linalg-to-blas.mlir"))
    text = open(dump).read()
    assert ("memref.transpose" in text) == folded
    assert ("linalg.transpose" in text) == (not folded)


def test_weight_gradient_reads_transposed_view(tmp_path):
    """The linear layer's weight gradient in a compiled backward: no
    transpose copy of the output gradient is left before its GEMM."""
    lin = torch.nn.Linear(32, 16)
    ref = torch.nn.Linear(32, 16)
    ref.load_state_dict(lin.state_dict())
    x = torch.randn(64, 32)
    with kiln.config.patch(debug_dir=str(tmp_path), cache_dir=""):
        kiln.compile(lin)(x).tanh().sum().backward()
    ref(x).tanh().sum().backward()
    torch.testing.assert_close(lin.weight.grad, ref.weight.grad, rtol=1e-5, atol=1e-5)
    dumps = glob.glob(os.path.join(str(tmp_path), "*", "backward", "*kiln-cpu-linalg-to-blas.mlir"))
    assert dumps, os.listdir(str(tmp_path))
    text = open(dumps[0]).read()
    assert "memref.transpose" in text and "linalg.transpose" not in text
