//===- CudaEmitter.cpp - fused linalg on tensors → CUDA C++ -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Walks each func.func of fused linalg-on-tensors IR in order and assigns a
// buffer to every tensor value (arguments, generic results; expand/collapse
// shapes alias their source; tensor.empty and linalg.fill only supply output
// shapes and reduction inits), then prints one kernel per linalg.generic:
//   - all-parallel generic → grid-stride pointwise loop over the iteration
//     space, operands addressed through their indexing maps (broadcasting,
//     permuted reads), f16/bf16 loaded to float and rounded once at the store;
//   - parallel dims + one innermost reduction dim → one block per row, each
//     thread accumulates a strided slice, then a warp-shuffle + shared-memory
//     block reduction, thread 0 combines with the init and stores.
// Anything else is reported at the op's location.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitter.h"

#include "codegen/Passes.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <optional>

namespace mlir::kiln::cuda {

void buildCudaPreparePipeline(OpPassManager &pm) {
  buildOptimizePipeline(pm);
  buildFusedLinalgPipeline(pm);
}

static constexpr int64_t kPointwiseBlock = 256;
static constexpr int64_t kMaxPointwiseGrid = 4096;
static constexpr int64_t kMaxGrid = 65535;

int64_t pointwiseGridSize(int64_t numElements) {
  int64_t blocks = (numElements + kPointwiseBlock - 1) / kPointwiseBlock;
  return std::max<int64_t>(1, std::min(blocks, kMaxPointwiseGrid));
}

int64_t reductionBlockSize(int64_t rowLength) {
  int64_t want = (rowLength + 3) / 4; // ≥ 4 elements per thread
  int64_t threads = 32;
  while (threads < want && threads < 1024)
    threads *= 2;
  return threads;
}

namespace {

//===----------------------------------------------------------------------===//
// Types and literals
//===----------------------------------------------------------------------===//

/// Storage type of a tensor element in memory.
std::optional<std::string> storageType(Type t) {
  if (t.isF32())
    return std::string("float");
  if (t.isF16())
    return std::string("__half");
  if (t.isBF16())
    return std::string("__nv_bfloat16");
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
  if (t.isF16() || t.isBF16() || t.isF32())
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
    return isDouble ? "__longlong_as_double(0x7ff8000000000000LL)"
                    : "__int_as_float(0x7fc00000)";
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
    if (w > 32)
      return std::to_string(v) + "LL";
    if (v == INT32_MIN)
      return std::string("(-2147483647 - 1)");
    return std::to_string(v);
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Reduction combiners
//===----------------------------------------------------------------------===//

struct Combiner {
  const char *functor;  // kiln_* functor in the preamble
  const char *identity; // identity literal kind: "0", "1", "-inf", "+inf", "min", "max"
};

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
  return std::nullopt;
}

std::string identityLiteral(const Combiner &c, Type t) {
  bool isFloat = isa<FloatType>(t);
  bool isDouble = t.isF64();
  std::string id = c.identity;
  bool wideInt = !isFloat && t.getIntOrFloatBitWidth() > 32;
  if (id == "0")
    return isFloat ? floatLiteral(0.0, isDouble) : wideInt ? "0LL" : "0";
  if (id == "1")
    return isFloat ? floatLiteral(1.0, isDouble) : wideInt ? "1LL" : "1";
  if (id == "-inf" || id == "+inf")
    return floatLiteral(id == "-inf" ? -INFINITY : INFINITY, isDouble);
  unsigned w = t.getIntOrFloatBitWidth();
  if (id == "min")
    return w > 32 ? "(-9223372036854775807LL - 1)"
                  : "(" + std::to_string(-(int64_t(1) << (w - 1)) + 1) + " - 1)";
  return w > 32 ? "9223372036854775807LL" : std::to_string((int64_t(1) << (w - 1)) - 1);
}

//===----------------------------------------------------------------------===//
// Function emitter
//===----------------------------------------------------------------------===//

struct Buffer {
  std::string name;
  RankedTensorType type; // the buffer's own (first) shape
  std::string role;
};

/// A tensor value as the emitter sees it.
struct TensorInfo {
  int buffer = -1;                  // index into buffers
  std::optional<std::string> fill;  // linalg.fill value (literal)
  bool empty = false;               // tensor.empty (shape only)
};

class FunctionEmitter {
public:
  FunctionEmitter(func::FuncOp func, CudaModule &out, bool fuseRows)
      : func(func), os(text), out(out), fuseRows(fuseRows) {}

  LogicalResult emit();
  /// The function's launch plan (a comment) followed by its kernels.
  void print(llvm::raw_ostream &dst);

private:
  LogicalResult emitGeneric(linalg::GenericOp op);
  LogicalResult emitRowGroup(ArrayRef<linalg::GenericOp> group, ArrayRef<int64_t> rowShape,
                             int64_t rowLength);
  void planRowGroups();
  LogicalResult translateBody(linalg::GenericOp op, Operation *skip,
                              llvm::raw_ostream &body, const std::string &indent);
  std::optional<std::string> scalarOf(Value v, Operation *user);
  std::string offsetExpr(AffineMap map, RankedTensorType type,
                         ArrayRef<int64_t> loopRanges, bool linearOk,
                         const std::string &linear, llvm::SmallBitVector &usedDims);
  std::string loadExpr(const std::string &ptr, const std::string &off, Type elt);
  std::string storeValue(const std::string &v, Type elt);
  int newBuffer(RankedTensorType t, std::string role, std::string name = "");

  func::FuncOp func;
  std::string text;
  llvm::raw_string_ostream os;
  CudaModule &out;
  llvm::DenseMap<Value, TensorInfo> tensors;
  llvm::DenseMap<Value, std::string> names; // body values → C expressions
  std::vector<Buffer> buffers;
  std::vector<std::string> plan;
  int kernelCount = 0;
  int tempCount = 0;
  bool fuseRows;
  /// Row groups: first generic → (members, row shape, row length); other
  /// members → skipped when reached.
  struct RowGroup {
    SmallVector<linalg::GenericOp> members;
    SmallVector<int64_t> rows;
    int64_t length;
  };
  llvm::DenseMap<Operation *, RowGroup> groups;
  llvm::DenseSet<Operation *> grouped;
};

int FunctionEmitter::newBuffer(RankedTensorType t, std::string role, std::string name) {
  if (name.empty())
    name = "buf" + std::to_string(tempCount++);
  buffers.push_back({name, t, role});
  return int(buffers.size()) - 1;
}

std::string FunctionEmitter::loadExpr(const std::string &ptr, const std::string &off,
                                      Type elt) {
  std::string ref = ptr + "[" + off + "]";
  if (elt.isF16())
    return "__half2float(" + ref + ")";
  if (elt.isBF16())
    return "__bfloat162float(" + ref + ")";
  return ref;
}

std::string FunctionEmitter::storeValue(const std::string &v, Type elt) {
  if (elt.isF16())
    return "__float2half_rn(" + v + ")";
  if (elt.isBF16())
    return "__float2bfloat16_rn(" + v + ")";
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
                                        const std::string &linear,
                                        llvm::SmallBitVector &usedDims) {
  if (linearOk && map.isIdentity() && type.getShape() == loopRanges)
    return linear;
  ArrayRef<int64_t> shape = type.getShape();
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (int64_t k = int64_t(shape.size()) - 1; k >= 0; --k) {
    AffineExpr e = map.getResult(k);
    if (auto c = dyn_cast<AffineConstantExpr>(e); (c && c.getValue() == 0) || shape[k] == 1) {
      stride *= shape[k];
      continue;
    }
    std::string t = affineToC(e, usedDims);
    if (stride != 1)
      t += " * " + std::to_string(stride);
    terms.insert(terms.begin(), t);
    stride *= shape[k];
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
  InFlightDiagnostic d = user->emitError("CUDA emitter: operand is not a scalar constant or a kernel value");
  if (Operation *def = v.getDefiningOp())
    d.attachNote(def->getLoc()) << "defined by '" << def->getName() << "'";
  return std::nullopt;
}

/// Translates one scalar op into a C expression; nullopt if unsupported.
static std::optional<std::string>
translateOp(Operation *op, ArrayRef<std::string> a, bool dbl) {
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
      .Case<arith::NegFOp>([&](auto) { return "(-" + a[0] + ")"; })
      .Case<arith::MaximumFOp>([&](auto) { return "kiln_maximum(" + a[0] + ", " + a[1] + ")"; })
      .Case<arith::MinimumFOp>([&](auto) { return "kiln_minimum(" + a[0] + ", " + a[1] + ")"; })
      .Case<arith::MaxNumFOp, arith::MaxSIOp>([&](auto) { return "kiln_maxnum(" + a[0] + ", " + a[1] + ")"; })
      .Case<arith::MinNumFOp, arith::MinSIOp>([&](auto) { return "kiln_minnum(" + a[0] + ", " + a[1] + ")"; })
      .Case<arith::SelectOp>([&](auto) { return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")"; })
      .Case<arith::CmpFOp>([&](arith::CmpFOp c) -> std::optional<std::string> {
        const std::string &x = a[0], &y = a[1];
        using P = arith::CmpFPredicate;
        switch (c.getPredicate()) {
        case P::OEQ: return bin("==");
        case P::OGT: return bin(">");
        case P::OGE: return bin(">=");
        case P::OLT: return bin("<");
        case P::OLE: return bin("<=");
        case P::ONE: return "(" + x + " < " + y + " || " + x + " > " + y + ")";
        case P::UNE: return bin("!=");
        case P::UEQ: return "!(" + x + " < " + y + " || " + x + " > " + y + ")";
        case P::UGT: return "!(" + x + " <= " + y + ")";
        case P::UGE: return "!(" + x + " < " + y + ")";
        case P::ULT: return "!(" + x + " >= " + y + ")";
        case P::ULE: return "!(" + x + " > " + y + ")";
        case P::ORD: return "(" + x + " == " + x + " && " + y + " == " + y + ")";
        case P::UNO: return "(" + x + " != " + x + " || " + y + " != " + y + ")";
        case P::AlwaysTrue: return std::string("true");
        case P::AlwaysFalse: return std::string("false");
        }
        return std::nullopt;
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp c) -> std::optional<std::string> {
        using P = arith::CmpIPredicate;
        auto u = [&](const char *o) {
          return "((unsigned long long)" + a[0] + " " + o + " (unsigned long long)" + a[1] + ")";
        };
        switch (c.getPredicate()) {
        case P::eq: return bin("==");
        case P::ne: return bin("!=");
        case P::slt: return bin("<");
        case P::sle: return bin("<=");
        case P::sgt: return bin(">");
        case P::sge: return bin(">=");
        case P::ult: return u("<");
        case P::ule: return u("<=");
        case P::ugt: return u(">");
        case P::uge: return u(">=");
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
      .Case<math::PowFOp>([&](auto) { return f("pow"); })
      .Case<math::FmaOp>([&](auto) { return f("fma"); })
      .Case<math::AbsIOp>([&](auto) { return "abs(" + a[0] + ")"; })
      .Default([](Operation *) { return std::nullopt; });
}

LogicalResult FunctionEmitter::translateBody(linalg::GenericOp op, Operation *skip,
                                             llvm::raw_ostream &body,
                                             const std::string &indent) {
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
      else
        expr = "(float)" + *s;
    } else if (isa<arith::SIToFPOp, arith::FPToSIOp, arith::ExtSIOp, arith::TruncIOp,
                   arith::IndexCastOp, arith::UIToFPOp, arith::ExtUIOp, arith::FPToUIOp>(
                   inner)) {
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
      bool dbl = llvm::any_of(inner.getOperandTypes(), [](Type t) { return t.isF64(); }) ||
                 rt.isF64();
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

LogicalResult FunctionEmitter::emitGeneric(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics())
    return op.emitError("CUDA emitter: expected linalg.generic on tensors");
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return op.emitError("CUDA emitter: dynamic shapes are not supported yet");
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  unsigned numLoops = ranges.size();
  unsigned numReductions = llvm::count(iters, utils::IteratorType::reduction);
  bool isReduction = numReductions > 0;
  if (numReductions > 1 ||
      (isReduction && iters.back() != utils::IteratorType::reduction))
    return op.emitError("CUDA emitter: only all-parallel generics and row "
                        "reductions over the innermost dim are supported");
  if (isReduction && op.getNumDpsInits() != 1)
    return op.emitError("CUDA emitter: a reduction with several outputs is not supported");

  std::string kname = func.getSymName().str() + "_k" + std::to_string(kernelCount++);
  Block &block = op.getRegion().front();
  names.clear();

  int64_t total = 1;
  for (int64_t r : ranges)
    total *= r;
  // Index type: 32-bit when every offset fits.
  // `i += gridDim.x * blockDim.x` must not overflow an int past the bound.
  bool wide = total + kMaxPointwiseGrid * kPointwiseBlock >= (int64_t(1) << 31);
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      if (t.hasStaticShape() && t.getNumElements() >= (int64_t(1) << 31))
        wide = true;
  std::string ity = wide ? "long long" : "int";

  // Parameters and loads.
  std::string body;
  llvm::raw_string_ostream bs(body);
  std::string in = isReduction ? "      " : "    ";
  std::vector<std::string> params, args;
  llvm::SmallBitVector usedDims(numLoops);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  std::string loads;
  llvm::raw_string_ostream ls(loads);
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    bool isInit = op.isDpsInit(&operand);
    BlockArgument arg = block.getArgument(i);
    auto tt = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!tt) {
      // A scalar input: must be a constant.
      if (arg.use_empty())
        continue;
      auto s = scalarOf(operand.get(), op);
      if (!s)
        return failure();
      names[arg] = *s;
      continue;
    }
    TensorInfo info = tensors.lookup(operand.get());
    if (isInit) {
      if (!arg.use_empty() && !isReduction) {
        if (!info.fill)
          return op.emitError("CUDA emitter: a pointwise generic that reads its "
                              "output must start from a linalg.fill");
        names[arg] = *info.fill;
      }
      continue;
    }
    if (info.buffer < 0 && info.fill) {
      // A splat constant or a filled tensor read as an input: its value.
      names[arg] = *info.fill;
      continue;
    }
    if (info.buffer < 0)
      return op.emitError("CUDA emitter: input #")
             << i << " is not backed by a buffer (only function arguments and "
                     "generic results are; constant tensors are not supported yet)";
    if (arg.use_empty())
      continue;
    std::string p = "in" + std::to_string(params.size());
    params.push_back("const " + *storageType(tt.getElementType()) + " *__restrict__ " + p);
    args.push_back(buffers[info.buffer].name);
    std::string off = offsetExpr(maps[i], tt, ranges, !isReduction, "i", usedDims);
    auto vt = valueType(tt.getElementType());
    ls << in << "const " << *vt << " a" << i << " = "
       << loadExpr(p, off, tt.getElementType()) << ";\n";
    names[arg] = "a" + std::to_string(i);
  }

  // Output buffers.
  std::vector<int> outBuffers;
  for (auto [k, init] : llvm::enumerate(op.getDpsInits())) {
    auto tt = cast<RankedTensorType>(init.getType());
    if (!storageType(tt.getElementType()))
      return op.emitError("CUDA emitter: unsupported element type ") << tt.getElementType();
    int b = newBuffer(tt, "temporary");
    outBuffers.push_back(b);
    tensors[op->getResult(k)] = TensorInfo{b, std::nullopt, false};
    params.push_back(*storageType(tt.getElementType()) + " *__restrict__ out" +
                     std::to_string(k));
    args.push_back(buffers[b].name);
  }

  // Reduction: the combiner is the yielded op that reads the output block arg.
  Operation *combineOp = nullptr;
  std::optional<Combiner> combiner;
  std::string partial;
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  if (isReduction) {
    BlockArgument outArg = block.getArguments().back();
    combineOp = yield.getOperand(0).getDefiningOp();
    if (combineOp)
      combiner = combinerOf(combineOp);
    if (!combineOp || !combiner || combineOp->getNumOperands() != 2 ||
        !outArg.hasOneUse() || outArg.getUses().begin()->getOwner() != combineOp)
      return op.emitError("CUDA emitter: unsupported reduction body (expected "
                          "`yield combine(f(inputs), %out)` with add, mul, max or min)");
    Value x = combineOp->getOperand(0) == outArg ? combineOp->getOperand(1)
                                                 : combineOp->getOperand(0);
    if (x == outArg)
      return op.emitError("CUDA emitter: unsupported reduction body");
    if (failed(translateBody(op, combineOp, bs, in)))
      return failure();
    auto s = scalarOf(x, combineOp);
    if (!s)
      return failure();
    partial = *s;
  } else {
    if (failed(translateBody(op, nullptr, bs, in)))
      return failure();
  }
  bs.flush();
  ls.flush();

  // Dims decoded from the linear index (pointwise) or row (reduction).
  for (Operation &inner : block)
    if (auto idx = dyn_cast<linalg::IndexOp>(inner))
      usedDims.set(idx.getDim());
  SmallVector<std::string> results;
  std::string stores;
  llvm::raw_string_ostream ss(stores);
  llvm::SmallBitVector outDims(numLoops);
  for (auto [k, init] : llvm::enumerate(op.getDpsInits())) {
    auto tt = cast<RankedTensorType>(init.getType());
    unsigned opIdx = op.getNumDpsInputs() + k;
    std::string off = offsetExpr(maps[opIdx], tt, ranges, !isReduction, "i", outDims);
    std::string value;
    if (!isReduction) {
      auto v = scalarOf(yield.getOperand(k), yield);
      if (!v)
        return failure();
      value = *v;
    } else {
      TensorInfo info = tensors.lookup(init);
      if (!info.fill)
        return op.emitError("CUDA emitter: a reduction's init must be a linalg.fill");
      std::string id = identityLiteral(*combiner, tt.getElementType());
      value = *info.fill == id ? std::string("acc")
                               : std::string(combiner->functor) + "{}(" + *info.fill + ", acc)";
      ss << "    if (threadIdx.x == 0)\n";
    }
    ss << in << "out" << k << "[" << off << "] = "
       << storeValue(value, tt.getElementType()) << ";\n";
  }
  ss.flush();
  if (isReduction && outDims.test(numLoops - 1))
    return op.emitError("CUDA emitter: a reduction output indexed by the reduction dim");
  usedDims |= outDims;

  // Kernel text.
  Type accElt = cast<RankedTensorType>(op.getDpsInits()[0].getType()).getElementType();
  KernelInfo k;
  k.name = kname;
  k.function = func.getSymName().str();
  k.args = args;
  std::string loc;
  {
    llvm::raw_string_ostream l(loc);
    op.getLoc().print(l);
  }
  std::string shape = llvm::join(llvm::map_range(ranges, [](int64_t r) { return std::to_string(r); }), "x");
  if (!isReduction) {
    k.kind = KernelInfo::Pointwise;
    k.blockX = kPointwiseBlock;
    k.gridX = pointwiseGridSize(total);
    os << "// " << kname << ": pointwise over " << shape << " (" << total
       << " elements), " << loc << "\n";
    os << "extern \"C\" __global__ void __launch_bounds__(" << k.blockX << ") " << kname
       << "(" << llvm::join(params, ", ") << ") {\n";
    std::string stride = wide ? "(long long)gridDim.x * blockDim.x" : "gridDim.x * blockDim.x";
    std::string start = wide ? "(long long)blockIdx.x * blockDim.x + threadIdx.x"
                             : "blockIdx.x * blockDim.x + threadIdx.x";
    os << "  for (" << ity << " i = " << start << "; i < " << total << "; i += " << stride
       << ") {\n";
    int64_t s = 1;
    SmallVector<std::string> decode(numLoops);
    for (int64_t d = numLoops - 1; d >= 0; --d) {
      std::string e = s == 1 ? "i" : "i / " + std::to_string(s);
      if (ranges[d] == 1)
        e = "0";
      else if (d > 0)
        e = (s == 1 ? e : "(" + e + ")") + " % " + std::to_string(ranges[d]);
      decode[d] = e;
      s *= ranges[d];
    }
    for (unsigned d = 0; d < numLoops; ++d)
      if (usedDims.test(d))
        os << "    const " << ity << " d" << d << " = " << decode[d] << ";\n";
    os << loads << body << stores << "  }\n}\n\n";
  } else {
    k.kind = KernelInfo::RowReduction;
    int64_t rowLen = ranges.back();
    int64_t rows = total / std::max<int64_t>(rowLen, 1);
    k.blockX = reductionBlockSize(rowLen);
    k.gridX = std::max<int64_t>(1, std::min(rows, kMaxGrid));
    std::string acc = *valueType(accElt);
    std::string id = identityLiteral(*combiner, accElt);
    os << "// " << kname << ": row reduction (" << combiner->functor << ") over "
       << shape << ": " << rows << " rows of " << rowLen << ", one block per row, "
       << loc << "\n";
    os << "extern \"C\" __global__ void __launch_bounds__(" << k.blockX << ") " << kname
       << "(" << llvm::join(params, ", ") << ") {\n";
    os << "  __shared__ " << acc << " partials[32];\n";
    os << "  for (" << ity << " row = blockIdx.x; row < " << rows
       << "; row += gridDim.x) {\n";
    int64_t s = 1;
    SmallVector<std::string> decode(numLoops);
    for (int64_t d = int64_t(numLoops) - 2; d >= 0; --d) {
      std::string e = s == 1 ? "row" : "row / " + std::to_string(s);
      if (ranges[d] == 1)
        e = "0";
      else if (d > 0)
        e = (s == 1 ? e : "(" + e + ")") + " % " + std::to_string(ranges[d]);
      decode[d] = e;
      s *= ranges[d];
    }
    for (unsigned d = 0; d + 1 < numLoops; ++d)
      if (usedDims.test(d))
        os << "    const " << ity << " d" << d << " = " << decode[d] << ";\n";
    unsigned rd = numLoops - 1;
    os << "    " << acc << " acc = " << id << ";\n";
    os << "    for (" << ity << " d" << rd << " = threadIdx.x; d" << rd << " < " << rowLen
       << "; d" << rd << " += blockDim.x) {\n";
    os << loads << body;
    os << "      acc = " << combiner->functor << "{}(acc, " << partial << ");\n";
    os << "    }\n";
    os << "    acc = kiln_block_reduce<" << acc << ">(acc, partials, " << combiner->functor
       << "{}, " << id << ");\n";
    os << stores << "  }\n}\n\n";
  }
  plan.push_back(kname + "<<<" + std::to_string(k.gridX) + ", " + std::to_string(k.blockX) +
                 ">>>(" + llvm::join(args, ", ") + ")");
  out.kernels.push_back(std::move(k));
  return success();
}

//===----------------------------------------------------------------------===//
// Row groups: a row reduction followed by generics over the same rows
// (per-row pointwise, more row reductions, full-row pointwise) that read the
// group's per-row values only as per-row scalars → one kernel, one block
// per row; per-row values live in registers (broadcast through shared
// memory after each block reduction). Softmax and layer_norm become one
// kernel each.
//===----------------------------------------------------------------------===//

static Value stripReshapes(Value v) {
  while (true) {
    if (auto e = v.getDefiningOp<tensor::ExpandShapeOp>()) {
      v = e.getSrc();
      continue;
    }
    if (auto c = v.getDefiningOp<tensor::CollapseShapeOp>()) {
      v = c.getSrc();
      continue;
    }
    return v;
  }
}

static void usersThroughReshapes(Value v, SmallVectorImpl<Operation *> &users) {
  for (Operation *u : v.getUsers()) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(u))
      usersThroughReshapes(u->getResult(0), users);
    else
      users.push_back(u);
  }
}

enum RowKind { NotRow, FullRow, PerRow, RowReduce };

static RowKind classifyRow(linalg::GenericOp g, ArrayRef<int64_t> rows, int64_t length) {
  if (!g.hasPureTensorSemantics() || g.getNumDpsInits() != 1 || g.getNumResults() != 1)
    return NotRow;
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
    return NotRow;
  SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
  unsigned nred = llvm::count(iters, utils::IteratorType::reduction);
  SmallVector<int64_t> nonUnit;
  for (int64_t r : ranges)
    if (r != 1)
      nonUnit.push_back(r);
  SmallVector<int64_t> full(rows.begin(), rows.end());
  full.push_back(length);
  if (nred == 1) {
    if (iters.back() != utils::IteratorType::reduction || ranges.back() != length ||
        nonUnit != full)
      return NotRow;
    if (!stripReshapes(g.getDpsInits()[0]).getDefiningOp<linalg::FillOp>())
      return NotRow;
    return RowReduce;
  }
  if (nred != 0)
    return NotRow;
  if (nonUnit == full)
    return FullRow;
  if (ArrayRef<int64_t>(nonUnit) == rows)
    return PerRow;
  return NotRow;
}

/// Loop dim j of a row-group member → "0" (unit), "p<k>" (row coordinate)
/// or "col".
static SmallVector<std::string> rowDimExprs(linalg::GenericOp g, size_t numRowDims) {
  SmallVector<std::string> e;
  size_t k = 0;
  for (int64_t r : g.getStaticLoopRanges()) {
    if (r == 1)
      e.push_back("0");
    else if (k < numRowDims)
      e.push_back("p" + std::to_string(k++));
    else
      e.push_back("col"), ++k;
  }
  return e;
}

/// Whether operand `o` of `g` reads a per-row tensor at this row only.
static bool readsThisRow(linalg::GenericOp g, OpOperand &o, size_t numRowDims) {
  auto tt = dyn_cast<RankedTensorType>(o.get().getType());
  if (!tt)
    return false;
  SmallVector<std::string> dims = rowDimExprs(g, numRowDims);
  AffineMap map = g.getMatchingIndexingMap(&o);
  size_t next = 0;
  for (auto [k, e] : llvm::enumerate(map.getResults())) {
    if (tt.getDimSize(k) == 1)
      continue;
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || dims[d.getPosition()] != "p" + std::to_string(next))
      return false;
    ++next;
  }
  return next == numRowDims;
}

void FunctionEmitter::planRowGroups() {
  SmallVector<linalg::GenericOp> gens;
  for (Operation &op : func.getBody().front())
    if (auto g = dyn_cast<linalg::GenericOp>(op))
      gens.push_back(g);
  size_t i = 0;
  while (i < gens.size()) {
    linalg::GenericOp g0 = gens[i];
    SmallVector<int64_t> ranges = g0.getStaticLoopRanges();
    SmallVector<int64_t> rows;
    for (size_t k = 0; k + 1 < ranges.size(); ++k)
      if (ranges[k] != 1)
        rows.push_back(ranges[k]);
    int64_t length = ranges.empty() ? 1 : ranges.back();
    if (ranges.empty() || length == 1 || ShapedType::isDynamic(length) ||
        classifyRow(g0, rows, length) != RowReduce) {
      ++i;
      continue;
    }
    RowGroup group{{g0}, rows, length};
    llvm::DenseMap<Operation *, RowKind> kinds{{g0.getOperation(), RowReduce}};
    size_t j = i + 1;
    for (; j < gens.size(); ++j) {
      linalg::GenericOp g = gens[j];
      RowKind kind = classifyRow(g, rows, length);
      if (kind == NotRow)
        break;
      bool ok = true;
      for (OpOperand *o : g.getDpsInputOperands()) {
        auto prod = stripReshapes(o->get()).getDefiningOp<linalg::GenericOp>();
        if (!prod || !kinds.count(prod))
          continue;
        if (kinds[prod] == FullRow || !readsThisRow(g, *o, rows.size())) {
          ok = false;
          break;
        }
      }
      if (!ok)
        break;
      kinds[g] = kind;
      group.members.push_back(g);
    }
    if (group.members.size() >= 2) {
      for (size_t k = 1; k < group.members.size(); ++k)
        grouped.insert(group.members[k]);
      groups[g0] = group;
      i = j;
    } else {
      ++i;
    }
  }
}

LogicalResult FunctionEmitter::emitRowGroup(ArrayRef<linalg::GenericOp> members,
                                            ArrayRef<int64_t> rowShape, int64_t length) {
  std::string kname = func.getSymName().str() + "_k" + std::to_string(kernelCount++);
  int64_t rows = 1;
  for (int64_t r : rowShape)
    rows *= r;
  bool wide = rows * length + 1024 >= (int64_t(1) << 31);
  std::string ity = wide ? "long long" : "int";
  llvm::DenseSet<Operation *> memberSet;
  for (linalg::GenericOp g : members)
    memberSet.insert(g.getOperation());

  std::vector<std::string> params, args;
  llvm::DenseMap<int, std::string> paramOfBuffer;
  llvm::DenseMap<Value, std::string> rowVals;
  std::string shared, text, kinds;
  llvm::raw_string_ostream sh(shared), b(text);
  llvm::SmallBitVector usedRowDims(rowShape.size());
  int outCount = 0;

  for (size_t m = 0; m < members.size(); ++m) {
    linalg::GenericOp g = members[m];
    names.clear();
    RowKind kind = classifyRow(g, rowShape, length);
    SmallVector<int64_t> ranges = g.getStaticLoopRanges();
    SmallVector<std::string> dimExpr = rowDimExprs(g, rowShape.size());
    Block &block = g.getRegion().front();
    SmallVector<AffineMap> maps = g.getIndexingMapsArray();
    std::string in = kind == PerRow ? "      " : "        ";
    std::string loads, body;
    llvm::raw_string_ostream ls(loads), bs(body);
    llvm::SmallBitVector usedDims(ranges.size()), outDims(ranges.size());
    std::string r = "r" + std::to_string(m);

    for (OpOperand *operand : g.getDpsInputOperands()) {
      unsigned i = operand->getOperandNumber();
      BlockArgument arg = block.getArgument(i);
      if (arg.use_empty())
        continue;
      auto tt = dyn_cast<RankedTensorType>(operand->get().getType());
      if (!tt) {
        auto s = scalarOf(operand->get(), g);
        if (!s)
          return failure();
        names[arg] = *s;
        continue;
      }
      auto rv = rowVals.find(stripReshapes(operand->get()));
      if (rv != rowVals.end()) {
        names[arg] = rv->second;
        continue;
      }
      TensorInfo info = tensors.lookup(operand->get());
      // A reshape between the group's ops has not been walked yet: it
      // aliases its source's buffer.
      if (info.buffer < 0 && !info.fill)
        info = tensors.lookup(stripReshapes(operand->get()));
      if (info.buffer < 0 && info.fill) {
        names[arg] = *info.fill;
        continue;
      }
      if (info.buffer < 0)
        return g.emitError("CUDA emitter: input #")
               << i << " is not backed by a buffer";
      std::string p;
      auto pit = paramOfBuffer.find(info.buffer);
      if (pit != paramOfBuffer.end()) {
        p = pit->second;
      } else {
        p = "in" + std::to_string(paramOfBuffer.size());
        paramOfBuffer[info.buffer] = p;
        params.push_back("const " + *storageType(tt.getElementType()) + " *__restrict__ " + p);
        args.push_back(buffers[info.buffer].name);
      }
      std::string off = offsetExpr(maps[i], tt, ranges, false, "", usedDims);
      ls << in << "const " << *valueType(tt.getElementType()) << " a" << i << " = "
         << loadExpr(p, off, tt.getElementType()) << ";\n";
      names[arg] = "a" + std::to_string(i);
    }

    // Body (a reduction's combiner is applied to `acc` separately).
    auto yield = cast<linalg::YieldOp>(block.getTerminator());
    Operation *combineOp = nullptr;
    std::optional<Combiner> combiner;
    std::string partial;
    if (kind == RowReduce) {
      BlockArgument outArg = block.getArguments().back();
      combineOp = yield.getOperand(0).getDefiningOp();
      if (combineOp)
        combiner = combinerOf(combineOp);
      if (!combineOp || !combiner || combineOp->getNumOperands() != 2 ||
          !outArg.hasOneUse() || outArg.getUses().begin()->getOwner() != combineOp)
        return g.emitError("CUDA emitter: unsupported reduction body (expected "
                           "`yield combine(f(inputs), %out)` with add, mul, max or min)");
      Value x = combineOp->getOperand(0) == outArg ? combineOp->getOperand(1)
                                                   : combineOp->getOperand(0);
      if (failed(translateBody(g, combineOp, bs, in)))
        return failure();
      auto s = scalarOf(x, combineOp);
      if (!s)
        return failure();
      partial = *s;
    } else {
      BlockArgument outArg = block.getArguments().back();
      if (!outArg.use_empty())
        return g.emitError("CUDA emitter: a fused row op that reads its output");
      if (failed(translateBody(g, nullptr, bs, in)))
        return failure();
    }
    bs.flush();
    ls.flush();
    for (Operation &inner : block)
      if (auto idx = dyn_cast<linalg::IndexOp>(inner))
        usedDims.set(idx.getDim());

    // Output: stored when used outside the group (always for full rows).
    Value res = g.getResult(0);
    auto rt = cast<RankedTensorType>(res.getType());
    Type elt = rt.getElementType();
    if (!storageType(elt))
      return g.emitError("CUDA emitter: unsupported element type ") << elt;
    SmallVector<Operation *> users;
    usersThroughReshapes(res, users);
    bool store = kind == FullRow ||
                 llvm::any_of(users, [&](Operation *u) { return !memberSet.contains(u); });
    std::string outP, outOff;
    if (store) {
      int bi = newBuffer(rt, "temporary");
      tensors[res] = TensorInfo{bi, std::nullopt, false};
      outP = "out" + std::to_string(outCount++);
      params.push_back(*storageType(elt) + " *__restrict__ " + outP);
      args.push_back(buffers[bi].name);
      outOff = offsetExpr(maps[g.getNumDpsInputs()], rt, ranges, false, "", outDims);
    }
    auto defineDims = [&](const llvm::SmallBitVector &used, const std::string &ind) {
      std::string d;
      for (unsigned j = 0; j < ranges.size(); ++j)
        if (used.test(j)) {
          d += ind + "const " + ity + " d" + std::to_string(j) + " = " + dimExpr[j] + ";\n";
          if (dimExpr[j][0] == 'p')
            usedRowDims.set(std::stoi(dimExpr[j].substr(1)));
        }
      return d;
    };

    std::string vt = *valueType(elt);
    if (kind == RowReduce) {
      std::string id = identityLiteral(*combiner, elt);
      // The fill may come later in the block than the group's first op.
      auto fill = stripReshapes(g.getDpsInits()[0]).getDefiningOp<linalg::FillOp>();
      std::optional<std::string> initValue = scalarOf(fill.getInputs()[0], fill);
      if (!initValue)
        return failure();
      std::string value = *initValue == id
                              ? std::string("acc")
                              : std::string(combiner->functor) + "{}(" + *initValue + ", acc)";
      sh << "  __shared__ " << vt << " partials" << m << "[32];\n";
      sh << "  __shared__ " << vt << " s_" << r << ";\n";
      kinds += std::string(kinds.empty() ? "" : ", ") + combiner->functor;
      b << "    // " << r << ": row reduction (" << combiner->functor << ")\n";
      b << "    " << vt << " " << r << ";\n    {\n";
      b << "      " << vt << " acc = " << id << ";\n";
      b << "      for (" << ity << " col = threadIdx.x; col < " << length
        << "; col += blockDim.x) {\n";
      b << defineDims(usedDims, in) << loads << body;
      b << in << "acc = " << combiner->functor << "{}(acc, " << partial << ");\n";
      b << "      }\n";
      b << "      acc = kiln_block_reduce<" << vt << ">(acc, partials" << m << ", "
        << combiner->functor << "{}, " << id << ");\n";
      b << "      if (threadIdx.x == 0) {\n";
      b << "        s_" << r << " = " << value << ";\n";
      if (store)
        b << defineDims(outDims, "        ") << "        " << outP << "[" << outOff
          << "] = " << storeValue("s_" + r, elt) << ";\n";
      b << "      }\n      __syncthreads();\n";
      b << "      " << r << " = s_" << r << ";\n    }\n";
      rowVals[res] = r;
    } else if (kind == PerRow) {
      auto v = scalarOf(yield.getOperand(0), yield);
      if (!v)
        return failure();
      kinds += std::string(kinds.empty() ? "" : ", ") + "per-row";
      usedDims |= outDims;
      b << "    // " << r << ": per-row pointwise (every thread)\n";
      b << "    " << vt << " " << r << ";\n    {\n";
      b << defineDims(usedDims, in) << loads << body;
      b << in << r << " = " << *v << ";\n";
      if (store)
        b << in << "if (threadIdx.x == 0)\n"
          << in << "  " << outP << "[" << outOff << "] = " << storeValue(r, elt) << ";\n";
      b << "    }\n";
      rowVals[res] = r;
    } else {
      auto v = scalarOf(yield.getOperand(0), yield);
      if (!v)
        return failure();
      kinds += std::string(kinds.empty() ? "" : ", ") + "full-row";
      usedDims |= outDims;
      b << "    // full-row pointwise\n";
      b << "    for (" << ity << " col = threadIdx.x; col < " << length
        << "; col += blockDim.x) {\n";
      b << defineDims(usedDims, in) << loads << body;
      b << in << outP << "[" << outOff << "] = " << storeValue(*v, elt) << ";\n";
      b << "    }\n";
    }
  }
  sh.flush();
  b.flush();

  KernelInfo k;
  k.name = kname;
  k.function = func.getSymName().str();
  k.kind = KernelInfo::RowReduction;
  k.blockX = reductionBlockSize(length);
  k.gridX = std::max<int64_t>(1, std::min(rows, kMaxGrid));
  k.args = args;
  std::string loc;
  {
    llvm::raw_string_ostream l(loc);
    linalg::GenericOp first = members.front();
    first.getLoc().print(l);
  }
  os << "// " << kname << ": row group of " << members.size() << " fused generics (" << kinds
     << "): " << rows << " rows of " << length << ", one block per row, " << loc << "\n";
  os << "extern \"C\" __global__ void __launch_bounds__(" << k.blockX << ") " << kname << "("
     << llvm::join(params, ", ") << ") {\n";
  os << shared;
  os << "  for (" << ity << " row = blockIdx.x; row < " << rows << "; row += gridDim.x) {\n";
  int64_t s = 1;
  SmallVector<std::string> decode(rowShape.size());
  for (int64_t d = int64_t(rowShape.size()) - 1; d >= 0; --d) {
    std::string e = s == 1 ? "row" : "row / " + std::to_string(s);
    if (d > 0)
      e = (s == 1 ? e : "(" + e + ")") + " % " + std::to_string(rowShape[d]);
    decode[d] = e;
    s *= rowShape[d];
  }
  for (unsigned d = 0; d < rowShape.size(); ++d)
    if (usedRowDims.test(d))
      os << "    const " << ity << " p" << d << " = " << decode[d] << ";\n";
  os << text << "  }\n}\n\n";
  plan.push_back(kname + "<<<" + std::to_string(k.gridX) + ", " + std::to_string(k.blockX) +
                 ">>>(" + llvm::join(args, ", ") + ")");
  out.kernels.push_back(std::move(k));
  return success();
}

LogicalResult FunctionEmitter::emit() {
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto tt = dyn_cast<RankedTensorType>(arg.getType());
    if (!tt || !tt.hasStaticShape() || !storageType(tt.getElementType()))
      return func.emitError("CUDA emitter: argument #")
             << i << " must be a static tensor of a supported element type, got "
             << arg.getType();
    tensors[arg] = TensorInfo{newBuffer(tt, "input " + std::to_string(i),
                                        "arg" + std::to_string(i)),
                              std::nullopt, false};
  }
  if (fuseRows)
    planRowGroups();
  for (Operation &op : func.getBody().front()) {
    LogicalResult r =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> LogicalResult {
              if (isa<RankedTensorType>(c.getType())) {
                auto dense = dyn_cast<SplatElementsAttr>(c.getValue());
                if (dense)
                  if (auto lit = attrLiteral(dense.getSplatValue<TypedAttr>()))
                    tensors[c.getResult()] = TensorInfo{-1, *lit, false};
              }
              return success();
            })
            .Case<tensor::EmptyOp>([&](tensor::EmptyOp e) {
              tensors[e.getResult()] = TensorInfo{-1, std::nullopt, true};
              return success();
            })
            .Case<linalg::FillOp>([&](linalg::FillOp f) -> LogicalResult {
              auto lit = scalarOf(f.getInputs()[0], f);
              if (!lit)
                return failure();
              tensors[f.getResult(0)] = TensorInfo{-1, *lit, false};
              return success();
            })
            .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp>([&](Operation *r) {
              tensors[r->getResult(0)] = tensors.lookup(r->getOperand(0));
              return success();
            })
            .Case<linalg::GenericOp>([&](linalg::GenericOp g) -> LogicalResult {
              auto it = groups.find(g);
              if (it != groups.end())
                return emitRowGroup(it->second.members, it->second.rows, it->second.length);
              if (grouped.contains(g))
                return success();
              return emitGeneric(g);
            })
            .Case<func::ReturnOp>([&](func::ReturnOp ret) -> LogicalResult {
              for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
                TensorInfo info = tensors.lookup(v);
                if (info.buffer < 0)
                  return ret.emitError("CUDA emitter: result #")
                         << i << " is not produced by a kernel (constant results "
                                 "are not supported yet)";
                Buffer &b = buffers[info.buffer];
                std::string role = "result " + std::to_string(i);
                b.role = b.role == "temporary" ? role : b.role + ", " + role;
              }
              return success();
            })
            .Default([&](Operation *o) {
              return o->emitError("CUDA emitter: '")
                     << o->getName() << "' is not supported yet";
            });
    if (failed(r))
      return failure();
  }
  return success();
}

void FunctionEmitter::print(llvm::raw_ostream &dst) {
  std::string fname = func.getSymName().str();
  dst << "//===-- func @" << fname << ": " << plan.size() << " kernel(s) --===//\n";
  dst << "// Buffers (contiguous, row-major):\n";
  for (Buffer &b : buffers) {
    Type elt = b.type.getElementType();
    std::string shape = llvm::join(
        llvm::map_range(b.type.getShape(), [](int64_t d) { return std::to_string(d); }), "x");
    if (shape.empty())
      shape = "scalar";
    dst << "//   " << b.name << ": " << *storageType(elt) << "[" << shape << "], "
        << b.type.getNumElements() * byteWidth(elt) << " bytes, " << b.role << "\n";
    BufferInfo info;
    info.name = fname + "." + b.name;
    info.elementType = *storageType(elt);
    info.shape.assign(b.type.getShape().begin(), b.type.getShape().end());
    info.bytes = b.type.getNumElements() * byteWidth(elt);
    info.role = b.role;
    out.buffers.push_back(std::move(info));
  }
  dst << "// Launches, in order (grid, block):\n";
  for (const std::string &p : plan)
    dst << "//   " << p << "\n";
  dst << "\n";
  os.flush();
  dst << text;
}

} // namespace

static const char *kPreamble = R"cuda(

// NaN-propagating max/min (arith.maximumf/minimumf, torch.maximum/relu).
__device__ __forceinline__ float kiln_maximum(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}
__device__ __forceinline__ float kiln_minimum(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b);
}
__device__ __forceinline__ double kiln_maximum(double a, double b) {
  return (a != a || b != b) ? __longlong_as_double(0x7ff8000000000000LL) : fmax(a, b);
}
__device__ __forceinline__ double kiln_minimum(double a, double b) {
  return (a != a || b != b) ? __longlong_as_double(0x7ff8000000000000LL) : fmin(a, b);
}
// NaN-ignoring max/min (arith.maxnumf/minnumf) and integer max/min.
__device__ __forceinline__ float kiln_maxnum(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ float kiln_minnum(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double kiln_maxnum(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ double kiln_minnum(double a, double b) { return fmin(a, b); }
template <typename T> __device__ __forceinline__ T kiln_maxnum(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T kiln_minnum(T a, T b) { return a < b ? a : b; }

// Reduction combiners.
struct kiln_add { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct kiln_mul { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
struct kiln_maximum_op { template <typename T> __device__ T operator()(T a, T b) const { return kiln_maximum(a, b); } };
struct kiln_minimum_op { template <typename T> __device__ T operator()(T a, T b) const { return kiln_minimum(a, b); } };
struct kiln_maxnum_op { template <typename T> __device__ T operator()(T a, T b) const { return kiln_maxnum(a, b); } };
struct kiln_minnum_op { template <typename T> __device__ T operator()(T a, T b) const { return kiln_minnum(a, b); } };

// Block-wide reduction (blockDim.x a multiple of 32, at most 1024): warp
// shuffles, one partial per warp in shared memory, warp 0 reduces those.
// The result is valid in thread 0. Ends with a barrier so `partials` can be
// reused by the next row.
template <typename T, typename Op>
__device__ __forceinline__ T kiln_block_reduce(T v, T *partials, Op op, T identity) {
  for (int o = 16; o > 0; o >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    partials[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x >> 5) ? partials[lane] : identity;
    for (int o = 16; o > 0; o >>= 1)
      v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  }
  __syncthreads();
  return v;
}

)cuda";

FailureOr<CudaModule> emitCuda(ModuleOp module, const EmitOptions &options) {
  CudaModule result;
  bool failed_ = false;
  std::string kernels;
  llvm::raw_string_ostream os(kernels);
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    // Every function is tried so that all unsupported ops are reported.
    FunctionEmitter fe(func, result, options.fuseRows);
    if (failed(fe.emit())) {
      failed_ = true;
      continue;
    }
    fe.print(os);
  }
  if (failed_)
    return failure();
  os.flush();
  // Half-precision headers only when used (they are the slow part of NVRTC).
  bool half = kernels.find("__half") != std::string::npos;
  bool bf16 = kernels.find("__nv_bfloat16") != std::string::npos;
  result.source = "// Generated by kiln's CUDA emitter (codegen/cuda). Compile with NVRTC.\n";
  if (half)
    result.source += "#include <cuda_fp16.h>\n";
  if (bf16)
    result.source += "#include <cuda_bf16.h>\n";
  result.source += kPreamble;
  result.source += kernels;
  return result;
}

} // namespace mlir::kiln::cuda
