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

#include "ir/KilnOps.h"
#include "ir/KilnQuantOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

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
/// point last) choose the `_xu8` / `_yu8` variants.
func::FuncOp declareCallee(ModuleOp module, bool quantized, bool xU8 = false, bool yU8 = false) {
  std::string name = quantized ? kQuantCallee : kCallee;
  name += std::string(xU8 ? "_xu8" : "") + (yU8 ? "_yu8" : "");
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
  if (yU8)
    inputs.append({Float32Type::get(ctx), i64});
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto f = b.create<func::FuncOp>(module.getLoc(), name, FunctionType::get(ctx, inputs, {}));
  f.setPrivate();
  f->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  f->setAttr(kBufferArgsOnlyAttr, UnitAttr::get(ctx));
  return f;
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

Value permute(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  for (int64_t d : dims)
    shape.push_back(type.getDimSize(d));
  return b.create<PermuteOp>(loc, RankedTensorType::get(shape, type.getElementType()), v,
                             b.getDenseI64ArrayAttr(dims));
}

/// Whether `op` goes to oneDNN: static f32 (1x1 and depthwise included:
/// with the permutes sunk below elementwise ops, whole networks stay
/// channels-last; per-shape-class measurements in docs/performance.md).
bool qualifies(Conv2dOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto wt = cast<RankedTensorType>(op.getWeight().getType());
  return in.getElementType().isF32() && in.hasStaticShape() && wt.hasStaticShape() &&
         op.getType().hasStaticShape();
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

/// Whether `v` is the permute of an NHWC tensor back to NCHW.
PermuteOp toNchw(Value v) {
  auto p = v.getDefiningOp<PermuteOp>();
  return p && p.getDims() == ArrayRef<int64_t>{0, 3, 1, 2} ? p : PermuteOp();
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
      Value back = permute(b, user->getLoc(), moved->getResult(0), {0, 3, 1, 2});
      user->getResult(0).replaceAllUsesWith(back);
      user->erase();
      worklist.push_back(back);
    }
  }
}

/// A statically quantized convolution's parts (see the file comment): its
/// input (the f32 value quantize_static reads, or `xU8`: the NHWC u8 result
/// of an earlier int8 call), that quantization's scale and zero point, and
/// the weight's dequantize.
struct QuantConv {
  Value x;
  bool xU8;
  FloatAttr scale;
  IntegerAttr zero;
  DequantizeOp weight;
};

/// `dequantize(permute(u8 NHWC), splat scale)`: (the NHWC u8 value, scale).
std::optional<std::pair<Value, FloatAttr>> u8Input(Value v) {
  auto dq = v.getDefiningOp<DequantizeOp>();
  PermuteOp p = dq ? toNchw(dq.getInput()) : PermuteOp();
  if (!p || !getElementTypeOrSelf(p.getType()).isUnsignedInteger(8))
    return std::nullopt;
  auto c = dq.getScale().getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  if (!dense || !dense.isSplat() || !dense.getElementType().isF32())
    return std::nullopt;
  return std::make_pair(p.getInput(),
                        FloatAttr::get(dense.getElementType(), dense.getSplatValue<APFloat>()));
}

std::optional<QuantConv> matchQuantConv(Conv2dOp op) {
  auto w = op.getWeight().getDefiningOp<DequantizeOp>();
  if (!w || w.getZeroPoint() != 0)
    return std::nullopt;
  auto wt = cast<RankedTensorType>(w.getInput().getType());
  auto st = cast<RankedTensorType>(w.getScale().getType());
  int64_t f = wt.getDimSize(0);
  if (!wt.getElementType().isSignlessInteger(32) || st.getShape() != ArrayRef<int64_t>{f, 1, 1, 1})
    return std::nullopt;
  if (QuantizeStaticOp q = staticallyQuantized(op.getInput()))
    return QuantConv{q.getInput(), false, q.getScaleAttr(), q.getZeroPointAttr(), w};
  if (auto u8 = u8Input(op.getInput()))
    return QuantConv{u8->first, true, u8->second,
                     op.getInput().getDefiningOp<DequantizeOp>().getZeroPointAttr(), w};
  return std::nullopt;
}

/// The quantize_static ops that are all of `v`'s users, when they share one
/// scale and zero point and each feeds only int8 convolutions' inputs
/// (through dequantize ops that invert it); empty otherwise.
SmallVector<QuantizeStaticOp> u8Consumers(Value v) {
  SmallVector<QuantizeStaticOp> found;
  for (Operation *user : v.getUsers()) {
    auto q = dyn_cast<QuantizeStaticOp>(user);
    if (!q || (!found.empty() && (q.getScaleAttr() != found[0].getScaleAttr() ||
                                  q.getZeroPoint() != found[0].getZeroPoint())))
      return {};
    for (Operation *qUser : q->getUsers()) {
      auto dq = dyn_cast<DequantizeOp>(qUser);
      if (!dq || staticallyQuantized(dq.getResult()) != q)
        return {};
      for (Operation *dqUser : dq->getUsers()) {
        auto conv = dyn_cast<Conv2dOp>(dqUser);
        if (!conv || conv.getInput() != dq.getResult() || !qualifies(conv) || !matchQuantConv(conv))
          return {};
      }
    }
    found.push_back(q);
  }
  return found;
}

/// Erases `v`'s defining op and then its operands' when they are dead q/dq ops.
void eraseDeadQuant(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || !op->use_empty() || !isa<DequantizeOp, QuantizeStaticOp, ConstantOp, PermuteOp>(op))
    return;
  SmallVector<Value> operands(op->getOperands());
  op->erase();
  for (Value o : operands)
    eraseDeadQuant(o);
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

/// The call's operands after x, w, y, scale and shift: the ints, then for
/// an int8 call the input's scale and zero point and, for a u8 output, the
/// consumers' (`requant`).
SmallVector<Value> tailArgs(OpBuilder &b, Location loc, Conv2dOp op, int64_t activation,
                            const std::optional<QuantConv> &quant, QuantizeStaticOp requant) {
  SmallVector<Value> args = intArgs(b, loc, op, activation);
  if (quant) {
    args.push_back(b.create<arith::ConstantOp>(loc, quant->scale));
    args.push_back(b.create<arith::ConstantOp>(loc, quant->zero));
  }
  if (requant) {
    args.push_back(b.create<arith::ConstantOp>(loc, requant.getScaleAttr()));
    args.push_back(b.create<arith::ConstantOp>(loc, requant.getZeroPointAttr()));
  }
  return args;
}

void rewrite(Conv2dOp op, ModuleOp module) {
  // The per-channel affine ops (bias, eval BatchNorm) and activation after
  // the convolution are done by the call; it goes where the last of them was.
  ConvEpilogue epilogue = matchConvEpilogue(op);
  Operation *at = epilogue.ops.empty() ? op.getOperation() : epilogue.ops.back();
  OpBuilder b(at);
  Location loc = op.getLoc();
  auto [scale, shift] = buildScaleShift(b, loc, op, epilogue);
  std::optional<QuantConv> quant = matchQuantConv(op);
  SmallVector<QuantizeStaticOp> requant;
  if (quant)
    requant = u8Consumers(epilogue.replaced);
  bool xU8 = quant && quant->xU8, yU8 = !requant.empty();
  func::FuncOp callee = declareCallee(module, quant.has_value(), xU8, yU8);
  Value x = quant ? quant->x : op.getInput();
  Value w = quant ? quant->weight.getInput() : op.getWeight();
  if (quant) // conv(x, w * s) = s * conv(x, w): the weight scales join `scale`.
    scale = b.create<MulOp>(loc, scale.getType(), scale,
                            b.create<ReshapeOp>(loc, scale.getType(), quant->weight.getScale()));
  Value xm = readBuffer(b, loc, xU8 ? x : nhwcInput(b, loc, x));
  Value wm = readBuffer(b, loc, w);
  MLIRContext *ctx = b.getContext();
  // An int8 result only pooled is handed over NCHW (the pooling reads NCHW;
  // the shim reorders oneDNN's NHWC result: faster than a transposing copy).
  bool nchw = quant && !yU8 && onlyPooled(epilogue.replaced);
  Value ym = allocOutput(b, loc, op.getType(), yU8, nchw);
  Value xv = permutedView(b, loc, xm, {0, 3, 1, 2});
  Value wv =
      b.create<memref::CastOp>(loc, dynamicType(ctx, 4, getElementTypeOrSelf(w.getType())), wm);
  Value yv = nchw ? b.create<memref::CastOp>(loc, dynamicType(ctx), ym).getResult()
                  : permutedView(b, loc, ym, {0, 3, 1, 2});
  SmallVector<Value> args = {
      xv, wv, yv, b.create<memref::CastOp>(loc, dynamicType(ctx, 1), readBuffer(b, loc, scale)),
      b.create<memref::CastOp>(loc, dynamicType(ctx, 1), readBuffer(b, loc, shift))};
  llvm::append_range(args, tailArgs(b, loc, op, epilogue.activation, quant,
                                    yU8 ? requant.front() : QuantizeStaticOp()));
  b.create<func::CallOp>(loc, callee, args);
  auto tensor = b.create<bufferization::ToTensorOp>(loc, ym, /*restrict=*/true,
                                                    /*writable=*/true);
  Value result = nchw ? tensor.getResult() : permute(b, loc, tensor, {0, 3, 1, 2});
  for (QuantizeStaticOp q : requant) { // the u8 result is their value
    q.getResult().replaceAllUsesWith(result);
    q.erase();
  }
  if (!yU8)
    epilogue.replaced.replaceAllUsesWith(result);
  for (Operation *dead : llvm::reverse(epilogue.ops))
    dead->erase();
  Value oldInput = op.getInput(), oldWeight = op.getWeight();
  op.erase();
  eraseDeadQuant(oldInput);
  eraseDeadQuant(oldWeight);
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
          (!quantizedOnly && (minColumnsBytes <= 0 || bigColumns(op, minColumnsBytes))))
        convs.push_back(op);
    });
    for (Conv2dOp op : convs)
      rewrite(op, module);
  }
};

} // namespace
} // namespace mlir::kiln
