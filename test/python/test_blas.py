# SPDX-License-Identifier: Apache-2.0
"""The BLAS behind compiled GEMMs: oneMKL from the venv when installed, else
OpenBLAS; KILN_BLAS_LIBRARY overrides; a library that cannot load falls back.
Each case runs in a fresh interpreter (the choice is made once per process)."""
import os

import pytest
from conftest import run_python

from kiln import _blas

CODE = r"""
import torch, kiln
from kiln import _C
torch.manual_seed(0)
f = kiln.compile(lambda a, b: a @ b)
g = kiln.compile(lambda a, b: torch.bmm(a, b.transpose(1, 2)))
# A big GEMM, a GEMV-like one (M = 1) and a narrow N, on whichever BLAS loads.
for m, k, n in [(64, 128, 96), (1, 256, 512), (32, 512, 10)]:
    a, b = torch.randn(m, k), torch.randn(k, n)
    torch.testing.assert_close(f(a, b), a @ b, rtol=1e-4, atol=1e-4)
a, b = torch.randn(3, 40, 50, dtype=torch.float64), torch.randn(3, 60, 50, dtype=torch.float64)
torch.testing.assert_close(g(a, b), torch.bmm(a, b.transpose(1, 2)))
print("BLAS:", _C.blas_library())
"""


def _run(env):
    r = run_python(CODE, env)
    assert r.returncode == 0, r.stderr
    return r.stdout.split("BLAS: ", 1)[1].strip(), r.stderr


def test_default_is_mkl_when_installed():
    if "KILN_BLAS_LIBRARY" in os.environ:
        pytest.skip("KILN_BLAS_LIBRARY is set")
    lib, _ = _run({})
    mkl = _blas.find_mkl()
    if mkl:
        assert lib.startswith("mkl (") and lib.endswith(mkl), lib
    else:
        assert lib == "openblas"


def test_env_selects_openblas():
    lib, _ = _run({"KILN_BLAS_LIBRARY": "openblas"})
    assert lib == "openblas"


def test_unloadable_library_falls_back_to_openblas():
    lib, err = _run({"KILN_BLAS_LIBRARY": "/nonexistent/libmkl_rt.so.2"})
    assert lib == "openblas"
    assert "cannot use BLAS library /nonexistent/libmkl_rt.so.2" in err
