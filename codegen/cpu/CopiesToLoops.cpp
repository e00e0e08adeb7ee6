//===- CopiesToLoops.cpp - strided memref.copy → a loop over rows ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-copies-to-loops`: a `memref.copy` between buffers that are not both
// contiguous becomes one `scf.parallel` over its rows: the row is the
// innermost dimension whose size is not 1, the row index the other
// dimensions flattened (delinearized in the body). A static unit-stride row
// is copied with vector loads/stores; any other row is a second, element
// dimension of the loop. MemRefToLLVM would otherwise call the runtime's
// `memrefCopy`, a generic strided walk with one memcpy call per row:
// im2col's taps copy rows of 2-16 elements, and those calls were a quarter
// of ResNet-18's batch-8 time. kiln-cpu-parallelize-loops may share the rows
// among threads.
//
// Why flattened: as a nest of one loop per dimension, LLVM fully unrolls
// every level with a small static trip count (N=8, OH=4, OW=4 ...), and
// ResNet-18's ~270 tap copies took its LLVM time from 6 s to 48 s. A
// flattened row loop has the product of those counts as its trip count
// and is never unrolled whole. Contiguous copies stay `memref.copy` (one
// memcpy).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUCOPIESTOLOOPSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// True when `type` is one run of memory MemRefToLLVM copies with memcpy:
/// an identity layout, or static strides that are row-major contiguous.
bool isContiguous(MemRefType type) {
  return type.getLayout().isIdentity() || memref::isStaticShapeAndContiguousRowMajor(type);
}

/// Largest row copied by one vector load/store (longer rows: a loop of
/// 64-byte vectors and one tail vector).
constexpr int64_t kMaxVectorRowBytes = 256;

/// Bytes per element when `type`'s elements can be vector-loaded, else 0:
/// 8-64-bit integers, f32 and f64 (vectors of f16/bf16 of odd lengths
/// crash X86 type legalization: "Do not know how to soft promote").
int64_t vectorElementBytes(MemRefType type) {
  Type element = type.getElementType();
  if (!element.isInteger(8) && !element.isInteger(16) && !element.isInteger(32) &&
      !element.isInteger(64) && !element.isF32() && !element.isF64())
    return 0;
  return element.getIntOrFloatBitWidth() / 8;
}

/// True when dim `d` of `type` has a static size and static stride 1.
bool unitStrideStatic(MemRefType type, int64_t d) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return !type.isDynamicDim(d) && succeeded(getStridesAndOffset(type, strides, offset)) &&
         strides[d] == 1;
}

/// Copies the row at `indices` (row dim `row`, `n` elements) with vector
/// loads/stores of at most kMaxVectorRowBytes.
void copyRowWithVectors(OpBuilder &b, Location loc, Value source, Value target,
                        SmallVector<Value> indices, int64_t row, int64_t n, int64_t bytes) {
  Type element = cast<MemRefType>(source.getType()).getElementType();
  auto piece = [&](Value start, int64_t count) {
    indices[row] = start;
    auto type = VectorType::get({count}, element);
    Value v = b.create<vector::LoadOp>(loc, type, source, indices);
    b.create<vector::StoreOp>(loc, v, target, indices);
  };
  if (n * bytes <= kMaxVectorRowBytes)
    return piece(b.create<arith::ConstantIndexOp>(loc, 0), n);
  int64_t lanes = 64 / bytes, body = n - n % lanes;
  Value lo = b.create<arith::ConstantIndexOp>(loc, 0);
  Value hi = b.create<arith::ConstantIndexOp>(loc, body);
  Value step = b.create<arith::ConstantIndexOp>(loc, lanes);
  auto loop = b.create<scf::ForOp>(loc, lo, hi, step);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    piece(loop.getInductionVar(), lanes);
  }
  if (n > body)
    piece(b.create<arith::ConstantIndexOp>(loc, body), n - body);
}

/// Replaces `copy` with a parallel loop over rows whose body copies one row
/// (vector moves when the row is static and unit-stride on both sides,
/// else a second, element dimension of the loop).
void expandCopy(memref::CopyOp copy) {
  OpBuilder b(copy);
  Location loc = copy.getLoc();
  Value source = copy.getSource(), target = copy.getTarget();
  auto type = cast<MemRefType>(source.getType());
  int64_t rank = type.getRank();
  // The row: the innermost dim whose size is not 1 (the last one if none).
  int64_t row = rank - 1;
  while (row > 0 && type.getDimSize(row) == 1)
    --row;
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  auto size = [&](int64_t d) -> Value {
    if (!type.isDynamicDim(d))
      return b.create<arith::ConstantIndexOp>(loc, type.getDimSize(d));
    return b.create<memref::DimOp>(loc, source, d);
  };
  SmallVector<Value> outerSizes;
  Value rows;
  for (int64_t d = 0; d < row; ++d) {
    outerSizes.push_back(size(d));
    rows = rows ? b.createOrFold<arith::MulIOp>(loc, rows, outerSizes.back()) : outerSizes.back();
  }
  if (!rows)
    rows = one;
  auto targetType = cast<MemRefType>(target.getType());
  int64_t bytes = vectorElementBytes(type);
  bool vectorRow = bytes && unitStrideStatic(type, row) && unitStrideStatic(targetType, row);
  // Delinearizes the row index over the outer dims (last fastest).
  auto rowIndices = [&](OpBuilder &nb, Location nloc, Value rowIndex) {
    SmallVector<Value> indices(rank, zero);
    Value rest = rowIndex;
    for (int64_t d = row - 1; d >= 0; --d) {
      if (d == 0) {
        indices[d] = rest;
        break;
      }
      indices[d] = nb.create<arith::RemUIOp>(nloc, rest, outerSizes[d]);
      rest = nb.create<arith::DivUIOp>(nloc, rest, outerSizes[d]);
    }
    return indices;
  };
  if (vectorRow) {
    b.create<scf::ParallelOp>(loc, ValueRange{zero}, ValueRange{rows}, ValueRange{one},
                              [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
                                copyRowWithVectors(nb, nloc, source, target,
                                                   rowIndices(nb, nloc, ivs[0]), row,
                                                   type.getDimSize(row), bytes);
                              });
  } else {
    b.create<scf::ParallelOp>(loc, ValueRange{zero, zero}, ValueRange{rows, size(row)},
                              ValueRange{one, one},
                              [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
                                SmallVector<Value> indices = rowIndices(nb, nloc, ivs[0]);
                                indices[row] = ivs[1];
                                Value v = nb.create<memref::LoadOp>(nloc, source, indices);
                                nb.create<memref::StoreOp>(nloc, v, target, indices);
                              });
  }
  copy.erase();
}

/// `type` with a dynamic offset (the same strides), or null when its layout
/// is not strided. Copies that differ only in their offsets (the taps of
/// one convolution) share one helper.
MemRefType withDynamicOffset(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(getStridesAndOffset(type, strides, offset)))
    return {};
  auto layout = StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic, strides);
  return MemRefType::get(type.getShape(), type.getElementType(), layout, type.getMemorySpace());
}

struct CopiesToLoops : impl::CpuCopiesToLoopsPassBase<CopiesToLoops> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<memref::CopyOp> copies;
    module.walk([&](memref::CopyOp copy) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (source && target && source.getRank() > 0 &&
          !(isContiguous(source) && isContiguous(target)))
        copies.push_back(copy);
    });
    // One private, never-inlined helper per (source, target) type pair,
    // called at each copy: LLVM's time grows faster than linearly with the
    // loops of one function (ResNet-18 has ~270 tap copies).
    llvm::DenseMap<std::pair<Type, Type>, func::FuncOp> helpers;
    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    MLIRContext *ctx = module.getContext();
    for (memref::CopyOp copy : copies) {
      MemRefType source = withDynamicOffset(cast<MemRefType>(copy.getSource().getType()));
      MemRefType target = withDynamicOffset(cast<MemRefType>(copy.getTarget().getType()));
      if (!source || !target) {
        expandCopy(copy);
        continue;
      }
      func::FuncOp &helper = helpers[{source, target}];
      if (!helper) {
        auto type = FunctionType::get(ctx, {source, target}, {});
        helper = moduleBuilder.create<func::FuncOp>(
            copy.getLoc(), "kiln_copy_" + std::to_string(helpers.size() - 1), type);
        helper.setPrivate();
        helper->setAttr("passthrough", ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")}));
        Block *body = helper.addEntryBlock();
        OpBuilder b = OpBuilder::atBlockBegin(body);
        auto inner =
            b.create<memref::CopyOp>(copy.getLoc(), body->getArgument(0), body->getArgument(1));
        b.create<func::ReturnOp>(copy.getLoc());
        expandCopy(inner);
      }
      OpBuilder b(copy);
      Value from = b.create<memref::CastOp>(copy.getLoc(), source, copy.getSource());
      Value to = b.create<memref::CastOp>(copy.getLoc(), target, copy.getTarget());
      b.create<func::CallOp>(copy.getLoc(), helper, ValueRange{from, to});
      copy.erase();
    }
  }
};

} // namespace
} // namespace mlir::kiln
