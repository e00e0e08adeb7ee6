//===- SymbolicSizes.cpp - Python ints computed from symbolic sizes ------===//
// SPDX-License-Identifier: Apache-2.0
//
// A read of a symbolic size (`x.shape[1]` of a `?` dim) is a SymInt var
// whose symbol is found by following the ops that built `x` back to a graph
// input dim (symbolOfDim). Arithmetic on SymInts builds a SizeExpr;
// comparisons and branches are decided by the captured values and guarded
// (Capture::sizeGuards, checked per call by the entry, as Dynamo's shape
// guards); factories of a symbolic size (torch.arange(s), torch.zeros(b, s))
// are built from the input that carries the symbol, so the graph reads the
// size from that input at run time. The shadow static capture (hook/CompileDriver.cpp)
// runs the same code with static types and must build the same graph.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include <functional>
#include <set>

namespace kiln {

using mlir::RankedTensorType;
using mlir::Value;
using Op = SizeExpr::Op;

SizeExprP symExpr(int64_t sym) {
  auto e = std::make_shared<SizeExpr>();
  e->op = Op::Sym;
  e->value = sym;
  return e;
}

bool evalSizeExpr(const SizeExpr &e, llvm::ArrayRef<int64_t> symbols, int64_t &out) {
  if (e.op == Op::Sym) {
    out = symbols[e.value];
    return true;
  }
  if (e.op == Op::Const) {
    out = e.value;
    return true;
  }
  int64_t a, b;
  if (!evalSizeExpr(*e.lhs, symbols, a) || !evalSizeExpr(*e.rhs, symbols, b))
    return false;
  switch (e.op) {
  case Op::Add:
    out = a + b;
    return true;
  case Op::Sub:
    out = a - b;
    return true;
  case Op::Mul:
    out = a * b;
    return true;
  case Op::FloorDiv:
  case Op::Mod: {
    if (b == 0)
      return false;
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) { // Python floors
      q -= 1;
      r += b;
    }
    out = e.op == Op::FloorDiv ? q : r;
    return true;
  }
  default:
    return false;
  }
}

std::string sizeExprText(const SizeExpr &e) {
  if (e.op == Op::Sym)
    return "s" + std::to_string(e.value);
  if (e.op == Op::Const)
    return std::to_string(e.value);
  const char *op = e.op == Op::Add        ? " + "
                   : e.op == Op::Sub      ? " - "
                   : e.op == Op::Mul      ? " * "
                   : e.op == Op::FloorDiv ? " // "
                                          : " % ";
  return "(" + sizeExprText(*e.lhs) + op + sizeExprText(*e.rhs) + ")";
}

namespace {

SizeExprP constExpr(int64_t v) {
  auto e = std::make_shared<SizeExpr>();
  e->value = v;
  return e;
}

/// `e` as sum(coeff * symbol) + constant when it is affine.
bool linearForm(const SizeExpr &e, std::map<int64_t, int64_t> &coeffs, int64_t &c, int64_t scale) {
  switch (e.op) {
  case Op::Sym:
    coeffs[e.value] += scale;
    return true;
  case Op::Const:
    c += scale * e.value;
    return true;
  case Op::Add:
    return linearForm(*e.lhs, coeffs, c, scale) && linearForm(*e.rhs, coeffs, c, scale);
  case Op::Sub:
    return linearForm(*e.lhs, coeffs, c, scale) && linearForm(*e.rhs, coeffs, c, -scale);
  case Op::Mul:
    if (e.lhs->op == Op::Const)
      return linearForm(*e.rhs, coeffs, c, scale * e.lhs->value);
    if (e.rhs->op == Op::Const)
      return linearForm(*e.lhs, coeffs, c, scale * e.rhs->value);
    return false;
  default:
    return false;
  }
}

/// `e` simplified: an affine expression that is one symbol or a constant
/// becomes that leaf (`(s0 + 3) - 3` is `s0`).
SizeExprP simplify(SizeExprP e) {
  std::map<int64_t, int64_t> coeffs;
  int64_t c = 0;
  if (!linearForm(*e, coeffs, c, 1))
    return e;
  for (auto it = coeffs.begin(); it != coeffs.end();)
    it = it->second == 0 ? coeffs.erase(it) : std::next(it);
  if (coeffs.empty())
    return constExpr(c);
  if (coeffs.size() == 1 && coeffs.begin()->second == 1 && c == 0) {
    auto s = std::make_shared<SizeExpr>();
    s->op = Op::Sym;
    s->value = coeffs.begin()->first;
    return s;
  }
  return e;
}

/// A canonical text of affine `e` (`2*s0+s1+3`): equal for equal affine
/// forms (`(s0 + 1) + 1` and `s0 + 2`); "" when `e` is not affine.
std::string affineKey(const SizeExpr &e) {
  std::map<int64_t, int64_t> coeffs;
  int64_t c = 0;
  if (!linearForm(e, coeffs, c, 1))
    return "";
  std::string key;
  for (auto [sym, k] : coeffs)
    if (k)
      key += std::to_string(k) + "*s" + std::to_string(sym) + "+";
  return key + std::to_string(c);
}

/// Adds the size guard `lhs cmp rhs` (== `expected`) to `cap` once.
void addSizeGuardTo(Capture &cap, SizeExprP lhs, const std::string &cmp, SizeExprP rhs,
                    bool expected) {
  if (lhs->op == Op::Const && rhs->op == Op::Const)
    return;
  std::string text = sizeExprText(*lhs) + cmp + sizeExprText(*rhs);
  for (const SizeGuard &g : cap.sizeGuards)
    if (sizeExprText(*g.lhs) + g.cmp + sizeExprText(*g.rhs) == text)
      return;
  cap.sizeGuards.push_back({lhs, rhs, cmp, expected});
}

/// The symbol that stands for affine expression `e` in `cap`: the symbol
/// itself for a plain one, else a derived symbol (SymbolicSize::def),
/// added on first use. -1 for a constant, -2 where none can be (not
/// affine). The sizes of results are found by captured value
/// (DynamicShapes.cpp), so an expression whose captured value equals
/// another symbol's is that symbol, with a size guard that the two are
/// equal on every call (a decode step's `past + 1` and its attention
/// mask's length).
int symbolForExpr(Capture &cap, SizeExprP e) {
  e = simplify(e);
  if (e->op == Op::Const)
    return -1;
  if (e->op == Op::Sym)
    return (int)e->value;
  std::string key = affineKey(*e);
  if (key.empty())
    return -2;
  std::vector<int64_t> values;
  for (const SymbolicSize &s : cap.symbols)
    values.push_back(s.captured);
  int64_t captured;
  if (!evalSizeExpr(*e, values, captured) || captured < 2)
    return -2;
  for (size_t i = 0; i < cap.symbols.size(); ++i) {
    const SymbolicSize &s = cap.symbols[i];
    if (s.def && affineKey(*s.def) == key)
      return (int)i;
    if (s.captured == captured) {
      addSizeGuardTo(cap, e, "==", s.def ? s.def : symExpr((int64_t)i), true);
      return (int)i;
    }
  }
  cap.symbols.push_back({captured, {}, e});
  return (int)cap.symbols.size() - 1;
}

/// The expression of an int operand: a SymInt's, or a constant for a
/// Python int; null for anything else.
SizeExprP exprOf(const VarP &v) {
  if (v->kind == Var::Kind::SymInt) {
    if (!v->sym)
      throw Unsupported(BreakCategory::DynamicShape,
                        "arithmetic on a symbolic size whose origin kiln does not track",
                        hint::kSpecializeSizes);
    return v->sym;
  }
  if (v->isConst() && PyLong_Check(v->obj.get())) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v->obj.get(), &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return nullptr;
    }
    return constExpr(x);
  }
  return nullptr;
}

int64_t capturedOf(const VarP &v, const SizeExpr &e) {
  return v->kind == Var::Kind::SymInt ? v->captured : e.value;
}

const std::set<std::string> &elementwiseOps() {
  static const std::set<std::string> ops = {
      "kiln.cast", "kiln.neg", "kiln.abs", "kiln.relu", "kiln.exp", "kiln.log", "kiln.tanh",
      "kiln.sigmoid", "kiln.gelu", "kiln.silu", "kiln.sqrt", "kiln.rsqrt", "kiln.erf", "kiln.sin",
      "kiln.cos", "kiln.tan", "kiln.atan", "kiln.floor", "kiln.ceil", "kiln.round", "kiln.trunc",
      "kiln.log1p", "kiln.expm1", "kiln.log2", "kiln.add", "kiln.sub", "kiln.mul", "kiln.div",
      "kiln.pow", "kiln.maximum", "kiln.minimum", "kiln.eq", "kiln.ne", "kiln.lt", "kiln.le",
      "kiln.gt", "kiln.ge", "kiln.select", "kiln.softmax", "kiln.layer_norm", "kiln.cumsum",
      "kiln.broadcast_to",
      // Quantization: values of the input's shape (scales with its leading
      // dims), and kiln.qlinear's leading dims are its input's.
      "kiln.quantize", "kiln.quantize_static", "kiln.dequantize", "kiln.qlinear"};
  return ops;
}

/// A reduction's `keepdim` (a default-valued attribute: absent is false).
bool keepsDims(mlir::Operation *op) {
  auto keep = op->getAttrOfType<mlir::BoolAttr>("keepdim");
  return keep && keep.getValue();
}

/// The input dim that a reduction's (kiln.sum/mean/max/min/prod) result
/// dim `d` keeps; -1 for a reduced dim kept as 1 (`keepdim`).
int64_t reductionInputDim(mlir::Operation *op, int64_t d) {
  auto dims = op->getAttrOfType<mlir::DenseI64ArrayAttr>("dims").asArrayRef();
  bool keep = keepsDims(op);
  int64_t inRank = llvm::cast<RankedTensorType>(op->getOperand(0).getType()).getRank();
  auto reduced = [&](int64_t in) { return dims.empty() || llvm::is_contained(dims, in); };
  for (int64_t in = 0, out = 0; in < inRank; ++in) {
    if (reduced(in) && !keep)
      continue;
    if (out++ == d)
      return reduced(in) ? -1 : in;
  }
  return -1;
}

/// The symbol of dim `d` of a reshape's result `out` from input shape `is`
/// with several symbolic dims (`symbolOf` answers for an input dim).
int reshapeSymbol(llvm::ArrayRef<int64_t> is, RankedTensorType out, int64_t d,
                  const std::function<int(int64_t)> &symbolOf) {
  auto os = out.getShape();
  if (!out.isDynamicDim(d)) {
    // The shadow capture (static sizes): the input dim of this size that
    // the same number of elements precedes.
    int64_t before = 1, at = 1;
    for (int64_t i = 0; i < d; ++i)
      before *= os[i];
    for (int64_t e = 0; e < (int64_t)is.size(); at *= is[e], ++e)
      if (at == before && is[e] == os[d])
        return symbolOf(e);
    return -1;
  }
  // Dynamic dims kept in order (segmentReshape): the k-th is the input's.
  if (!mlir::kiln::keepsDynamicDims(is, os))
    return -2;
  int64_t k = std::count_if(os.begin(), os.begin() + d, mlir::ShapedType::isDynamic);
  for (int64_t e = 0; e < (int64_t)is.size(); ++e)
    if (mlir::ShapedType::isDynamic(is[e]) && k-- == 0)
      return symbolOf(e);
  return -2;
}

/// Symbol `k` of `cap` times `times` (a reshape merging static dims into
/// it, GPT-2's `view(-1, n)` of [b, s, n]): a derived symbol `times * s`.
int scaledSymbol(Capture &cap, int k, int64_t times) {
  auto e = std::make_shared<SizeExpr>();
  e->op = Op::Mul;
  e->lhs = constExpr(times);
  e->rhs = cap.symbols[k].def ? cap.symbols[k].def : symExpr(k);
  return symbolForExpr(cap, e);
}

/// Symbol `k` of `cap` divided by `by` where its expression is a multiple
/// of it (`2 * s0` split into [2, s0]); -2 otherwise.
int dividedSymbol(Capture &cap, int k, int64_t by) {
  std::map<int64_t, int64_t> coeffs;
  int64_t c = 0;
  if (!cap.symbols[k].def || !linearForm(*cap.symbols[k].def, coeffs, c, 1) || c % by)
    return -2;
  SizeExprP e = constExpr(c / by);
  for (auto [sk, times] : coeffs) {
    if (times % by)
      return -2;
    auto term = std::make_shared<SizeExpr>();
    term->op = Op::Mul;
    term->lhs = constExpr(times / by);
    term->rhs = symExpr(sk);
    auto sum = std::make_shared<SizeExpr>();
    sum->op = Op::Add;
    sum->lhs = e;
    sum->rhs = term;
    e = sum;
  }
  return symbolForExpr(cap, e);
}

/// The symbol of dim `d` of kiln.slice `op` whose operand dim has symbol
/// `k`: the operand's for the whole dim or `[:n]`, a derived `s - c` from a
/// start to an end from the end (mlir::kiln::sliceBounds), else -1.
int sliceSymbol(Capture &cap, mlir::Operation *op, int64_t d, int k,
                const std::function<int()> &whole) {
  auto attr = [&](const char *n) { return op->getAttrOfType<mlir::DenseI64ArrayAttr>(n)[d]; };
  int64_t start = attr("start"), end = attr("end"), step = attr("step");
  if (start == 0 && step == 1 && end >= -1)
    return whole();
  if (start < 0 || end >= 0 || step != 1 || k < 0)
    return k < 0 && start >= 0 && end < 0 && step == 1 ? k : -1;
  auto e = std::make_shared<SizeExpr>();
  e->op = Op::Add;
  e->lhs = cap.symbols[k].def ? cap.symbols[k].def : symExpr(k);
  e->rhs = constExpr(end + 1 - start);
  return symbolForExpr(cap, e);
}

} // namespace

namespace {

/// Whether output dim `d` of a reshape from `is` (symbolic at dim `at`,
/// `captured` its value) to `os` (static but for `?` at `d`) holds a part
/// of the symbolic dim: it is made of input dims including `at` (a merge:
/// k * s), or lies inside it (a split). A size-1 dim and a dim made of
/// static input dims only do not. By prefix products at the captured
/// size, so that a shadow capture (all sizes static) decides as the
/// symbolic capture did: (s, 192) -> (1, s, 192) at s = 12 keeps 192
/// static, although 192 = 16 * s.
bool reshapeDimMeets(llvm::ArrayRef<int64_t> is, int64_t at, int64_t captured,
                     llvm::ArrayRef<int64_t> os, int64_t d) {
  std::vector<int64_t> pin{1}, pout{1};
  for (int64_t i = 0; i < (int64_t)is.size(); ++i) {
    if (i != at && mlir::ShapedType::isDynamic(is[i]))
      return true; // another unknown size: undecided, as before
    pin.push_back(pin.back() * (i == at ? captured : is[i]));
  }
  int64_t others = 1;
  for (int64_t i = 0; i < (int64_t)os.size(); ++i)
    if (i != d)
      others *= os[i];
  int64_t size = mlir::ShapedType::isDynamic(os[d]) ? (others ? pin.back() / others : 0) : os[d];
  if (size == 1)
    return false;
  for (int64_t i = 0; i < (int64_t)os.size(); ++i)
    pout.push_back(pout.back() * (i == d ? size : os[i]));
  auto in = [](const std::vector<int64_t> &p, int64_t from, int64_t to, int64_t value) {
    for (int64_t i = from; i <= to && i < (int64_t)p.size(); ++i)
      if (p[i] == value)
        return true;
    return false;
  };
  int64_t rin = (int64_t)is.size(), rout = (int64_t)os.size();
  bool merges = in(pin, 0, at, pout[d]) && in(pin, at + 1, rin, pout[d + 1]);
  bool inside = in(pout, 0, d, pin[at]) && in(pout, d + 1, rout, pin[at + 1]);
  return merges || inside;
}

} // namespace

int Interpreter::symbolOfDim(Value v, int64_t d) {
  auto type = ttype(v);
  bool shadow = out_.dynamic.shadow;
  if (out_.symbols.empty() || (!shadow && !type.isDynamicDim(d)))
    return -1;
  auto key = std::make_pair(v.getAsOpaquePointer(), d);
  if (auto it = symbolOfDim_.find(key); it != symbolOfDim_.end())
    return it->second;
  int64_t size = type.getDimSize(d), rank = type.getRank();
  // Dim `od` of operand `o` when its size is this one's (a broadcast dim
  // of size 1 is not).
  auto from = [&](Value o, int64_t od) {
    auto ot = ttype(o);
    if (od < 0 || od >= ot.getRank() || ot.getDimSize(od) != size)
      return -1;
    return symbolOfDim(o, od);
  };
  // A concat: along its dim the sum of the operands' sizes (a derived
  // symbol when symbolic), elsewhere an operand's.
  auto concatSymbol = [&](mlir::Operation *op, int64_t dd) {
    if (dd != op->getAttrOfType<mlir::IntegerAttr>("dim").getInt()) {
      int k = -1;
      for (Value o : op->getOperands())
        if (k < 0)
          k = from(o, dd);
      return k;
    }
    SizeExprP sum = constExpr(0);
    for (Value o : op->getOperands()) {
      int k = symbolOfDim(o, dd);
      if (k < 0 && (k == -2 || ttype(o).isDynamicDim(dd)))
        return -2;
      auto add = std::make_shared<SizeExpr>();
      add->op = Op::Add;
      add->lhs = sum;
      add->rhs = k < 0                 ? constExpr(ttype(o).getDimSize(dd))
                 : out_.symbols[k].def ? out_.symbols[k].def
                                       : symExpr(k);
      sum = add;
    }
    return symbolForExpr(out_, sum);
  };
  int sym = -2;
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
    sym = -1;
    for (size_t k = 0; k < out_.symbols.size(); ++k)
      for (auto [input, dim] : out_.symbols[k].dims)
        if (input == (int)arg.getArgNumber() && dim == d)
          sym = (int)k;
  } else if (mlir::Operation *op = v.getDefiningOp()) {
    std::string name = op->getName().getStringRef().str();
    auto attr = [&](const char *n) { return op->getAttrOfType<mlir::DenseI64ArrayAttr>(n); };
    if (elementwiseOps().count(name)) {
      sym = -1;
      for (Value o : op->getOperands())
        if (sym < 0 && llvm::isa<RankedTensorType>(o.getType()))
          sym = from(o, ttype(o).getRank() - (rank - d));
    } else if (name == "kiln.conv2d" || name == "kiln.max_pool2d" || name == "kiln.avg_pool2d") {
      sym = d == 0 ? from(op->getOperand(0), 0) : -1; // the batch
    } else if (name == "kiln.permute") {
      sym = from(op->getOperand(0), attr("dims")[d]);
    } else if (name == "kiln.embedding") {
      sym = d < rank - 1 ? from(op->getOperand(1), d) : from(op->getOperand(0), 1);
    } else if (name == "kiln.gather") {
      sym = from(op->getOperand(1), d);
    } else if (name == "kiln.matmul") {
      Value a = op->getOperand(0), b = op->getOperand(1);
      int64_t ra = ttype(a).getRank(), rb = ttype(b).getRank();
      if (ra >= 2 && rb >= 2) {
        if (d == rank - 1)
          sym = from(b, rb - 1);
        else if (d == rank - 2)
          sym = from(a, ra - 2);
        else {
          sym = from(a, ra - (rank - d));
          if (sym < 0)
            sym = from(b, rb - (rank - d));
        }
      }
    } else if (name == "kiln.slice") {
      sym = sliceSymbol(out_, op, d, symbolOfDim(op->getOperand(0), d),
                        [&] { return from(op->getOperand(0), d); });
    } else if (name == "kiln.sum" || name == "kiln.mean" || name == "kiln.max" ||
               name == "kiln.min" || name == "kiln.prod") {
      int64_t in = reductionInputDim(op, d);
      sym = in >= 0 ? from(op->getOperand(0), in) : -1;
    } else if (name == "kiln.argmax" || name == "kiln.argmin") {
      // One reduced dim, kept as size 1 or dropped.
      int64_t dim = op->getAttrOfType<mlir::IntegerAttr>("dim").getInt();
      bool keep = keepsDims(op);
      int64_t in = keep ? (d == dim ? -1 : d) : (d < dim ? d : d + 1);
      sym = in >= 0 ? from(op->getOperand(0), in) : -1;
    } else if (name == "kiln.reshape") {
      // The one symbolic input dim whose static neighbours multiply to the
      // same products on both sides.
      Value in = op->getOperand(0);
      auto it = ttype(in);
      int found = -1, count = 0;
      int64_t at = -1;
      for (int64_t e = 0; e < it.getRank(); ++e)
        if (int k = symbolOfDim(in, e); k != -1) {
          found = k;
          at = e;
          ++count;
        }
      auto prod = [](llvm::ArrayRef<int64_t> s, int64_t from, int64_t to) {
        int64_t p = 1;
        for (int64_t i = from; i < to; ++i)
          p *= s[i];
        return p;
      };
      if (count == 1 && found >= 0) {
        auto is = it.getShape(), os = type.getShape();
        bool pre = true;
        for (int64_t i = 0; i < rank; ++i)
          if (i != d && mlir::ShapedType::isDynamic(os[i]))
            pre = false;
        int64_t in = prod(is, 0, at) * prod(is, at + 1, it.getRank()),
                out = prod(os, 0, d) * prod(os, d + 1, rank);
        if (pre && prod(is, 0, at) == prod(os, 0, d) &&
            prod(is, at + 1, it.getRank()) == prod(os, d + 1, rank))
          sym = found;
        else if (pre && !reshapeDimMeets(is, at, out_.symbols[found].captured, os, d))
          sym = -1; // made of static input dims only (or a size-1 dim)
        else if (pre && out > 0 && in % out == 0) // static dims merged in: k * s
          sym = scaledSymbol(out_, found, in / out);
        else if (pre && in > 0 && out % in == 0) // split out again: (k * s) / k
          sym = dividedSymbol(out_, found, out / in);
        else
          sym = -2;
      } else if (count > 1) {
        sym = reshapeSymbol(it.getShape(), type, d, [&](int64_t e) { return symbolOfDim(in, e); });
      } else {
        sym = count == 0 ? -1 : -2;
      }
    } else if (name == "kiln.concat") {
      sym = concatSymbol(op, d);
    } else if (name == "kiln.constant") {
      sym = -1;
    }
  }
  if (sym >= 0 && size != out_.symbols[sym].captured && !type.isDynamicDim(d))
    sym = -1; // a static dim of another size (shadow capture)
  if (sym == -1 && type.isDynamicDim(d))
    sym = -2;
  if (sym == -2 && shadow && !type.isDynamicDim(d))
    sym = -1;
  symbolOfDim_[key] = sym;
  return sym;
}

void Interpreter::addSizeGuard(SizeExprP lhs, const std::string &cmp, SizeExprP rhs,
                               bool expected) {
  addSizeGuardTo(out_, std::move(lhs), cmp, std::move(rhs), expected);
}

VarP Interpreter::symIntBinary(const std::string &opIn, const VarP &a, const VarP &b) {
  if (a->kind != Var::Kind::SymInt && b->kind != Var::Kind::SymInt)
    return nullptr;
  std::string op = opIn;
  if (op.size() > 1 && op.back() == '=' && op != "==" && op != "<=" && op != ">=" && op != "!=")
    op.pop_back(); // in-place forms: s += 1
  // With a float (`n * 0.5`) or a true division (`n / 2`) the result is a
  // float: computed in the graph as a Python number (ops/Scalars.cpp).
  auto isFloat = [](const VarP &v) { return v->isConst() && PyFloat_CheckExact(v->obj.get()); };
  static const std::set<std::string> floatArith = {"+", "-", "*", "/"};
  if (floatArith.count(op) && (op == "/" || isFloat(a) || isFloat(b)))
    if (VarP r = scalarBinary(op, symIntAsScalar(*this, a), symIntAsScalar(*this, b)))
      return r;
  SizeExprP x = exprOf(a), y = exprOf(b);
  if (!x || !y)
    throw Unsupported(BreakCategory::DynamicShape,
                      "operator " + op + " on a symbolic size and a value that is not an int",
                      hint::kSpecializeSizes);
  int64_t cx = capturedOf(a, *x), cy = capturedOf(b, *y);
  bool isStatic = (a->kind == Var::Kind::SymInt && a->staticSym) ||
                  (b->kind == Var::Kind::SymInt && b->staticSym);
  static const std::map<std::string, Op> arith = {
      {"+", Op::Add}, {"-", Op::Sub}, {"*", Op::Mul}, {"//", Op::FloorDiv}, {"%", Op::Mod}};
  if (auto it = arith.find(op); it != arith.end()) {
    auto e = std::make_shared<SizeExpr>();
    e->op = it->second;
    e->lhs = x;
    e->rhs = y;
    int64_t value;
    SizeExpr concrete;
    concrete.op = it->second;
    concrete.lhs = constExpr(cx);
    concrete.rhs = constExpr(cy);
    if (!evalSizeExpr(concrete, {}, value))
      throw Unsupported(BreakCategory::UserError,
                        "integer division by zero on a symbolic size (eager raises)");
    SizeExprP s = simplify(e);
    if (s->op == Op::Const)
      return constInt(s->value);
    auto v = std::make_shared<Var>();
    v->kind = Var::Kind::SymInt;
    v->sym = s;
    v->captured = value;
    v->staticSym = isStatic;
    return v;
  }
  static const std::set<std::string> cmps = {"<", "<=", "==", "!=", ">", ">="};
  if (!cmps.count(op))
    throw Unsupported(BreakCategory::DynamicShape, "operator " + op + " on a symbolic size",
                      hint::kSpecializeSizes);
  bool r = op == "<"    ? cx < cy
           : op == "<=" ? cx <= cy
           : op == "==" ? cx == cy
           : op == "!=" ? cx != cy
           : op == ">"  ? cx > cy
                        : cx >= cy;
  addSizeGuard(x, op, y, r);
  return constBool(r);
}

bool Interpreter::symIntTruthy(const VarP &v) {
  if (!v->sym)
    throw Unsupported(BreakCategory::DynamicShape,
                      "a branch on a symbolic size whose origin kiln does not track",
                      hint::kSpecializeSizes);
  addSizeGuard(v->sym, "!=", constExpr(0), v->captured != 0);
  return v->captured != 0;
}

Value Interpreter::symTrueLine(const VarP &n) {
  int sym = n->sym ? symbolForExpr(out_, n->sym) : -2;
  if (sym < 0)
    throw Unsupported(BreakCategory::DynamicShape,
                      "a tensor whose size is an expression of symbolic sizes kiln cannot build (" +
                          (n->sym ? sizeExprText(*n->sym) : std::string("untracked")) + ")",
                      hint::kSpecializeSizes);
  Emit e(*this);
  if (SizeExprP def = out_.symbols[sym].def) {
    // A derived size: one concat of each symbol's line (coefficient times)
    // and a constant tail, so its size is the expression again.
    std::map<int64_t, int64_t> coeffs;
    int64_t c = 0;
    linearForm(*def, coeffs, c, 1);
    if (c < 0 || llvm::any_of(coeffs, [](auto kv) { return kv.second < 0 || kv.second > 16; }))
      throw Unsupported(BreakCategory::DynamicShape,
                        "a tensor of size " + sizeExprText(*def) + " (negative or large terms)",
                        hint::kSpecializeSizes);
    std::vector<Value> parts;
    for (auto [k, times] : coeffs) {
      auto leaf = std::make_shared<Var>();
      leaf->kind = Var::Kind::SymInt;
      leaf->sym = symExpr(k);
      leaf->captured = out_.symbols[k].captured;
      for (int64_t i = 0; i < times; ++i)
        parts.push_back(symTrueLine(leaf));
    }
    if (c > 0)
      parts.push_back(e.splat({c}, DType::Bool, 1));
    return e.checked<mlir::kiln::ConcatOp>(parts, {b_.getNamedAttr("dim", b_.getI64IntegerAttr(0))},
                                           "concat");
  }
  auto [input, dim] = out_.symbols[sym].dims[0];
  Value x = func_.getArgument(input);
  auto t = ttype(x);
  // x reduced over its other dims: a 1-D tensor with the symbol's size,
  // read from the input at run time.
  Value line = x;
  if (t.getElementType().isInteger(1))
    line = e.cast(line, DType::I64);
  std::vector<int64_t> others;
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (i != dim)
      others.push_back(i);
  // An int's (n, 0) carrier has no elements: its sum is n zeros.
  if (!others.empty())
    line = isIntCarrier(x) ? e.reduce<mlir::kiln::SumOp>(line, others, false)
                           : e.reduce<mlir::kiln::MaxOp>(line, others, false);
  // eq(x, x) != ne(x, x) holds for every element, NaN included.
  return e.bin<mlir::kiln::NeOp>(e.bin<mlir::kiln::EqOp>(line, line),
                                 e.bin<mlir::kiln::NeOp>(line, line));
}

Value Interpreter::symIota(const VarP &n) {
  Emit e(*this);
  Value ones = e.cast(symTrueLine(n), DType::I64);
  Value sum = b_.create<mlir::kiln::CumsumOp>(loc_, ones, b_.getI64IntegerAttr(0));
  return e.bin<mlir::kiln::SubOp>(sum, e.num(1, DType::I64));
}

Value Interpreter::symFull(const std::vector<VarP> &dims, Value fill) {
  Emit e(*this);
  int64_t rank = dims.size();
  std::vector<int64_t> staticShape;
  for (const VarP &d : dims)
    staticShape.push_back(d->kind == Var::Kind::SymInt ? 1 : asInt(d, "size"));
  DType dt = dtypeOf(ttype(fill).getElementType());
  Value v = e.b.create<mlir::kiln::BroadcastToOp>(
      loc_, RankedTensorType::get(staticShape, ttype(fill).getElementType()), fill);
  // select(true, v, v) broadcasts `v` along each symbolic dim.
  for (int64_t i = 0; i < rank; ++i) {
    if (dims[i]->kind != Var::Kind::SymInt)
      continue;
    Value line = symTrueLine(dims[i]);
    std::vector<int64_t> shape(rank, 1);
    shape[i] = ttype(line).getDimSize(0);
    Value cond = e.reshape(line, shape);
    v = e.select(cond, v, v);
  }
  (void)dt;
  return v;
}

} // namespace kiln
