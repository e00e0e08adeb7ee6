//===- DnnlCalls.h - memrefs for the oneDNN calls of codegen -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What kiln-cpu-convs-to-dnnl's two halves share (ConvsToDnnl.cpp: forward
// convolutions, ConvGradsToDnnl.cpp: their gradients): the fully dynamic
// strided memref type of a shim's operands, a tensor's buffer read as one
// and a shim's declaration.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_DNNLCALLS_H
#define KILN_CODEGEN_CPU_DNNLCALLS_H

#include "codegen/cpu/CallAttrs.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {

/// memref<?x?x?x?xT, strided<[?, ?, ?, ?], offset: ?>> (T = f32 by default).
inline MemRefType dynamicType(MLIRContext *ctx, int64_t rank = 4, Type elt = {}) {
  SmallVector<int64_t> dyn(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, dyn);
  return MemRefType::get(dyn, elt ? elt : Float32Type::get(ctx), layout);
}

/// The tensor `t` as a strided memref, for reading only.
inline Value readBuffer(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<int64_t> dyn(type.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, dyn);
  auto memref = MemRefType::get(type.getShape(), type.getElementType(), layout);
  auto op = b.create<bufferization::ToMemrefOp>(loc, memref, t);
  op.setReadOnly(true);
  return op;
}

/// A private declaration of oneDNN shim `name` taking `inputs`, called
/// through its C interface on buffers only (CallAttrs.h).
inline func::FuncOp declareShim(ModuleOp module, StringRef name, ArrayRef<Type> inputs) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto f = b.create<func::FuncOp>(module.getLoc(), name, FunctionType::get(ctx, inputs, {}));
  f.setPrivate();
  f->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  f->setAttr(kBufferArgsOnlyAttr, UnitAttr::get(ctx));
  return f;
}

/// Rewrites the convolution gradients kiln-autodiff marked
/// (ir/ConvGradMarks.h) in `module` into oneDNN backward calls
/// (ConvGradsToDnnl.cpp).
void convGradsToDnnl(ModuleOp module);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_DNNLCALLS_H
