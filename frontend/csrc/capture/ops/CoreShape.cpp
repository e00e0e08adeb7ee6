//===- CoreShape.cpp - sizes, permutations and reshapes -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of the core shape set: x.size()/dim()/numel()
// (Python values, symbolic sizes as SymInts), transpose/t/permute, and the
// reshapes reshape/view/flatten/unsqueeze/squeeze and expand. All but the
// queries are views in eager: their results alias the input (OpTracking.cpp
// records that). Symbolic dims stay `?` where torch keeps them.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "capture/values/DynamicShapes.h"

#include "ir/ShapeUtils.h"

namespace kiln {

using namespace mlir::kiln;

namespace {

/// The tensor input of a core shape op.
Value shapeInput(const Args &a, const std::string &op) { return tensorArg(inputArg(a, op), op); }

VarP size(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  Value v = tensorArg(x, op);
  if (a.isNone("dim"))
    return I.tensorAttribute(x, "shape");
  return I.sizeVar(v, normDim(asInt(a.get("dim"), "dim"), ttype(v).getRank()));
}

VarP dim(Interpreter &I, const std::string &op, Args &a) {
  return constInt(ttype(shapeInput(a, op)).getRank());
}

VarP numel(Interpreter &I, const std::string &op, Args &a) {
  Value v = shapeInput(a, op);
  // A product of symbolic sizes is a SymInt (SymbolicSizes.cpp).
  VarP n = constInt(1);
  for (int64_t d = 0; d < ttype(v).getRank(); ++d) {
    VarP s = I.sizeVar(v, d);
    VarP p = I.symIntBinary("*", n, s);
    n = p ? p : constInt(asInt(n, "numel") * asInt(s, "numel"));
  }
  return n;
}

/// `v` with dims `d0` and `d1` swapped.
VarP swapDims(Interpreter &I, Value v, int64_t d0, int64_t d1) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < ttype(v).getRank(); ++i)
    perm.push_back(i);
  std::swap(perm[d0], perm[d1]);
  return T(Emit(I).permute(v, perm));
}

VarP transpose(Interpreter &I, const std::string &op, Args &a) {
  Value v = shapeInput(a, op);
  int64_t rank = ttype(v).getRank();
  int64_t d0 = normDim(asInt(a.get("dim0"), "dim0"), rank),
          d1 = normDim(asInt(a.get("dim1"), "dim1"), rank);
  if (rank == 0) // dims 0 and -1 name a scalar's one "dim": nothing to swap
    return T(v);
  return swapDims(I, v, d0, d1);
}

VarP t(Interpreter &I, const std::string &op, Args &a) {
  Value v = shapeInput(a, op);
  if (ttype(v).getRank() > 2)
    throw Unsupported(BreakCategory::UserError,
                      "t() of a " + std::to_string(ttype(v).getRank()) +
                          "-d tensor (eager raises: t() expects <= 2 dims)",
                      hint::kRaisesInEager);
  if (ttype(v).getRank() < 2)
    return T(v);
  return swapDims(I, v, 0, 1);
}

VarP permute(Interpreter &I, const std::string &op, Args &a) {
  Value v = shapeInput(a, op);
  int64_t rank = ttype(v).getRank();
  std::vector<int64_t> perm = asInts(a.get("dims"), "dims");
  if ((int64_t)perm.size() != rank)
    throw Unsupported("permute: wrong number of dims");
  std::vector<bool> seen(rank, false);
  for (auto &p : perm) {
    p = normDim(p, rank);
    if (seen[p])
      throw Unsupported("permute: repeated dim");
    seen[p] = true;
  }
  return T(Emit(I).permute(v, perm));
}

/// A static reshape target: one -1 is inferred; the element count must match.
std::vector<int64_t> staticReshapeTarget(llvm::ArrayRef<int64_t> shape, const VarP &target) {
  int64_t numel = 1;
  for (int64_t s : shape)
    numel *= s;
  // Shadow SymInts (DynamicPolicy::shadow) stand for their captured values.
  std::vector<int64_t> ns = anySymInt(target) ? shapeArg(target, "shape") : asInts(target, "shape");
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (ns[i] != -1) {
      known *= ns[i];
      continue;
    }
    if (infer >= 0)
      throw Unsupported("reshape with two -1");
    infer = (int)i;
  }
  if (infer >= 0) {
    if (known == 0 || numel % known)
      throw Unsupported("reshape: invalid shape");
    ns[infer] = numel / known;
  }
  int64_t total = 1;
  for (int64_t s : ns)
    total *= s;
  if (total != numel)
    throw Unsupported("reshape: element count mismatch");
  return ns;
}

/// The symbol of each entry of a reshape target: -1 for an int, -2 for a
/// symbolic size that is not one symbol (an expression, or untracked).
std::vector<int> targetSymbols(const VarP &target) {
  std::vector<VarP> items = target->kind == Var::Kind::Tuple || target->kind == Var::Kind::List
                                ? target->items
                                : std::vector<VarP>{target};
  std::vector<int> out;
  for (const VarP &i : items) {
    bool sym = i->kind == Var::Kind::SymInt && !i->staticSym;
    out.push_back(!sym ? -1 : i->sym && i->sym->op == SizeExpr::Op::Sym ? (int)i->sym->value : -2);
  }
  return out;
}

/// `t` when a reshape of `v` (one symbolic dim) to `target` (ints and one
/// symbolic size, no -1) splits a merged size back out: GPT-2's Conv1D
/// `view(b * s, n)` ... `view(b, s, n)`, the input's size `k` times the
/// target's, guarded equal per call (the sizes are one expression of the
/// input sizes when they came from it, so the guard always holds then).
/// Empty when the reshape is not such a split.
std::vector<int64_t> splitMergedSize(Interpreter &I, Value v, const VarP &target,
                                     const std::vector<int64_t> &t) {
  auto shape = ttype(v).getShape();
  int64_t pIn = 1, pT = 1, at = -1;
  VarP size;
  for (int64_t e = 0; e < (int64_t)shape.size(); ++e)
    mlir::ShapedType::isDynamic(shape[e]) ? (void)(at = e) : (void)(pIn *= shape[e]);
  std::vector<VarP> items = target->kind == Var::Kind::Tuple || target->kind == Var::Kind::List
                                ? target->items
                                : std::vector<VarP>{target};
  for (size_t i = 0; i < t.size() && i < items.size(); ++i) {
    if (mlir::ShapedType::isDynamic(t[i]))
      size = items[i];
    else if (t[i] < 0)
      return {};
    else
      pT *= t[i];
  }
  if (at < 0 || !size || size->kind != Var::Kind::SymInt || pIn == 0 || pT % pIn || pT == pIn)
    return {};
  VarP merged = I.symIntBinary("*", size, constInt(pT / pIn));
  if (!merged || I.symIntBinary("==", merged, I.sizeVar(v, at))->obj.get() != Py_True)
    return {};
  return t;
}

/// A reshape with symbolic sizes: one `?` on each side (symbolicReshape) or
/// several kept in order (segmentReshape).
std::vector<int64_t> dynamicReshapeTarget(Interpreter &I, Value v, const VarP &target) {
  auto shape = ttype(v).getShape();
  std::vector<int64_t> t = shapeArg(target, "shape");
  auto dyn = [](int64_t s) { return mlir::ShapedType::isDynamic(s); };
  if (std::count_if(shape.begin(), shape.end(), dyn) <= 1 &&
      std::count_if(t.begin(), t.end(), dyn) <= 1) {
    if (std::vector<int64_t> split = splitMergedSize(I, v, target, t); !split.empty())
      return split;
    return symbolicReshape(shape, t);
  }
  std::vector<int> inSymbols;
  for (int64_t e = 0; e < (int64_t)shape.size(); ++e)
    inSymbols.push_back(dyn(shape[e]) ? std::max(I.symbolOfDim(v, e), -2) : -1);
  std::vector<int> ts = targetSymbols(target);
  // A derived size (`s - 1` of a slice) is the symbol of the input dim
  // that reads as the same expression.
  std::vector<VarP> items = target->kind == Var::Kind::Tuple || target->kind == Var::Kind::List
                                ? target->items
                                : std::vector<VarP>{target};
  for (size_t i = 0; i < ts.size() && i < items.size(); ++i)
    for (int64_t e = 0; ts[i] == -2 && items[i]->sym && e < (int64_t)shape.size(); ++e)
      if (inSymbols[e] >= 0 && sizeExprText(*I.sizeVar(v, e)->sym) == sizeExprText(*items[i]->sym))
        ts[i] = inSymbols[e];
  return segmentReshape(shape, inSymbols, t, ts);
}

VarP reshape(Interpreter &I, const std::string &op, Args &a) {
  Value v = shapeInput(a, op);
  auto shape = ttype(v).getShape();
  VarP target = a.get("shape");
  std::vector<int64_t> ns = !ttype(v).hasStaticShape() || hasSymInt(target)
                                ? dynamicReshapeTarget(I, v, target)
                                : staticReshapeTarget(shape, target);
  return T(Emit(I).reshape(v, ns));
}

VarP flatten(Interpreter &I, const std::string &op, Args &a) {
  Value v = shapeInput(a, op);
  auto shape = ttype(v).getShape();
  int64_t rank = shape.size();
  Emit e(I);
  if (rank == 0)
    return T(e.reshape(v, {1}));
  int64_t s = normDim(intArg(a, "start_dim", 0), rank);
  int64_t en = normDim(intArg(a, "end_dim", -1), rank);
  if (s > en)
    throw Unsupported("flatten: start_dim > end_dim");
  std::vector<int64_t> ns(shape.begin(), shape.begin() + s);
  int64_t m = 1;
  for (int64_t i = s; i <= en; ++i)
    m = mlir::ShapedType::isDynamic(m) || mlir::ShapedType::isDynamic(shape[i])
            ? mlir::ShapedType::kDynamic
            : m * shape[i];
  ns.push_back(m);
  ns.insert(ns.end(), shape.begin() + en + 1, shape.end());
  return T(e.reshape(v, ns));
}

VarP unsqueeze(Interpreter &I, const std::string &op, Args &a) {
  Value v = shapeInput(a, op);
  auto shape = ttype(v).getShape();
  int64_t rank = shape.size();
  int64_t d = asInt(a.get("dim"), "dim");
  if (d < -(rank + 1) || d > rank)
    throw Unsupported("unsqueeze: dim out of range");
  if (d < 0)
    d += rank + 1;
  std::vector<int64_t> ns(shape.begin(), shape.end());
  ns.insert(ns.begin() + d, 1);
  return T(Emit(I).reshape(v, ns));
}

VarP squeeze(Interpreter &I, const std::string &op, Args &a) {
  Value v = shapeInput(a, op);
  auto shape = ttype(v).getShape();
  int64_t rank = shape.size();
  std::vector<int64_t> dims, ns;
  bool all = a.isNone("dim"); // dim=() squeezes nothing, as in eager
  if (!all)
    for (auto d : asInts(a.get("dim"), "dim"))
      dims.push_back(normDim(d, rank));
  for (int64_t i = 0; i < rank; ++i) {
    bool drop = shape[i] == 1 && (all || std::count(dims.begin(), dims.end(), i));
    if (!drop)
      ns.push_back(shape[i]);
  }
  return T(Emit(I).reshape(v, ns));
}

VarP expand(Interpreter &I, const std::string &op, Args &a) {
  VarP x = inputArg(a, op);
  Value v = tensorArg(x, op);
  auto shape = ttype(v).getShape();
  int64_t rank = shape.size();
  if (VarP r = I.symbolicExpand(x, a.get("size")))
    return r;
  std::vector<int64_t> sizes = asInts(a.get("size"), "size");
  if ((int64_t)sizes.size() < rank)
    throw Unsupported("expand: too few sizes (" + std::to_string(sizes.size()) + " for rank " +
                      std::to_string(rank) + ")");
  size_t off = sizes.size() - rank;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] != -1)
      continue;
    if (i < off)
      throw Unsupported("expand: -1 in a new leading dim");
    sizes[i] = shape[i - off];
  }
  if (!isBroadcastableTo(shape, sizes))
    throw Unsupported("expand: invalid sizes");
  if (llvm::ArrayRef<int64_t>(sizes) == shape)
    return T(v);
  auto type = RankedTensorType::get(sizes, ttype(v).getElementType());
  return T(Emit(I).b.create<BroadcastToOp>(I.loc(), type, v));
}

} // namespace

void registerCoreShapeOps(OpRegistry &r) {
  const Params input{"input"};
  r.op("size", size, Params{"input", "dim"}, Query).method();
  r.op("dim", dim, input, Query).method();
  r.op("numel", numel, input, Query).method();
  r.op("transpose", transpose, Params{"input", "dim0", "dim1"}, View).torchAndMethod();
  r.op("t", t, input, View).torchAndMethod();
  r.op("permute", permute, Params{"input", "dims"}, View).torch().method(Params{"input", "*dims"});
  r.op("reshape", reshape, Params{"input", "shape"}, View)
      .torch()
      .method(Params{"input", "*shape"});
  // Its own op (not a reshape alias): eager raises where the strides do not
  // allow the view (OpTracking.cpp applyTracked).
  r.op("view", reshape, Params{"input", "*shape"}, View).method();
  r.op("flatten", flatten, Params{"input", "start_dim", "end_dim"}, View).torchAndMethod();
  r.op("unsqueeze", unsqueeze, Params{"input", "dim"}, View).torchAndMethod();
  r.op("squeeze", squeeze, Params{"input", "dim"}, View).torchAndMethod();
  r.op("expand", expand, Params{"input", "*size"}, View).method();
}

} // namespace kiln
