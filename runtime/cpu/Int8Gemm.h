//===- Int8Gemm.h - int8 linear layers called by JIT'd code -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// `_mlir_ciface_kiln_int8_linear`, the call `kiln-cpu-quant-to-calls` makes
// for each kiln.qlinear: dynamic int8 quantization of the input rows, a
// u8 x s8 → s32 GEMM (oneMKL `cblas_gemm_s8u8s32` when kiln's BLAS is MKL,
// else oneDNN `dnnl_gemm_u8s8s32`, else a portable loop) and the
// dequantize + bias epilogue; and the symbol table the JIT registers.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_INT8GEMM_H
#define KILN_RUNTIME_CPU_INT8GEMM_H

#include "runtime/MemRefDescriptor.h"

#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
/// y[M, N] = dequantize(quantize(x[M, K]) x w^T) + bias, w int8 [N, K] at
/// address `weight` with rows `weightRowBytes` apart, per-row scales
/// `weightScale` [N, 1]. `mode`: 0 per-token (per-row) symmetric input
/// scales, 1 one per-tensor scale, 2 weight-only (a row kernel on the int8
/// weight up to 8 rows, else an f32 GEMM on the dequantized weight), 3 static: the calibrated
/// `inputScale` and uint8 `inputZeroPoint` (unused by the other modes). Dynamic input scales
/// are `max|x| / 127` (1 for all-zero groups), values `round_half_even(x / scale)` clamped to
/// [-127, 127]; static values `clamp(round_half_even(x * f32(1 / inputScale)) + zero point, 0,
/// 255)`, as torch's quantize_per_tensor.
void _mlir_ciface_kiln_int8_linear(kiln::rt::StridedMemRef<float, 2> *x, int64_t weight,
                                   int64_t weightRowBytes,
                                   kiln::rt::StridedMemRef<float, 2> *weightScale,
                                   kiln::rt::StridedMemRef<float, 1> *bias,
                                   kiln::rt::StridedMemRef<float, 2> *y, int64_t mode,
                                   float inputScale, int64_t inputZeroPoint);
/// Which int8 GEMM the calls use now: "mkl", "onednn" or "reference".
const char *kilnInt8GemmProvider();
}

namespace kiln::rt {
/// (symbol name, address) of the int8 entry points, for the JIT.
std::vector<std::pair<const char *, void *>> int8GemmSymbols();
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_INT8GEMM_H
