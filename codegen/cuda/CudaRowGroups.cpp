//===- CudaRowGroups.cpp - fused row groups → one CUDA kernel -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Row groups: a row reduction followed by generics over the same rows
// (per-row pointwise, more row reductions, full-row pointwise) that read the
// group's per-row values only as per-row scalars → one kernel, one block
// per row; per-row values live in registers (broadcast through shared
// memory after each block reduction). planRowGroups finds the groups
// (EmitOptions::fuseRows), emitRowGroup prints each; softmax and layer_norm
// become one kernel each. Rules: codegen/cuda/README.md ("Row groups").
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

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
  std::string kname = nextKernelName();
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
  SmallVector<bool> isReduce;
  for (linalg::GenericOp g : members)
    isReduce.push_back(classifyRow(g, rowShape, length) == RowReduce);
  SmallVector<OnePassRole> roles(members.size());
  if (onePassRows)
    roles = planOnePass(members, rowShape.size(), length, isReduce);

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
        return g.emitError("CUDA emitter: input #") << i << " is not backed by a buffer";
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
    std::optional<Combiner> combiner;
    std::string partial;
    if (kind == RowReduce) {
      FailureOr<ReductionBody> red = translateReductionBody(g, bs, in);
      if (failed(red))
        return failure();
      combiner = red->combiner;
      partial = red->partial;
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
    const OnePassRole &role = roles[m];
    if (role.kind == OnePassRole::Partner) {
      // Computed with its lead's statistics loop.
      kinds += std::string(kinds.empty() ? "" : ", ") + "one-pass " +
               (roles[role.other].kind == OnePassRole::SoftmaxLead ? "sum-exp" : "M2");
      b << "    // " << r << ": computed with r" << role.other << "\n";
      if (role.mean != role.other && roles[role.other].kind == OnePassRole::SoftmaxLead)
        b << "    " << r << " = " << r << " * kiln_exp(r" << role.other << " - r" << role.mean
          << "); // sum of exp(x - r" << role.mean << ")\n";
      if (store)
        b << "    if (threadIdx.x == 0) {\n"
          << defineDims(outDims, "      ") << "      " << outP << "[" << outOff
          << "] = " << storeValue(r, elt) << ";\n    }\n";
      rowVals[res] = r;
    } else if (role.kind != OnePassRole::None) {
      int n = role.kind == OnePassRole::SoftmaxLead ? 2 : 3;
      std::string rp = "r" + std::to_string(role.other);
      sh << "  __shared__ " << vt << " partials" << m << "[32][" << n << "];\n";
      sh << "  __shared__ " << vt << " s_" << r << ";\n";
      sh << "  __shared__ " << vt << " s_" << rp << ";\n";
      kinds += std::string(kinds.empty() ? "" : ", ") + "one-pass " +
               (role.kind == OnePassRole::SoftmaxLead ? "max" : "sum");
      std::string leadStore;
      if (store)
        leadStore = defineDims(outDims, "        ") + "        " + outP + "[" + outOff +
                    "] = " + storeValue("s_" + r, elt) + ";\n";
      printOnePassStats(b, role, m, vt, ity, length, defineDims(usedDims, in) + loads + body,
                        partial, leadStore);
      rowVals[res] = r;
    } else if (kind == RowReduce) {
      std::string id = identityLiteral(*combiner, elt);
      // The fill may come later in the block than the group's first op.
      auto fill = stripReshapes(g.getDpsInits()[0]).getDefiningOp<linalg::FillOp>();
      std::optional<std::string> initValue = scalarOf(fill.getInputs()[0], fill);
      if (!initValue)
        return failure();
      std::string value = combineWithInit(*combiner, *initValue, id);
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
  std::string loc = locationString(members.front()->getLoc());
  os << "// " << kname << ": row group of " << members.size() << " fused generics (" << kinds
     << "): " << rows << " rows of " << length << ", one block per row, " << loc << "\n";
  openKernel(k, params);
  os << shared;
  os << "  for (" << ity << " row = blockIdx.x; row < " << rows << "; row += gridDim.x) {\n";
  // Row dims are never 1 (planRowGroups drops unit dims).
  SmallVector<std::string> decode = decodeLinearIndex("row", rowShape);
  for (unsigned d = 0; d < rowShape.size(); ++d)
    if (usedRowDims.test(d))
      os << "    const " << ity << " p" << d << " = " << decode[d] << ";\n";
  os << text << "  }\n}\n\n";
  addKernel(std::move(k));
  return success();
}

} // namespace mlir::kiln::cuda::detail
