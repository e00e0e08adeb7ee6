//===- CudaExtern.cpp - GEMMs as extern library calls in the launch plan ----===//
// SPDX-License-Identifier: Apache-2.0
//
// FunctionEmitter::emitGemm: linalg.matmul / batch_matmul (and their
// _transpose_b forms, which the kiln → linalg lowering produces for
// `x @ w.T`) are not printed as kernels; they become ExternCall steps of
// the launch plan, run by a GEMM library (cuBLAS, or torch.matmul in the
// Python executor, kiln/cuda.py) on the same contiguous row-major buffers.
// Only the zero-filled accumulator the lowering creates is accepted (the
// library computes C = A x B, it does not accumulate into C).
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "mlir/IR/Matchers.h"

namespace mlir::kiln::cuda::detail {

/// Whether `v` is (a reshape of) a linalg.fill of zero.
static bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Value s = fill.getInputs()[0];
  return matchPattern(s, m_AnyZeroFloat()) || matchPattern(s, m_Zero());
}

LogicalResult FunctionEmitter::emitGemm(linalg::LinalgOp op, bool transB) {
  if (!op.hasPureTensorSemantics() || op->getNumResults() != 1)
    return op->emitError("CUDA emitter: expected a GEMM on tensors");
  Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1], c = op.getDpsInits()[0];
  auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(b.getType());
  auto ct = cast<RankedTensorType>(c.getType());
  if (!at.hasStaticShape() || !bt.hasStaticShape() || !ct.hasStaticShape())
    return op->emitError("CUDA emitter: dynamic shapes are not supported yet");
  Type in = at.getElementType(), outElt = ct.getElementType();
  auto isGemmFloat = [](Type t) { return t.isF32() || t.isF16() || t.isBF16() || t.isF64(); };
  if (!isGemmFloat(in) || bt.getElementType() != in || !isGemmFloat(outElt))
    return op->emitError("CUDA emitter: GEMM of ")
           << in << " x " << bt.getElementType() << " -> " << outElt
           << " is not supported (floating-point only)";
  if (!isZeroFill(c))
    return op->emitError("CUDA emitter: a GEMM that accumulates into a non-zero "
                         "init is not supported");
  TensorInfo ai = tensors.lookup(a), bi = tensors.lookup(b);
  ai.buffer = materialize(a);
  bi.buffer = materialize(b);
  if (ai.buffer < 0 || bi.buffer < 0)
    return op->emitError("CUDA emitter: a GEMM operand that is not backed by a buffer "
                         "(constant tensors are not supported yet)");
  ExternCall e;
  e.batched = at.getRank() == 3;
  e.batch = e.batched ? at.getDimSize(0) : 1;
  unsigned r = at.getRank();
  e.m = at.getDimSize(r - 2);
  e.k = at.getDimSize(r - 1);
  e.n = transB ? bt.getDimSize(r - 2) : bt.getDimSize(r - 1);
  e.transB = transB;
  e.name = func.getSymName().str() + "_gemm" + std::to_string(gemmCount++);
  e.function = func.getSymName().str();
  e.inputType = *storageType(in);
  e.outputType = *storageType(outElt);
  e.location = locationString(op->getLoc());
  int out = newBuffer(ct, "temporary");
  tensors[op->getResult(0)] = TensorInfo{out, std::nullopt, false};
  e.args = {buffers[ai.buffer].name, buffers[bi.buffer].name, buffers[out].name};
  addExtern(std::move(e));
  return success();
}

} // namespace mlir::kiln::cuda::detail
