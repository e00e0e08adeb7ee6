# SPDX-License-Identifier: Apache-2.0
"""A matmul whose operand is the transpose of a computed tensor
(`(a * 2).t() @ b`, the weight gradient `g^T x` of a linear layer) reads
that tensor in place: kiln-cpu-fold-transposed-operands turns the copy +
matmul into `linalg.matmul_transpose_a`/`_b` on tensors (before
bufferization, so nothing can overwrite the source first) and
kiln-cpu-linalg-to-blas passes the stored matrix to the BLAS with its
transpose flag (test/codegen/cpu/kiln-cpu-fold-transposed-operands.mlir,
kiln-cpu-linalg-to-blas-transposed-lhs.mlir). Results against eager at odd
and degenerate sizes, and the IR shape checked on the debug dump."""
import glob
import os

import pytest
import torch

import kiln
from conftest import assert_compiled


def transposed_lhs(a, b):
    """The matmul reads `a * 2` through a transposed view."""
    return (a * 2).t() @ b


def both_computed(a, b):
    """`b + 1` may reuse the arena bytes of `a * 2` only after the GEMM
    (the fold happens on tensors, so bufferization keeps `a * 2` alive)."""
    return (a * 2).t() @ (b + 1)


def transposed_rhs(a, b):
    """(a^T + 1) @ ((b^T * 2)^T): the right operand read as B^T of the
    stored [n, k] product (matmul_transpose_b), no copy."""
    return (a.t() + 1) @ (b.t() * 2).t()


def batched_lhs(a, b):
    """[2, k, m]^T-per-batch @ [2, k, n] (attention's p^T dO shape)."""
    p = torch.stack([a, a * 3]) * 2
    return p.transpose(1, 2) @ torch.stack([b, b - 1])


FUNCTIONS = [transposed_lhs, both_computed, transposed_rhs, batched_lhs]


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize("k,m,n", [(64, 16, 32), (7, 13, 5), (1, 9, 4), (9, 1, 4), (9, 4, 1),
                                   (300, 200, 33)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transposed_operand_matches_eager(f, k, m, n, dtype):
    a, b = torch.randn(k, m, dtype=dtype), torch.randn(k, n, dtype=dtype)
    out = kiln.compile(f)(a, b)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(out, f(a, b), rtol=tol, atol=tol * k)
    assert_compiled(graphs=1, calls=1, eager_calls=0)


@pytest.mark.parametrize("f,view", [(transposed_lhs, True), (both_computed, True),
                                    (transposed_rhs, False), (batched_lhs, True)])
def test_no_transposed_copy(f, view, tmp_path):
    """No transpose copy is left before the GEMM; a transposed left operand
    is a memref.transpose view, a right one the BLAS call's transB."""
    with kiln.config.patch(debug_dir=str(tmp_path), cache_dir=""):
        kiln.compile(f)(torch.randn(7, 13), torch.randn(7, 5))
    (dump,) = glob.glob(os.path.join(str(tmp_path), "*", "*kiln-cpu-linalg-to-blas.mlir"))
    text = open(dump).read()
    assert "linalg.transpose" not in text
    assert ("memref.transpose" in text) == view
    assert "call @kiln_blas_" in text


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
