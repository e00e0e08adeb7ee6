# SPDX-License-Identifier: Apache-2.0
"""Which BLAS compiled GEMMs call, chosen once at import.

oneMKL's runtime library (libmkl_rt, from the pinned ``mkl`` wheel that
tools/bootstrap.sh installs into the venv) when present, so that kiln's
GEMMs run the same AVX-512 kernels as eager torch; otherwise the OpenBLAS
kiln links. ``KILN_BLAS_LIBRARY`` overrides: a path to a libmkl_rt, or
``openblas``. The C++ side (runtime/cpu/BlasShims.cpp) falls back to
OpenBLAS when the library cannot be loaded.
"""
from __future__ import annotations

import glob
import os
import sys


def find_mkl() -> str:
    """The path of the venv's libmkl_rt.so.N, or '' when mkl is not installed."""
    try:
        from importlib import metadata

        for f in metadata.files("mkl") or ():
            if f.name.startswith("libmkl_rt.so"):
                path = os.path.realpath(f.locate())
                if os.path.exists(path):
                    return path
    except Exception:  # noqa: BLE001 - no mkl distribution, or odd metadata
        pass
    hits = sorted(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so.*")))
    return hits[-1] if hits else ""


_selected = False


def select() -> None:
    """Tells the extension which BLAS to use; the first call only."""
    global _selected
    if _selected:
        return
    _selected = True
    from kiln import _C

    path = os.environ.get("KILN_BLAS_LIBRARY")
    _C.set_blas_library(find_mkl() if path is None else path)
