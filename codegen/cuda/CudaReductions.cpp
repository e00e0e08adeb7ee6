//===- CudaReductions.cpp - reductions that are not row reductions ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// FunctionEmitter::emitSerialReduction: a single-output reduction over
// several dims, or over a dim that is not the innermost (column sums,
// `sum(dim=0)`, full reductions of a multi-dim tensor). One thread per
// output element (grid-stride over the outputs), nested serial loops over
// the reduced dims from the combiner's identity, then the init is
// combined in and the result stored. For a column reduction adjacent
// threads read adjacent columns, so the loads coalesce; a reduction to a
// few outputs runs on few threads (correct, not fast: a two-level
// reduction is future work). Dynamic dims: loop bounds and offsets are
// symbol products, the symbols kernel arguments (codegen/cuda/README.md).
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

LogicalResult FunctionEmitter::loadSerialInputs(linalg::GenericOp op, ArrayRef<SymSize> ranges,
                                                const std::string &in,
                                                std::vector<std::string> &params,
                                                std::vector<std::string> &args, std::string &loads,
                                                llvm::SmallBitVector &usedDims) {
  Block &block = op.getRegion().front();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  llvm::raw_string_ostream ls(loads);
  for (OpOperand *operand : op.getDpsInputOperands()) {
    unsigned i = operand->getOperandNumber();
    BlockArgument arg = block.getArgument(i);
    if (arg.use_empty())
      continue;
    auto tt = dyn_cast<RankedTensorType>(operand->get().getType());
    if (!tt) {
      auto s = scalarOf(operand->get(), op);
      if (!s)
        return failure();
      names[arg] = *s;
      continue;
    }
    TensorInfo info = tensors.lookup(operand->get());
    if (info.buffer < 0 && info.fill) {
      names[arg] = *info.fill;
      continue;
    }
    if (info.buffer < 0)
      return op.emitError("CUDA emitter: input #")
             << i << " is not backed by a buffer (constant tensors are not supported yet)";
    std::string p = "in" + std::to_string(params.size());
    params.push_back("const " + *storageType(tt.getElementType()) + " *__restrict__ " + p);
    args.push_back(buffers[info.buffer].name);
    FailureOr<SymShape> shape = shapeOf(operand->get());
    if (failed(shape))
      return failure();
    std::string off = offsetExpr(maps[i], *shape, ranges, false, "", usedDims);
    ls << in << "const " << *valueType(tt.getElementType()) << " a" << i << " = "
       << loadExpr(p, off, tt.getElementType()) << ";\n";
    names[arg] = "a" + std::to_string(i);
  }
  return success();
}

LogicalResult FunctionEmitter::emitSerialReduction(linalg::GenericOp op) {
  // Dynamic dims: loop bounds and strides are symbol products (kernel
  // arguments), indices 64-bit.
  FailureOr<SymShape> symRanges = loopRangesOf(op);
  if (failed(symRanges))
    return failure();
  SymShape ranges = *symRanges;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  unsigned numLoops = ranges.size();
  SymShape parallelRanges;
  SmallVector<unsigned> parallelDims, reducedDims;
  SymSize outputs(1), total(1);
  for (unsigned d = 0; d < numLoops; ++d) {
    total = total * ranges[d];
    if (iters[d] == utils::IteratorType::parallel) {
      parallelDims.push_back(d);
      parallelRanges.push_back(ranges[d]);
      outputs = outputs * ranges[d];
    } else {
      reducedDims.push_back(d);
    }
  }
  bool dynamic = !isStatic(ranges) || llvm::any_of(op->getOperandTypes(), [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && !r.hasStaticShape();
  });
  bool wide = dynamic || total.value() + kMaxPointwiseGrid * kPointwiseBlock >= (int64_t(1) << 31);
  std::string ity = wide ? "long long" : "int";
  std::string kname = nextKernelName();
  Block &block = op.getRegion().front();
  names.clear();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  llvm::SmallBitVector usedDims(numLoops);
  std::string in(4 + 2 * reducedDims.size(), ' ');
  std::vector<std::string> params, args;
  std::string loads;
  if (failed(loadSerialInputs(op, ranges, in, params, args, loads, usedDims)))
    return failure();
  std::string body;
  llvm::raw_string_ostream bs(body);
  FailureOr<ReductionBody> red = translateReductionBody(op, bs, in);
  if (failed(red))
    return failure();
  bs.flush();
  for (Operation &inner : block)
    if (auto idx = dyn_cast<linalg::IndexOp>(inner))
      usedDims.set(idx.getDim());

  Value init = op.getDpsInits()[0];
  auto ot = cast<RankedTensorType>(init.getType());
  Type accElt = ot.getElementType();
  if (!storageType(accElt))
    return op.emitError("CUDA emitter: unsupported element type ") << accElt;
  TensorInfo initInfo = tensors.lookup(init);
  if (!initInfo.fill)
    return op.emitError("CUDA emitter: a reduction's init must be a linalg.fill");
  llvm::SmallBitVector outDims(numLoops);
  FailureOr<SymShape> outShape = shapeOf(init);
  if (failed(outShape))
    return failure();
  std::string outOff =
      offsetExpr(maps[op.getNumDpsInputs()], *outShape, ranges, false, "", outDims);
  for (unsigned d : reducedDims)
    if (outDims.test(d))
      return op.emitError("CUDA emitter: a reduction output indexed by a reduced dim");
  int out = newBuffer(ot, "temporary", "", *outShape);
  tensors[op->getResult(0)] = TensorInfo{out, std::nullopt, false};
  params.push_back(*storageType(accElt) + " *__restrict__ out0");
  args.push_back(buffers[out].name);

  KernelInfo k;
  k.name = kname;
  k.function = func.getSymName().str();
  k.kind = KernelInfo::Pointwise;
  k.blockX = kPointwiseBlock;
  k.gridX = dynamic ? 0 : pointwiseGridSize(outputs.value());
  k.args = args;
  if (dynamic) {
    k.work = outputs.str();
    k.symbols = int(fplan.symbols.size());
    llvm::append_range(params, symbolParams());
  }
  std::string acc = *valueType(accElt);
  std::string id = identityLiteral(red->combiner, accElt);
  std::string shape =
      llvm::join(llvm::map_range(ranges, [](const SymSize &r) { return r.paren(); }), "x");
  std::string dims =
      llvm::join(llvm::map_range(reducedDims, [](unsigned d) { return std::to_string(d); }), ", ");
  os << "// " << kname << ": reduction (" << red->combiner.functor << ") over dims {" << dims
     << "} of " << shape << ": " << outputs.str() << " outputs, one thread each, serial loops, "
     << locationString(op.getLoc()) << "\n";
  openKernel(k, params);
  std::string store =
      "    out0[" + outOff +
      "] = " + storeValue(combineWithInit(red->combiner, *initInfo.fill, id), accElt) + ";\n";
  printSerialLoops(ity, wide, outputs, parallelRanges, parallelDims, reducedDims, ranges, usedDims,
                   outDims, "    " + acc + " acc = " + id + ";\n",
                   loads + body + in + "acc = " + red->combiner.functor + "{}(acc, " +
                       red->partial + ");\n",
                   store);
  addKernel(std::move(k));
  return success();
}

LogicalResult FunctionEmitter::emitSequentialReduction(linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return op.emitError("CUDA emitter: dynamic shapes are not supported yet");
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  unsigned numLoops = ranges.size(), numIn = op.getNumDpsInputs();
  SmallVector<int64_t> parallelRanges;
  SmallVector<unsigned> parallelDims, reducedDims;
  int64_t outputs = 1, total = 1;
  for (unsigned d = 0; d < numLoops; ++d) {
    total *= ranges[d];
    bool par = iters[d] == utils::IteratorType::parallel;
    (par ? parallelDims : reducedDims).push_back(d);
    if (par) {
      parallelRanges.push_back(ranges[d]);
      outputs *= ranges[d];
    }
  }
  bool wide = total + kMaxPointwiseGrid * kPointwiseBlock >= (int64_t(1) << 31);
  std::string ity = wide ? "long long" : "int", kname = nextKernelName();
  Block &block = op.getRegion().front();
  names.clear();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  llvm::SmallBitVector usedDims(numLoops), outDims(numLoops);
  std::string in(4 + 2 * reducedDims.size(), ' ');
  std::vector<std::string> params, args;
  std::string loads, accs, stores, body, folds;
  if (failed(loadSerialInputs(op, staticShape(ranges), in, params, args, loads, usedDims)))
    return failure();
  // The accumulators start from the inits' fills; each element's yields
  // replace them, in the generic's (sequential) order.
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  for (auto [k, init] : llvm::enumerate(op.getDpsInits())) {
    auto ot = cast<RankedTensorType>(init.getType());
    Type elt = ot.getElementType();
    TensorInfo info = tensors.lookup(init);
    if (!storageType(elt) || !info.fill)
      return op.emitError("CUDA emitter: a reduction's inits must be linalg.fills of "
                          "supported element types");
    std::string acc = "acc" + std::to_string(k), vt = *valueType(elt);
    names[block.getArgument(numIn + k)] = acc;
    accs += "    " + vt + " " + acc + " = " + *info.fill + ";\n";
    std::string off = offsetExpr(maps[numIn + k], ot, ranges, false, "", outDims);
    if (op->getResult(k).use_empty())
      continue; // argmax's values: only the indices are stored
    int out = newBuffer(ot, "temporary");
    tensors[op->getResult(k)] = TensorInfo{out, std::nullopt, false};
    std::string p = "out" + std::to_string(k);
    params.push_back(*storageType(elt) + " *__restrict__ " + p);
    args.push_back(buffers[out].name);
    stores += "    " + p + "[" + off + "] = " + storeValue(acc, elt) + ";\n";
  }
  for (unsigned d : reducedDims)
    if (outDims.test(d))
      return op.emitError("CUDA emitter: a reduction output indexed by a reduced dim");
  llvm::raw_string_ostream bs(body);
  if (failed(translateBody(op, nullptr, bs, in)))
    return failure();
  bs.flush();
  for (auto [k, v] : llvm::enumerate(yield.getOperands())) {
    auto s = scalarOf(v, yield);
    if (!s)
      return failure();
    body += in + "const " + *valueType(v.getType()) + " y" + std::to_string(k) + " = " + *s + ";\n";
    folds += in + "acc" + std::to_string(k) + " = y" + std::to_string(k) + ";\n";
  }
  for (Operation &inner : block)
    if (auto idx = dyn_cast<linalg::IndexOp>(inner))
      usedDims.set(idx.getDim());

  KernelInfo k;
  k.name = kname;
  k.function = func.getSymName().str();
  k.blockX = kPointwiseBlock;
  k.gridX = pointwiseGridSize(outputs);
  k.args = args;
  std::string shape =
      llvm::join(llvm::map_range(ranges, [](int64_t r) { return std::to_string(r); }), "x");
  if (std::optional<bool> isMax = rowArgReduction(op)) {
    // Over rows: one block per row, a (value, index) merge of the threads.
    Type vt = cast<RankedTensorType>(op.getDpsInits()[0].getType()).getElementType();
    KernelInfo rowK = k;
    rowK.blockX = reductionBlockSize(ranges.back());
    os << "// " << kname << ": row " << (*isMax ? "argmax" : "argmin") << " over " << shape
       << ": one block per row, each thread folds its slice in order, then a (value, index) "
          "merge, "
       << locationString(op.getLoc()) << "\n";
    openKernel(rowK, params);
    std::string rowStores;
    for (StringRef line : llvm::split(StringRef(stores).rtrim('\n'), '\n'))
      rowStores += "  " + line.str() + "\n";
    llvm::SmallBitVector decoded = usedDims;
    decoded |= outDims;
    printRowArgReduction(rowK, *isMax, ranges, ity, decoded, *valueType(vt), accs,
                         loads + body + folds, rowStores);
    addKernel(std::move(rowK));
    return success();
  }
  os << "// " << kname << ": reduction with " << op.getNumDpsInits() << " outputs over " << shape
     << " (reduced dims folded in order: argmax/argmin's first extreme wins): " << outputs
     << " outputs, one thread each, serial loops, " << locationString(op.getLoc()) << "\n";
  openKernel(k, params);
  printSerialLoops(ity, wide, SymSize(outputs), staticShape(parallelRanges), parallelDims,
                   reducedDims, staticShape(ranges), usedDims, outDims, accs, loads + body + folds,
                   stores);
  addKernel(std::move(k));
  return success();
}

void FunctionEmitter::printSerialLoops(
    const std::string &ity, bool wide, const SymSize &outputs, ArrayRef<SymSize> parallelRanges,
    ArrayRef<unsigned> parallelDims, ArrayRef<unsigned> reducedDims, ArrayRef<SymSize> ranges,
    const llvm::SmallBitVector &usedDims, const llvm::SmallBitVector &outDims,
    const std::string &prologue, const std::string &inner, const std::string &epilogue) {
  std::string stride = wide ? "(long long)gridDim.x * blockDim.x" : "gridDim.x * blockDim.x";
  std::string start = wide ? "(long long)blockIdx.x * blockDim.x + threadIdx.x"
                           : "blockIdx.x * blockDim.x + threadIdx.x";
  os << "  for (" << ity << " i = " << start << "; i < " << outputs.str() << "; i += " << stride
     << ") {\n";
  SmallVector<std::string> decode = decodeLinearIndex("i", parallelRanges);
  for (auto [j, d] : llvm::enumerate(parallelDims))
    if (usedDims.test(d) || outDims.test(d))
      os << "    const " << ity << " d" << d << " = " << decode[j] << ";\n";
  os << prologue;
  std::string ind = "    ";
  for (unsigned d : reducedDims) {
    os << ind << "for (" << ity << " d" << d << " = 0; d" << d << " < " << ranges[d].str()
       << "; ++d" << d << ") {\n";
    ind += "  ";
  }
  os << inner;
  for (size_t j = reducedDims.size(); j > 0; --j) {
    ind.resize(ind.size() - 2);
    os << ind << "}\n";
  }
  os << epilogue << "  }\n}\n\n";
}

} // namespace mlir::kiln::cuda::detail
