//===- CudaExtern.cpp - GEMMs as extern library calls in the launch plan ----===//
// SPDX-License-Identifier: Apache-2.0
//
// FunctionEmitter::emitGemm: linalg.matmul / batch_matmul (and their
// _transpose_b forms, which the kiln → linalg lowering produces for
// `x @ w.T`) are not printed as kernels; they become ExternCall steps of
// the launch plan, run by a GEMM library (cuBLAS, or torch.matmul in the
// Python executor, kiln/cuda.py) on the same contiguous row-major buffers.
// Only the zero-filled accumulator the lowering creates is accepted (the
// library computes C = A x B, it does not accumulate into C). A 2-d GEMM
// whose only consumer is a pointwise `C + bias` or `relu(C + bias)` (bias a
// row of N) carries that as its epilogue ("bias", "bias_relu": cuBLASLt's
// bias/ReLU epilogues, runtime/cuda/Cublaslt.h) and writes the consumer's
// result; the consumer gets no kernel. An f32 `gelu_tanh(C + bias)` (GPT-2's
// MLP) becomes cuBLASLt's GELU_BIAS epilogue ("bias_gelu_tanh"). 16-bit GEMMs too, when the
// consumer rounds their f32 accumulator (matchEpilogue).
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

namespace mlir::kiln::cuda::detail {

/// Whether `v` is (a reshape of) a linalg.fill of zero.
static bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Value s = fill.getInputs()[0];
  return matchPattern(s, m_AnyZeroFloat()) || matchPattern(s, m_Zero());
}

/// Whether `v` is a float constant equal to `x`.
static bool isFloatConst(Value v, double x) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && f.getValueAsDouble() == x;
}

/// Whether `v` is a float constant within 1e-6 (relative) of `x`.
static bool isNearConst(Value v, double x) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && std::abs(f.getValueAsDouble() - x) <= 1e-6 * std::abs(x);
}

/// `x` when `v` is `extf(truncf(x))` rounding through `t`, else null.
static Value unround(Value v, Type t) {
  auto ext = v.getDefiningOp<arith::ExtFOp>();
  auto trunc = ext ? ext.getIn().getDefiningOp<arith::TruncFOp>() : arith::TruncFOp();
  return trunc && trunc.getType() == t ? trunc.getIn() : Value();
}

/// `v` without its roundings through `round` (16-bit chains round after
/// each torch op: `extf(truncf(x))`); `v` itself when `round` is null.
static Value peel(Value v, Type round) {
  while (round && unround(v, round))
    v = unround(v, round);
  return v;
}

/// The operands of `v`'s defining binary op `Op` (roundings through
/// `round` peeled off) as (the one `first` accepts, the other), trying both
/// orders; nullopt when none fits.
template <typename Op, typename Pred>
static std::optional<std::pair<Value, Value>> operandsOf(Value v, Type round, Pred first) {
  auto op = peel(v, round).getDefiningOp<Op>();
  if (!op)
    return std::nullopt;
  Value lhs = peel(op.getLhs(), round), rhs = peel(op.getRhs(), round);
  if (first(lhs))
    return std::make_pair(lhs, rhs);
  if (first(rhs))
    return std::make_pair(rhs, lhs);
  return std::nullopt;
}

/// Whether `c` is x^3: `powf(x, 3)`, `(x * x) * x` or `x * (x * x)`.
static bool isCube(Value c, Value x, Type round) {
  if (auto p = peel(c, round).getDefiningOp<math::PowFOp>())
    return peel(p.getLhs(), round) == x && isNearConst(p.getRhs(), 3.0);
  auto sq = [&](Value s) {
    auto m = s.getDefiningOp<arith::MulFOp>();
    return m && peel(m.getLhs(), round) == x && peel(m.getRhs(), round) == x;
  };
  auto cube = operandsOf<arith::MulFOp>(c, round, sq);
  return cube && cube->second == x;
}

/// The `x` of `y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (the
/// tanh GELU: kiln.gelu's tanh form, HF's NewGELUActivation), operands of
/// each product and sum in either order; with `round` (a 16-bit chain)
/// each step may be rounded through it. Null when `y` is not one.
static Value tanhGeluInput(Value y, Type round) {
  auto half = [](Value c) { return isNearConst(c, 0.5); };
  auto isHalfX = [&](Value v) { return operandsOf<arith::MulFOp>(v, round, half).has_value(); };
  auto outer = operandsOf<arith::MulFOp>(y, round, isHalfX);
  if (!outer)
    return Value();
  Value x = operandsOf<arith::MulFOp>(outer->first, round, half)->second;
  auto onePlus =
      operandsOf<arith::AddFOp>(outer->second, round, [](Value c) { return isNearConst(c, 1.0); });
  auto tanh = onePlus ? onePlus->second.getDefiningOp<math::TanhOp>() : math::TanhOp();
  if (!tanh)
    return Value();
  auto scaled = operandsOf<arith::MulFOp>(
      tanh.getOperand(), round, [](Value c) { return isNearConst(c, std::sqrt(2.0 / M_PI)); });
  auto poly =
      scaled ? operandsOf<arith::AddFOp>(scaled->second, round, [&](Value v) { return v == x; })
             : std::nullopt;
  auto cubic = poly ? operandsOf<arith::MulFOp>(poly->second, round,
                                                [](Value c) { return isNearConst(c, 0.044715); })
                    : std::nullopt;
  return cubic && isCube(cubic->second, x, round) ? x : Value();
}

/// The epilogue `g` applies to GEMM result `c` when `g` is a pointwise
/// generic over c's (M, N) reading c (identity map) and a bias row [N]
/// (map (d0, d1) -> (d1)) and yielding `c + bias` ("bias") or
/// `max(c + bias, 0)` ("bias_relu"); sets `bias` to the bias tensor.
/// A 16-bit GEMM (`in` f16/bf16, c its f32 accumulator) matches when g
/// rounds c to `in`, adds the `in` bias, optionally rounds and applies
/// ReLU, and yields the result rounded to `in`: cuBLASLt then writes
/// round(epilogue(acc + bias)) in `in` directly, rounding once where the
/// chain rounded two or three times (what torch's CUDA F.linear computes;
/// ReLU commutes with rounding).
static std::optional<std::string> matchEpilogue(linalg::GenericOp g, Value c, Type in,
                                                Value &bias) {
  auto ct = cast<RankedTensorType>(c.getType());
  bool sixteen = in != ct.getElementType();
  auto rt = RankedTensorType::get(ct.getShape(), in);
  unsigned rank = ct.getRank();
  if (!g.hasPureTensorSemantics() || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      rank < 2 || g.getNumParallelLoops() != rank || g.getNumLoops() != rank ||
      g.getStaticLoopRanges() != SmallVector<int64_t>(ct.getShape()) ||
      g.getResult(0).getType() != rt)
    return std::nullopt;
  MLIRContext *ctx = g.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap row = AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
  Block &block = g.getRegion().front();
  Value cArg, bArg;
  for (OpOperand *o : g.getDpsInputOperands()) {
    AffineMap map = g.getMatchingIndexingMap(o);
    auto tt = dyn_cast<RankedTensorType>(o->get().getType());
    if (o->get() == c && map == id && !cArg) {
      cArg = block.getArgument(o->getOperandNumber());
    } else if (tt && tt.getRank() == 1 && tt.getDimSize(0) == ct.getDimSize(rank - 1) &&
               tt.getElementType() == in && map == row) {
      bArg = block.getArgument(o->getOperandNumber());
      bias = o->get();
    }
  }
  if (!cArg || !bArg || g.getMatchingIndexingMap(g.getDpsInitOperand(0)) != id ||
      !block.getArguments().back().use_empty())
    return std::nullopt;
  auto isC = [&](Value v) { return sixteen ? unround(v, in) == cArg : v == cArg; };
  auto isB = [&](Value v) {
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    return sixteen ? ext && ext.getIn() == bArg : v == bArg;
  };
  auto isBiasAdd = [&](Value v) {
    auto add = v.getDefiningOp<arith::AddFOp>();
    return add &&
           ((isC(add.getLhs()) && isB(add.getRhs())) || (isB(add.getLhs()) && isC(add.getRhs())));
  };
  Value y = cast<linalg::YieldOp>(block.getTerminator()).getOperand(0);
  if (sixteen) { // the yielded value is rounded to `in` once more
    auto trunc = y.getDefiningOp<arith::TruncFOp>();
    if (!trunc)
      return std::nullopt;
    y = trunc.getIn();
  }
  if (isBiasAdd(y))
    return std::string("bias");
  auto isRoundedBiasAdd = [&](Value v) {
    return isBiasAdd(v) || (sixteen && unround(v, in) && isBiasAdd(unround(v, in)));
  };
  // cuBLASLt's GELU epilogue is the tanh form, computed in f32 on the
  // accumulator + bias; a 16-bit chain's roundings between the steps
  // (kiln.gelu rounds its input, GPT-2's spelled-out GELU every op) are
  // dropped: one rounding at the store, like the bias epilogues. The erf
  // GELU never matches: it differs from the tanh form by up to 4.7e-4,
  // which changes about a quarter of bf16 results by one ulp
  // (codegen/cuda/README.md); it stays GEMM + one exact kernel.
  if (Value x = tanhGeluInput(y, sixteen ? in : Type()); x && isBiasAdd(peel(x, in)))
    return std::string("bias_gelu_tanh");
  if (auto mx = y.getDefiningOp<arith::MaximumFOp>())
    if ((isRoundedBiasAdd(mx.getLhs()) && isFloatConst(mx.getRhs(), 0.0)) ||
        (isRoundedBiasAdd(mx.getRhs()) && isFloatConst(mx.getLhs(), 0.0)))
      return std::string("bias_relu");
  return std::nullopt;
}

LogicalResult FunctionEmitter::emitGemm(linalg::LinalgOp op, bool transB) {
  if (!op.hasPureTensorSemantics() || op->getNumResults() != 1)
    return op->emitError("CUDA emitter: expected a GEMM on tensors");
  Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1], c = op.getDpsInits()[0];
  auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(b.getType());
  auto ct = cast<RankedTensorType>(c.getType());
  // Sizes (dynamic dims: products of the arguments' symbols, passed to the
  // library per call; the operands' shared dims must agree at run time).
  FailureOr<SymShape> as = shapeOf(a), bs = shapeOf(b), cs = shapeOf(c);
  if (failed(as) || failed(bs) || failed(cs))
    return failure();
  Type in = at.getElementType(), outElt = ct.getElementType();
  auto isGemmFloat = [](Type t) { return t.isF32() || t.isF16() || t.isBF16() || t.isF64(); };
  // int8 x int8 -> int32 (codegen/common/Quant.cpp's qlinear): cuBLASLt's
  // int8 kernels take only A transposed / B not ("TN": both operands K
  // contiguous, kiln's x @ w^T) with K and N multiples of 4 (4-byte
  // aligned rows).
  bool int8 = in.isSignlessInteger(8) && outElt.isSignlessInteger(32);
  // float8 e4m3 x e4m3 -> f32 (kiln.quant.fp8() layers): cuBLASLt's fp8
  // kernels (sm_89+) take the same "TN" form, leading dims multiples of 16.
  bool fp8 = isa<Float8E4M3FNType>(in) && outElt.isF32();
  if (fp8 || int8) {
    const char *kind = fp8 ? "fp8" : "int8";
    int64_t multiple = fp8 ? 16 : 4;
    if (!transB || at.getRank() != 2 || bt.getElementType() != in)
      return op->emitError("CUDA emitter: an ") << kind << " GEMM must be a 2-d x @ w^T";
    int64_t k = at.getDimSize(1), n = bt.getDimSize(0);
    if (ShapedType::isDynamic(k) || ShapedType::isDynamic(n) || k % multiple != 0 ||
        n % multiple != 0)
      return op->emitError("CUDA emitter: ")
             << kind << " GEMM with K = " << k << ", N = " << n << ": cuBLASLt's " << kind
             << " GEMM needs both multiples of " << multiple;
  } else if (!isGemmFloat(in) || bt.getElementType() != in || !isGemmFloat(outElt)) {
    return op->emitError("CUDA emitter: GEMM of ")
           << in << " x " << bt.getElementType() << " -> " << outElt
           << " is not supported (floating-point, or int8 into int32)";
  }
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
  unsigned r = at.getRank();
  SymSize batch = e.batched ? (*as)[0] : SymSize(1), m = (*as)[r - 2], k = (*as)[r - 1];
  SymSize n = transB ? (*bs)[r - 2] : (*bs)[r - 1];
  requireEqual(k, transB ? (*bs)[r - 1] : (*bs)[r - 2]);
  if (e.batched)
    requireEqual(batch, (*bs)[0]);
  auto value = [](const SymSize &s) { return s.isStatic() ? s.value() : int64_t(-1); };
  e.batch = value(batch), e.m = value(m), e.n = value(n), e.k = value(k);
  if (!isStatic({batch, m, n, k}))
    e.dims = {batch.str(), m.str(), n.str(), k.str()};
  e.transB = transB;
  e.name = func.getSymName().str() + "_gemm" + std::to_string(gemmCount++);
  e.function = func.getSymName().str();
  e.inputType = *storageType(in);
  e.outputType = *storageType(outElt);
  e.location = locationString(op->getLoc());
  // Epilogue: the only consumer adds a bias row (and applies ReLU); the
  // library writes the consumer's result and no kernel is emitted for it.
  Value result = op->getResult(0), bias;
  linalg::GenericOp consumer;
  std::optional<std::string> epilogue;
  bool sixteenAcc = (in.isF16() || in.isBF16()) && outElt.isF32();
  if (gemmEpilogues && !e.batched && !fp8 && (in == outElt || sixteenAcc) && result.hasOneUse()) {
    // The consumer may read C through reshapes that keep N innermost (a
    // Linear on [B, S, K] inputs: [B*S, N] viewed as [B, S, N]).
    Value viewed = result;
    while (viewed.hasOneUse() &&
           isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(*viewed.getUsers().begin()))
      viewed = viewed.getUsers().begin()->getResult(0);
    consumer = viewed.hasOneUse() ? dyn_cast<linalg::GenericOp>(*viewed.getUsers().begin())
                                  : linalg::GenericOp();
    // N static (the bias row's length); M may be symbolic.
    if (consumer && !groups.count(consumer) && !grouped.contains(consumer) && e.n >= 0 &&
        cast<RankedTensorType>(viewed.getType()).getShape().back() == e.n)
      epilogue = matchEpilogue(consumer, viewed, in, bias);
  }
  int biasBuffer = epilogue ? materialize(bias) : -1;
  // With an epilogue the library writes the consumer's result (16-bit
  // GEMMs: in the input type, rounding the f32 accumulator once).
  bool fused = epilogue && biasBuffer >= 0;
  int out = newBuffer(fused ? RankedTensorType::get(ct.getShape(), in) : ct, "temporary", "", *cs);
  if (fused)
    e.outputType = *storageType(in);
  tensors[result] = TensorInfo{out, std::nullopt, false};
  e.args = {buffers[ai.buffer].name, buffers[bi.buffer].name, buffers[out].name};
  if (fused) {
    e.epilogue = *epilogue;
    e.args.push_back(buffers[biasBuffer].name);
    tensors[consumer.getResult(0)] = TensorInfo{out, std::nullopt, false};
    absorbed.insert(consumer);
  }
  addExtern(std::move(e));
  return success();
}

} // namespace mlir::kiln::cuda::detail
