//===- QuantPasses.td - CPU lowering of the quantization ops ---*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-quant-to-calls`, in its own file (QuantPasses.h.inc) so that it
// rebuilds only its own users.
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_QUANTPASSES_TD
#define KILN_CODEGEN_CPU_QUANTPASSES_TD

include "mlir/Pass/PassBase.td"

def CpuQuantToCallsPass : Pass<"kiln-cpu-quant-to-calls", "ModuleOp"> {
  let summary = "Runs kiln.qlinear as calls of kiln's int8 GEMM (runtime/cpu/Int8Gemm.cpp)";
  let description = [{
    Runs on kiln IR after `kiln-fold-quant`, before `kiln-optimize` (the CPU
    compile driver adds both when the graph holds a quantization op). Each `kiln.qlinear` becomes:

    - its input collapsed to `[M, K]` (`tensor.collapse_shape`) and read
      through `bufferization.to_memref ... read_only`;
    - the int8 weight's address (of the i32 words behind a
      `kiln.int8_view`, or of an i8 buffer) and its row stride in bytes,
      from `memref.extract_aligned_pointer_as_index` and
      `memref.extract_strided_metadata`;
    - a 64-byte aligned `memref.alloc` of the `[M, N]` result and a
      `func.call @kiln_int8_linear` (declared with `llvm.emit_c_interface`)
      with the scales, the bias (a zero vector when there is none) and the
      activation mode (0 per-token, 1 per-tensor, 2 none = weight-only,
      3 static), then the static input scale (f32) and uint8 zero point
      (i64) (1 and 0 for the other modes);
    - `bufferization.to_tensor ... restrict writable` of the result,
      expanded back to the input's leading dims.

    A grouped qlinear (`group_size`: int4 weights behind a
    `kiln.int4_view`) calls `@kiln_int4_linear` instead, with the same
    first six operands (its scales `[N, K / group_size]`) and the group
    size (i64) last (runtime/cpu/Int4Linear.cpp).

    The call quantizes each input row in one pass, runs the u8 x s8 → s32
    GEMM (oneMKL `cblas_gemm_s8u8s32` when kiln uses MKL, else oneDNN's
    `dnnl_gemm_u8s8s32`) and dequantizes with the bias in one epilogue.
    A static input is quantized with the given scale and zero point as
    torch's `quantize_per_tensor` and the zero point removed through the
    weight row sums. A requantization no int8 kernel took (a
    `kiln.dequantize` of a `kiln.quantize_static` with its scale and zero
    point: the models `kiln.quant.from_pt2e` / `from_torch_ao` rewrite)
    becomes the same values by f32 ops, as kiln-decompose expands it. Any
    other `kiln.quantize`, `kiln.quantize_static`, `kiln.dequantize` or
    `kiln.int8_view` left after this pass has no CPU lowering: the pass
    fails naming it (the graph then runs eagerly, logged).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

#endif // KILN_CODEGEN_CPU_QUANTPASSES_TD
