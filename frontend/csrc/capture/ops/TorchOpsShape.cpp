//===- TorchOpsShape.cpp - shape, gather and creation ops ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Table entries and handlers of shape manipulation beyond the core set:
// flip/roll/tril/triu, movedim/swapaxes, *_as, repeat/tile/
// repeat_interleave, unflatten/ravel, gather/index_select, F.pad (constant,
// replicate, reflect, circular), hstack/vstack, outer/dot/addmm/baddbmm and
// creation ops (empty(_like), new_*, eye, linspace). Everything is built
// from static shapes: reversed or wrapped reads are kiln.gather with a
// constant index, padding is kiln.concat of constants and slices.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace kiln {

using namespace mlir::kiln;

namespace {

DType dtypeOfValue(Value v) { return dtypeOf(ttype(v).getElementType()); }

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

VarP shapeOp(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  VarP x = a.get("input");
  Value v = tensorArg(x, op);
  int64_t vr = ttype(v).getRank();
  if ((op == "tril" || op == "triu") && vr >= 2 &&
      (I.symbolOfDim(v, vr - 2) != -1 || I.symbolOfDim(v, vr - 1) != -1)) {
    // Symbolic rows or cols: the mask j - i <= k (>= k) from two aranges.
    int64_t k = intArg(a, "diagonal", 0);
    auto iota = [&](int64_t d, std::vector<int64_t> shape) {
      VarP n = I.sizeVar(v, d);
      Value r = n->kind == Var::Kind::SymInt
                    ? I.symIota(n)
                    : e.b.create<mlir::kiln::ConstantOp>(I.loc(), arangeAttr(e, asInt(n, "size")));
      return e.reshape(r, shape);
    };
    Value rows = iota(vr - 2, {ttype(v).getDimSize(vr - 2), 1});
    Value cols = iota(vr - 1, {1, ttype(v).getDimSize(vr - 1)});
    Value diff = e.bin<SubOp>(cols, rows), kv = e.num(k, DType::I64);
    Value m = op == "tril" ? e.bin<LeOp>(diff, kv) : e.bin<GeOp>(diff, kv);
    return T(e.select(m, v, e.num(0, dtypeOfValue(v))));
  }
  auto shape = shapeOf(v);
  int64_t rank = shape.size();
  if (op == "flip" || op == "fliplr" || op == "flipud") {
    std::vector<int64_t> dims;
    if (op == "flip")
      dims = asInts(a.get("dims"), "dims");
    else {
      if (rank < (op == "fliplr" ? 2 : 1))
        throw Unsupported(op + " needs a higher rank (eager raises)");
      dims = {op == "fliplr" ? 1 : 0};
    }
    if (rank == 0)
      return freshResult(v);
    for (int64_t d : dims) {
      d = normDim(d, rank);
      std::vector<int64_t> idx;
      for (int64_t i = shape[d] - 1; i >= 0; --i)
        idx.push_back(i);
      v = gatherConst(e, v, d, idx);
    }
    return freshResult(v);
  }
  if (op == "roll") {
    std::vector<int64_t> shifts = asInts(a.get("shifts"), "shifts");
    if (a.isNone("dims")) {
      if (shifts.size() != 1)
        throw Unsupported("roll without dims takes one shift");
      int64_t n = 1;
      for (int64_t s : shape)
        n *= s;
      Value flat = e.reshape(v, {n});
      Value r = n ? concat(e,
                           {sliceDim(e, flat, 0, n - ((shifts[0] % n) + n) % n, n),
                            sliceDim(e, flat, 0, 0, n - ((shifts[0] % n) + n) % n)},
                           0)
                  : flat;
      return freshResult(e.reshape(r, shape));
    }
    std::vector<int64_t> dims = asInts(a.get("dims"), "dims");
    if (dims.size() != shifts.size())
      throw Unsupported("roll: shifts and dims differ in length (eager raises)");
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t d = normDim(dims[i], rank), n = shape[d];
      if (n == 0)
        continue;
      int64_t s = ((shifts[i] % n) + n) % n;
      if (s)
        v = concat(e, {sliceDim(e, v, d, n - s, n), sliceDim(e, v, d, 0, n - s)}, d);
    }
    return freshResult(v);
  }
  if (op == "tril" || op == "triu") {
    if (rank < 2)
      throw Unsupported(op + " needs rank >= 2 (eager raises)");
    int64_t k = intArg(a, "diagonal", 0), rows = shape[rank - 2], cols = shape[rank - 1];
    std::vector<double> mask;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        mask.push_back(op == "tril" ? j - i <= k : j - i >= k);
    Value m = e.dense({rows, cols}, DType::Bool, mask);
    return T(e.select(m, v, e.num(0, dtypeOfValue(v))));
  }
  if (op == "movedim") {
    std::vector<int64_t> src = asInts(a.get("source"), "source"),
                         dst = asInts(a.get("destination"), "destination");
    if (src.size() != dst.size())
      throw Unsupported("movedim: source and destination differ in length (eager raises)");
    std::vector<int64_t> perm(rank, -1);
    std::vector<bool> used(rank, false), placed(rank, false);
    for (size_t i = 0; i < src.size(); ++i) {
      int64_t s = normDim(src[i], rank), d = normDim(dst[i], rank);
      if (used[s] || placed[d])
        throw Unsupported("movedim: repeated dim (eager raises)");
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
    return callOp(I, "permute", {{"input", x}, {"dims", constIntTuple(perm)}});
  }
  if (op == "swapaxes")
    return callOp(I, "transpose", {{"input", x}, {"dim0", a.get("dim0")}, {"dim1", a.get("dim1")}});
  if (op == "expand_as" || op == "view_as" || op == "reshape_as" || op == "broadcast_to") {
    std::vector<int64_t> target = op == "broadcast_to" ? asInts(a.get("size"), "size")
                                                       : shapeOf(tensorArg(a.get("other"), op));
    return callOp(
        I, op == "expand_as" || op == "broadcast_to" ? "expand" : "reshape",
        {{"input", x},
         {op == "expand_as" || op == "broadcast_to" ? "size" : "shape", constIntTuple(target)}});
  }
  if (op == "type_as")
    return callOp(I, "to",
                  {{"input", x},
                   {"dtype", makeConst(PyRef::borrow(
                                 dtypeObject(dtypeOfValue(tensorArg(a.get("other"), op)))))}});
  if (op == "unflatten") {
    int64_t d = normDim(asInt(a.get("dim"), "dim"), rank);
    std::vector<int64_t> sizes = asInts(a.get("sizes"), "sizes"), ns;
    for (int64_t i = 0; i < rank; ++i) {
      if (i != d) {
        ns.push_back(shape[i]);
        continue;
      }
      for (int64_t s : sizes)
        ns.push_back(s);
    }
    return callOp(I, "reshape", {{"input", x}, {"shape", constIntTuple(ns)}});
  }
  if (op == "ravel")
    return callOp(I, "reshape", {{"input", x}, {"shape", constIntTuple({-1})}});
  if (op == "repeat" || op == "tile") {
    VarP repsArg = a.get("sizes") ? a.get("sizes") : a.get("dims");
    if (!repsArg)
      throw Unsupported(op + ": missing repeats");
    std::vector<int64_t> reps = asInts(repsArg, "sizes");
    if (op == "tile")
      while ((int64_t)reps.size() < rank)
        reps.insert(reps.begin(), 1);
    if ((int64_t)reps.size() < rank)
      throw Unsupported("repeat: fewer repeats than dims (eager raises)");
    std::vector<int64_t> s(reps.size() - rank, 1);
    s.insert(s.end(), shape.begin(), shape.end());
    std::vector<int64_t> inter, target, out;
    for (size_t i = 0; i < reps.size(); ++i) {
      if (reps[i] < 0)
        throw Unsupported("negative repeat (eager raises)");
      inter.insert(inter.end(), {1, s[i]});
      target.insert(target.end(), {reps[i], s[i]});
      out.push_back(reps[i] * s[i]);
    }
    Value r = e.reshape(v, inter);
    if (inter != target)
      r = e.b.create<BroadcastToOp>(I.loc(),
                                    RankedTensorType::get(target, ttype(v).getElementType()), r);
    return freshResult(e.reshape(r, out));
  }
  if (op == "repeat_interleave") {
    VarP reps = a.get("repeats");
    if (!reps || reps->isTensor())
      throw Unsupported("repeat_interleave with tensor repeats is not supported yet");
    int64_t r = asInt(reps, "repeats");
    if (r < 0)
      throw Unsupported("negative repeats (eager raises)");
    Value in = v;
    int64_t d = 0;
    if (a.isNone("dim")) {
      int64_t n = 1;
      for (int64_t s : shape)
        n *= s;
      in = e.reshape(v, {n});
    } else {
      d = normDim(asInt(a.get("dim"), "dim"), rank);
    }
    std::vector<int64_t> s = shapeOf(in), inter = s, target = s, out = s;
    if (s.empty()) {
      s = inter = target = out = {1};
      in = e.reshape(in, {1});
    }
    inter.insert(inter.begin() + d + 1, 1);
    target.insert(target.begin() + d + 1, r);
    out[d] *= r;
    Value t = e.reshape(in, inter);
    if (r != 1)
      t = e.b.create<BroadcastToOp>(I.loc(),
                                    RankedTensorType::get(target, ttype(v).getElementType()), t);
    return freshResult(e.reshape(t, out));
  }
  if (op == "gather" || op == "index_select") {
    int64_t d = normDim(asInt(a.get("dim"), "dim"), rank);
    Value idx = tensorArg(a.get("index"), op);
    DType id = dtypeOfValue(idx);
    if (op == "gather") {
      if (id != DType::I64)
        throw Unsupported("gather expects an int64 index (eager raises)");
      if (!a.isNone("sparse_grad") && boolArg(a, "sparse_grad", false))
        throw Unsupported("gather with sparse_grad");
      if (ttype(idx).getRank() != rank)
        throw Unsupported("gather index must have the input's rank (eager raises)");
      if (rank == 0)
        return freshResult(v);
    } else {
      if (id != DType::I64 && id != DType::I32)
        throw Unsupported("index_select expects an int index (eager raises)");
      if (ttype(idx).getRank() > 1)
        throw Unsupported("index_select expects a 1-D index (eager raises)");
      if (rank == 0)
        throw Unsupported("index_select of a 0-d tensor is not supported yet");
      int64_t n = ttype(idx).getRank() == 0 ? 1 : ttype(idx).getDimSize(0);
      std::vector<int64_t> ishape(rank, 1), full = shape;
      ishape[d] = n;
      full[d] = n;
      idx = e.reshape(e.cast(idx, DType::I64), ishape);
      if (ishape != full)
        idx =
            e.b.create<BroadcastToOp>(I.loc(), RankedTensorType::get(full, e.elt(DType::I64)), idx);
    }
    if (rank > 0 && shape[d] == 0 && ttype(idx).getNumElements() > 0)
      throw Unsupported(op + " from an empty dim (eager raises)");
    auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(d))};
    return T(e.checked<GatherOp>({v, idx}, attrs, op));
  }
  throw Unsupported("op " + op + " is not mapped");
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
  for (size_t i = 0; i < p.size() / 2; ++i)
    v = padDim(e, v, rank - 1 - i, p[2 * i], p[2 * i + 1], mode, a.get("value"));
  return freshResult(v);
}

/// outer/dot/addmm/baddbmm/hstack/vstack.
VarP linalgOp(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  if (op == "hstack" || op == "vstack") {
    VarP seq = a.get("tensors");
    if (!seq || (seq->kind != Var::Kind::Tuple && seq->kind != Var::Kind::List))
      throw Unsupported(op + " expects a sequence");
    std::vector<VarP> items;
    for (auto &t : seq->items) {
      Value v = tensorArg(t, op);
      int64_t r = ttype(v).getRank();
      if (op == "vstack" && r < 2) {
        auto s = shapeOf(v);
        v = e.reshape(v, {1, s.empty() ? 1 : s[0]});
      }
      if (op == "hstack" && r == 0)
        v = e.reshape(v, {1});
      items.push_back(T(v));
    }
    int64_t dim = op == "vstack" || ttype(items.front()->value).getRank() == 1 ? 0 : 1;
    return callOp(I, "cat", {{"tensors", makeSeq(Var::Kind::List, items)}, {"dim", constInt(dim)}});
  }
  VarP x = a.get("input");
  Value v = tensorArg(x, op);
  if (op == "outer") {
    Value w = tensorArg(a.get("vec2"), op);
    if (ttype(v).getRank() != 1 || ttype(w).getRank() != 1)
      throw Unsupported("outer expects 1-D tensors (eager raises)");
    return T(e.binary<MulOp>(T(e.reshape(v, {ttype(v).getDimSize(0), 1})), T(w)));
  }
  if (op == "dot") {
    Value w = tensorArg(a.get("tensor"), op);
    if (ttype(v).getRank() != 1 || ttype(w).getRank() != 1 ||
        ttype(v).getShape() != ttype(w).getShape() ||
        ttype(v).getElementType() != ttype(w).getElementType())
      throw Unsupported("dot expects two 1-D tensors of one size and dtype (eager raises)");
    return callOp(I, "matmul", {{"input", x}, {"other", a.get("tensor")}});
  }
  // addmm / baddbmm: beta * input + alpha * (mat1 @ mat2)
  VarP m1 = a.get(op == "addmm" ? "mat1" : "batch1"), m2 = a.get(op == "addmm" ? "mat2" : "batch2");
  int64_t want = op == "addmm" ? 2 : 3;
  if (ttype(tensorArg(m1, op)).getRank() != want || ttype(tensorArg(m2, op)).getRank() != want)
    throw Unsupported(op + " expects " + std::to_string(want) + "-D matrices (eager raises)");
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
    throw Unsupported(op + ": input does not broadcast to the product (eager raises)");
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
    if (dtypeCategory(dtypeOfValue(v)) < 2)
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

/// empty(_like), new_zeros/new_ones/new_full/new_empty, eye, linspace.
VarP creation(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  // empty values are unspecified: zeros are as good as any (and testable).
  if (op == "empty" || op == "empty_like") {
    Args b = a;
    return applyTracked(I, op == "empty" ? "zeros" : "zeros_like", b);
  }
  if (op.rfind("new_", 0) == 0) {
    Value v = tensorArg(a.get("input"), op);
    Args b = a;
    b.named.erase("input");
    if (b.isNone("dtype"))
      b.named["dtype"] = makeConst(PyRef::borrow(dtypeObject(dtypeOfValue(v))));
    return applyTracked(I, op == "new_empty" ? "zeros" : op.substr(4), b);
  }
  if (!a.isNone("device") && pyText(constObj(a.get("device"), "device")) != "cpu")
    throw Unsupported(op + " on a device other than the CPU");
  std::optional<DType> dt;
  if (!a.isNone("dtype"))
    dt = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
  if (op == "eye") {
    int64_t n = asInt(a.get("n"), "n"), m = intArg(a, "m", n);
    if (n < 0 || m < 0)
      throw Unsupported("eye with a negative size (eager raises)");
    std::vector<double> vals;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j)
        vals.push_back(i == j);
    return T(e.dense({n, m}, dt ? *dt : defaultFloat(), vals));
  }
  // linspace(start, end, steps)
  double start = asDouble(a.get("start"), "start"), end = asDouble(a.get("end"), "end");
  int64_t steps = asInt(a.get("steps"), "steps");
  if (steps < 0 || steps > (1 << 16))
    throw Unsupported("linspace steps out of range");
  DType d = dt ? *dt : defaultFloat();
  if (dtypeCategory(d) < 2)
    throw Unsupported("integer linspace is not supported yet");
  std::vector<double> vals;
  double step = steps > 1 ? (end - start) / (steps - 1) : 0;
  for (int64_t i = 0; i < steps; ++i)
    vals.push_back(i < steps / 2 ? start + i * step : end - (steps - 1 - i) * step);
  return T(e.dense({steps}, d, vals));
}

/// torch.nn.modules.utils._single/_pair/_triple/_quadruple on constants
/// (nn.Conv*d and pooling modules call them in forward).
VarP ntuple(Interpreter &, const std::string &op, Args &a) {
  size_t n = op.back() - '0';
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

void registerShapeOps(OpTable &t) {
  int n = 1;
  for (const char *name : {"_single", "_pair", "_triple", "_quadruple"}) {
    std::string op = "ntuple" + std::to_string(n++);
    t.function("torch.nn.modules.utils", name, {op, {"x"}});
    t.handler(op, ntuple);
  }
  t.both("flip", {"flip", {"input", "dims"}});
  t.method("flip", {"flip", {"input", "*dims"}});
  t.both("fliplr", {"fliplr", {"input"}});
  t.both("flipud", {"flipud", {"input"}});
  t.both("roll", {"roll", {"input", "shifts", "dims"}});
  t.both("tril", {"tril", {"input", "diagonal"}});
  t.both("triu", {"triu", {"input", "diagonal"}});
  t.both("movedim", {"movedim", {"input", "source", "destination"}});
  t.both("moveaxis", {"movedim", {"input", "source", "destination"}});
  for (const char *n : {"swapaxes", "swapdims"})
    t.both(n, {"swapaxes", {"input", "dim0", "dim1"}});
  for (const char *n : {"expand_as", "view_as", "reshape_as", "type_as"})
    t.method(n, {n, {"input", "other"}});
  t.both("broadcast_to", {"broadcast_to", {"input", "size"}});
  t.both("unflatten", {"unflatten", {"input", "dim", "sizes"}});
  t.both("ravel", {"ravel", {"input"}});
  t.method("repeat", {"repeat", {"input", "*sizes"}});
  t.function("torch", "tile", {"tile", {"input", "dims"}});
  t.method("tile", {"tile", {"input", "*sizes"}});
  t.both("repeat_interleave", {"repeat_interleave", {"input", "repeats", "dim", "output_size"}});
  t.both("gather", {"gather", {"input", "dim", "index", "sparse_grad"}});
  t.both("index_select", {"index_select", {"input", "dim", "index"}});
  for (const char *n :
       {"flip",         "fliplr",      "flipud",    "roll",    "tril",       "triu",
        "movedim",      "swapaxes",    "expand_as", "view_as", "reshape_as", "type_as",
        "broadcast_to", "unflatten",   "ravel",     "repeat",  "tile",       "repeat_interleave",
        "gather",       "index_select"})
    t.handler(n, shapeOp);
  t.function("torch.nn.functional", "pad", {"pad", {"input", "pad", "mode", "value"}});
  t.handler("pad", pad);
  t.function("torch", "hstack", {"hstack", {"tensors"}});
  t.function("torch", "vstack", {"vstack", {"tensors"}});
  t.both("outer", {"outer", {"input", "vec2"}});
  t.both("ger", {"outer", {"input", "vec2"}});
  t.both("dot", {"dot", {"input", "tensor"}});
  t.both("addmm", {"addmm", {"input", "mat1", "mat2", "beta", "alpha"}});
  t.both("baddbmm", {"baddbmm", {"input", "batch1", "batch2", "beta", "alpha"}});
  for (const char *n : {"hstack", "vstack", "outer", "dot", "addmm", "baddbmm"})
    t.handler(n, linalgOp);
  t.function("torch", "einsum", {"einsum", {"equation", "*operands"}});
  t.handler("einsum", einsum);
  const std::vector<std::string> kw = {"dtype",         "layout",     "device",
                                       "requires_grad", "pin_memory", "memory_format"};
  auto withKw = [&](std::vector<std::string> p) {
    p.insert(p.end(), kw.begin(), kw.end());
    return p;
  };
  t.function("torch", "empty", {"empty", withKw({"*size"})});
  t.function("torch", "empty_like", {"empty_like", withKw({"input"})});
  t.method("new_zeros", {"new_zeros", withKw({"input", "*size"})});
  t.method("new_ones", {"new_ones", withKw({"input", "*size"})});
  t.method("new_empty", {"new_empty", withKw({"input", "*size"})});
  t.method("new_full", {"new_full", withKw({"input", "size", "fill_value"})});
  t.function("torch", "eye", {"eye", withKw({"n", "m"})});
  t.function("torch", "linspace", {"linspace", withKw({"start", "end", "steps"})});
  for (const char *n :
       {"empty", "empty_like", "new_zeros", "new_ones", "new_empty", "new_full", "eye", "linspace"})
    t.handler(n, creation);
  t.method("where", {"where", {"input", "condition", "other"}});
  t.method("detach", {"identity", {"input"}});
}

} // namespace kiln
