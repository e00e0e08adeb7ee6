# SPDX-License-Identifier: Apache-2.0
"""kiln-decompose matches eager PyTorch numerically.

Each case is a kiln function with one composite op (softmax, layer_norm,
silu). It is compiled ahead of time with the command-line tools only
(`kiln-opt -kiln-optimize -kiln-cpu-lowering`, `mlir-translate`, `llc`, `cc`)
into a shared library, called through its `_mlir_ciface_` entry point with
numpy buffers, and compared with torch on the same inputs using tolerances
suited to the dtype. This checks the expansions of transforms/Decompose.cpp
(max subtraction, biased variance, f32 compute for f16) end to end without
the frontend. Skips when a tool is missing.
"""
import ctypes
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parents[2]
KILN_OPT = pathlib.Path(os.environ.get("KILN_OPT", ROOT / "build" / "bin" / "kiln-opt"))
LLVM_BIN = pathlib.Path("/usr/lib/llvm-19/bin")
# kiln's BLAS and OpenMP shims (the `__kmpc_*` calls of parallel loops).
SHIMS = KILN_OPT.parent.parent / "lib" / "libkiln_runner_shims.so"
TOOLS = [KILN_OPT, LLVM_BIN / "mlir-translate", LLVM_BIN / "llc", SHIMS]

MODULE = """
func.func @softmax_dynamic(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @softmax_rank3(%x: tensor<3x5x7xf32>) -> tensor<3x5x7xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<3x5x7xf32>
  return %0 : tensor<3x5x7xf32>
}
func.func @softmax_f16(%x: tensor<4x1000xf16>) -> tensor<4x1000xf16> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<4x1000xf16>
  return %0 : tensor<4x1000xf16>
}
func.func @layer_norm_affine(%x: tensor<?x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<?x16xf32> {
  %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64} : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %0 : tensor<?x16xf32>
}
func.func @layer_norm_two_dims(%x: tensor<2x3x4x5xf64>) -> tensor<2x3x4x5xf64> {
  %0 = kiln.layer_norm %x {num_dims = 2 : i64, eps = 1.0e-03 : f64} : tensor<2x3x4x5xf64>
  return %0 : tensor<2x3x4x5xf64>
}
func.func @layer_norm_f16(%x: tensor<8x512xf16>, %w: tensor<512xf16>, %b: tensor<512xf16>) -> tensor<8x512xf16> {
  %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64} : tensor<8x512xf16>, tensor<512xf16>, tensor<512xf16>
  return %0 : tensor<8x512xf16>
}
func.func @silu(%x: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %0 = kiln.silu %x : tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}
"""

TOLERANCES = {np.float16: (1e-3, 1e-2), np.float32: (1e-6, 1e-5), np.float64: (1e-12, 1e-12)}


def _run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs).stdout


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    missing = [str(t) for t in TOOLS if not t.exists()]
    if missing or not shutil.which("cc"):
        pytest.skip(f"missing tools: {missing or ['cc']}")
    tmp = tmp_path_factory.mktemp("decompose")
    (tmp / "m.mlir").write_text(MODULE)
    llvm_dialect = _run([str(KILN_OPT), str(tmp / "m.mlir"), "-kiln-optimize", "-kiln-cpu-lowering"])
    (tmp / "m.ll").write_text(_run([str(LLVM_BIN / "mlir-translate"), "--mlir-to-llvmir"], input=llvm_dialect))
    _run([str(LLVM_BIN / "llc"), "-O2", "-filetype=obj", "-relocation-model=pic",
          str(tmp / "m.ll"), "-o", str(tmp / "m.o")])
    _run(["cc", "-shared", str(tmp / "m.o"), "-o", str(tmp / "m.so"), "-lm", str(SHIMS),
          f"-Wl,-rpath,{SHIMS.parent}"])
    return ctypes.CDLL(str(tmp / "m.so"))


def _descriptor(array):
    """A ranked memref descriptor viewing `array` (kept alive by the caller)."""
    rank = array.ndim
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    desc = type("MemRef", (ctypes.Structure,), {"_fields_": fields})()
    desc.allocated = desc.aligned = array.ctypes.data
    if rank:
        desc.sizes[:] = list(array.shape)
        desc.strides[:] = [s // array.itemsize for s in array.strides]
    return desc


def _call(library, name, *inputs):
    """Calls kiln function `name`; its one result has the first input's shape and dtype."""
    inputs = [np.ascontiguousarray(x) for x in inputs]
    out = np.empty_like(inputs[0])
    descriptors = [_descriptor(a) for a in inputs + [out]]
    getattr(library, f"_mlir_ciface_{name}")(*[ctypes.byref(d) for d in descriptors])
    return out


def _assert_close(got, expected):
    atol, rtol = TOLERANCES[got.dtype.type]
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                               atol=atol, rtol=rtol)


RNG = np.random.default_rng(0)


def test_softmax_large_values(library):
    # Values up to ~100 overflow exp() in f32 unless the max is subtracted.
    x = (RNG.standard_normal((6, 9)) * 30).astype(np.float32)
    x[0, 3] = 100.0
    _assert_close(_call(library, "softmax_dynamic", x), torch.softmax(torch.from_numpy(x), 1).numpy())


def test_softmax_rank3_middle_dim(library):
    x = RNG.standard_normal((3, 5, 7)).astype(np.float32)
    _assert_close(_call(library, "softmax_rank3", x), torch.softmax(torch.from_numpy(x), 1).numpy())


def test_softmax_f16_long_rows(library):
    # 1000-element rows: a sum accumulated in f16 would be off by several ulps.
    x = (RNG.standard_normal((4, 1000)) * 4).astype(np.float16)
    _assert_close(_call(library, "softmax_f16", x), torch.softmax(torch.from_numpy(x), 1).numpy())


def test_layer_norm_weight_bias(library):
    x = (RNG.standard_normal((5, 16)) * 3 + 2).astype(np.float32)
    w, b = RNG.standard_normal(16).astype(np.float32), RNG.standard_normal(16).astype(np.float32)
    expected = torch.nn.functional.layer_norm(
        torch.from_numpy(x), (16,), torch.from_numpy(w), torch.from_numpy(b)).numpy()
    _assert_close(_call(library, "layer_norm_affine", x, w, b), expected)


def test_layer_norm_two_dims_biased_variance(library):
    # 20 elements per group: an unbiased variance would be off by 5%.
    x = RNG.standard_normal((2, 3, 4, 5))
    expected = torch.nn.functional.layer_norm(torch.from_numpy(x), (4, 5), eps=1e-3).numpy()
    _assert_close(_call(library, "layer_norm_two_dims", x), expected)


def test_layer_norm_f16_offset_mean(library):
    # A mean of ~100 with unit spread: f16 statistics would lose the spread.
    x = (RNG.standard_normal((8, 512)) * 2 + 100).astype(np.float16)
    w, b = RNG.standard_normal(512).astype(np.float16), RNG.standard_normal(512).astype(np.float16)
    expected = torch.nn.functional.layer_norm(
        torch.from_numpy(x), (512,), torch.from_numpy(w), torch.from_numpy(b)).numpy()
    _assert_close(_call(library, "layer_norm_f16", x, w, b), expected)


def test_silu(library):
    x = (RNG.standard_normal((3, 6)) * 5).astype(np.float32)
    _assert_close(_call(library, "silu", x), torch.nn.functional.silu(torch.from_numpy(x)).numpy())
