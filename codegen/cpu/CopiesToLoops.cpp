//===- CopiesToLoops.cpp - strided memref.copy → linalg.copy -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-copies-to-loops`: a `memref.copy` between buffers that are not both
// contiguous becomes a `linalg.copy`, which the loop lowering turns into a
// loop nest that LLVM vectorizes (and kiln-parallelize-loops may share
// among threads). MemRefToLLVM would otherwise call the runtime's
// `memrefCopy`, a generic strided walk with one call per innermost row:
// im2col's taps copy rows of 2-16 elements, and those calls were a quarter
// of ResNet-18's batch-8 time. Contiguous copies stay `memref.copy`
// (one memcpy).
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_COPIESTOLOOPSPASS
#include "codegen/Passes.h.inc"

namespace {

/// True when `type` is one run of memory MemRefToLLVM copies with memcpy:
/// an identity layout, or static strides that are row-major contiguous.
bool isContiguous(MemRefType type) {
  return type.getLayout().isIdentity() || memref::isStaticShapeAndContiguousRowMajor(type);
}

struct CopiesToLoops : impl::CopiesToLoopsPassBase<CopiesToLoops> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (source && target && source.getRank() > 0 &&
          !(isContiguous(source) && isContiguous(target)))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      b.create<linalg::CopyOp>(copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};

} // namespace
} // namespace mlir::kiln
