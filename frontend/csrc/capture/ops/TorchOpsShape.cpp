//===- TorchOpsShape.cpp - shape, gather and creation ops ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of shape manipulation beyond the core set:
// flip/roll/tril/triu, movedim/swapaxes, *_as, repeat/tile/
// repeat_interleave, unflatten/ravel, gather/index_select, F.pad (constant,
// replicate, reflect, circular), hstack/vstack, outer/dot/addmm/baddbmm and
// einsum (creation ops are Factories.cpp's). Everything is built
// from static shapes: reversed or wrapped reads are kiln.gather with a
// constant index, padding is kiln.concat of constants and slices.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace kiln {

using namespace mlir::kiln;

namespace {

std::vector<int64_t> shapeOf(Value v) {
  auto s = ttype(v).getShape();
  if (!ttype(v).hasStaticShape())
    throw Unsupported("a tensor with dynamic dims");
  return {s.begin(), s.end()};
}

/// arange(n) as an i64 constant attribute.
mlir::ElementsAttr arangeAttr(Emit &e, int64_t n) {
  auto type = RankedTensorType::get({n}, e.elt(DType::I64));
  llvm::SmallVector<int64_t> vals;
  for (int64_t i = 0; i < n; ++i)
    vals.push_back(i);
  return llvm::cast<mlir::ElementsAttr>(
      mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(vals)));
}

Value sliceDim(Emit &e, Value v, int64_t dim, int64_t start, int64_t end) {
  auto shape = shapeOf(v);
  std::vector<int64_t> st(shape.size(), 0), en = shape, step(shape.size(), 1);
  st[dim] = start;
  en[dim] = end;
  return e.b.create<SliceOp>(e.I.loc(), v, e.b.getDenseI64ArrayAttr(st),
                             e.b.getDenseI64ArrayAttr(en), e.b.getDenseI64ArrayAttr(step));
}

Value concat(Emit &e, std::vector<Value> parts, int64_t dim) {
  std::vector<Value> nonEmpty;
  for (Value p : parts)
    if (ttype(p).getDimSize(dim) != 0)
      nonEmpty.push_back(p);
  if (nonEmpty.empty())
    return parts.front();
  if (nonEmpty.size() == 1)
    return nonEmpty.front();
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(dim))};
  return e.checked<ConcatOp>(nonEmpty, attrs, "concat");
}

/// Reads `v` along `dim` at the constant positions `index` (a gather with
/// the index broadcast over the other dims).
Value gatherConst(Emit &e, Value v, int64_t dim, const std::vector<int64_t> &index) {
  auto shape = shapeOf(v);
  std::vector<int64_t> ishape(shape.size(), 1);
  ishape[dim] = index.size();
  std::vector<double> vals(index.begin(), index.end());
  Value idx = e.dense(ishape, DType::I64, vals);
  std::vector<int64_t> full = shape;
  full[dim] = index.size();
  if (ishape != full)
    idx = e.b.create<BroadcastToOp>(e.I.loc(), RankedTensorType::get(full, e.elt(DType::I64)), idx);
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(dim))};
  return e.checked<GatherOp>({v, idx}, attrs, "gather");
}

/// F.pad along one dim.
Value padDim(Emit &e, Value v, int64_t dim, int64_t low, int64_t high, const std::string &mode,
             const VarP &value) {
  int64_t n = shapeOf(v)[dim];
  if (low < 0) {
    v = sliceDim(e, v, dim, -low, n);
    n += low;
    low = 0;
  }
  if (high < 0) {
    v = sliceDim(e, v, dim, 0, n + high);
    n += high;
    high = 0;
  }
  if (low == 0 && high == 0)
    return v;
  std::vector<int64_t> idx;
  if (mode == "constant") {
    DType d = dtypeOfValue(v);
    auto part = [&](int64_t k) {
      std::vector<int64_t> s = shapeOf(v);
      s[dim] = k;
      double fill = value && !(value->isConst() && value->obj.get() == Py_None)
                        ? asDouble(value, "value")
                        : 0.0;
      return e.splat(s, d, fill);
    };
    return concat(e, {part(low), v, part(high)}, dim);
  }
  if (mode == "reflect" && (low >= n || high >= n))
    throw Unsupported("reflect padding must be smaller than the dim (eager raises)");
  if (mode == "circular" && (low > n || high > n))
    throw Unsupported("circular padding larger than the dim (eager raises)");
  if (n == 0)
    throw Unsupported(mode + " padding of an empty dim (eager raises)");
  for (int64_t i = -low; i < n + high; ++i) {
    int64_t j = i;
    if (mode == "replicate")
      j = std::min(std::max<int64_t>(i, 0), n - 1);
    else if (mode == "reflect")
      j = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
    else if (mode == "circular")
      j = ((i % n) + n) % n;
    else
      throw Unsupported("pad mode '" + mode + "'");
    idx.push_back(j);
  }
  return gatherConst(e, v, dim, idx);
}

/// The input of a shape op, which needs static sizes.
struct StaticInput {
  StaticInput(const Args &a, const std::string &op)
      : x(a.get("input")), v(tensorArg(x, op)), shape(shapeOf(v)), rank(shape.size()) {}
  VarP x;
  Value v;
  std::vector<int64_t> shape;
  int64_t rank;
};

/// Which dims a flip reverses.
enum class FlipDims { Given, Last, First };

/// flip (given dims), fliplr (dim 1) and flipud (dim 0).
template <FlipDims F> VarP flip(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  Emit e(I);
  std::vector<int64_t> dims;
  if (F == FlipDims::Given) {
    dims = asInts(a.get("dims"), "dims");
  } else {
    if (in.rank < (F == FlipDims::Last ? 2 : 1))
      throw Unsupported(BreakCategory::UserError, op + " needs a higher rank (eager raises)");
    dims = {F == FlipDims::Last ? 1 : 0};
  }
  if (in.rank == 0)
    return freshResult(in.v);
  Value v = in.v;
  for (int64_t d : dims) {
    d = normDim(d, in.rank);
    std::vector<int64_t> idx;
    for (int64_t i = in.shape[d] - 1; i >= 0; --i)
      idx.push_back(i);
    v = gatherConst(e, v, d, idx);
  }
  return freshResult(v);
}

VarP roll(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  Emit e(I);
  Value v = in.v;
  std::vector<int64_t> shifts = asInts(a.get("shifts"), "shifts");
  if (a.isNone("dims")) {
    if (shifts.size() != 1)
      throw Unsupported("roll without dims takes one shift");
    int64_t n = 1;
    for (int64_t s : in.shape)
      n *= s;
    Value flat = e.reshape(v, {n});
    Value r = n ? concat(e,
                         {sliceDim(e, flat, 0, n - ((shifts[0] % n) + n) % n, n),
                          sliceDim(e, flat, 0, 0, n - ((shifts[0] % n) + n) % n)},
                         0)
                : flat;
    return freshResult(e.reshape(r, in.shape));
  }
  std::vector<int64_t> dims = asInts(a.get("dims"), "dims");
  if (dims.size() != shifts.size())
    throw Unsupported(BreakCategory::UserError,
                      "roll: shifts and dims differ in length (eager raises)");
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = normDim(dims[i], in.rank), n = in.shape[d];
    if (n == 0)
      continue;
    int64_t s = ((shifts[i] % n) + n) % n;
    if (s)
      v = concat(e, {sliceDim(e, v, d, n - s, n), sliceDim(e, v, d, 0, n - s)}, d);
  }
  return freshResult(v);
}

/// tril (`Lower`) and triu: the input where j - i <= k (>= k), else 0.
template <bool Lower> VarP triangle(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value v = tensorArg(a.get("input"), op);
  int64_t vr = ttype(v).getRank();
  if (vr >= 2 && (I.symbolOfDim(v, vr - 2) != -1 || I.symbolOfDim(v, vr - 1) != -1)) {
    // Symbolic rows or cols: the mask j - i <= k (>= k) from two aranges.
    int64_t k = intArg(a, "diagonal", 0);
    auto iota = [&](int64_t d, std::vector<int64_t> shape) {
      VarP n = I.sizeVar(v, d);
      Value r = n->kind == Var::Kind::SymInt
                    ? I.symIota(n)
                    : e.b.create<ConstantOp>(I.loc(), arangeAttr(e, asInt(n, "size")));
      return e.reshape(r, shape);
    };
    Value rows = iota(vr - 2, {ttype(v).getDimSize(vr - 2), 1});
    Value cols = iota(vr - 1, {1, ttype(v).getDimSize(vr - 1)});
    Value diff = e.bin<SubOp>(cols, rows), kv = e.num(k, DType::I64);
    Value m = Lower ? e.bin<LeOp>(diff, kv) : e.bin<GeOp>(diff, kv);
    return T(e.select(m, v, e.num(0, dtypeOfValue(v))));
  }
  StaticInput in(a, op);
  if (in.rank < 2)
    throw Unsupported(BreakCategory::UserError, op + " needs rank >= 2 (eager raises)");
  int64_t k = intArg(a, "diagonal", 0), rows = in.shape[in.rank - 2], cols = in.shape[in.rank - 1];
  std::vector<double> mask;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.push_back(Lower ? j - i <= k : j - i >= k);
  Value m = e.dense({rows, cols}, DType::Bool, mask);
  return T(e.select(m, v, e.num(0, dtypeOfValue(v))));
}

VarP movedim(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  int64_t rank = in.rank;
  std::vector<int64_t> src = asInts(a.get("source"), "source"),
                       dst = asInts(a.get("destination"), "destination");
  if (src.size() != dst.size())
    throw Unsupported(BreakCategory::UserError,
                      "movedim: source and destination differ in length (eager raises)");
  std::vector<int64_t> perm(rank, -1);
  // A 0-d tensor has one nameable dim (0 or -1) and nothing to move.
  std::vector<bool> used(std::max<int64_t>(rank, 1), false), placed(used);
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t s = normDim(src[i], rank), d = normDim(dst[i], rank);
    if (rank == 0)
      continue;
    if (used[s] || placed[d])
      throw Unsupported(BreakCategory::UserError, "movedim: repeated dim (eager raises)");
    perm[d] = s;
    used[s] = placed[d] = true;
  }
  int64_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (perm[d] >= 0)
      continue;
    while (used[next])
      ++next;
    perm[d] = next++;
  }
  return callOp(I, "permute", {{"input", in.x}, {"dims", constIntTuple(perm)}});
}

VarP swapaxes(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  return callOp(I, "transpose",
                {{"input", in.x}, {"dim0", a.get("dim0")}, {"dim1", a.get("dim1")}});
}

/// expand_as/broadcast_to (`Expand`) and view_as/reshape_as: the shape of
/// `other` (`size` for broadcast_to).
template <bool Expand, bool FromSize> VarP toShape(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  std::vector<int64_t> target =
      FromSize ? asInts(a.get("size"), "size") : shapeOf(tensorArg(a.get("other"), op));
  return callOp(I, Expand ? "expand" : "reshape",
                {{"input", in.x}, {Expand ? "size" : "shape", constIntTuple(target)}});
}

VarP typeAs(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input"); // symbolic sizes too: a cast
  tensorArg(x, op);
  PyObject *dtype = dtypeObject(dtypeOfValue(tensorArg(a.get("other"), op))); // borrowed
  return callOp(I, "to", {{"input", x}, {"dtype", makeConst(PyRef::borrow(dtype))}});
}

VarP unflatten(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  int64_t d = normDim(asInt(a.get("dim"), "dim"), in.rank);
  std::vector<int64_t> sizes = asInts(a.get("sizes"), "sizes");
  std::vector<int64_t> ns(in.shape.begin(), in.shape.begin() + d);
  ns.insert(ns.end(), sizes.begin(), sizes.end());
  ns.insert(ns.end(), in.shape.begin() + d + 1, in.shape.end());
  return callOp(I, "reshape", {{"input", in.x}, {"shape", constIntTuple(ns)}});
}

VarP ravel(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  return callOp(I, "reshape", {{"input", in.x}, {"shape", constIntTuple({-1})}});
}

/// repeat and tile (`Tile`: fewer repeats than dims are padded with 1s).
template <bool Tile> VarP repeat(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  Emit e(I);
  int64_t rank = in.rank;
  VarP repsArg = a.get("sizes") ? a.get("sizes") : a.get("dims");
  if (!repsArg)
    throw Unsupported(op + ": missing repeats");
  std::vector<int64_t> reps = asInts(repsArg, "sizes");
  if (Tile)
    while ((int64_t)reps.size() < rank)
      reps.insert(reps.begin(), 1);
  if ((int64_t)reps.size() < rank)
    throw Unsupported(BreakCategory::UserError, "repeat: fewer repeats than dims (eager raises)");
  std::vector<int64_t> s(reps.size() - rank, 1);
  s.insert(s.end(), in.shape.begin(), in.shape.end());
  std::vector<int64_t> inter, target, out;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 0)
      throw Unsupported(BreakCategory::UserError, "negative repeat (eager raises)");
    inter.insert(inter.end(), {1, s[i]});
    target.insert(target.end(), {reps[i], s[i]});
    out.push_back(reps[i] * s[i]);
  }
  Value r = e.reshape(in.v, inter);
  if (inter != target)
    r = e.b.create<BroadcastToOp>(I.loc(),
                                  RankedTensorType::get(target, ttype(in.v).getElementType()), r);
  return freshResult(e.reshape(r, out));
}

VarP repeatInterleave(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  Emit e(I);
  VarP reps = a.get("repeats");
  if (!reps || reps->isTensor())
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "repeat_interleave with tensor repeats is not supported yet");
  int64_t r = asInt(reps, "repeats");
  if (r < 0)
    throw Unsupported(BreakCategory::UserError, "negative repeats (eager raises)");
  Value flat = in.v;
  int64_t d = 0;
  if (a.isNone("dim")) {
    int64_t n = 1;
    for (int64_t s : in.shape)
      n *= s;
    flat = e.reshape(in.v, {n});
  } else {
    d = normDim(asInt(a.get("dim"), "dim"), in.rank);
  }
  std::vector<int64_t> s = shapeOf(flat), inter = s, target = s, out = s;
  if (s.empty()) {
    s = inter = target = out = {1};
    flat = e.reshape(flat, {1});
  }
  inter.insert(inter.begin() + d + 1, 1);
  target.insert(target.begin() + d + 1, r);
  out[d] *= r;
  Value t = e.reshape(flat, inter);
  if (r != 1)
    t = e.b.create<BroadcastToOp>(I.loc(),
                                  RankedTensorType::get(target, ttype(in.v).getElementType()), t);
  return freshResult(e.reshape(t, out));
}

/// A kiln.gather of `v` along `d` at `idx` (an index shaped like the result).
VarP gatherAlong(Emit &e, const StaticInput &in, int64_t d, Value idx, const std::string &op) {
  if (in.rank > 0 && in.shape[d] == 0 && ttype(idx).getNumElements() > 0)
    throw Unsupported(BreakCategory::UserError, op + " from an empty dim (eager raises)");
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(d))};
  return T(e.checked<GatherOp>({in.v, idx}, attrs, op));
}

VarP gather(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  int64_t d = normDim(asInt(a.get("dim"), "dim"), in.rank);
  Value idx = tensorArg(a.get("index"), op);
  if (dtypeOfValue(idx) != DType::I64)
    throw Unsupported(BreakCategory::UserError, "gather expects an int64 index (eager raises)");
  if (!a.isNone("sparse_grad") && boolArg(a, "sparse_grad", false))
    throw Unsupported(BreakCategory::UnsupportedOp, "gather with sparse_grad");
  if (ttype(idx).getRank() != in.rank)
    throw Unsupported(BreakCategory::UserError,
                      "gather index must have the input's rank (eager raises)");
  if (in.rank == 0)
    return freshResult(in.v);
  Emit e(I);
  VarP r = gatherAlong(e, in, d, idx, op);
  r->value.getDefiningOp()->setAttr(kIndexErrorAttr, e.b.getI64IntegerAttr(kIndexErrorGather));
  return r;
}

VarP indexSelect(Interpreter &I, const std::string &op, Args &a) {
  StaticInput in(a, op);
  int64_t d = normDim(asInt(a.get("dim"), "dim"), in.rank);
  Value idx = tensorArg(a.get("index"), op);
  DType id = dtypeOfValue(idx);
  if (id != DType::I64 && id != DType::I32)
    throw Unsupported(BreakCategory::UserError, "index_select expects an int index (eager raises)");
  if (ttype(idx).getRank() > 1)
    throw Unsupported(BreakCategory::UserError, "index_select expects a 1-D index (eager raises)");
  if (in.rank == 0)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "index_select of a 0-d tensor is not supported yet");
  Emit e(I);
  int64_t n = ttype(idx).getRank() == 0 ? 1 : ttype(idx).getDimSize(0);
  std::vector<int64_t> ishape(in.rank, 1), full = in.shape;
  ishape[d] = n;
  full[d] = n;
  idx = e.reshape(e.cast(idx, DType::I64), ishape);
  if (ishape != full)
    idx = e.b.create<BroadcastToOp>(I.loc(), RankedTensorType::get(full, e.elt(DType::I64)), idx);
  return gatherAlong(e, in, d, idx, op);
}

/// F.pad(input, pad, mode, value).
VarP pad(Interpreter &I, const std::string &, Args &a) {
  Emit e(I);
  Value v = tensorArg(a.get("input"), "pad");
  std::vector<int64_t> p = asInts(a.get("pad"), "pad");
  std::string mode = strArg(a, "mode", "constant");
  int64_t rank = ttype(v).getRank();
  if (p.size() % 2 || (int64_t)p.size() / 2 > rank)
    throw Unsupported("pad: invalid pad length (eager raises)");
  if (mode != "constant" && !a.isNone("value"))
    throw Unsupported("pad value with a non-constant mode (eager raises)");
  if (mode != "constant" && ((int64_t)p.size() / 2 > rank - 1 || rank < 2))
    throw Unsupported("pad mode '" + mode + "' needs batch/channel dims");
  Value input = v;
  for (size_t i = 0; i < p.size() / 2; ++i)
    v = padDim(e, v, rank - 1 - i, p[2 * i], p[2 * i + 1], mode, a.get("value"));
  if (mode != "circular" && v != input) // eager's circular pad is contiguous
    I.keepsLayout(v, input, /*exact=*/false);
  return freshResult(v);
}

/// hstack (`Vertical` false) and vstack: a torch.cat of the tensors made
/// at least 1-D (hstack) or 2-D (vstack).
template <bool Vertical> VarP stackSequence(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  VarP seq = a.get("tensors");
  if (!seq || (seq->kind != Var::Kind::Tuple && seq->kind != Var::Kind::List))
    throw Unsupported(op + " expects a sequence");
  std::vector<VarP> items;
  for (auto &t : seq->items) {
    Value v = tensorArg(t, op);
    int64_t r = ttype(v).getRank();
    if (Vertical && r < 2) {
      auto s = shapeOf(v);
      v = e.reshape(v, {1, s.empty() ? 1 : s[0]});
    }
    if (!Vertical && r == 0)
      v = e.reshape(v, {1});
    items.push_back(T(v));
  }
  int64_t dim = Vertical || ttype(items.front()->value).getRank() == 1 ? 0 : 1;
  return callOp(I, "cat", {{"tensors", makeSeq(Var::Kind::List, items)}, {"dim", constInt(dim)}});
}

VarP outer(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  Value w = tensorArg(a.get("vec2"), op);
  if (ttype(v).getRank() != 1 || ttype(w).getRank() != 1)
    throw Unsupported(BreakCategory::UserError, "outer expects 1-D tensors (eager raises)");
  Emit e(I);
  return T(e.binary<MulOp>(T(e.reshape(v, {ttype(v).getDimSize(0), 1})), T(w)));
}

VarP dot(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  Value v = tensorArg(x, op);
  Value w = tensorArg(a.get("tensor"), op);
  if (ttype(v).getRank() != 1 || ttype(w).getRank() != 1 ||
      ttype(v).getShape() != ttype(w).getShape() ||
      ttype(v).getElementType() != ttype(w).getElementType())
    throw Unsupported(BreakCategory::UserError,
                      "dot expects two 1-D tensors of one size and dtype (eager raises)");
  return callOp(I, "matmul", {{"input", x}, {"other", a.get("tensor")}});
}

/// addmm (`Batched` false: mat1, mat2) and baddbmm (batch1, batch2):
/// beta * input + alpha * (m1 @ m2).
template <bool Batched> VarP addProduct(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  tensorArg(x, op);
  VarP m1 = a.get(Batched ? "batch1" : "mat1"), m2 = a.get(Batched ? "batch2" : "mat2");
  int64_t want = Batched ? 3 : 2;
  if (ttype(tensorArg(m1, op)).getRank() != want || ttype(tensorArg(m2, op)).getRank() != want)
    throw Unsupported(BreakCategory::UserError,
                      op + " expects " + std::to_string(want) + "-D matrices (eager raises)");
  if (x->isTensor() && ttype(x->value).getElementType() != ttype(m1->value).getElementType())
    throw Unsupported(BreakCategory::UserError,
                      op + ": input of another dtype than the matrices (eager raises)",
                      hint::kRaisesInEager);
  VarP prod = callOp(I, "matmul", {{"input", m1}, {"other", m2}});
  if (!a.isNone("alpha"))
    prod = callOp(I, "mul", {{"input", prod}, {"other", a.get("alpha")}});
  VarP base = x;
  if (!a.isNone("beta")) {
    double beta = asDouble(a.get("beta"), "beta");
    if (beta == 0)
      return prod; // torch ignores input (even NaN) when beta == 0
    base = callOp(I, "mul", {{"input", x}, {"other", a.get("beta")}});
  }
  VarP r = callOp(I, "add", {{"input", base}, {"other", prod}});
  if (ttype(r->value).getShape() != ttype(prod->value).getShape())
    throw Unsupported(BreakCategory::UserError,
                      op + ": input does not broadcast to the product (eager raises)");
  return r;
}

/// torch.einsum of one or two float operands without ellipsis or repeated
/// indices within an operand: indices only one operand has and the output
/// lacks are summed first; the rest becomes one batched kiln.matmul
/// ([batch, M, K] x [batch, K, N]) between permutes and reshapes.
VarP einsum(Interpreter &I, const std::string &, Args &a) {
  Emit e(I);
  std::string eq = strArg(a, "equation", "");
  VarP ops = a.get("operands");
  std::vector<VarP> vs = ops && (ops->kind == Var::Kind::Tuple || ops->kind == Var::Kind::List)
                             ? ops->items
                             : std::vector<VarP>{ops};
  if (vs.size() == 1 && vs[0] &&
      (vs[0]->kind == Var::Kind::Tuple || vs[0]->kind == Var::Kind::List))
    vs = vs[0]->items;
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find('.') != std::string::npos)
    throw Unsupported("einsum with '...' is not supported yet");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), out;
  std::vector<std::string> ins;
  for (size_t at = 0;;) {
    size_t comma = lhs.find(',', at);
    ins.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  if (ins.size() != vs.size() || ins.size() > 2)
    throw Unsupported("einsum of " + std::to_string(vs.size()) + " operands is not supported yet");
  std::map<char, int64_t> size, count;
  std::vector<Value> vals;
  for (size_t i = 0; i < ins.size(); ++i) {
    Value v = tensorArg(vs[i], "einsum");
    if (!isFloatingDType(dtypeOfValue(v)))
      throw Unsupported("einsum of integer tensors is not supported yet");
    auto sh = shapeOf(v);
    if (sh.size() != ins[i].size())
      throw Unsupported("einsum: subscripts do not match the operand's rank (eager raises)");
    std::set<char> seen;
    for (size_t d = 0; d < sh.size(); ++d) {
      char c = ins[i][d];
      if (!seen.insert(c).second)
        throw Unsupported("einsum with a repeated index in one operand is not supported yet");
      if (size.count(c) && size[c] != sh[d])
        throw Unsupported("einsum: index sizes differ (broadcasting is not supported yet)");
      size[c] = sh[d];
      ++count[c];
    }
    vals.push_back(v);
  }
  if (arrow == std::string::npos) { // implicit output: indices seen once, sorted
    for (auto &[c, n] : count)
      if (n == 1)
        out += c;
  } else {
    out = eq.substr(arrow + 2);
  }
  for (char c : out)
    if (!size.count(c))
      throw Unsupported("einsum: output index not in the inputs (eager raises)");
  if (vals.size() == 2 && dtypeOfValue(vals[0]) != dtypeOfValue(vals[1]))
    throw Unsupported("einsum of operands with different dtypes (eager raises)");
  auto inOut = [&](char c) { return out.find(c) != std::string::npos; };
  // Sum indices that only one operand has and the output lacks.
  for (size_t i = 0; i < vals.size(); ++i) {
    std::vector<int64_t> dims;
    std::string kept;
    for (size_t k = 0; k < ins[i].size(); ++k) {
      char c = ins[i][k];
      if (!inOut(c) && count[c] == 1)
        dims.push_back(k);
      else
        kept += c;
    }
    if (!dims.empty())
      vals[i] = e.reduce<SumOp>(vals[i], dims, false);
    ins[i] = kept;
  }
  auto permuteTo = [&](Value v, const std::string &from, const std::string &to) {
    std::vector<int64_t> perm;
    for (char c : to)
      perm.push_back(from.find(c));
    bool id = true;
    for (size_t k = 0; k < perm.size(); ++k)
      id &= perm[k] == (int64_t)k;
    return id ? v : e.permute(v, perm);
  };
  auto prod = [&](const std::string &idx) {
    int64_t p = 1;
    for (char c : idx)
      p *= size[c];
    return p;
  };
  std::string res;
  Value r;
  if (vals.size() == 1) {
    r = vals[0];
    res = ins[0];
  } else {
    std::string batch, m, k, n;
    for (char c : ins[0]) {
      bool inB = ins[1].find(c) != std::string::npos;
      (inB ? (inOut(c) ? batch : k) : m) += c;
    }
    for (char c : ins[1])
      if (ins[0].find(c) == std::string::npos)
        n += c;
    Value A = e.reshape(permuteTo(vals[0], ins[0], batch + m + k), {prod(batch), prod(m), prod(k)});
    Value B = e.reshape(permuteTo(vals[1], ins[1], batch + k + n), {prod(batch), prod(k), prod(n)});
    r = e.inferred<MatmulOp>({A, B});
    std::vector<int64_t> shape;
    for (char c : batch + m + n)
      shape.push_back(size[c]);
    r = e.reshape(r, shape);
    res = batch + m + n;
  }
  // Indices left in `res` but not in the output (shared, not batch) were
  // contracted; anything else still extra is summed.
  std::vector<int64_t> extra;
  std::string kept;
  for (size_t k = 0; k < res.size(); ++k) {
    if (inOut(res[k]))
      kept += res[k];
    else
      extra.push_back(k);
  }
  if (!extra.empty())
    r = e.reduce<SumOp>(r, extra, false);
  return freshResult(permuteTo(r, kept, out));
}

/// torch.nn.modules.utils._single/_pair/_triple/_quadruple on constants
/// (nn.Conv*d and pooling modules call them in forward).
template <size_t N> VarP ntuple(Interpreter &, const std::string &op, Args &a) {
  size_t n = N;
  VarP x = a.get("x");
  if (!x)
    throw Unsupported(op + ": missing argument");
  if (x->kind == Var::Kind::Tuple || x->kind == Var::Kind::List)
    return makeSeq(Var::Kind::Tuple, x->items);
  PyObject *o = constObj(x, "argument");
  if (PyTuple_Check(o) || PyList_Check(o))
    return makeConst(PyRef::steal(PySequence_Tuple(o)));
  PyRef t = PyRef::steal(PyTuple_New(n));
  for (size_t i = 0; i < n; ++i) {
    Py_INCREF(o);
    PyTuple_SET_ITEM(t.get(), i, o);
  }
  return makeConst(t);
}

} // namespace

void registerShapeOps(OpRegistry &r) {
  const char *utils = "torch.nn.modules.utils";
  r.op("ntuple1", ntuple<1>, Params{"x"}).function(utils, "_single");
  r.op("ntuple2", ntuple<2>, Params{"x"}).function(utils, "_pair");
  r.op("ntuple3", ntuple<3>, Params{"x"}).function(utils, "_triple");
  r.op("ntuple4", ntuple<4>, Params{"x"}).function(utils, "_quadruple");
  const Params input{"input"}, withOther{"input", "other"};
  r.op("flip", flip<FlipDims::Given>, Params{"input", "dims"})
      .torch()
      .method(Params{"input", "*dims"});
  r.op("fliplr", flip<FlipDims::Last>, input).torchAndMethod();
  r.op("flipud", flip<FlipDims::First>, input).torchAndMethod();
  r.op("roll", roll, Params{"input", "shifts", "dims"}).torchAndMethod();
  r.op("tril", triangle<true>, Params{"input", "diagonal"}).torchAndMethod();
  r.op("triu", triangle<false>, Params{"input", "diagonal"}).torchAndMethod();
  r.op("movedim", movedim, Params{"input", "source", "destination"}, View)
      .torchAndMethod()
      .torchAndMethod("moveaxis");
  r.op("swapaxes", swapaxes, Params{"input", "dim0", "dim1"}, View)
      .torchAndMethod()
      .torchAndMethod("swapdims");
  r.op("expand_as", toShape<true, false>, withOther, View).method();
  r.op("view_as", toShape<false, false>, withOther, View).method();
  r.op("reshape_as", toShape<false, false>, withOther, View).method();
  r.op("broadcast_to", toShape<true, true>, Params{"input", "size"}, View).torchAndMethod();
  r.op("type_as", typeAs, withOther, View).method();
  r.op("unflatten", unflatten, Params{"input", "dim", "sizes"}, View).torchAndMethod();
  r.op("ravel", ravel, input, View).torchAndMethod();
  r.op("repeat", repeat<false>, Params{"input", "*sizes"}).method();
  r.op("tile", repeat<true>, Params{"input", "dims"}).torch().method(Params{"input", "*sizes"});
  r.op("repeat_interleave", repeatInterleave, Params{"input", "repeats", "dim", "output_size"})
      .torchAndMethod();
  r.op("gather", gather, Params{"input", "dim", "index", "sparse_grad"}).torchAndMethod();
  r.op("index_select", indexSelect, Params{"input", "dim", "index"}).torchAndMethod();
  r.op("pad", pad, Params{"input", "pad", "mode", "value"}).functional();
  r.op("hstack", stackSequence<false>, Params{"tensors"}).torch();
  r.op("vstack", stackSequence<true>, Params{"tensors"}).torch();
  r.op("outer", outer, Params{"input", "vec2"}).torchAndMethod().torchAndMethod("ger");
  r.op("dot", dot, Params{"input", "tensor"}).torchAndMethod();
  r.op("addmm", addProduct<false>, Params{"input", "mat1", "mat2", "beta", "alpha"})
      .torchAndMethod();
  r.op("baddbmm", addProduct<true>, Params{"input", "batch1", "batch2", "beta", "alpha"})
      .torchAndMethod();
  r.op("einsum", einsum, Params{"equation", "*operands"}).torch();
}

} // namespace kiln
