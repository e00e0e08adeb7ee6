//===- Matmul.cpp - kiln.matmul → linalg contractions -------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Lowers `kiln.matmul` to `linalg.matmul` / `linalg.batch_matmul`. A right
// operand that is a `kiln.permute` swapping its last two dims (how F.linear
// arrives) is consumed directly by the `_transpose_b` variants, so the
// transpose is never materialized. When the right operand has no real batch
// (rank 2, or only size-1 batch dims), the left operand's batch dims are
// collapsed into M so the whole product is one 2-D GEMM; otherwise both
// operands are broadcast to the common batch shape, the batch dims are
// collapsed into one and a batch matmul is used; with the CPU's
// `shared-lhs-gemm`, an f32/f64 left operand without a real batch is not
// broadcast (copied) but read by a contraction generic that
// kiln-cpu-linalg-to-blas turns into a batched GEMM with batch stride 0 (a 1x1
// convolution's weight times a batch of images). f16/bf16 products
// accumulate in f32 and are rounded once at the end, as torch does. Batch
// dims may be symbolic (dynamic): a symbolic size is >= 2, so it broadcasts
// only against a static 1 and two symbolic batch dims that meet are equal.
//===----------------------------------------------------------------------===//
#include "codegen/common/Patterns.h"

#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {

/// Collapses all dims but the last `keep` into one leading dim
/// ([a, b, ..., x, y] → [a*b*..., x, y] for keep = 2).
Value collapseLeading(OpBuilder &b, Location loc, Value v, int64_t keep) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  if (rank <= keep + 1)
    return v;
  SmallVector<ReassociationIndices> reassoc(1);
  for (int64_t i = 0; i <= rank - keep - 1; ++i)
    reassoc[0].push_back(i);
  for (int64_t i = rank - keep; i < rank; ++i)
    reassoc.push_back({i});
  return b.create<tensor::CollapseShapeOp>(loc, v, reassoc);
}

/// Expands `v` ([X, M, N] or [X, N]) back to `type` ([batch..., M, N]),
/// where X is the product of the leading dims of `type`.
Value expandTo(OpBuilder &b, Location loc, Value v, RankedTensorType type,
               ArrayRef<OpFoldResult> sizes) {
  auto vType = cast<RankedTensorType>(v.getType());
  if (vType.getRank() == type.getRank())
    return v;
  int64_t tail = vType.getRank() - 1;
  SmallVector<ReassociationIndices> reassoc(1);
  for (int64_t i = 0; i < type.getRank() - tail; ++i)
    reassoc[0].push_back(i);
  for (int64_t i = type.getRank() - tail; i < type.getRank(); ++i)
    reassoc.push_back({i});
  if (llvm::count_if(reassoc[0], [&](int64_t d) { return type.isDynamicDim(d); }) <= 1)
    return b.create<tensor::ExpandShapeOp>(loc, type, v, reassoc, sizes);
  // Several dynamic dims in one group ([b * t, n] -> [b, t, n]): MLIR 19's
  // bufferization of such an expand_shape infers its sizes and cannot, so
  // the sizes go in as the shape of a tensor.reshape (v is a fresh result).
  SmallVector<Value> dims;
  for (OpFoldResult size : sizes)
    dims.push_back(b.create<arith::IndexCastOp>(loc, b.getI64Type(),
                                                getValueOrCreateConstantIndexOp(b, loc, size)));
  Value shape = b.create<tensor::FromElementsOp>(loc, dims);
  return b.create<tensor::ReshapeOp>(loc, type, v, shape);
}

/// A zero-filled accumulator of `type`.
Value zeroInit(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<OpFoldResult> sizes) {
  Value empty = buildEmpty(b, loc, type, sizes);
  Value zero = buildScalarConstant(b, loc, type.getElementType(), 0.0);
  return b.create<linalg::FillOp>(loc, zero, empty).getResult(0);
}

namespace {

/// True when `dims` is the identity except for swapping the last two dims.
bool swapsLastTwo(ArrayRef<int64_t> dims) {
  int64_t r = dims.size();
  if (r < 2 || dims[r - 2] != r - 1 || dims[r - 1] != r - 2)
    return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (dims[i] != i)
      return false;
  return true;
}

/// Drops leading size-1 dims down to rank 2 (only called when all batch
/// dims are 1).
Value dropUnitBatch(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  if (rank == 2)
    return v;
  SmallVector<ReassociationIndices> reassoc(2);
  for (int64_t i = 0; i < rank - 1; ++i)
    reassoc[0].push_back(i);
  reassoc[1].push_back(rank - 1);
  return b.create<tensor::CollapseShapeOp>(loc, v, reassoc);
}

/// Broadcasts `v` ([b..., x, y]) to `batch` ++ [x, y] (a copy, only when
/// its batch dims differ).
Value broadcastBatch(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> batch) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(batch);
  shape.append({type.getDimSize(type.getRank() - 2), type.getDimSize(type.getRank() - 1)});
  if (ArrayRef<int64_t>(shape) == type.getShape())
    return v;
  auto target = RankedTensorType::get(shape, type.getElementType());
  return buildBroadcastingGeneric(b, loc, target, v,
                                  [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

/// The size of `batch` collapsed into one dim (dynamic when one of them is).
int64_t collapsedSize(ArrayRef<int64_t> batch) {
  return ShapedType::isDynamicShape(batch) ? ShapedType::kDynamic
                                           : ShapedType::getNumElements(batch);
}

/// True when every dim of `batch` is a static 1 (a symbolic size is >= 2).
bool isUnitBatch(ArrayRef<int64_t> batch) {
  return llvm::all_of(batch, [](int64_t s) { return s == 1; });
}

/// The sizes of the result's batch dims: static ones as attributes, a
/// symbolic one read from an operand whose aligned dim is not a static 1
/// (symbolic sizes are >= 2, so a symbolic dim only broadcasts against 1).
SmallVector<OpFoldResult> batchSizes(OpBuilder &b, Location loc, RankedTensorType resultType,
                                     Value lhs, Value rhs) {
  int64_t rank = resultType.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d + 2 < rank; ++d) {
    OpFoldResult size = b.getIndexAttr(resultType.getDimSize(d));
    for (Value v : {lhs, rhs}) {
      auto t = cast<RankedTensorType>(v.getType());
      int64_t id = d - (rank - t.getRank());
      if (!resultType.isDynamicDim(d) || id < 0 || t.getDimSize(id) == 1)
        continue;
      size = tensor::getMixedSize(b, loc, v, id);
      break;
    }
    sizes.push_back(size);
  }
  return sizes;
}

/// The accumulator element type: f32 for 16-bit floats (as torch's CPU
/// matmul accumulates), else the element type itself.
Type accumulatorType(Type elem) {
  if (elem.isF16() || elem.isBF16())
    return Float32Type::get(elem.getContext());
  return elem;
}

/// Rounds an f32 accumulator `c` back to `elem` (no-op when equal).
Value roundTo(OpBuilder &b, Location loc, Value c, Type elem) {
  auto type = cast<RankedTensorType>(c.getType());
  if (type.getElementType() == elem)
    return c;
  return buildBroadcastingGeneric(b, loc, type.clone(elem), c,
                                  [&](OpBuilder &nb, Location l, ValueRange args) {
                                    return nb.create<arith::TruncFOp>(l, elem, args[0]).getResult();
                                  });
}

/// One 2-D GEMM: [prod(lhs batch) * M, K] x [K, N] (rhs has no real batch).
Value lowerAsGemm(OpBuilder &b, Location loc, Value lhs, Value rhs, bool transB,
                  RankedTensorType resultType, ArrayRef<OpFoldResult> sizes) {
  Value x = collapseLeading(b, loc, lhs, 1);
  Value y = dropUnitBatch(b, loc, rhs);
  auto cType = RankedTensorType::get(
      {cast<RankedTensorType>(x.getType()).getDimSize(0), resultType.getShape().back()},
      accumulatorType(resultType.getElementType()));
  Value init = zeroInit(b, loc, cType, {tensor::getMixedSize(b, loc, x, 0), sizes.back()});
  Value c = transB ? b.create<linalg::MatmulTransposeBOp>(loc, ValueRange{x, y}, init).getResult(0)
                   : b.create<linalg::MatmulOp>(loc, ValueRange{x, y}, init).getResult(0);
  c = roundTo(b, loc, c, resultType.getElementType());
  return expandTo(b, loc, c, resultType, sizes);
}

/// Both operands broadcast to the result's batch dims, collapsed into one.
Value lowerAsBatchGemm(OpBuilder &b, Location loc, Value lhs, Value rhs, bool transB,
                       RankedTensorType resultType, ArrayRef<OpFoldResult> sizes) {
  ArrayRef<int64_t> batch = resultType.getShape().drop_back(2);
  Value x = collapseLeading(b, loc, broadcastBatch(b, loc, lhs, batch), 2);
  Value y = collapseLeading(b, loc, broadcastBatch(b, loc, rhs, batch), 2);
  auto cType =
      RankedTensorType::get({collapsedSize(batch), resultType.getDimSize(resultType.getRank() - 2),
                             resultType.getShape().back()},
                            accumulatorType(resultType.getElementType()));
  Value init = zeroInit(
      b, loc, cType, {tensor::getMixedSize(b, loc, x, 0), sizes[sizes.size() - 2], sizes.back()});
  Value c =
      transB ? b.create<linalg::BatchMatmulTransposeBOp>(loc, ValueRange{x, y}, init).getResult(0)
             : b.create<linalg::BatchMatmulOp>(loc, ValueRange{x, y}, init).getResult(0);
  c = roundTo(b, loc, c, resultType.getElementType());
  return expandTo(b, loc, c, resultType, sizes);
}

/// The maps of C[b, m, n] += A[m, k] * B[b, k, n] over loops (b, m, n, k).
SmallVector<AffineMap> sharedLhsMaps(MLIRContext *ctx) {
  AffineExpr b, m, n, k;
  bindDims(ctx, b, m, n, k);
  return {AffineMap::get(4, 0, {m, k}, ctx), AffineMap::get(4, 0, {b, k, n}, ctx),
          AffineMap::get(4, 0, {b, m, n}, ctx)};
}

/// A left operand with no real batch times a batched right operand, without
/// broadcasting (copying) the left one per batch element: a contraction
/// generic C[b, m, n] += A[m, k] * B[b, k, n] (f32/f64 only, where the CPU
/// calls BLAS for it with batch stride 0; see isSharedLhsBatchMatmul).
Value lowerAsSharedLhsGemm(OpBuilder &b, Location loc, Value lhs, Value rhs,
                           RankedTensorType resultType, ArrayRef<OpFoldResult> sizes) {
  ArrayRef<int64_t> batch = resultType.getShape().drop_back(2);
  Value x = dropUnitBatch(b, loc, lhs);
  // The left batch is all ones: the result's batch has the right one's elements.
  Value y = collapseLeading(b, loc, rhs, 2);
  auto cType =
      RankedTensorType::get({collapsedSize(batch), resultType.getDimSize(resultType.getRank() - 2),
                             resultType.getShape().back()},
                            resultType.getElementType());
  Value init = zeroInit(
      b, loc, cType, {tensor::getMixedSize(b, loc, y, 0), sizes[sizes.size() - 2], sizes.back()});
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  Value c =
      b.create<linalg::GenericOp>(
           loc, cType, ValueRange{x, y}, ValueRange{init}, sharedLhsMaps(b.getContext()), iterators,
           [](OpBuilder &nb, Location l, ValueRange args) {
             Value prod = nb.create<arith::MulFOp>(l, args[0], args[1]);
             nb.create<linalg::YieldOp>(l, ValueRange{nb.create<arith::AddFOp>(l, args[2], prod)});
           })
          .getResult(0);
  return expandTo(b, loc, c, resultType, sizes);
}

struct MatmulLowering : OpConversionPattern<MatmulOp> {
  MatmulLowering(MLIRContext *ctx, bool sharedLhs)
      : OpConversionPattern(ctx), sharedLhs(sharedLhs) {}

  /// Whether a batch-broadcast left operand is read in place (see
  /// lowerAsSharedLhsGemm).
  bool sharedLhs;

  LogicalResult matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    bool transB = false;
    if (auto perm = op.getRhs().getDefiningOp<PermuteOp>(); perm && swapsLastTwo(perm.getDims())) {
      if (Value input = rewriter.getRemappedValue(perm.getInput())) {
        rhs = input;
        transB = true;
      }
    }
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    ArrayRef<int64_t> rhsBatch = rhsType.getShape().drop_back(2);

    // Result sizes: batch dims broadcast from both operands, M from lhs, N
    // from rhs.
    SmallVector<OpFoldResult> sizes = batchSizes(rewriter, loc, resultType, lhs, rhs);
    sizes.push_back(tensor::getMixedSize(rewriter, loc, lhs, lhsType.getRank() - 2));
    sizes.push_back(tensor::getMixedSize(rewriter, loc, rhs, rhsType.getRank() - (transB ? 2 : 1)));

    Type elem = resultType.getElementType();
    Value result;
    if (isUnitBatch(rhsBatch))
      result = lowerAsGemm(rewriter, loc, lhs, rhs, transB, resultType, sizes);
    else if (sharedLhs && !transB && (elem.isF32() || elem.isF64()) &&
             isUnitBatch(lhsType.getShape().drop_back(2)))
      result = lowerAsSharedLhsGemm(rewriter, loc, lhs, rhs, resultType, sizes);
    else
      result = lowerAsBatchGemm(rewriter, loc, lhs, rhs, transB, resultType, sizes);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateMatmulToLinalgPatterns(RewritePatternSet &patterns, bool sharedLhs) {
  patterns.add<MatmulLowering>(patterns.getContext(), sharedLhs);
}

bool isBlasGemm(Operation *op) {
  return isa<linalg::MatmulOp, linalg::MatmulTransposeAOp, linalg::MatmulTransposeBOp,
             linalg::BatchMatmulOp, linalg::BatchMatmulTransposeAOp,
             linalg::BatchMatmulTransposeBOp>(op) ||
         isSharedLhsBatchMatmul(op);
}

bool isSharedLhsBatchMatmul(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != 4 || generic.getNumReductionLoops() != 1 ||
      generic.getIteratorTypesArray().back() != utils::IteratorType::reduction ||
      generic.getIndexingMapsArray() != sharedLhsMaps(op->getContext()))
    return false;
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(body.front());
  auto add = dyn_cast<arith::AddFOp>(*std::next(body.begin()));
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!mul || !add || !yield || yield.getValues().size() != 1 || yield.getValues()[0] != add)
    return false;
  Value a = body.getArgument(0), bArg = body.getArgument(1), c = body.getArgument(2);
  bool mulAB =
      (mul.getLhs() == a && mul.getRhs() == bArg) || (mul.getLhs() == bArg && mul.getRhs() == a);
  bool addCM =
      (add.getLhs() == c && add.getRhs() == mul) || (add.getLhs() == mul && add.getRhs() == c);
  return mulAB && addCM;
}

} // namespace mlir::kiln
