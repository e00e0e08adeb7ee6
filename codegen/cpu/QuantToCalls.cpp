//===- QuantToCalls.cpp - kiln.qlinear → kiln's int8 GEMM calls -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `kiln-cpu-quant-to-calls` (described in codegen/cpu/QuantPasses.td):
// before kiln-optimize, every kiln.qlinear becomes a call of
// runtime/cpu/Int8Gemm.cpp on its [M, K] input, the int8 weight's address,
// its scales and bias, writing a fresh [M, N] buffer:
//
//   %xm = bufferization.to_memref (tensor.collapse_shape %x) read_only
//   %wp = memref.extract_aligned_pointer_as_index %wm (+ offset in bytes)
//   %ym = memref.alloc(leading sizes of %x) : memref<...xN>
//   func.call @kiln_int8_linear(%xm, %wp, %wrow, %sm, %bm,
//                               memref.collapse_shape %ym (as [M, N]), %mode,
//                               %x_scale, %x_zero_point)   (static only; else 1, 0)
//   %y  = bufferization.to_tensor %ym restrict writable
//
// A grouped (int4 weight-only) qlinear calls @kiln_int4_linear
// (runtime/cpu/Int4Linear.cpp) with the same operands and its group size.
// Requantization pairs no int8 kernel took (dequantize of a
// quantize_static with its scale and zero point: kiln.quant's PT2E / torch.ao
// rewrites) become the same values by f32 ops (transforms/DecomposeQuant.cpp);
// other quantization ops that did not fold into a qlinear have no CPU
// lowering: the pass fails naming the first one.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/DnnlCalls.h"
#include "codegen/cpu/QuantPasses.h"

#include "ir/KilnOps.h"
#include "ir/KilnQuantOps.h"
#include "transforms/Transforms.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include "llvm/ADT/StringSwitch.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUQUANTTOCALLSPASS
#include "codegen/cpu/QuantPasses.h.inc"

namespace {

constexpr const char *kCallee = "kiln_int8_linear";
constexpr const char *kInt4Callee = "kiln_int4_linear";

/// memref<?...xT, strided<[?...], offset: ?>> of rank `rank`.
MemRefType dynamicType(Type elt, int64_t rank) {
  SmallVector<int64_t> dyn(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(elt.getContext(), ShapedType::kDynamic, dyn);
  return MemRefType::get(dyn, elt, layout);
}

/// The runtime entry point of `op`: kiln_int8_linear (x, weight, row bytes,
/// scales, bias, y, mode, input scale, input zero point) or, for a grouped
/// weight-only qlinear, kiln_int4_linear (x, weight, row bytes, scales, bias,
/// y, group size).
func::FuncOp declareCallee(ModuleOp module, bool grouped) {
  StringRef name = grouped ? kInt4Callee : kCallee;
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  MLIRContext *ctx = module.getContext();
  Type f32 = Float32Type::get(ctx), i64 = IntegerType::get(ctx, 64);
  MemRefType m2 = dynamicType(f32, 2), m1 = dynamicType(f32, 1);
  SmallVector<Type> inputs = {m2, i64, i64, m2, m1, m2, i64};
  if (!grouped)
    inputs.append({f32, i64});
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto f = b.create<func::FuncOp>(module.getLoc(), name, FunctionType::get(ctx, inputs, {}));
  f.setPrivate();
  f->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  return f;
}

/// The tensor `t` as a fully dynamic strided memref, for reading only.
Value readDynamicBuffer(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  return b.create<memref::CastOp>(loc, dynamicType(type.getElementType(), type.getRank()),
                                  readBuffer(b, loc, t));
}

/// (address of element [0, 0], row stride in bytes) of the int8 weight, read
/// from the i32 words behind a kiln.int8_view or kiln.int4_view when there
/// is one.
std::pair<Value, Value> weightAddress(OpBuilder &b, Location loc, Value weight) {
  Value source = weight;
  int64_t bytes = 1;
  if (auto view = weight.getDefiningOp<Int8ViewOp>())
    source = view.getInput();
  else if (auto view4 = weight.getDefiningOp<Int4ViewOp>())
    source = view4.getInput();
  if (source != weight)
    bytes = 4;
  Value m = readDynamicBuffer(b, loc, source);
  auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, m);
  Value base = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, m);
  Value size = b.create<arith::ConstantIndexOp>(loc, bytes);
  Value offset = b.create<arith::MulIOp>(loc, meta.getOffset(), size);
  Value address = b.create<arith::AddIOp>(loc, base, offset);
  Value row = b.create<arith::MulIOp>(loc, meta.getStrides()[0], size);
  Type i64 = b.getI64Type();
  return {b.create<arith::IndexCastOp>(loc, i64, address),
          b.create<arith::IndexCastOp>(loc, i64, row)};
}

int64_t modeOf(StringRef activations) {
  return llvm::StringSwitch<int64_t>(activations)
      .Case("per_token", 0)
      .Case("per_tensor", 1)
      .Case("none", 2)
      .Case("static", 3)
      .Default(-1);
}

/// `x` as [M, K] and the sizes of its leading dims (for the expand back).
Value collapseInput(OpBuilder &b, Location loc, Value x, SmallVectorImpl<OpFoldResult> &lead) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  for (int64_t d = 0; d + 1 < rank; ++d)
    lead.push_back(type.isDynamicDim(d) ? OpFoldResult(b.create<tensor::DimOp>(loc, x, d))
                                        : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  if (rank == 2)
    return x;
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows.push_back(d);
  SmallVector<ReassociationIndices> groups;
  if (rank > 1)
    groups.push_back(rows);
  groups.push_back({rank - 1});
  if (rank == 1) // a single row
    return b.create<tensor::ExpandShapeOp>(
        loc, RankedTensorType::get({1, type.getDimSize(0)}, type.getElementType()), x,
        ArrayRef<ReassociationIndices>{{0, 1}});
  return b.create<tensor::CollapseShapeOp>(loc, x, groups);
}

void rewrite(QLinearOp op, ModuleOp module) {
  func::FuncOp callee = declareCallee(module, op.getGroupSize().has_value());
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<OpFoldResult> lead;
  Value x2 = collapseInput(b, loc, op.getInput(), lead);
  auto xType = cast<RankedTensorType>(x2.getType());
  int64_t n = cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
  Value bias = op.getBias();
  if (!bias) {
    auto type = RankedTensorType::get({n}, b.getF32Type());
    bias = b.create<ConstantOp>(loc, cast<ElementsAttr>(DenseElementsAttr::get(type, 0.0f)));
  }
  auto [address, rowBytes] = weightAddress(b, loc, op.getWeight());
  // The result buffer has the result's shape (a rank-1 result: [1, N]); the
  // call writes it through an [M, N] view. (An expand_shape of an [M, N]
  // buffer with two dynamic leading sizes cannot be bufferized in MLIR 19.)
  auto outType = cast<RankedTensorType>(op.getType());
  SmallVector<int64_t> yShape;
  SmallVector<Value> dyn;
  if (outType.getRank() > 2) {
    for (OpFoldResult size : lead) {
      auto value = dyn_cast<Value>(size);
      yShape.push_back(value ? ShapedType::kDynamic : *getConstantIntValue(size));
      if (value)
        dyn.push_back(value);
    }
  } else {
    yShape.push_back(xType.getDimSize(0));
    if (xType.isDynamicDim(0))
      dyn.push_back(b.create<tensor::DimOp>(loc, x2, 0));
  }
  yShape.push_back(n);
  auto yType = MemRefType::get(yShape, b.getF32Type());
  Value ym = b.create<memref::AllocOp>(loc, yType, dyn, b.getI64IntegerAttr(64));
  Value ym2 = ym;
  if (yType.getRank() > 2) {
    ReassociationIndices rows;
    for (int64_t d = 0; d + 1 < yType.getRank(); ++d)
      rows.push_back(d);
    ym2 = b.create<memref::CollapseShapeOp>(
        loc, ym, ArrayRef<ReassociationIndices>{rows, {yType.getRank() - 1}});
  }
  // The trailing arguments: the group size, or mode, input scale and zero point.
  SmallVector<Value> tail;
  if (std::optional<int64_t> group = op.getGroupSize()) {
    tail.push_back(b.create<arith::ConstantIntOp>(loc, *group, 64));
  } else {
    tail.push_back(b.create<arith::ConstantIntOp>(loc, modeOf(op.getActivations()), 64));
    auto scaleAttr = op.getInputScaleAttr() ? op.getInputScaleAttr() : b.getF32FloatAttr(1.0f);
    tail.push_back(b.create<arith::ConstantOp>(loc, scaleAttr));
    tail.push_back(b.create<arith::ConstantIntOp>(loc, op.getInputZeroPoint().value_or(0), 64));
  }
  SmallVector<Value> args = {readDynamicBuffer(b, loc, x2),
                             address,
                             rowBytes,
                             readDynamicBuffer(b, loc, op.getWeightScale()),
                             readDynamicBuffer(b, loc, bias),
                             b.create<memref::CastOp>(loc, dynamicType(b.getF32Type(), 2), ym2)};
  args.append(tail);
  b.create<func::CallOp>(loc, callee, args);
  Value y = b.create<bufferization::ToTensorOp>(loc, ym, /*restrict=*/true, /*writable=*/true);
  if (outType.getRank() == 1)
    y = b.create<tensor::CollapseShapeOp>(loc, y, ArrayRef<ReassociationIndices>{{0, 1}});
  Value weight = op.getWeight();
  op.getResult().replaceAllUsesWith(y);
  op.erase();
  if (Operation *view = weight.getDefiningOp();
      view && isa<Int8ViewOp, Int4ViewOp>(view) && view->use_empty())
    view->erase();
}

bool isQuantOp(Operation *op) {
  return isa<QuantizeOp, QuantizeStaticOp, DequantizeOp, Int8ViewOp, Int4ViewOp, Fp8ViewOp,
             QLinearOp>(op);
}

struct CpuQuantToCallsPass : impl::CpuQuantToCallsPassBase<CpuQuantToCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<QLinearOp> ops;
    module.walk([&](QLinearOp op) { ops.push_back(op); });
    for (QLinearOp op : ops)
      if (isa<Float8E4M3FNType>(op.getWeight().getType().getElementType())) {
        op.emitError("fp8 layers (kiln.quant.fp8()) have no CPU kernel: they run on CUDA");
        return signalPassFailure();
      }
    for (QLinearOp op : ops)
      rewrite(op, module);
    SmallVector<DequantizeOp> pairs;
    module.walk([&](DequantizeOp op) { pairs.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (DequantizeOp op : pairs)
      (void)expandStaticQdq(op, rewriter);
    WalkResult left = module.walk([&](Operation *op) {
      if (!isa<QuantizeOp, QuantizeStaticOp, DequantizeOp, Int8ViewOp, Int4ViewOp, Fp8ViewOp>(op))
        return WalkResult::advance();
      op->emitError() << op->getName()
                      << " has no CPU lowering outside an integer GEMM (kiln.qlinear)";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

bool containsQuantOps(ModuleOp module) {
  return module
      .walk([](Operation *op) {
        return isQuantOp(op) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

} // namespace mlir::kiln
