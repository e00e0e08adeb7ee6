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

#include <functional>

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
  // Gathers (tensor.extract in the body) are kernels of their own.
  if (!g.getRegion().front().getOps<tensor::ExtractOp>().empty())
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
    // Symbolic sizes: one kernel per generic (row groups need static rows).
    if (ranges.empty() || length == 1 || llvm::any_of(ranges, ShapedType::isDynamic) ||
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
      if (kind == NotRow || llvm::any_of(g.getStaticLoopRanges(), ShapedType::isDynamic))
        break;
      // The group is emitted at g0's place: g's inputs that no member
      // produces must exist there (not a GEMM or slice between g0 and g).
      bool ok = llvm::all_of(g->getOperands(), [&](Value v) {
        Operation *def = stripReshapes(v).getDefiningOp();
        return !def || kinds.count(def) || def->isBeforeInBlock(g0) ||
               isa<linalg::FillOp, tensor::EmptyOp, arith::ConstantOp>(def);
      });
      for (OpOperand *o : g.getDpsInputOperands()) {
        if (!ok)
          break;
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

/// The kernel of one row group while it is built: its parameters, the
/// text of its shared declarations and of its row loop, and the per-row
/// values the members produced so far (by tensor).
struct RowGroupKernel {
  ArrayRef<int64_t> rowShape;
  int64_t length = 0;
  std::string ity; ///< index type: "int", or "long long" for wide groups
  llvm::DenseSet<Operation *> members;
  std::vector<std::string> params, args;
  llvm::DenseMap<int, std::string> paramOfBuffer;
  llvm::DenseMap<Value, std::string> rowVals;
  std::string shared, text, kinds;
  llvm::SmallBitVector usedRowDims;
  int outCount = 0;
  ArrayRef<linalg::GenericOp> memberOps;

  void addKind(const std::string &kind) { kinds += (kinds.empty() ? "" : ", ") + kind; }
};

/// One member of a row group while it is printed: its loads and body (at
/// `indent`), the loop dims they use, its reduction combiner, and where its
/// result is stored when it is used outside the group.
struct RowMember {
  linalg::GenericOp op;
  RowKind kind = NotRow;
  std::string r; ///< the register holding its per-row value
  SmallVector<int64_t> ranges;
  SmallVector<std::string> dimExpr;
  std::string indent, loads, body, partial;
  std::optional<Combiner> combiner;
  llvm::SmallBitVector usedDims, outDims;
  bool store = false;
  std::string outP, outOff;
  Type elt;
  std::string vt;
};

/// Declarations of loop dims `used` of `m` (row dims `pN` are marked used
/// in the kernel, which decodes them from the row index).
static std::string defineDims(RowGroupKernel &k, const RowMember &m,
                              const llvm::SmallBitVector &used, const std::string &indent) {
  std::string d;
  for (unsigned j = 0; j < m.ranges.size(); ++j)
    if (used.test(j)) {
      d += indent + "const " + k.ity + " d" + std::to_string(j) + " = " + m.dimExpr[j] + ";\n";
      if (m.dimExpr[j][0] == 'p')
        k.usedRowDims.set(std::stoi(m.dimExpr[j].substr(1)));
    }
  return d;
}

LogicalResult FunctionEmitter::loadRowMemberInputs(RowGroupKernel &k, RowMember &m) {
  linalg::GenericOp g = m.op;
  Block &block = g.getRegion().front();
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  llvm::raw_string_ostream ls(m.loads);
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
    auto rv = k.rowVals.find(stripReshapes(operand->get()));
    if (rv != k.rowVals.end()) {
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
    auto pit = k.paramOfBuffer.find(info.buffer);
    if (pit != k.paramOfBuffer.end()) {
      p = pit->second;
    } else {
      p = "in" + std::to_string(k.paramOfBuffer.size());
      k.paramOfBuffer[info.buffer] = p;
      k.params.push_back("const " + *storageType(tt.getElementType()) + " *__restrict__ " + p);
      k.args.push_back(buffers[info.buffer].name);
    }
    std::string off = offsetExpr(maps[i], tt, m.ranges, false, "", m.usedDims);
    ls << m.indent << "const " << *valueType(tt.getElementType()) << " a" << i << " = "
       << loadExpr(p, off, tt.getElementType()) << ";\n";
    names[arg] = "a" + std::to_string(i);
  }
  return success();
}

LogicalResult FunctionEmitter::translateRowMemberBody(RowMember &m) {
  // A reduction's combiner is applied to `acc` by the caller.
  linalg::GenericOp g = m.op;
  Block &block = g.getRegion().front();
  llvm::raw_string_ostream bs(m.body);
  if (m.kind == RowReduce) {
    FailureOr<ReductionBody> red = translateReductionBody(g, bs, m.indent);
    if (failed(red))
      return failure();
    m.combiner = red->combiner;
    m.partial = red->partial;
  } else {
    if (!block.getArguments().back().use_empty())
      return g.emitError("CUDA emitter: a fused row op that reads its output");
    if (failed(translateBody(g, nullptr, bs, m.indent)))
      return failure();
  }
  for (Operation &inner : block)
    if (auto idx = dyn_cast<linalg::IndexOp>(inner))
      m.usedDims.set(idx.getDim());
  return success();
}

LogicalResult FunctionEmitter::planRowMemberOutput(RowGroupKernel &k, RowMember &m) {
  // Stored when used outside the group (always for full rows).
  linalg::GenericOp g = m.op;
  Value res = g.getResult(0);
  auto rt = cast<RankedTensorType>(res.getType());
  m.elt = rt.getElementType();
  if (!storageType(m.elt))
    return g.emitError("CUDA emitter: unsupported element type ") << m.elt;
  m.vt = *valueType(m.elt);
  SmallVector<Operation *> users;
  usersThroughReshapes(res, users);
  m.store = m.kind == FullRow ||
            llvm::any_of(users, [&](Operation *u) { return !k.members.contains(u); });
  if (!m.store)
    return success();
  int bi = newBuffer(rt, "temporary");
  tensors[res] = TensorInfo{bi, std::nullopt, false};
  m.outP = "out" + std::to_string(k.outCount++);
  k.params.push_back(*storageType(m.elt) + " *__restrict__ " + m.outP);
  k.args.push_back(buffers[bi].name);
  m.outOff =
      offsetExpr(g.getIndexingMapsArray()[g.getNumDpsInputs()], rt, m.ranges, false, "", m.outDims);
  return success();
}

/// The row loop text of a one-pass member: a lead computes its statistics
/// together with its partner's; a partner only stores what the lead left.
static void printOnePassMember(RowGroupKernel &k, RowMember &m, unsigned index,
                               ArrayRef<OnePassRole> roles,
                               const std::function<std::string(const std::string &)> &store) {
  const OnePassRole &role = roles[index];
  llvm::raw_string_ostream b(k.text), sh(k.shared);
  if (role.kind == OnePassRole::Partner) {
    k.addKind(std::string("one-pass ") +
              (roles[role.other].kind == OnePassRole::SoftmaxLead ? "sum-exp" : "M2"));
    b << "    // " << m.r << ": computed with r" << role.other << "\n";
    if (role.mean != role.other && roles[role.other].kind == OnePassRole::SoftmaxLead)
      b << "    " << m.r << " = " << m.r << " * kiln_exp(r" << role.other << " - r" << role.mean
        << "); // sum of exp(x - r" << role.mean << ")\n";
    if (m.store)
      b << "    if (threadIdx.x == 0) {\n" << store("      ") << "    }\n";
    return;
  }
  int n = role.kind == OnePassRole::SoftmaxLead ? 2 : 3;
  std::string rp = "r" + std::to_string(role.other);
  sh << "  __shared__ " << m.vt << " partials" << index << "[32][" << n << "];\n";
  sh << "  __shared__ " << m.vt << " s_" << m.r << ";\n";
  sh << "  __shared__ " << m.vt << " s_" << rp << ";\n";
  k.addKind(std::string("one-pass ") + (role.kind == OnePassRole::SoftmaxLead ? "max" : "sum"));
  printOnePassStats(b, role, index, m.vt, k.ity, k.length,
                    defineDims(k, m, m.usedDims, m.indent) + m.loads + m.body, m.partial,
                    m.store ? store("        ") : "");
}

LogicalResult FunctionEmitter::printRowReduction(RowGroupKernel &k, RowMember &m, unsigned index,
                                                 const std::string &storeText) {
  std::string id = identityLiteral(*m.combiner, m.elt);
  // The fill may come later in the block than the group's first op.
  auto fill = stripReshapes(m.op.getDpsInits()[0]).getDefiningOp<linalg::FillOp>();
  std::optional<std::string> initValue = scalarOf(fill.getInputs()[0], fill);
  if (!initValue)
    return failure();
  std::string value = combineWithInit(*m.combiner, *initValue, id);
  llvm::raw_string_ostream b(k.text), sh(k.shared);
  const std::string &r = m.r, &vt = m.vt, &functor = m.combiner->functor;
  sh << "  __shared__ " << vt << " partials" << index << "[32];\n";
  sh << "  __shared__ " << vt << " s_" << r << ";\n";
  k.addKind(functor);
  b << "    // " << r << ": row reduction (" << functor << ")\n";
  b << "    " << vt << " " << r << ";\n    {\n";
  b << "      " << vt << " acc = " << id << ";\n";
  b << "      for (" << k.ity << " col = threadIdx.x; col < " << k.length
    << "; col += blockDim.x) {\n";
  b << defineDims(k, m, m.usedDims, m.indent) << m.loads << m.body;
  b << m.indent << "acc = " << functor << "{}(acc, " << m.partial << ");\n";
  b << "      }\n";
  b << "      acc = kiln_block_reduce<" << vt << ">(acc, partials" << index << ", " << functor
    << "{}, " << id << ");\n";
  b << "      if (threadIdx.x == 0) {\n";
  b << "        s_" << r << " = " << value << ";\n";
  b << storeText;
  b << "      }\n      __syncthreads();\n";
  b << "      " << r << " = s_" << r << ";\n    }\n";
  return success();
}

LogicalResult FunctionEmitter::printPointwiseRowMember(RowGroupKernel &k, RowMember &m) {
  auto yield = cast<linalg::YieldOp>(m.op.getRegion().front().getTerminator());
  auto v = scalarOf(yield.getOperand(0), yield);
  if (!v)
    return failure();
  m.usedDims |= m.outDims;
  llvm::raw_string_ostream b(k.text);
  std::string dims = defineDims(k, m, m.usedDims, m.indent);
  if (m.kind == PerRow) {
    k.addKind("per-row");
    b << "    // " << m.r << ": per-row pointwise (every thread)\n";
    b << "    " << m.vt << " " << m.r << ";\n    {\n";
    b << dims << m.loads << m.body;
    b << m.indent << m.r << " = " << *v << ";\n";
    if (m.store)
      b << m.indent << "if (threadIdx.x == 0)\n"
        << m.indent << "  " << m.outP << "[" << m.outOff << "] = " << storeValue(m.r, m.elt)
        << ";\n";
    b << "    }\n";
    return success();
  }
  k.addKind("full-row");
  b << "    // full-row pointwise\n";
  b << "    for (" << k.ity << " col = threadIdx.x; col < " << k.length
    << "; col += blockDim.x) {\n";
  b << dims << m.loads << m.body;
  b << m.indent << m.outP << "[" << m.outOff << "] = " << storeValue(*v, m.elt) << ";\n";
  b << "    }\n";
  return success();
}

LogicalResult FunctionEmitter::emitRowMember(RowGroupKernel &k, unsigned index,
                                             ArrayRef<OnePassRole> roles) {
  RowMember m;
  m.op = k.memberOps[index];
  names.clear();
  m.kind = classifyRow(m.op, k.rowShape, k.length);
  m.ranges = m.op.getStaticLoopRanges();
  m.dimExpr = rowDimExprs(m.op, k.rowShape.size());
  m.indent = m.kind == PerRow ? "      " : "        ";
  m.usedDims.resize(m.ranges.size());
  m.outDims.resize(m.ranges.size());
  m.r = "r" + std::to_string(index);
  if (failed(loadRowMemberInputs(k, m)) || failed(translateRowMemberBody(m)) ||
      failed(planRowMemberOutput(k, m)))
    return failure();
  // The store of a per-row value `v` by thread 0, at `indent`.
  auto store = [&](const std::string &v, const std::string &indent) {
    return defineDims(k, m, m.outDims, indent) + indent + m.outP + "[" + m.outOff +
           "] = " + storeValue(v, m.elt) + ";\n";
  };
  if (roles[index].kind != OnePassRole::None) {
    bool partner = roles[index].kind == OnePassRole::Partner;
    printOnePassMember(k, m, index, roles, [&](const std::string &indent) {
      return store(partner ? m.r : "s_" + m.r, indent);
    });
  } else if (m.kind == RowReduce) {
    if (failed(printRowReduction(k, m, index, m.store ? store("s_" + m.r, "        ") : "")))
      return failure();
  } else if (failed(printPointwiseRowMember(k, m))) {
    return failure();
  }
  if (roles[index].kind != OnePassRole::None || m.kind != FullRow)
    k.rowVals[m.op.getResult(0)] = m.r;
  return success();
}

LogicalResult FunctionEmitter::emitRowGroup(ArrayRef<linalg::GenericOp> members,
                                            ArrayRef<int64_t> rowShape, int64_t length) {
  std::string kernelName = nextKernelName();
  RowGroupKernel k;
  k.memberOps = members;
  k.rowShape = rowShape;
  k.length = length;
  int64_t rows = 1;
  for (int64_t r : rowShape)
    rows *= r;
  k.ity = rows * length + 1024 >= (int64_t(1) << 31) ? "long long" : "int";
  for (linalg::GenericOp g : members)
    k.members.insert(g.getOperation());
  k.usedRowDims.resize(rowShape.size());
  SmallVector<OnePassRole> roles(members.size());
  if (onePassRows) {
    SmallVector<bool> isReduce;
    for (linalg::GenericOp g : members)
      isReduce.push_back(classifyRow(g, rowShape, length) == RowReduce);
    roles = planOnePass(members, rowShape.size(), length, isReduce);
  }
  for (unsigned m = 0; m < members.size(); ++m)
    if (failed(emitRowMember(k, m, roles)))
      return failure();

  KernelInfo info;
  info.name = kernelName;
  info.function = func.getSymName().str();
  info.kind = KernelInfo::RowReduction;
  info.blockX = reductionBlockSize(length);
  info.gridX = std::max<int64_t>(1, std::min(rows, kMaxGrid));
  info.args = k.args;
  std::string loc = locationString(members.front()->getLoc());
  os << "// " << info.name << ": row group of " << members.size() << " fused generics (" << k.kinds
     << "): " << rows << " rows of " << length << ", one block per row, " << loc << "\n";
  openKernel(info, k.params);
  os << k.shared;
  os << "  for (" << k.ity << " row = blockIdx.x; row < " << rows << "; row += gridDim.x) {\n";
  // Row dims are never 1 (planRowGroups drops unit dims).
  SmallVector<std::string> decode = decodeLinearIndex("row", rowShape);
  for (unsigned d = 0; d < rowShape.size(); ++d)
    if (k.usedRowDims.test(d))
      os << "    const " << k.ity << " p" << d << " = " << decode[d] << ";\n";
  os << k.text << "  }\n}\n\n";
  addKernel(std::move(info));
  return success();
}

} // namespace mlir::kiln::cuda::detail
