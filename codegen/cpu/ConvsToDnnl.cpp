//===- ConvsToDnnl.cpp - f32 kiln.conv2d → oneDNN calls on NHWC buffers ------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `kiln-cpu-convs-to-dnnl` (described in codegen/cpu/Passes.td):
// before kiln-decompose, every static f32 `kiln.conv2d` with a kernel
// larger than 1x1 that is not depthwise becomes a call of
// runtime/cpu/DnnlConv.cpp on a channels-last copy of its input, writing a
// channels-last result:
//
//   %xt = linalg.generic (NCHW → NHWC copy of %x)      // fused upstream
//   %xm = bufferization.to_memref %xt read_only       // + NCHW-shaped views
//   %ym = memref.alloc()                              // [N, OH, OW, F]
//   func.call @kiln_dnnl_conv2d_f32(%xv, %wm, %yv, strides..., relu)
//   %y  = kiln.permute (bufferization.to_tensor %ym restrict writable)
//
// The permutes are ordinary tensor ops: elementwise fusion merges them into
// the pointwise ops between two convolutions (BatchNorm, ReLU, residual
// adds), so activations between convolutions are written channels-last
// once, not transposed twice. A `kiln.relu` that is the convolution's only
// user is fused into the call (oneDNN post-op).
//
// A statically quantized convolution (kiln.quant's capture: the input
// `dequantize(quantize_static(x))`, the weight `dequantize(w_i32, s[F,1,1,1])`)
// becomes a call of the int8 shim instead (DnnlQConv.cpp): u8 x s8 with the
// input's scale and zero point, the weight scales joining the epilogue's
// per-channel scale; its q/dq ops are erased. When every user of an int8
// convolution's result (after its epilogue) is the `quantize_static` of
// int8 convolutions' inputs with one scale and zero point, the call
// requantizes into a channels-last u8 buffer (`_yu8`: oneDNN's output
// scales, zero point and u8 conversion) that replaces those quantize ops,
// and the consumers read it as it is (`_xu8`: `dequantize(permute(u8))`):
// activations stay u8 between consecutive int8 convolutions.
//
// First, always: the convolution gradients kiln-autodiff marked become
// oneDNN backward-data / backward-weights calls (ConvGradsToDnnl.cpp).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/CallAttrs.h"
#include "codegen/cpu/DnnlCalls.h"
#include "codegen/cpu/DnnlConvEpilogue.h"
#include "codegen/cpu/DnnlQConvMatch.h"

#include "ir/KilnOps.h"
#include "ir/KilnBuilders.h"
#include "ir/KilnQuantOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <functional>

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUCONVSTODNNLPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

constexpr const char *kCallee = "kiln_dnnl_conv2d_f32";
constexpr const char *kQuantCallee = "kiln_dnnl_qconv2d_u8s8";

Type u8Type(MLIRContext *ctx) { return IntegerType::get(ctx, 8, IntegerType::Unsigned); }

/// The f32 shim, or (`quantized`) the int8 one: an i32 weight and the
/// input's f32 scale and i64 zero point after the f32 one's operands; a u8
/// input (`xU8`) or a u8 output (`yU8`, with its f32 scale and i64 zero
/// point last) choose the `_xu8` / `_yu8` variants; a residual (1: u8,
/// 2: f32) the `_ru8` / `_rf32` ones, with the `_yu8` operands (1 and 0 for
/// an f32 y), then the residual, its f32 scale and i64 zero point.
func::FuncOp declareCallee(ModuleOp module, bool quantized, bool xU8, bool yU8, int residual) {
  std::string name = quantized ? kQuantCallee : kCallee;
  name += std::string(xU8 ? "_xu8" : "") + (yU8 ? "_yu8" : "");
  name += residual == 0 ? "" : (residual == 1 ? "_ru8" : "_rf32");
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  MLIRContext *ctx = module.getContext();
  MemRefType m = dynamicType(ctx);
  MemRefType v = dynamicType(ctx, 1);
  Type i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> inputs = {xU8 ? dynamicType(ctx, 4, u8Type(ctx)) : m,
                              quantized ? dynamicType(ctx, 4, IntegerType::get(ctx, 32)) : m,
                              yU8 ? dynamicType(ctx, 4, u8Type(ctx)) : m, v, v};
  inputs.append(10, i64);
  if (quantized)
    inputs.append({Float32Type::get(ctx), i64});
  if (yU8 || residual)
    inputs.append({Float32Type::get(ctx), i64});
  if (residual)
    inputs.append({dynamicType(ctx, 4, residual == 1 ? u8Type(ctx) : Float32Type::get(ctx)),
                   Float32Type::get(ctx), i64});
  return declareShim(module, name, inputs);
}

/// `m` (any layout) as a fully dynamic strided memref whose dims are `m`'s
/// dims taken in `order` (a view: no copy).
Value permutedView(OpBuilder &b, Location loc, Value m, ArrayRef<int64_t> order) {
  auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, m);
  SmallVector<OpFoldResult> sizes, strides;
  for (int64_t d : order) {
    sizes.push_back(meta.getSizes()[d]);
    strides.push_back(meta.getStrides()[d]);
  }
  Type elt = cast<MemRefType>(m.getType()).getElementType();
  return b.create<memref::ReinterpretCastOp>(loc, dynamicType(b.getContext(), 4, elt),
                                             meta.getBaseBuffer(), meta.getOffset(), sizes,
                                             strides);
}

/// `v` with dims permuted (result dim i = operand dim dims[i]) as a
/// `linalg.generic` (not kiln.permute, whose linalg.transpose fuses only
/// into generic consumers): elementwise fusion then merges the producers of
/// a convolution's input into this copy, writing them channels-last.
Value permuteGeneric(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  SmallVector<unsigned> inverse(dims.size());
  for (auto [i, d] : llvm::enumerate(dims)) {
    shape.push_back(type.getDimSize(d));
    inverse[d] = i;
  }
  Value init = b.create<tensor::EmptyOp>(loc, shape, type.getElementType());
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = {AffineMap::getPermutationMap(inverse, ctx),
                                 AffineMap::getMultiDimIdentityMap(dims.size(), ctx)};
  SmallVector<utils::IteratorType> iterators(dims.size(), utils::IteratorType::parallel);
  return b
      .create<linalg::GenericOp>(loc, init.getType(), v, init, maps, iterators,
                                 [](OpBuilder &nb, Location nloc, ValueRange args) {
                                   nb.create<linalg::YieldOp>(nloc, args[0]);
                                 })
      .getResult(0);
}

/// Whether `kiln-decompose` would give `op` im2col columns of at least
/// `minBytes` bytes and at least 8x its weight's bytes (a kernel larger than
/// 1x1, not depthwise): the convolutions worth a oneDNN call whose weight
/// is re-laid on every call (the pass's `min-columns-bytes`).
bool bigColumns(Conv2dOp op, int64_t minBytes) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto wt = cast<RankedTensorType>(op.getWeight().getType());
  RankedTensorType out = op.getType();
  int64_t taps = wt.getDimSize(2) * wt.getDimSize(3), c = in.getDimSize(1);
  if (taps == 1 || (op.getGroups() == c && c > 1))
    return false;
  int64_t columns = in.getDimSize(0) * c * taps * out.getDimSize(2) * out.getDimSize(3) * 4;
  return columns >= minBytes && columns >= 8 * wt.getNumElements() * 4;
}

/// Whether `op` computes at least `minPositions` output positions (batch x
/// height x width): each weight element serves that many multiply-adds, so
/// re-laying the weight on every call costs a small part of the call
/// (the pass's `min-output-positions`).
bool manyOutputPositions(Conv2dOp op, int64_t minPositions) {
  RankedTensorType out = op.getType();
  return out.getDimSize(0) * out.getDimSize(2) * out.getDimSize(3) >= minPositions;
}

/// The convolution's input as an NHWC tensor: the NHWC result of an
/// earlier oneDNN call when the input is its permute back to NCHW (the two
/// permutes cancel), else a permuting copy.
Value nhwcInput(OpBuilder &b, Location loc, Value x) {
  if (auto p = x.getDefiningOp<PermuteOp>())
    if (p.getDims() == ArrayRef<int64_t>{0, 3, 1, 2})
      return p.getInput();
  return permuteGeneric(b, loc, x, {0, 2, 3, 1});
}

/// The call's i64 operands: strides, dilations, paddings, groups, activation.
SmallVector<Value> intArgs(OpBuilder &b, Location loc, Conv2dOp op, int64_t activation) {
  SmallVector<int64_t> params(op.getStride());
  llvm::append_range(params, op.getDilation());
  llvm::append_range(params, op.getPadding());
  params.push_back(op.getGroups());
  params.push_back(activation);
  DenseMap<int64_t, Value> constants;
  SmallVector<Value> args;
  for (int64_t p : params) {
    Value &c = constants[p];
    if (!c)
      c = b.create<arith::ConstantIntOp>(loc, p, 64);
    args.push_back(c);
  }
  return args;
}

/// Moves the permute back to NCHW of `v` below the elementwise ops using it
/// whose other operands are such permutes of the same shape too, or
/// scalars: op(permute(a), permute(b)) becomes permute(op(a, b)), so the
/// NHWC values flow on (a later oneDNN convolution reads them without a
/// copy, and a residual stream stays channels-last). Repeats on the new
/// permutes.
void sinkPermutes(Value v) {
  SmallVector<Value> worklist{v};
  while (!worklist.empty()) {
    Value p = worklist.pop_back_val();
    for (Operation *user : llvm::make_early_inc_range(p.getUsers())) {
      if (!isa<AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, ReluOp, SiluOp, SigmoidOp, NegOp>(
              user) ||
          user->getNumResults() != 1 || user->getResult(0).getType() != p.getType())
        continue;
      SmallVector<Value> operands;
      for (Value o : user->getOperands()) {
        auto t = cast<RankedTensorType>(o.getType());
        if (t.getRank() == 0)
          operands.push_back(o);
        else if (PermuteOp q = toNchw(o); q && o.getType() == p.getType())
          operands.push_back(q.getInput());
        else
          break;
      }
      if (operands.size() != user->getNumOperands())
        continue;
      OpBuilder b(user);
      // The NHWC type: the operand `p` is the permute of.
      Type nhwc = toNchw(p).getInput().getType();
      OperationState state(user->getLoc(), user->getName().getStringRef(), operands, {nhwc},
                           user->getAttrs());
      Operation *moved = b.create(state);
      Value back = buildPermute(b, user->getLoc(), moved->getResult(0), {0, 3, 1, 2});
      user->getResult(0).replaceAllUsesWith(back);
      user->erase();
      worklist.push_back(back);
    }
  }
}

/// Whether every user of `v` is a pooling op (NCHW only: a stem
/// convolution's max-pool).
bool onlyPooled(Value v) {
  return !v.use_empty() &&
         llvm::all_of(v.getUsers(), [](Operation *u) { return isa<MaxPool2dOp, AvgPool2dOp>(u); });
}

/// The call's result buffer: `type` channels-last (or NCHW when `nchw`),
/// u8 elements when `u8`.
Value allocOutput(OpBuilder &b, Location loc, RankedTensorType type, bool u8, bool nchw) {
  SmallVector<int64_t> shape = {type.getDimSize(0), type.getDimSize(2), type.getDimSize(3),
                                type.getDimSize(1)};
  if (nchw)
    shape = llvm::to_vector(type.getShape());
  Type elt = u8 ? u8Type(b.getContext()) : type.getElementType();
  return b.create<memref::AllocOp>(loc, MemRefType::get(shape, elt), b.getI64IntegerAttr(64));
}

/// The max-pool that is `v`'s only user, when it can run on u8 values
/// (no dilation): resnet's stem.
MaxPool2dOp singlePool(Value v) {
  auto pool = v.hasOneUse() ? dyn_cast<MaxPool2dOp>(*v.getUsers().begin()) : MaxPool2dOp();
  return pool && pool.getDilation() == ArrayRef<int64_t>{1, 1} ? pool : MaxPool2dOp();
}

/// `pool` on the NHWC u8 tensor `nhwc` (DnnlConv.h's u8 max pooling), as
/// the NCHW permute of its NHWC u8 result.
Value emitPoolU8(OpBuilder &b, MaxPool2dOp pool, Value nhwc, ModuleOp module) {
  constexpr const char *name = "kiln_dnnl_maxpool2d_u8";
  MLIRContext *ctx = b.getContext();
  auto callee = module.lookupSymbol<func::FuncOp>(name);
  if (!callee) {
    SmallVector<Type> inputs = {dynamicType(ctx, 4, u8Type(ctx)), dynamicType(ctx, 4, u8Type(ctx))};
    inputs.append(6, b.getI64Type());
    callee = declareShim(module, name, inputs);
  }
  Location loc = pool.getLoc();
  Value ym = allocOutput(b, loc, pool.getType(), /*u8=*/true, /*nchw=*/false);
  SmallVector<Value> args = {permutedView(b, loc, readBuffer(b, loc, nhwc), {0, 3, 1, 2}),
                             permutedView(b, loc, ym, {0, 3, 1, 2})};
  ArrayRef<int64_t> k = pool.getKernel(), st = pool.getStride(), p = pool.getPadding();
  for (int64_t v : {k[0], k[1], st[0], st[1], p[0], p[1]})
    args.push_back(b.create<arith::ConstantIntOp>(loc, v, 64));
  b.create<func::CallOp>(loc, callee, args);
  auto tensor = b.create<bufferization::ToTensorOp>(loc, ym, /*restrict=*/true,
                                                    /*writable=*/true);
  return buildPermute(b, loc, tensor, {0, 3, 1, 2});
}

/// An int8 call's residual (DnnlConv.h's `_ru8` / `_rf32`): a view of its
/// NHWC buffer and, for a u8 one, its scale and zero point.
struct ResidualArgs {
  Value view;
  bool u8 = false;
  FloatAttr scale;
  IntegerAttr zero;
};

ResidualArgs residualArgs(OpBuilder &b, Location loc, Value r) {
  if (auto u8 = u8Input(r)) {
    Value m = readBuffer(b, loc, u8->first);
    return {permutedView(b, loc, m, {0, 3, 1, 2}), true, u8->second,
            r.getDefiningOp<DequantizeOp>().getZeroPointAttr()};
  }
  Value m = readBuffer(b, loc, nhwcInput(b, loc, r));
  return {permutedView(b, loc, m, {0, 3, 1, 2}), false, b.getF32FloatAttr(1.0f),
          b.getI64IntegerAttr(0)};
}

/// The call's operands after x, w, y, scale and shift: the ints, then for
/// an int8 call the input's scale and zero point and, for a u8 output, the
/// consumers' (`requant`; 1 and 0 for an f32 output with a residual), then
/// the residual's.
SmallVector<Value> tailArgs(OpBuilder &b, Location loc, Conv2dOp op, int64_t activation,
                            const std::optional<QuantConv> &quant, QuantizeStaticOp requant,
                            const std::optional<ResidualArgs> &residual) {
  SmallVector<Value> args = intArgs(b, loc, op, activation);
  if (quant) {
    args.push_back(b.create<arith::ConstantOp>(loc, quant->scale));
    args.push_back(b.create<arith::ConstantOp>(loc, quant->zero));
  }
  if (requant) {
    args.push_back(b.create<arith::ConstantOp>(loc, requant.getScaleAttr()));
    args.push_back(b.create<arith::ConstantOp>(loc, requant.getZeroPointAttr()));
  } else if (residual) {
    args.push_back(b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(1.0f)));
    args.push_back(b.create<arith::ConstantIntOp>(loc, 0, 64));
  }
  if (residual)
    args.append({residual->view, b.create<arith::ConstantOp>(loc, residual->scale),
                 b.create<arith::ConstantOp>(loc, residual->zero)});
  return args;
}

/// What a rewrite decided: the epilogue, the int8 parts, the consumers
/// reading a u8 result and the residual adds reading it too.
struct Plan {
  ConvEpilogue epilogue;
  std::optional<QuantConv> quant;
  SmallVector<QuantizeStaticOp> requant;
  SmallVector<Operation *> adds;
  /// A max-pool between the u8 result and `requant` (run on u8 values).
  MaxPool2dOp pool;
};

/// Emits the call at `b` and returns its result as an NCHW tensor (or the
/// NCHW buffer itself when `nchw`).
Value emitCall(OpBuilder &b, Conv2dOp op, ModuleOp module, Plan &plan, bool nchw) {
  Location loc = op.getLoc();
  auto &[epilogue, quant, requant, adds, pool] = plan;
  auto [scale, shift] = buildScaleShift(b, loc, op, epilogue);
  bool xU8 = quant && quant->xU8, yU8 = !requant.empty();
  std::optional<ResidualArgs> residual;
  if (epilogue.residual)
    residual = residualArgs(b, loc, epilogue.residual);
  func::FuncOp callee =
      declareCallee(module, quant.has_value(), xU8, yU8, !residual ? 0 : (residual->u8 ? 1 : 2));
  Value x = quant ? quant->x : op.getInput();
  Value w = quant ? quant->weight.getInput() : op.getWeight();
  if (quant) // conv(x, w * s) = s * conv(x, w): the weight scales join `scale`.
    scale = b.create<MulOp>(loc, scale.getType(), scale,
                            b.create<ReshapeOp>(loc, scale.getType(), quant->weight.getScale()));
  Value xm = readBuffer(b, loc, xU8 ? x : nhwcInput(b, loc, x));
  // A permuted weight (a caller's channels-last weight, held in memory
  // order: frontend InputLayouts.h) is passed as a strided view of its
  // operand, which oneDNN reorders from: no transposing copy per call.
  auto wp = w.getDefiningOp<PermuteOp>();
  Value wm = readBuffer(b, loc, wp ? wp.getInput() : w);
  MLIRContext *ctx = b.getContext();
  Value ym = allocOutput(b, loc, op.getType(), yU8, nchw);
  Value xv = permutedView(b, loc, xm, {0, 3, 1, 2});
  Value wv = wp ? permutedView(b, loc, wm, wp.getDims())
                : b.create<memref::CastOp>(
                      loc, dynamicType(ctx, 4, getElementTypeOrSelf(w.getType())), wm);
  Value yv = nchw ? b.create<memref::CastOp>(loc, dynamicType(ctx), ym).getResult()
                  : permutedView(b, loc, ym, {0, 3, 1, 2});
  SmallVector<Value> args = {
      xv, wv, yv, b.create<memref::CastOp>(loc, dynamicType(ctx, 1), readBuffer(b, loc, scale)),
      b.create<memref::CastOp>(loc, dynamicType(ctx, 1), readBuffer(b, loc, shift))};
  llvm::append_range(args, tailArgs(b, loc, op, epilogue.activation, quant,
                                    yU8 ? requant.front() : QuantizeStaticOp(), residual));
  b.create<func::CallOp>(loc, callee, args);
  auto tensor = b.create<bufferization::ToTensorOp>(loc, ym, /*restrict=*/true,
                                                    /*writable=*/true);
  return nchw ? tensor.getResult() : buildPermute(b, loc, tensor, {0, 3, 1, 2});
}

void rewrite(Conv2dOp op, ModuleOp module, ResidualAdds &residuals) {
  // The per-channel affine ops (bias, eval BatchNorm), an int8 call's
  // residual add and the activation after the convolution are done by the
  // call; it goes where the last of them was.
  Plan plan;
  plan.quant = matchQuantConv(op);
  plan.epilogue = matchConvEpilogue(op, /*residual=*/plan.quant.has_value());
  ConvEpilogue &epilogue = plan.epilogue;
  if (epilogue.residualAdd) // erased below: no stale entry for a later lookup
    residuals.erase(epilogue.residualAdd);
  if (plan.quant)
    plan.requant = u8Consumers(epilogue.replaced, residuals, plan.adds);
  if (MaxPool2dOp pool = singlePool(epilogue.replaced);
      pool && plan.quant && plan.requant.empty()) {
    plan.adds.clear(); // the pooled values may be u8 (max-pooling commutes with quantizing)
    plan.requant = u8Consumers(pool.getResult(), residuals, plan.adds);
    plan.pool = plan.requant.empty() ? MaxPool2dOp() : pool;
  }
  bool yU8 = !plan.requant.empty();
  // An int8 result only pooled is handed over NCHW (the pooling reads NCHW;
  // the shim reorders oneDNN's NHWC result: faster than a transposing copy).
  bool nchw = plan.quant && !yU8 && onlyPooled(epilogue.replaced);
  OpBuilder b(epilogue.ops.empty() ? op.getOperation() : epilogue.ops.back());
  Value result = emitCall(b, op, module, plan, nchw), u8Value = epilogue.replaced;
  if (plan.pool) {
    PermuteOp unpooled = toNchw(result);
    result = emitPoolU8(b, plan.pool, unpooled.getInput(), module);
    unpooled.erase();
    u8Value = plan.pool.getResult();
  }
  for (QuantizeStaticOp q : plan.requant) // the u8 result is their value
    q.getResult().replaceAllUsesWith(result);
  if (yU8)
    readResidualAsU8(plan.adds, u8Value, result, plan.requant.front());
  for (QuantizeStaticOp q : plan.requant)
    q.erase();
  if (plan.pool)
    plan.pool.erase();
  if (!yU8)
    epilogue.replaced.replaceAllUsesWith(result);
  for (Operation *dead : llvm::reverse(epilogue.ops))
    dead->erase();
  Value oldInput = op.getInput(), oldWeight = op.getWeight();
  op.erase();
  eraseDeadQuant(oldInput);
  eraseDeadQuant(oldWeight);
  if (epilogue.residual)
    eraseDeadQuant(epilogue.residual);
  if (!yU8 && !nchw)
    sinkPermutes(result);
}

struct CpuConvsToDnnlPass : impl::CpuConvsToDnnlPassBase<CpuConvsToDnnlPass> {
  using CpuConvsToDnnlPassBase::CpuConvsToDnnlPassBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    CpuConvsToDnnlPassBase::getDependentDialects(registry);
    registry.insert<linalg::LinalgDialect, tensor::TensorDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (convGrads)
      convGradsToDnnl(module);
    SmallVector<Conv2dOp> convs;
    module.walk([&](Conv2dOp op) {
      if (!qualifies(op))
        return;
      if (matchQuantConv(op) ||
          (!quantizedOnly &&
           ((minColumnsBytes <= 0 && minOutputPositions <= 0) ||
            (minColumnsBytes > 0 && bigColumns(op, minColumnsBytes)) ||
            (minOutputPositions > 0 && manyOutputPositions(op, minOutputPositions)))))
        convs.push_back(op);
    });
    // Program order (a u8 producer before its consumers), except that the
    // convolution making a residual goes before the one adding it (a
    // bottleneck's downsample, captured after the block's last conv).
    ResidualAdds residuals = findResidualAdds(convs);
    DenseMap<Value, Conv2dOp> producers;
    for (Conv2dOp op : convs)
      producers[matchConvEpilogue(op, matchQuantConv(op).has_value()).replaced] = op;
    DenseSet<Operation *> done;
    std::function<void(Conv2dOp)> visit = [&](Conv2dOp op) {
      if (!done.insert(op).second)
        return;
      if (matchQuantConv(op))
        if (Value r = matchConvEpilogue(op, /*residual=*/true).residual)
          if (Conv2dOp producer = producers.lookup(r))
            visit(producer);
      rewrite(op, module, residuals);
    };
    for (Conv2dOp op : convs)
      visit(op);
  }
};

} // namespace
} // namespace mlir::kiln
