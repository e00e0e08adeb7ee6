//===- SymbolicIndexing.cpp - indexing with symbolic sizes -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `x[index]` when `x` has symbolic dims or a slice bound is a symbolic size
// (`buf[:, :s]`). A symbolic dim can be kept whole (`:`, a kiln.slice with
// `end = -1`), indexed by an int (guarded: `s > i`, `s >= -i`), cut to a
// constant length (`[:n]`, `[-k:]`, guarded to fit) or to a length that
// follows it (`[1:]`, `[:-1]`, `[1:-1]`: kiln.slice bounds counted from the
// end, the length a derived symbol `s - c`); a static dim can be sliced to a symbolic
// length `s` from a constant start, which is a kiln.gather of
// `start + arange(s)` (guarded `start + s <= size`, as eager would clamp).
// Integer index tensors (`x[i]`, `x[i, j]`, transformers' `padding_mask[b,
// kv]` under vmap) are advancedIndex's row lookup with the sizes as SymInts.
// Anything else (symbolic starts, steps > 1 with a length that follows the
// size, tensors mixed with other index items) fails the capture with a
// reason; the frame is then specialized.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include <tuple>

namespace kiln {

using mlir::RankedTensorType;
using mlir::Value;

namespace {

SizeExprP symExpr(int sym) {
  auto e = std::make_shared<SizeExpr>();
  e->op = SizeExpr::Op::Sym;
  e->value = sym;
  return e;
}

SizeExprP constExpr(int64_t v) {
  auto e = std::make_shared<SizeExpr>();
  e->value = v;
  return e;
}

bool isNone(const VarP &v) { return v->isConst() && v->obj.get() == Py_None; }

/// One index item per consumed or inserted dim.
struct Item {
  enum Kind { Full, Int, Slice, SymSlice, NewDim } kind;
  int64_t i = 0;                   ///< Int
  Py_ssize_t s = 0, e = 0, st = 1; ///< Slice (unadjusted; e = PY_SSIZE_T_MAX for none)
  VarP start, stop;                ///< SymSlice
};

/// The items of index `raw` (ints, slices, None, ..., symbolic slices),
/// with the dims an ellipsis or a short index leaves expanded to Full.
std::vector<Item> decodeIndex(const std::vector<VarP> &raw, int64_t rank) {
  std::vector<Item> items;
  int consuming = 0, ellipsis = -1;
  for (const VarP &r : raw) {
    Item it{Item::Full};
    if (r->kind == Var::Kind::SymSlice) {
      if (!isNone(r->items[2]) &&
          !(r->items[2]->isConst() && PyLong_Check(r->items[2]->obj.get()) &&
            PyLong_AsLong(r->items[2]->obj.get()) == 1))
        throw Unsupported("a slice with a symbolic bound and a step other than 1");
      it = {Item::SymSlice};
      it.start = r->items[0];
      it.stop = r->items[1];
      ++consuming;
    } else {
      PyObject *o = constObj(r, "index");
      if (o == Py_Ellipsis) {
        if (ellipsis >= 0)
          throw Unsupported("an index can only have a single ellipsis (eager raises)");
        ellipsis = (int)items.size();
        continue;
      }
      if (o == Py_None) {
        it.kind = Item::NewDim;
      } else if (PySlice_Check(o)) {
        it.kind = Item::Slice;
        if (PySlice_Unpack(o, &it.s, &it.e, &it.st) < 0)
          throw Unsupported(BreakCategory::UserError, withPythonError("invalid slice"));
        if (it.st <= 0)
          throw Unsupported("slice step must be positive (eager raises)");
        ++consuming;
      } else if (PyLong_Check(o) && !PyBool_Check(o)) {
        it.kind = Item::Int;
        it.i = PyLong_AsLongLong(o);
        ++consuming;
      } else {
        throw Unsupported("index " + pyText(o, true) + " of a tensor with symbolic sizes");
      }
    }
    items.push_back(it);
  }
  if (consuming > rank)
    throw Unsupported("too many indices for tensor (eager raises)");
  if (ellipsis < 0)
    ellipsis = (int)items.size();
  items.insert(items.begin() + ellipsis, rank - consuming, Item{Item::Full});
  return items;
}

/// x[..., start:stop, ...] of static dim `dim` of `r` with a symbolic
/// `stop`: a gather of start + arange(stop - start); returns the gathered
/// value and its symbolic length.
std::pair<Value, VarP> gatherSymbolicSlice(Interpreter &I, Value r, int64_t dim, const Item &it) {
  Emit em(I);
  VarP s0 = isNone(it.start) ? constInt(0) : it.start;
  VarP len = I.symIntBinary("-", it.stop, s0);
  if (!len || len->kind != Var::Kind::SymInt)
    throw Unsupported("a slice with a symbolic bound whose length is not symbolic");
  Value idx = I.symIota(len);
  if (int64_t c = asInt(s0, "slice start"))
    idx = em.bin<mlir::kiln::AddOp>(idx, em.num(c, DType::I64));
  auto rt = ttype(r);
  std::vector<int64_t> shape(rt.getRank(), 1);
  shape[dim] = ttype(idx).getDimSize(0);
  idx = em.reshape(idx, shape);
  std::vector<int64_t> full(rt.getShape().begin(), rt.getShape().end());
  full[dim] = 1;
  for (int64_t s : full)
    if (mlir::ShapedType::isDynamic(s))
      throw Unsupported(BreakCategory::DynamicShape,
                        "a slice with a symbolic bound of a tensor with other symbolic dims");
  idx = em.bin<mlir::kiln::AddOp>(idx, em.splat(full, DType::I64, 0));
  Value g = em.checked<mlir::kiln::GatherOp>(
      {r, idx}, {em.b.getNamedAttr("dim", em.b.getI64IntegerAttr(dim))}, "indexing");
  // In range by construction (guarded or shorter than the dim): no index
  // check, in the `?` graph and in its static twin alike (IndexChecks.cpp).
  g.getDefiningOp()->setAttr("kiln.in_range", em.b.getUnitAttr());
  return {g, len};
}

/// x[:n] of symbolic dim `d` of `v` where n - s is a constant: true for
/// the whole dim when >= 0 (the same expression, `mask[..., :k.shape[-2]]`),
/// false for a gather of n < s elements (a mask one longer than the keys;
/// n is then a sum of sizes, never below 0). x[-n:] where s - n is a
/// constant <= 0: the whole dim (T5's `bias[:, :, -seq_len:, :]`).
/// Unsupported otherwise.
bool wholeSymbolicSlice(Interpreter &I, Value v, int64_t d, const Item &it) {
  VarP size = I.sizeVar(v, d);
  if (isNone(it.start) && !isNone(it.stop)) {
    VarP over = I.symIntBinary("-", it.stop, size);
    if (over && over->kind != Var::Kind::SymInt)
      return asInt(over, "slice stop") >= 0;
  }
  if (!isNone(it.start) && isNone(it.stop)) {
    VarP from = I.symIntBinary("+", it.start, size); // the start from the front
    if (from && from->kind != Var::Kind::SymInt && asInt(from, "slice start") <= 0)
      return true;
  }
  auto text = [](const VarP &n) {
    return n->kind == Var::Kind::SymInt && n->sym ? sizeExprText(*n->sym) : std::string("?");
  };
  throw Unsupported(BreakCategory::DynamicShape,
                    "a slice of a symbolic dim (" + text(size) + ") with a symbolic bound (" +
                        text(it.stop) + ")",
                    hint::kSpecializeSizes);
}

/// `x[s:e:st]` (constants) along symbolic dim `d` of `v`: the kiln.slice
/// bounds (< 0 from the end, mlir::kiln::sliceBounds) and the result's
/// size. A constant length (`[:n]`, `[-k:]`, `[-k:-j]`, `[i:n]`) is guarded
/// to fit, as eager would clamp otherwise; a length that follows the size
/// (`[i:]`, `[:-j]`, `[i:-j]`, step 1) is a derived symbol `s - c`, guarded
/// >= 2 as input symbols are. Null for the whole dim (`[:]`, `[:n]` with
/// n >= s); Unsupported otherwise (the frame is then specialized).
VarP symbolicDimSlice(Interpreter &I, Value v, int64_t d, const Item &it, int64_t &start,
                      int64_t &end, int64_t &step) {
  VarP size = I.sizeVar(v, d);
  Py_ssize_t s = it.s, e = it.e, st = it.st;
  bool toEnd = e == PY_SSIZE_T_MAX;
  auto holds = [&](const VarP &lhs, const char *cmp, int64_t rhs) {
    return I.symIntBinary(cmp, lhs, constInt(rhs))->obj.get() == Py_True;
  };
  auto fail = [](const std::string &why) {
    throw Unsupported(BreakCategory::DynamicShape, "a slice of a symbolic dim " + why,
                      hint::kSpecializeSizes);
  };
  auto ceilDiv = [](int64_t a, int64_t b) { return a / b + (a % b != 0); };
  if (s >= 0 && !toEnd && e >= 0) { // [s:e]: a constant length while s <= e <= size
    if (!holds(size, ">=", e)) {
      if (s == 0 && st == 1)
        return nullptr; // [:n] with n beyond the size: the whole dim
      fail("whose constant stop is beyond the size");
    }
    if (e < s)
      fail("with a stop below its start");
    std::tie(start, end, step) = std::make_tuple(s, e, st);
    return constInt(ceilDiv(e - s, st));
  }
  if (s < 0) { // [-k:], [-k:-j]: a constant length while k <= size
    if (!toEnd && e >= 0)
      fail("from a start from the end to a stop from the front");
    if (toEnd)
      e = 0;
    if (e < s)
      fail("with a stop below its start");
    if (!holds(size, ">=", -s))
      fail("whose start from the end is beyond the size");
    std::tie(start, end, step) = std::make_tuple(s, e - 1, st);
    return constInt(ceilDiv(e - s, st));
  }
  // [s:], [s:-j]: the length follows the size.
  if (s == 0 && toEnd && st == 1)
    return nullptr;
  if (st != 1)
    fail("with a step other than 1 and a length that follows the size");
  int64_t back = toEnd ? 0 : -e;
  VarP len = I.symIntBinary("-", size, constInt(s + back));
  if (!holds(len, ">=", 2))
    fail("shorter than 2 (sizes 0 and 1 are specialized)");
  std::tie(start, end, step) = std::make_tuple(s, -1 - back, 1);
  return len;
}

/// x[i0, ..., ik-1] with integer index tensors for the leading k dims of
/// `x` with symbolic dims (a padding mask of kv_len indexed inside
/// torch.vmap): TorchIndexing.cpp's advancedIndex with the sizes as
/// SymInts. The row index (advancedRow) picks rows of `x` viewed as
/// [prod(dims[:k]), prod(dims[k:])]; an index out of range raises eager's
/// IndexError after the graph ran (IndexChecks.cpp reads the rows' size).
/// nullptr when `indices` has no tensor.
/// x[i, j] of a 2-d `x` whose two sizes are both symbolic (transformers'
/// packed-sequence mask `mask[batch_idx, q_idx]` under vmap): the row
/// lookup below would view x as [B * S, 1], a product of two symbols that
/// no reshape tracks. Instead the rows of x at i (kiln.embedding:
/// [I..., S]), then in each the element at j (a gather along the last
/// dim). Negative indices wrap; a j outside [0, S) turns its row index to
/// -1, so the row lookup raises eager's IndexError after the graph (and
/// the gather reads column 0 meanwhile).
VarP symbolicRowColumn(Interpreter &I, const VarP &x, const VarP &i, const VarP &j,
                       const VarP &rows, const VarP &cols) {
  for (const VarP &t : {i, j}) {
    Type et = ttype(t->value).getElementType();
    if (et.isInteger(1) || !llvm::isa<mlir::IntegerType>(et))
      return nullptr; // masks and float indices: the general path's errors
  }
  auto op = [&](const char *name, VarP a, VarP b) {
    return callOp(I, name, {{"input", std::move(a)}, {"other", std::move(b)}});
  };
  VarP zero = constInt(0);
  VarP i64 = callOp(I, "long", {{"input", i}}), j64 = callOp(I, "long", {{"input", j}});
  // Both to the broadcast shape of the two indices.
  VarP ib = op("add", i64, op("mul", j64, zero)), jb = op("add", j64, op("mul", i64, zero));
  VarP row = wrapIndex(I, ib, rows), col = wrapIndex(I, jb, cols);
  VarP bad =
      callOp(I, "logical_or", {{"input", op("lt", col, zero)}, {"other", op("ge", col, cols)}});
  row = failingRow(I, row, bad);                                                     // -1 where bad
  col = op("mul", col, op("sub", constInt(1), callOp(I, "long", {{"input", bad}}))); // 0 where bad
  bool isBool = ttype(x->value).getElementType().isInteger(1);
  VarP table = isBool ? callOp(I, "long", {{"input", x}}) : x;
  VarP picked = callOp(I, "embedding", {{"input", row}, {"weight", table}});
  int64_t last = ttype(picked->value).getRank() - 1;
  VarP at = callOp(I, "unsqueeze", {{"input", col}, {"dim", constInt(last)}});
  Emit em(I);
  Value g = em.checked<mlir::kiln::GatherOp>(
      {picked->value, at->value}, {em.b.getNamedAttr("dim", em.b.getI64IntegerAttr(last))},
      "indexing");
  // In range by construction (col is 0 where j was out of range, and that
  // row's lookup raises): no index check of its own (IndexChecks.cpp).
  g.getDefiningOp()->setAttr("kiln.in_range", em.b.getUnitAttr());
  VarP r = callOp(I, "squeeze", {{"input", makeTensor(g)}, {"dim", constInt(last)}});
  return isBool ? callOp(I, "bool", {{"input", r}}) : r;
}

VarP symbolicAdvancedIndex(Interpreter &I, const VarP &x, const std::vector<VarP> &indices) {
  bool anyTensor = false, allTensors = true;
  for (const VarP &i : indices) {
    anyTensor |= i->isTensor();
    allTensors &= i->isTensor();
  }
  if (!anyTensor)
    return nullptr;
  if (!allTensors)
    throw Unsupported("indexing with tensors mixed with other indices is not supported yet");
  Value v = x->value;
  int64_t rank = ttype(v).getRank();
  size_t k = indices.size();
  if (k == 0 || static_cast<int64_t>(k) > rank)
    throw Unsupported("too many indices for tensor (eager raises)");
  auto trackedSize = [&](Value t, int64_t d) {
    if (I.symbolOfDim(t, d) == -2)
      throw Unsupported("indexing with a symbolic size whose origin kiln does not track");
    return I.sizeVar(t, d);
  };
  auto mulSize = [&](const VarP &a, const VarP &b) {
    if (VarP r = I.symIntBinary("*", a, b))
      return r;
    return constInt(asInt(a, "size") * asInt(b, "size"));
  };
  std::vector<VarP> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(trackedSize(v, d));
  // Both sizes symbolic (SymInts in the `?` capture and its static shadow
  // alike, so that the two capture the same ops).
  if (k == 2 && rank == 2 && !dims[0]->isConst() && !dims[1]->isConst())
    if (VarP r = symbolicRowColumn(I, x, indices[0], indices[1], dims[0], dims[1]))
      return r;
  VarP lin = advancedRow(I, indices, dims);
  VarP rows = constInt(1), cols = constInt(1);
  for (int64_t d = 0; d < rank; ++d)
    (d < static_cast<int64_t>(k) ? rows : cols) =
        mulSize(d < static_cast<int64_t>(k) ? rows : cols, dims[d]);
  // A static side's partner is -1 (reshape infers it: a product like
  // `3 * s` is not a size the reshape can check).
  if (rows->isConst())
    cols = constInt(-1);
  else if (cols->isConst())
    rows = constInt(-1);
  VarP table =
      callOp(I, "reshape", {{"input", x}, {"shape", makeSeq(Var::Kind::Tuple, {rows, cols})}});
  // The lookup's range check needs the rows as a size kiln tracks.
  if (ttype(table->value).isDynamicDim(0) && I.symbolOfDim(table->value, 0) < 0)
    throw Unsupported("advanced indexing of rows whose symbolic count kiln does not track");
  bool isBool = ttype(v).getElementType().isInteger(1);
  if (isBool)
    table = callOp(I, "long", {{"input", table}});
  VarP picked = callOp(I, "embedding", {{"input", lin}, {"weight", table}});
  std::vector<VarP> out;
  for (int64_t d = 0; d < ttype(lin->value).getRank(); ++d)
    out.push_back(trackedSize(lin->value, d));
  out.insert(out.end(), dims.begin() + k, dims.end());
  VarP r = callOp(I, "reshape", {{"input", picked}, {"shape", makeSeq(Var::Kind::Tuple, out)}});
  return isBool ? callOp(I, "bool", {{"input", r}}) : r;
}

} // namespace

VarP Interpreter::symbolicGetitem(const VarP &x, const VarP &index) {
  if (!x->isTensor())
    return nullptr;
  Value v = x->value;
  auto type = ttype(v);
  int64_t rank = type.getRank();
  std::vector<VarP> raw;
  if (index->kind == Var::Kind::Tuple) {
    raw = index->items;
  } else if (index->isConst() && PyTuple_Check(index->obj.get())) {
    // A constant tuple (`x[..., None]`, `x[0, 1]`: Python folds it).
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(index->obj.get()); ++i)
      raw.push_back(makeConst(PyRef::borrow(PyTuple_GET_ITEM(index->obj.get(), i))));
  } else {
    raw = {index};
  }
  bool symbolic = false;
  for (const VarP &r : raw)
    symbolic |= r->kind == Var::Kind::SymSlice;
  std::vector<int> syms(rank);
  for (int64_t d = 0; d < rank; ++d) {
    syms[d] = symbolOfDim(v, d);
    symbolic |= syms[d] != -1;
  }
  if (!symbolic)
    return nullptr;
  if (VarP r = symbolicAdvancedIndex(*this, x, raw))
    return r; // integer index tensors
  std::vector<Item> items = decodeIndex(raw, rank);
  // One kiln.slice for the int/constant-slice/whole parts, gathers for the
  // symbolic slices, then a reshape that drops int dims and adds None dims.
  std::vector<int64_t> start(rank, 0), end(rank, -1), step(rank, 1);
  std::vector<VarP> outDims;                       // sizes of the final shape
  std::vector<std::pair<size_t, int64_t>> derived; // (outDims entry, dim): `s - c`
  std::vector<std::pair<int64_t, const Item *>> gathers;
  int64_t d = 0;
  for (const Item &it : items) {
    if (it.kind == Item::NewDim) {
      outDims.push_back(constInt(1));
      continue;
    }
    int sym = syms[d];
    bool dyn = sym != -1;
    if (sym == -2)
      throw Unsupported("indexing a symbolic dim whose origin kiln does not track");
    int64_t n = type.getDimSize(d);
    if (it.kind == Item::Full) {
      outDims.push_back(sizeVar(v, d));
    } else if (it.kind == Item::Int) {
      if (dyn) { // s > i, or s >= -i for the element s + i (bounds from the end)
        if (it.i < 0 ? out_.symbols[sym].captured < -it.i : out_.symbols[sym].captured <= it.i)
          throw Unsupported("index out of range (eager raises)");
        addSizeGuard(symExpr(sym), it.i < 0 ? ">=" : ">", constExpr(it.i < 0 ? -it.i : it.i), true);
      } else {
        if (it.i < -n || it.i >= n)
          throw Unsupported(BreakCategory::UserError, "index out of range", hint::kRaisesInEager);
      }
      int64_t i = it.i < 0 && !dyn ? it.i + n : it.i;
      start[d] = i;
      end[d] = i < 0 ? i : i + 1;
    } else if (it.kind == Item::Slice) {
      Py_ssize_t s = it.s, e = it.e, st = it.st;
      if (dyn) {
        VarP len = symbolicDimSlice(*this, v, d, it, start[d], end[d], step[d]);
        if (len && len->kind == Var::Kind::SymInt)
          derived.push_back({outDims.size(), d});
        outDims.push_back(len ? len : sizeVar(v, d));
      } else {
        Py_ssize_t len = PySlice_AdjustIndices(n, &s, &e, st);
        start[d] = s;
        end[d] = len == 0 ? s : s + (len - 1) * st + 1;
        step[d] = st;
        outDims.push_back(constInt(len));
      }
    } else { // SymSlice
      if (dyn) {
        bool whole = wholeSymbolicSlice(*this, v, d, it);
        if (!whole)
          gathers.push_back({d, &it});
        outDims.push_back(whole ? sizeVar(v, d) : nullptr);
        ++d;
        continue;
      }
      VarP s0 = isNone(it.start) ? constInt(0) : it.start;
      if (s0->kind == Var::Kind::SymInt || asInt(s0, "slice start") < 0 || isNone(it.stop))
        throw Unsupported(
            "a slice with a symbolic bound needs a constant start >= 0 and a symbolic stop");
      // Eager clamps the stop to the size: guarded either way.
      bool fits = symIntBinary("<=", it.stop, constInt(n))->obj.get() == Py_True;
      if (!fits) { // a static slice to the end
        int64_t b = std::min<int64_t>(asInt(s0, "slice start"), n);
        start[d] = b;
        end[d] = n;
        outDims.push_back(constInt(n - b));
      } else {
        if (symIntBinary(">=", it.stop, s0)->obj.get() != Py_True)
          throw Unsupported("a slice whose symbolic stop is below its start");
        gathers.push_back({d, &it});
        outDims.push_back(nullptr); // filled below
      }
    }
    ++d;
  }
  // Ints and constant slices.
  Value r = v;
  VarP sliced; // the kiln.slice's result, a view of `x` as in eager
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i)
    identity &= start[i] == 0 && end[i] == -1 && step[i] == 1;
  if (!identity) {
    Args a;
    a.named["input"] = x;
    a.named["start"] = constIntTuple(start);
    a.named["end"] = constIntTuple(end);
    a.named["step"] = constIntTuple(step);
    sliced = applyTracked(*this, "__slice", a);
    r = sliced->value;
    // A length that follows the size is a derived symbol (`s - 1`), read
    // back as the result's size so that reshapes pair it with its dim.
    for (auto [k, dim] : derived)
      outDims[k] = sizeVar(r, dim);
  }
  // Symbolic slices: gather start + arange(stop - start) along the dim.
  size_t g = 0;
  for (size_t k = 0; k < outDims.size(); ++k) {
    if (outDims[k])
      continue;
    auto [dim, it] = gathers[g++];
    std::tie(r, outDims[k]) = gatherSymbolicSlice(*this, r, dim, *it);
  }
  // Drop int dims, add None dims: a reshape (the sizes are those of `r`
  // in order, 1 for each None).
  std::vector<int64_t> shape;
  for (const VarP &o : outDims)
    shape.push_back(o->kind == Var::Kind::SymInt
                        ? (o->staticSym ? o->captured : mlir::ShapedType::kDynamic)
                        : asInt(o, "size"));
  auto rt = ttype(r);
  if (rt.getShape() == llvm::ArrayRef<int64_t>(shape))
    return r == v ? freshResult(r) : sliced && sliced->value == r ? sliced : T(r);
  // Only unit dims come and go: the symbolic dims stay in order, which
  // the reshape keeps for any number of them (segmentReshape).
  Args a;
  a.named["input"] = sliced && sliced->value == r ? sliced : T(r);
  a.named["shape"] = makeSeq(Var::Kind::Tuple, outDims);
  return applyTracked(*this, "reshape", a);
}

VarP Interpreter::symbolicExpand(const VarP &x, const VarP &size) {
  Value v = x->value;
  auto type = ttype(v);
  int64_t rank = type.getRank();
  bool symbolic = anySymInt(size);
  std::vector<int> syms(rank);
  for (int64_t d = 0; d < rank; ++d) {
    syms[d] = symbolOfDim(v, d);
    symbolic |= syms[d] != -1;
  }
  if (!symbolic)
    return nullptr;
  auto isSeq = [](const VarP &v) {
    return v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List;
  };
  std::vector<VarP> target = isSeq(size) ? size->items : std::vector<VarP>{size};
  if (target.size() == 1 && isSeq(target[0])) // x.expand((a, s, b)): one sequence
    target = target[0]->items;
  if ((int64_t)target.size() < rank)
    throw Unsupported("expand: too few sizes (" + std::to_string(target.size()) + " for rank " +
                      std::to_string(rank) + ")");
  size_t off = target.size() - rank;
  for (size_t i = 0; i < target.size(); ++i) {
    VarP t = target[i];
    bool minusOne = t->isConst() && PyLong_Check(t->obj.get()) && PyLong_AsLong(t->obj.get()) == -1;
    if (i < off) {
      if (minusOne)
        throw Unsupported("expand: -1 in a new leading dim");
      continue;
    }
    int64_t d = i - off;
    if (syms[d] == -2)
      throw Unsupported("expand of a symbolic dim whose origin kiln does not track");
    if (minusOne) {
      target[i] = sizeVar(v, d);
    } else if (syms[d] >= 0 && t->kind != Var::Kind::SymInt && !type.isDynamicDim(d) &&
               asInt(t, "size") == type.getDimSize(d)) {
      // The shadow static capture traced a static dim to a symbol of the
      // same size (the dynamic capture saw a static dim): a constant size.
    } else if (syms[d] >= 0) {
      // A symbolic input dim keeps its size: eager raises unless equal.
      if (t->kind != Var::Kind::SymInt)
        throw Unsupported("expand of a symbolic dim to a constant size");
      symIntBinary("==", t, sizeVar(v, d));
      if (!(t->captured == out_.symbols[syms[d]].captured))
        throw Unsupported("expand: sizes differ (eager raises)");
      target[i] = sizeVar(v, d);
    } else if (type.getDimSize(d) != 1) {
      if (t->kind == Var::Kind::SymInt || asInt(t, "size") != type.getDimSize(d))
        throw Unsupported("expand: invalid sizes (eager raises)");
    }
  }
  // select(true of the target shape, x, x) broadcasts x to it.
  Emit e(*this);
  Value cond = symFull(target, e.splat({}, DType::Bool, 1));
  return T(e.select(cond, v, v));
}

} // namespace kiln
