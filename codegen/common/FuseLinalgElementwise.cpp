//===- FuseLinalgElementwise.cpp - cost-aware elementwise fusion -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-fuse-linalg-elementwise`: the upstream elementwise fusion pattern
// set (fusion, reshape folding by expansion, constant folding, linalg and
// reshape canonicalizations) driven by a control function that also fuses
// small all-parallel producers with several uses into each consumer. On the
// CPU the round trip of an intermediate through memory costs more than
// repeating a few arithmetic ops, so e.g. layer_norm's x - mean is
// recomputed inside both the variance and the normalization instead of
// being stored; transcendental ops count as several ops (see bodyOps).
// Only where repeating moves fewer bytes than storing (recomputePays).
// Transposes with elementwise consumers are generalized first so that they
// fuse too.
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_FUSELINALGELEMENTWISEPASS
#include "codegen/common/Passes.h.inc"

namespace {

/// True for ops fusion must leave alone: named linalg ops (GEMMs go to BLAS)
/// and anything contraction-like, where a fused producer would be recomputed
/// once per element of the loops its operand does not use.
bool isFusionBarrier(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp)
    return false;
  return !isa<linalg::GenericOp>(op) || linalg::isaContractionOpInterface(linalgOp);
}

/// True when the consumer reads `operand` through a map that uses every
/// loop of the consumer, so each producer element is computed once.
bool readsEachElementOnce(OpOperand *operand) {
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  if (!consumer)
    return false;
  AffineMap map = consumer.getMatchingIndexingMap(operand);
  for (unsigned d = 0; d < map.getNumDims(); ++d)
    if (!map.isFunctionOfDim(d))
      return false;
  return true;
}

/// Size of a generic's body in ops, without the terminator, counting each
/// transcendental math op (exp, log, tanh, erf, ...) as `transcendentalCost`
/// ops (the pass option): on the CPU kiln-cpu-approximate-math expands them into
/// 15-45 instructions, so recomputing one in every consumer (softmax's
/// exp(x - max) in both the sum and the division) costs more than keeping
/// its result, which kiln-cpu-fuse-rows then holds in a row-sized buffer.
unsigned bodyOps(linalg::GenericOp op, unsigned transcendentalCost) {
  unsigned cost = 0;
  for (Operation &inner : op.getBody()->without_terminator())
    cost += isa<math::ExpOp, math::Exp2Op, math::ExpM1Op, math::LogOp, math::Log1pOp, math::Log2Op,
                math::Log10Op, math::TanhOp, math::ErfOp, math::PowFOp, math::SinOp, math::CosOp,
                math::TanOp, math::AtanOp, math::Atan2Op>(inner)
                ? transcendentalCost
                : 1;
  return cost;
}

/// Bytes of one element of `v`'s (shaped) type.
unsigned elementBytes(Value v) {
  Type t = getElementTypeOrSelf(v.getType());
  return t.isIntOrFloat() ? llvm::divideCeil(t.getIntOrFloatBitWidth(), 8) : 8;
}

/// Bytes per element that `producer` reads element by element (inputs read
/// broadcast, once per row or channel, count nothing) and writes.
std::pair<unsigned, unsigned> bytesPerElement(linalg::GenericOp producer) {
  unsigned in = 0, out = 0;
  for (OpOperand *operand : producer.getDpsInputOperands())
    if (readsEachElementOnce(operand))
      in += elementBytes(operand->get());
  for (Value r : producer->getResults())
    out += elementBytes(r);
  return {in, out};
}

/// True when every use of `producer` is an input of a generic that may take
/// it fused (element by element, within `maxBody` ops): fusing into all of
/// them then removes the producer.
bool allUsesFuse(linalg::GenericOp producer, unsigned producerOps, unsigned maxBody,
                 unsigned expCost) {
  return llvm::all_of(producer->getUses(), [&](OpOperand &use) {
    auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
    return consumer && !isFusionBarrier(consumer) && consumer.isDpsInput(&use) &&
           readsEachElementOnce(&use) && producerOps + bodyOps(consumer, expCost) <= maxBody;
  });
}

/// Whether repeating `producer` (small, all-parallel, several uses) in its
/// consumers moves fewer bytes than storing it once and loading it in each
/// of its n uses: n * in < (n + 1) * out when every use fuses (the
/// producer then disappears: softmax's exp(x - max), layer_norm's
/// x - mean), in < out when some use keeps it materialized anyway (a
/// library call, a GEMM, a reshape, the return) and only the loads are
/// saved (a bf16 → f32 cast, a broadcast bias). Repeating a residual add
/// (two full inputs) never pays, and kept every block's tensors of a
/// ResNet or ConvNeXt stage alive until the stage's last add, which
/// recomputed them all.
bool recomputePays(linalg::GenericOp producer, unsigned producerOps, unsigned maxBody,
                   unsigned expCost) {
  auto [in, out] = bytesPerElement(producer);
  if (in < out)
    return true;
  auto n = static_cast<unsigned>(std::distance(producer->use_begin(), producer->use_end()));
  return n * in < (n + 1) * out && allUsesFuse(producer, producerOps, maxBody, expCost);
}

/// True for an all-parallel generic.
bool allParallel(linalg::GenericOp op) { return op.getNumLoops() == op.getNumParallelLoops(); }

/// Whether fusing `producer` into the consumer of `operand` while keeping
/// the producer's results (keep-producer-results) pays: both all-parallel
/// over the same loops, the producer writing and the consumer reading and
/// writing every value in loop order (identity maps), so the fused loop
/// stores the producer's value once and uses it without the load; within
/// `maxBody` ops together.
bool keepingResultPays(linalg::GenericOp producer, OpOperand *operand, unsigned maxBody,
                       unsigned expCost) {
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  if (!consumer || !allParallel(producer) || !allParallel(consumer) ||
      producer.getNumLoops() != consumer.getNumLoops() || !consumer.isDpsInput(operand) ||
      !consumer.getMatchingIndexingMap(operand).isIdentity())
    return false;
  auto identityInits = [](linalg::GenericOp op) {
    return llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
      return op.getMatchingIndexingMap(&init).isIdentity();
    });
  };
  return identityInits(producer) && identityInits(consumer) &&
         bodyOps(producer, expCost) + bodyOps(consumer, expCost) <= maxBody;
}

/// True for an all-parallel generic whose body only converts its inputs
/// (extf, truncf, int/float casts): fusing it into a consumer that reads it
/// broadcast repeats one conversion per element.
bool isCastOnly(Operation *op) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!g || g.getNumLoops() != g.getNumParallelLoops())
    return false;
  for (Operation &inner : g.getBody()->without_terminator())
    if (!isa<CastOpInterface>(inner))
      return false;
  return true;
}

/// reshape(cast(x)) → cast(reshape(x)) for a tensor.collapse_shape or
/// expand_shape of a cast-only generic with one input, identity maps,
/// static shapes and one use (with fuse-broadcast-casts): the cast then
/// fuses into the reshaped value's consumers, e.g. a 3-d bf16
/// layer_norm's input cast joins the row reductions over the collapsed
/// rows instead of being a kernel of its own.
template <typename ReshapeOp> struct SwapReshapeWithCast : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern<ReshapeOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto g = op.getSrc().template getDefiningOp<linalg::GenericOp>();
    RankedTensorType type = op.getResultType();
    if (!g || !isCastOnly(g) || !g.hasPureTensorSemantics() || g.getNumDpsInputs() != 1 ||
        g.getNumDpsInits() != 1 || !g->hasOneUse() || !type.hasStaticShape() ||
        !g.getBody()->getArguments().back().use_empty() ||
        !llvm::all_of(g.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }))
      return failure();
    Location loc = op.getLoc();
    Value in = g.getDpsInputs()[0];
    auto inType = RankedTensorType::get(type.getShape(),
                                        cast<RankedTensorType>(in.getType()).getElementType());
    Value reshaped = rewriter.create<ReshapeOp>(loc, inType, in, op.getReassociationIndices());
    Value init = rewriter.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
    SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(type.getRank()));
    SmallVector<utils::IteratorType> iters(type.getRank(), utils::IteratorType::parallel);
    auto moved = rewriter.create<linalg::GenericOp>(loc, type, ValueRange{reshaped},
                                                    ValueRange{init}, maps, iters);
    rewriter.inlineRegionBefore(g.getRegion(), moved.getRegion(), moved.getRegion().begin());
    rewriter.replaceOp(op, moved.getResults());
    rewriter.eraseOp(g);
    return success();
  }
};

/// keep-producer-results: fuses a producer the control leaves stored (see
/// keepingResultPays) into a consumer that precedes the producer's other
/// users, and gives those users the fused loop's copy of the producer's
/// results (upstream's pattern keeps the producer and repeats its body).
struct FuseKeepingProducerResults : OpRewritePattern<linalg::GenericOp> {
  FuseKeepingProducerResults(MLIRContext *ctx, linalg::ControlFusionFn control, unsigned maxBody,
                             unsigned expCost)
      : OpRewritePattern(ctx), control(std::move(control)), maxBody(maxBody), expCost(expCost) {}

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || producer->hasOneUse() || producer->getBlock() != consumer->getBlock() ||
          !linalg::areElementwiseOpsFusable(operand) || control(operand) ||
          !keepingResultPays(producer, operand, maxBody, expCost) ||
          !usedOnlyAfter(producer, consumer))
        continue;
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, operand);
      if (failed(fused))
        continue;
      // A second operand the consumer took from the producer is still read
      // from it by the fused loop (its single use then, which upstream's
      // pattern fuses next).
      Operation *fusedOp = fused->fusedOp;
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(original, replacement,
                                   [&](OpOperand &use) { return use.getOwner() != fusedOp; });
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }

private:
  /// True when every user of `producer` other than `consumer` comes after
  /// `consumer` in its block, so the fused loop (at `consumer`) dominates it.
  static bool usedOnlyAfter(Operation *producer, Operation *consumer) {
    return llvm::all_of(producer->getUsers(), [&](Operation *user) {
      if (user == consumer)
        return true;
      Operation *ancestor = consumer->getBlock()->findAncestorOpInBlock(*user);
      return ancestor && ancestor != consumer && consumer->isBeforeInBlock(ancestor);
    });
  }

  linalg::ControlFusionFn control;
  unsigned maxBody, expCost;
};

struct FuseLinalgElementwisePass : impl::FuseLinalgElementwisePassBase<FuseLinalgElementwisePass> {
  using FuseLinalgElementwisePassBase::FuseLinalgElementwisePassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    unsigned maxProducer = maxProducerOps, maxBody = maxBodyOps, expCost = transcendentalCost;
    bool broadcastCasts = fuseBroadcastCasts;
    linalg::ControlFusionFn control = [=](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      if (!producer || isFusionBarrier(producer) || isFusionBarrier(operand->getOwner()))
        return false;
      if (!readsEachElementOnce(operand))
        return broadcastCasts && isCastOnly(producer) &&
               isa<linalg::GenericOp>(operand->getOwner());
      if (producer->hasOneUse())
        return true;
      auto generic = dyn_cast<linalg::GenericOp>(producer);
      auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
      if (!generic || !consumer || !allParallel(generic))
        return false;
      unsigned producerOps = bodyOps(generic, expCost);
      return producerOps <= maxProducer && producerOps + bodyOps(consumer, expCost) <= maxBody &&
             recomputePays(generic, producerOps, maxBody, expCost);
    };
    linalg::ControlFusionFn oneUse = [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && producer->hasOneUse() && !isFusionBarrier(producer) &&
             !isFusionBarrier(operand->getOwner());
    };

    // Transposes feeding elementwise consumers become generics so that
    // they fuse (the consumer reads through the permuted map, no copy);
    // so do returned transposes of an elementwise result read by nothing
    // else (the producer then writes the result in the permuted order: a
    // result eager returns channels-last, capture/values/EagerLayouts.cpp,
    // is computed into the output buffer instead of an intermediate the
    // transpose copies). Transposes read by contractions stay named
    // (kiln-cpu-fold-transposed-operands folds them into the GEMM).
    IRRewriter rewriter(ctx);
    auto returnedOfElementwise = [](linalg::TransposeOp op) {
      auto producer = op.getInput().getDefiningOp<linalg::GenericOp>();
      return producer && producer->hasOneUse() && allParallel(producer) &&
             llvm::all_of(op->getUsers(), llvm::IsaPred<func::ReturnOp>);
    };
    getOperation().walk([&](linalg::TransposeOp op) {
      if (op.hasPureTensorSemantics() &&
          (llvm::any_of(op->getUsers(), llvm::IsaPred<linalg::GenericOp>) ||
           returnedOfElementwise(op))) {
        rewriter.setInsertionPoint(op);
        (void)linalg::generalizeNamedOp(rewriter, op);
      }
    });

    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    if (keepProducerResults)
      patterns.add<FuseKeepingProducerResults>(ctx, control, maxBody, expCost);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, oneUse);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, oneUse);

    GreedyRewriteConfig config;
    config.useTopDownTraversal = true;
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    if (!broadcastCasts)
      return;
    // Then casts move below collapse_shapes and fuse into their consumers;
    // a separate round: the reshape-by-expansion patterns above would move
    // the collapse back above the cast.
    RewritePatternSet casts(ctx);
    casts.add<SwapReshapeWithCast<tensor::CollapseShapeOp>,
              SwapReshapeWithCast<tensor::ExpandShapeOp>>(ctx);
    linalg::populateElementwiseOpsFusionPatterns(casts, control);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(casts), config)))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln
