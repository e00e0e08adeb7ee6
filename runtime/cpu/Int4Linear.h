//===- Int4Linear.h - int4 weight-only linear layers called by JIT'd code -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// `_mlir_ciface_kiln_int4_linear`, the call `kiln-cpu-quant-to-calls` makes
// for a weight-only kiln.qlinear with a `group_size` (int4 weights with one
// f32 scale per group of K), and the symbol table the JIT registers.
//
// Weight layout (kiln.int4_view, docs/quantization.md): each row holds K / 2
// bytes; every 32 values of K are 16 bytes, byte j holding value j + 8 in
// its low nibble and value 16 + j + 8 in its high nibble (values in [-8, 7]
// stored offset by 8).
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_INT4LINEAR_H
#define KILN_RUNTIME_CPU_INT4LINEAR_H

#include "runtime/MemRefDescriptor.h"

#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
/// y[M, N] = x[M, K] @ dequantize(w)^T + bias, w int4 [N, K] at address
/// `weight` with rows `weightRowBytes` apart, `weightScale` [N, K /
/// groupSize] (value (n, k) is `q * weightScale[n, k / groupSize]`). Up to 8
/// rows: each group's products summed, then scaled (a row kernel reading the
/// packed weight once per row); more rows: the weight dequantized to f32 and
/// kiln's sgemm. `groupSize` is a multiple of 32 dividing K.
void _mlir_ciface_kiln_int4_linear(kiln::rt::StridedMemRef<float, 2> *x, int64_t weight,
                                   int64_t weightRowBytes,
                                   kiln::rt::StridedMemRef<float, 2> *weightScale,
                                   kiln::rt::StridedMemRef<float, 1> *bias,
                                   kiln::rt::StridedMemRef<float, 2> *y, int64_t groupSize);
}

namespace kiln::rt {
/// (symbol name, address) of the int4 entry point, for the JIT.
std::vector<std::pair<const char *, void *>> int4LinearSymbols();
} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_INT4LINEAR_H
