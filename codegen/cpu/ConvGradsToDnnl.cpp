//===- ConvGradsToDnnl.cpp - marked conv gradients → oneDNN backward calls ===//
// SPDX-License-Identifier: Apache-2.0
//
// The first step of `kiln-cpu-convs-to-dnnl`: each gradient chain of a
// convolution that kiln-autodiff marked (ir/ConvGradMarks.h) becomes one
// call of runtime/cpu/DnnlConvBwd.cpp on the chain's sources:
//
//   %gx = kiln.conv2d(spread(%gs), flipped(%ws)) {kiln.conv_grad_data = p}
//     → func.call @kiln_dnnl_conv2d_bwd_data_f32(%g, %w, %gxm, p...)
//   %gw = kiln.matmul(%gt, im2col(%xs)) {kiln.conv_grad_weights = p}
//     → func.call @kiln_dnnl_conv2d_bwd_weights_f32(%x, %g, %gwm, p...)
//       and %gw = kiln.reshape(%gwm as a tensor)
//
// The sources are found by walking the root's operands back through data
// movement only (reshape, permute, slice, concat, broadcast, constants)
// to the marked identity casts; a chain that does not resolve to exactly
// its sources of the expected shapes keeps its decomposition (correct,
// slower), as does an f32-less or dynamic one. The chains left dead are
// erased by later canonicalization.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/CallAttrs.h"
#include "codegen/cpu/DnnlCalls.h"

#include "ir/ConvGradMarks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::kiln {
namespace {

constexpr const char *kDataCallee = "kiln_dnnl_conv2d_bwd_data_f32";
constexpr const char *kWeightsCallee = "kiln_dnnl_conv2d_bwd_weights_f32";

func::FuncOp declare(ModuleOp module, StringRef name) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  MLIRContext *ctx = module.getContext();
  MemRefType m = dynamicType(ctx);
  SmallVector<Type> inputs = {m, m, m};
  inputs.append(9, IntegerType::get(ctx, 64));
  return declareShim(module, name, inputs);
}

/// The marked sources of `root`'s chain by role ("g", "w", "x"): the
/// inputs of the marked casts reached through data movement only; empty
/// when a role is reached with two different values.
llvm::StringMap<Value> sourcesOf(Operation *root) {
  llvm::StringMap<Value> found;
  SmallVector<Value> work(root->getOperands());
  DenseSet<Operation *> seen;
  bool clash = false;
  while (!work.empty() && !clash) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || !seen.insert(op).second)
      continue;
    if (auto role = op->getAttrOfType<StringAttr>(kConvGradSourceAttr)) {
      Value &v = found[role.getValue()];
      clash = v && v != op->getOperand(0);
      v = op->getOperand(0);
      continue;
    }
    if (isa<ReshapeOp, PermuteOp, SliceOp, ConcatOp, BroadcastToOp, ConstantOp>(op))
      llvm::append_range(work, op->getOperands());
  }
  return clash ? llvm::StringMap<Value>() : found;
}

RankedTensorType f32Static(Value v) {
  auto t = v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
  return t && t.hasStaticShape() && t.getRank() == 4 && t.getElementType().isF32()
             ? t
             : RankedTensorType();
}

/// Whether x [N, C, H, W], w [F, C/G, KH, KW] and y [N, F, OH, OW] are one
/// convolution with parameters `p` (ConvGradMarks.h).
bool consistent(ArrayRef<int64_t> x, ArrayRef<int64_t> w, ArrayRef<int64_t> y,
                ArrayRef<int64_t> p) {
  int64_t groups = p[8];
  if (groups < 1 || x[0] != y[0] || w[0] != y[1] || w[1] * groups != x[1] || y[1] % groups)
    return false;
  for (int64_t i = 0; i < 2; ++i) {
    int64_t span = x[2 + i] + p[4 + 2 * i] + p[5 + 2 * i] - p[2 + i] * (w[2 + i] - 1) - 1;
    if (span < 0 || span / p[i] + 1 != y[2 + i])
      return false;
  }
  return true;
}

/// Calls `callee` on (a, b) writing a new buffer of `type`: the result as
/// a tensor.
Value call(OpBuilder &b, Location loc, func::FuncOp callee, Value a, Value c, RankedTensorType type,
           ArrayRef<int64_t> p) {
  MLIRContext *ctx = b.getContext();
  auto out = b.create<memref::AllocOp>(loc, MemRefType::get(type.getShape(), type.getElementType()),
                                       b.getI64IntegerAttr(64));
  SmallVector<Value> args;
  for (Value v : {readBuffer(b, loc, a), readBuffer(b, loc, c), Value(out)})
    args.push_back(b.create<memref::CastOp>(loc, dynamicType(ctx), v));
  for (int64_t v : p.take_front(9))
    args.push_back(b.create<arith::ConstantIntOp>(loc, v, 64));
  b.create<func::CallOp>(loc, callee, args);
  return b.create<bufferization::ToTensorOp>(loc, out, /*restrict=*/true, /*writable=*/true);
}

/// The input gradient `root` (a marked kiln.conv2d) as a backward-data call.
bool rewriteData(ModuleOp module, Conv2dOp root, ArrayRef<int64_t> p) {
  llvm::StringMap<Value> src = sourcesOf(root);
  RankedTensorType g = f32Static(src.lookup(kConvGradG)), w = f32Static(src.lookup(kConvGradW));
  RankedTensorType gx = f32Static(root.getResult());
  if (!g || !w || !gx || w.getDimSize(2) != p[9] || w.getDimSize(3) != p[10] ||
      !consistent(gx.getShape(), w.getShape(), g.getShape(), p))
    return false;
  OpBuilder b(root);
  Value r = call(b, root.getLoc(), declare(module, kDataCallee), src.lookup(kConvGradG),
                 src.lookup(kConvGradW), gx, p);
  root.getResult().replaceAllUsesWith(r);
  root.erase();
  return true;
}

/// The weight gradient `root` (a marked kiln.matmul [G, F/G, C/G*KH*KW])
/// as a backward-weights call.
bool rewriteWeights(ModuleOp module, MatmulOp root, ArrayRef<int64_t> p) {
  llvm::StringMap<Value> src = sourcesOf(root);
  RankedTensorType x = f32Static(src.lookup(kConvGradX)), g = f32Static(src.lookup(kConvGradG));
  auto type = dyn_cast<RankedTensorType>(root.getType());
  if (!x || !g || !type || !type.hasStaticShape() || p[8] < 1)
    return false;
  auto gw = RankedTensorType::get({g.getDimSize(1), x.getDimSize(1) / p[8], p[9], p[10]},
                                  g.getElementType());
  if (!consistent(x.getShape(), gw.getShape(), g.getShape(), p) ||
      gw.getNumElements() != type.getNumElements())
    return false;
  OpBuilder b(root);
  Location loc = root.getLoc();
  Value r = call(b, loc, declare(module, kWeightsCallee), src.lookup(kConvGradX),
                 src.lookup(kConvGradG), gw, p);
  root.getResult().replaceAllUsesWith(b.create<ReshapeOp>(loc, type, r));
  root.erase();
  return true;
}

} // namespace

void convGradsToDnnl(ModuleOp module) {
  SmallVector<Operation *> roots;
  module.walk([&](Operation *op) {
    if (op->hasAttr(kConvGradDataAttr) || op->hasAttr(kConvGradWeightsAttr))
      roots.push_back(op);
  });
  for (Operation *op : roots) {
    auto data = op->getAttrOfType<DenseI64ArrayAttr>(kConvGradDataAttr);
    auto weights = op->getAttrOfType<DenseI64ArrayAttr>(kConvGradWeightsAttr);
    if (data && data.size() == 11 && isa<Conv2dOp>(op))
      rewriteData(module, cast<Conv2dOp>(op), data.asArrayRef());
    else if (weights && weights.size() == 11 && isa<MatmulOp>(op))
      rewriteWeights(module, cast<MatmulOp>(op), weights.asArrayRef());
  }
}

} // namespace mlir::kiln
