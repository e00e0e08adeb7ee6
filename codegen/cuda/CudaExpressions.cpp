//===- CudaExpressions.cpp - linalg body ops → CUDA C expressions ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// The scalar side of the CUDA emitter: element storage and compute types,
// literals (constants with 9/17 significant digits, ±inf/NaN as bit
// patterns), reduction combiners and their identities, operand addressing
// (indexing map → row-major offset, f16/bf16 loads and rounding stores), and
// the translation of a linalg.generic body (arith/math ops, casts,
// linalg.index) into `const T vN = ...;` lines. Shared by the kernel and
// row-group printers through CudaEmitterInternal.h.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/AffineExpr.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <cstdint>

namespace mlir::kiln::cuda::detail {

//===----------------------------------------------------------------------===//
// Types and literals
//===----------------------------------------------------------------------===//

std::optional<std::string> storageType(Type t) {
  if (t.isF32())
    return std::string("float");
  if (t.isF16())
    return std::string("__half");
  if (t.isBF16())
    return std::string("__nv_bfloat16");
  if (isa<Float8E4M3FNType>(t))
    return std::string("__nv_fp8_e4m3");
  if (t.isF64())
    return std::string("double");
  if (t.isInteger(1))
    return std::string("bool");
  if (t.isInteger(8))
    return std::string("signed char");
  if (t.isInteger(16))
    return std::string("short");
  if (t.isInteger(32))
    return std::string("int");
  if (t.isInteger(64))
    return std::string("long long");
  return std::nullopt;
}

/// Type of a scalar in the kernel body: f16/bf16/f32 all compute in float.
std::optional<std::string> valueType(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32() || isa<Float8E4M3FNType>(t))
    return std::string("float");
  if (t.isIndex())
    return std::string("long long");
  return storageType(t);
}

int64_t byteWidth(Type t) {
  if (t.isInteger(1))
    return 1;
  return (t.getIntOrFloatBitWidth() + 7) / 8;
}

std::string floatLiteral(double v, bool isDouble) {
  if (std::isnan(v))
    return isDouble ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) {
    if (isDouble)
      return v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                   : "__longlong_as_double((long long)0xfff0000000000000ULL)";
    return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float((int)0xff800000u)";
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(isDouble ? "%.17g" : "%.9g", v);
  os.flush();
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  if (!isDouble)
    s += "f";
  return s;
}

std::optional<std::string> attrLiteral(TypedAttr attr) {
  if (auto f = dyn_cast<FloatAttr>(attr))
    return floatLiteral(f.getValueAsDouble(), f.getType().isF64());
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    if (i.getType().isInteger(1))
      return std::string(i.getValue().isZero() ? "false" : "true");
    int64_t v = i.getValue().getSExtValue();
    unsigned w = i.getType().isIndex() ? 64 : i.getType().getIntOrFloatBitWidth();
    // INT64_MIN / INT32_MIN have no literal of their own type in C++
    // (`-9223372036854775808LL` negates an unsigned literal).
    if (w > 32)
      return v == INT64_MIN ? std::string("(-9223372036854775807LL - 1)")
                            : std::to_string(v) + "LL";
    if (v == INT32_MIN)
      return std::string("(-2147483647 - 1)");
    return std::to_string(v);
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Reduction combiners
//===----------------------------------------------------------------------===//

std::optional<Combiner> combinerOf(Operation *op) {
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return Combiner{"kiln_add", "0"};
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return Combiner{"kiln_mul", "1"};
  if (isa<arith::MaximumFOp>(op))
    return Combiner{"kiln_maximum_op", "-inf"};
  if (isa<arith::MinimumFOp>(op))
    return Combiner{"kiln_minimum_op", "+inf"};
  if (isa<arith::MaxNumFOp>(op))
    return Combiner{"kiln_maxnum_op", "-inf"};
  if (isa<arith::MinNumFOp>(op))
    return Combiner{"kiln_minnum_op", "+inf"};
  if (isa<arith::MaxSIOp>(op))
    return Combiner{"kiln_maxnum_op", "min"};
  if (isa<arith::MinSIOp>(op))
    return Combiner{"kiln_minnum_op", "max"};
  // any()/all() (bool max/min as or/and).
  if (isa<arith::OrIOp>(op))
    return Combiner{"kiln_or", "0"};
  if (isa<arith::AndIOp>(op))
    return Combiner{"kiln_and", "ones"};
  return std::nullopt;
}

std::string identityLiteral(const Combiner &c, Type t) {
  bool isFloat = isa<FloatType>(t);
  bool isDouble = t.isF64();
  std::string id = c.identity;
  bool wideInt = !isFloat && t.getIntOrFloatBitWidth() > 32;
  if (id == "0")
    return isFloat ? floatLiteral(0.0, isDouble) : t.isInteger(1) ? "false" : wideInt ? "0LL" : "0";
  if (id == "1")
    return isFloat ? floatLiteral(1.0, isDouble) : wideInt ? "1LL" : "1";
  if (id == "ones")
    return t.isInteger(1) ? "true" : wideInt ? "-1LL" : "-1";
  if (id == "-inf" || id == "+inf")
    return floatLiteral(id == "-inf" ? -INFINITY : INFINITY, isDouble);
  unsigned w = t.getIntOrFloatBitWidth();
  if (id == "min")
    return w > 32 ? "(-9223372036854775807LL - 1)"
                  : "(" + std::to_string(-(int64_t(1) << (w - 1)) + 1) + " - 1)";
  return w > 32 ? "9223372036854775807LL" : std::to_string((int64_t(1) << (w - 1)) - 1);
}

std::string combineWithInit(const Combiner &c, const std::string &init, const std::string &id) {
  return init == id ? std::string("acc") : std::string(c.functor) + "{}(" + init + ", acc)";
}

std::string locationString(Location loc) {
  std::string s;
  llvm::raw_string_ostream l(s);
  loc.print(l);
  l.flush();
  return s;
}

//===----------------------------------------------------------------------===//
// Operand addressing and body translation
//===----------------------------------------------------------------------===//

std::string FunctionEmitter::loadExpr(const std::string &ptr, const std::string &off, Type elt) {
  std::string ref = ptr + "[" + off + "]";
  if (elt.isF16())
    return "__half2float(" + ref + ")";
  if (elt.isBF16())
    return "__bfloat162float(" + ref + ")";
  if (isa<Float8E4M3FNType>(elt))
    return "float(" + ref + ")";
  return ref;
}

std::string FunctionEmitter::storeValue(const std::string &v, Type elt) {
  if (elt.isF16())
    return "__float2half_rn(" + v + ")";
  if (elt.isBF16())
    return "__float2bfloat16_rn(" + v + ")";
  if (isa<Float8E4M3FNType>(elt)) // round to nearest even, saturating at ±448
    return "__nv_fp8_e4m3(" + v + ")";
  return v;
}

/// C expression of an affine expression over loop indices d0, d1, ...
static std::string affineToC(AffineExpr e, llvm::SmallBitVector &used) {
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    used.set(d.getPosition());
    return "d" + std::to_string(d.getPosition());
  }
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return std::to_string(c.getValue());
  auto b = cast<AffineBinaryOpExpr>(e);
  std::string l = affineToC(b.getLHS(), used), r = affineToC(b.getRHS(), used);
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return "(" + l + " + " + r + ")";
  case AffineExprKind::Mul:
    return "(" + l + " * " + r + ")";
  case AffineExprKind::Mod:
    return "(" + l + " % " + r + ")";
  case AffineExprKind::FloorDiv:
    return "(" + l + " / " + r + ")";
  case AffineExprKind::CeilDiv:
    return "((" + l + " + " + r + " - 1) / " + r + ")";
  default:
    return "?";
  }
}

std::string FunctionEmitter::offsetExpr(AffineMap map, RankedTensorType type,
                                        ArrayRef<int64_t> loopRanges, bool linearOk,
                                        const std::string &linear, llvm::SmallBitVector &usedDims) {
  return offsetExpr(map, staticShape(type.getShape()), staticShape(loopRanges), linearOk, linear,
                    usedDims);
}

std::string FunctionEmitter::offsetExpr(AffineMap map, ArrayRef<SymSize> shape,
                                        ArrayRef<SymSize> loopRanges, bool linearOk,
                                        const std::string &linear, llvm::SmallBitVector &usedDims) {
  if (linearOk && map.isIdentity() && shape == loopRanges)
    return linear;
  std::vector<std::string> terms;
  SymSize stride;
  for (int64_t k = int64_t(shape.size()) - 1; k >= 0; --k) {
    AffineExpr e = map.getResult(k);
    if (auto c = dyn_cast<AffineConstantExpr>(e); (c && c.getValue() == 0) || shape[k].isOne()) {
      stride = stride * shape[k];
      continue;
    }
    std::string t = affineToC(e, usedDims);
    if (!stride.isOne())
      t += " * " + stride.str();
    terms.insert(terms.begin(), t);
    stride = stride * shape[k];
  }
  if (terms.empty())
    return "0";
  return llvm::join(terms, " + ");
}

std::optional<std::string> FunctionEmitter::scalarOf(Value v, Operation *user) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    if (auto lit = attrLiteral(c.getValue()))
      return *lit;
  // A size computed outside the kernel (`tensor.dim` of a dynamic tensor,
  // e.g. an embedding's row count in its bounds check): the symbols'
  // polynomial, which dynamic kernels take as parameters.
  if (Operation *def = v.getDefiningOp(); def && v.getType().isIndex() &&
                                          isa<func::FuncOp>(def->getParentOp()) &&
                                          !fplan.symbols.empty()) {
    FailureOr<SymSize> size = sizeOf(v, user);
    if (failed(size))
      return std::nullopt;
    return "(" + size->str() + ")";
  }
  InFlightDiagnostic d =
      user->emitError("CUDA emitter: operand is not a scalar constant or a kernel value");
  if (Operation *def = v.getDefiningOp())
    d.attachNote(def->getLoc()) << "defined by '" << def->getName() << "'";
  return std::nullopt;
}

/// Translates one scalar op into a C expression; nullopt if unsupported.
static std::optional<std::string> translateOp(Operation *op, ArrayRef<std::string> a, bool dbl) {
  auto f = [&](const char *name) {
    std::string s = std::string(name) + (dbl ? "" : "f") + "(" + a[0];
    for (size_t i = 1; i < a.size(); ++i)
      s += ", " + a[i];
    return s + ")";
  };
  auto bin = [&](const char *o) { return "(" + a[0] + " " + o + " " + a[1] + ")"; };
  return llvm::TypeSwitch<Operation *, std::optional<std::string>>(op)
      .Case<arith::AddFOp, arith::AddIOp>([&](auto) { return bin("+"); })
      .Case<arith::SubFOp, arith::SubIOp>([&](auto) { return bin("-"); })
      .Case<arith::MulFOp, arith::MulIOp>([&](auto) { return bin("*"); })
      .Case<arith::DivFOp, arith::DivSIOp>([&](auto) { return bin("/"); })
      .Case<arith::RemSIOp>([&](auto) { return bin("%"); })
      .Case<arith::RemFOp>([&](auto) { return f("fmod"); })
      .Case<arith::AndIOp>([&](auto) { return bin("&"); })
      .Case<arith::OrIOp>([&](auto) { return bin("|"); })
      .Case<arith::XOrIOp>([&](auto) { return bin("^"); })
      .Case<arith::ShLIOp>([&](auto) { return bin("<<"); })
      .Case<arith::ShRSIOp>([&](auto) { return bin(">>"); })
      .Case<arith::NegFOp>([&](auto) { return "(-" + a[0] + ")"; })
      .Case<arith::MaximumFOp>([&](auto) { return "kiln_maximum(" + a[0] + ", " + a[1] + ")"; })
      .Case<arith::MinimumFOp>([&](auto) { return "kiln_minimum(" + a[0] + ", " + a[1] + ")"; })
      .Case<arith::MaxNumFOp, arith::MaxSIOp>(
          [&](auto) { return "kiln_maxnum(" + a[0] + ", " + a[1] + ")"; })
      .Case<arith::MinNumFOp, arith::MinSIOp>(
          [&](auto) { return "kiln_minnum(" + a[0] + ", " + a[1] + ")"; })
      .Case<arith::SelectOp>([&](auto) { return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")"; })
      .Case<arith::CmpFOp>([&](arith::CmpFOp c) -> std::optional<std::string> {
        const std::string &x = a[0], &y = a[1];
        using P = arith::CmpFPredicate;
        switch (c.getPredicate()) {
        case P::OEQ:
          return bin("==");
        case P::OGT:
          return bin(">");
        case P::OGE:
          return bin(">=");
        case P::OLT:
          return bin("<");
        case P::OLE:
          return bin("<=");
        case P::ONE:
          return "(" + x + " < " + y + " || " + x + " > " + y + ")";
        case P::UNE:
          return bin("!=");
        case P::UEQ:
          return "!(" + x + " < " + y + " || " + x + " > " + y + ")";
        case P::UGT:
          return "!(" + x + " <= " + y + ")";
        case P::UGE:
          return "!(" + x + " < " + y + ")";
        case P::ULT:
          return "!(" + x + " >= " + y + ")";
        case P::ULE:
          return "!(" + x + " > " + y + ")";
        case P::ORD:
          return "(" + x + " == " + x + " && " + y + " == " + y + ")";
        case P::UNO:
          return "(" + x + " != " + x + " || " + y + " != " + y + ")";
        case P::AlwaysTrue:
          return std::string("true");
        case P::AlwaysFalse:
          return std::string("false");
        }
        return std::nullopt;
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp c) -> std::optional<std::string> {
        using P = arith::CmpIPredicate;
        auto u = [&](const char *o) {
          return "((unsigned long long)" + a[0] + " " + o + " (unsigned long long)" + a[1] + ")";
        };
        switch (c.getPredicate()) {
        case P::eq:
          return bin("==");
        case P::ne:
          return bin("!=");
        case P::slt:
          return bin("<");
        case P::sle:
          return bin("<=");
        case P::sgt:
          return bin(">");
        case P::sge:
          return bin(">=");
        case P::ult:
          return u("<");
        case P::ule:
          return u("<=");
        case P::ugt:
          return u(">");
        case P::uge:
          return u(">=");
        }
        return std::nullopt;
      })
      .Case<math::ExpOp>([&](auto) { return f("exp"); })
      .Case<math::Exp2Op>([&](auto) { return f("exp2"); })
      .Case<math::ExpM1Op>([&](auto) { return f("expm1"); })
      .Case<math::LogOp>([&](auto) { return f("log"); })
      .Case<math::Log2Op>([&](auto) { return f("log2"); })
      .Case<math::Log1pOp>([&](auto) { return f("log1p"); })
      .Case<math::TanhOp>([&](auto) { return f("tanh"); })
      .Case<math::ErfOp>([&](auto) { return f("erf"); })
      .Case<math::SqrtOp>([&](auto) { return f("sqrt"); })
      .Case<math::RsqrtOp>([&](auto) { return f("rsqrt"); })
      .Case<math::AbsFOp>([&](auto) { return f("fabs"); })
      .Case<math::SinOp>([&](auto) { return f("sin"); })
      .Case<math::CosOp>([&](auto) { return f("cos"); })
      .Case<math::FloorOp>([&](auto) { return f("floor"); })
      .Case<math::CeilOp>([&](auto) { return f("ceil"); })
      .Case<math::RoundOp>([&](auto) { return f("round"); })
      .Case<math::TruncOp>([&](auto) { return f("trunc"); })
      // Round half to even: rint in the default rounding mode.
      .Case<math::RoundEvenOp>([&](auto) { return f("rint"); })
      .Case<math::TanOp>([&](auto) { return f("tan"); })
      .Case<math::AtanOp>([&](auto) { return f("atan"); })
      .Case<math::PowFOp>([&](auto) { return f("pow"); })
      .Case<math::FmaOp>([&](auto) { return f("fma"); })
      .Case<math::CopySignOp>([&](auto) { return f("copysign"); })
      .Case<math::AbsIOp>([&](auto) { return "abs(" + a[0] + ")"; })
      .Default([](Operation *) { return std::nullopt; });
}

LogicalResult FunctionEmitter::translateBody(linalg::GenericOp op, Operation *skip,
                                             llvm::raw_ostream &body, const std::string &indent) {
  int counter = 0;
  for (Operation &inner : op.getRegion().front().without_terminator()) {
    if (&inner == skip)
      continue;
    if (inner.getNumResults() != 1)
      return inner.emitError("CUDA emitter: unsupported op '")
             << inner.getName() << "' in a linalg.generic body";
    Type rt = inner.getResult(0).getType();
    std::optional<std::string> ct = valueType(rt);
    if (!ct)
      return inner.emitError("CUDA emitter: unsupported scalar type ") << rt;
    std::string expr;
    if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
      expr = "(long long)d" + std::to_string(idx.getDim());
    } else if (auto ex = dyn_cast<tensor::ExtractOp>(inner)) {
      auto e = translateExtract(ex);
      if (!e)
        return failure();
      expr = *e;
    } else if (auto c = dyn_cast<arith::ConstantOp>(inner)) {
      auto lit = attrLiteral(c.getValue());
      if (!lit)
        return inner.emitError("CUDA emitter: unsupported constant");
      names[inner.getResult(0)] = *lit;
      continue;
    } else if (isa<arith::ExtFOp>(inner)) {
      // f16/bf16 → f32 is exact and the value is already a float.
      auto s = scalarOf(inner.getOperand(0), &inner);
      if (!s)
        return failure();
      if (!rt.isF64()) {
        names[inner.getResult(0)] = *s;
        continue;
      }
      expr = "(double)" + *s;
    } else if (auto t = dyn_cast<arith::TruncFOp>(inner)) {
      auto s = scalarOf(t.getIn(), &inner);
      if (!s)
        return failure();
      // Explicit casts round (torch's .half() inside a fused chain).
      if (rt.isF16())
        expr = "__half2float(__float2half_rn(" + *s + "))";
      else if (rt.isBF16())
        expr = "__bfloat162float(__float2bfloat16_rn(" + *s + "))";
      else if (isa<Float8E4M3FNType>(rt))
        expr = "float(__nv_fp8_e4m3(" + *s + "))";
      else
        expr = "(float)" + *s;
    } else if (isa<arith::SIToFPOp, arith::FPToSIOp, arith::ExtSIOp, arith::TruncIOp,
                   arith::IndexCastOp, arith::UIToFPOp, arith::ExtUIOp, arith::FPToUIOp>(inner)) {
      auto s = scalarOf(inner.getOperand(0), &inner);
      if (!s)
        return failure();
      Type from = inner.getOperand(0).getType();
      std::string src = *s;
      if (isa<arith::UIToFPOp, arith::ExtUIOp>(inner) && from.isInteger(1))
        src = "(int)" + src;
      else if (isa<arith::UIToFPOp, arith::ExtUIOp>(inner))
        src = "(unsigned " + *storageType(from) + ")" + src;
      expr = "(" + *ct + ")" + src;
      if (isa<arith::SIToFPOp, arith::UIToFPOp>(inner) && (rt.isF16() || rt.isBF16()))
        expr = rt.isF16() ? "__half2float(__float2half_rn(" + expr + "))"
                          : "__bfloat162float(__float2bfloat16_rn(" + expr + "))";
    } else {
      SmallVector<std::string> args;
      for (Value v : inner.getOperands()) {
        auto s = scalarOf(v, &inner);
        if (!s)
          return failure();
        args.push_back(*s);
      }
      bool dbl =
          llvm::any_of(inner.getOperandTypes(), [](Type t) { return t.isF64(); }) || rt.isF64();
      auto e = translateOp(&inner, args, dbl);
      if (!e)
        return inner.emitError("CUDA emitter: unsupported op '")
               << inner.getName() << "' in a linalg.generic body";
      expr = *e;
    }
    std::string name = "v" + std::to_string(counter++);
    body << indent << "const " << *ct << " " << name << " = " << expr << ";\n";
    names[inner.getResult(0)] = name;
  }
  return success();
}

FailureOr<ReductionBody> FunctionEmitter::translateReductionBody(linalg::GenericOp op,
                                                                 llvm::raw_ostream &body,
                                                                 const std::string &indent) {
  Block &block = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  BlockArgument outArg = block.getArguments().back();
  Operation *combineOp = yield.getOperand(0).getDefiningOp();
  std::optional<Combiner> combiner;
  if (combineOp)
    combiner = combinerOf(combineOp);
  if (!combineOp || !combiner || combineOp->getNumOperands() != 2 || !outArg.hasOneUse() ||
      outArg.getUses().begin()->getOwner() != combineOp)
    return op.emitError("CUDA emitter: unsupported reduction body (expected "
                        "`yield combine(f(inputs), %out)` with add, mul, max or min)");
  Value x =
      combineOp->getOperand(0) == outArg ? combineOp->getOperand(1) : combineOp->getOperand(0);
  if (x == outArg)
    return op.emitError("CUDA emitter: unsupported reduction body");
  if (failed(translateBody(op, combineOp, body, indent)))
    return failure();
  auto s = scalarOf(x, combineOp);
  if (!s)
    return failure();
  return ReductionBody{*combiner, *s};
}

} // namespace mlir::kiln::cuda::detail
