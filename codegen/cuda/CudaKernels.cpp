//===- CudaKernels.cpp - one CUDA kernel per linalg.generic ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// FunctionEmitter::emitGeneric: prints the kernel of one linalg.generic that
// is not part of a row group. An all-parallel generic becomes a grid-stride
// pointwise loop over its iteration space (loop indices decoded from the
// linear index only when a map needs them, 32-bit indices unless a buffer
// or the space reaches 2^31 elements); parallel dims + one innermost
// reduction dim become one block per row, each thread folding a strided
// slice, then kiln_block_reduce and a store by thread 0 combined with the
// linalg.fill init. Launch rules: codegen/cuda/README.md.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

/// Emits the code of one generic kernel: parameters, loads, body, stores
/// (everything but the loop around them), in the order the kernel prints
/// them. Filled by the collect* steps of emitGeneric.
struct GenericKernelParts {
  SmallVector<int64_t> ranges;
  SymShape symRanges;   ///< ranges with dynamic dims as symbol products
  bool dynamic = false; ///< some range is symbolic: the kernel takes the symbols
  bool isReduction = false;
  int64_t total = 1;
  bool wide = false;  ///< 64-bit indices
  std::string ity;    ///< the index type, "int" or "long long"
  std::string indent; ///< of loads, body and stores
  std::vector<std::string> params, args;
  SmallVector<PointwiseOperand> pointwise; ///< for the vectorized form
  llvm::SmallBitVector usedDims;
  bool usesIndex = false;
  std::string loads, body, stores;
  std::optional<Combiner> combiner; ///< reductions
  std::string partial;              ///< reductions: the value folded into acc
};

LogicalResult FunctionEmitter::emitGeneric(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics())
    return op.emitError("CUDA emitter: expected linalg.generic on tensors");
  GenericKernelParts parts;
  parts.ranges = op.getStaticLoopRanges();
  FailureOr<SymShape> symRanges = loopRangesOf(op);
  if (failed(symRanges))
    return failure();
  parts.symRanges = *symRanges;
  // A static loop over an operand of symbolic shape (`?` whose size must
  // equal a static range) still reads through the symbols: dynamic too.
  parts.dynamic = !isStatic(parts.symRanges) || llvm::any_of(op->getOperandTypes(), [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && !r.hasStaticShape();
  });
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  unsigned numReductions = llvm::count(iters, utils::IteratorType::reduction);
  parts.isReduction = numReductions > 0;
  bool serial =
      numReductions > 1 || (parts.isReduction && iters.back() != utils::IteratorType::reduction);
  if (parts.dynamic && parts.isReduction && op.getNumDpsInits() != 1)
    return op.emitError("CUDA emitter: dynamic shapes are supported for pointwise kernels and "
                        "single-output reductions only");
  if (parts.isReduction && op.getNumDpsInits() != 1)
    return emitSequentialReduction(op);
  if (serial)
    return emitSerialReduction(op);

  std::string kname = nextKernelName();
  names.clear();
  for (int64_t r : parts.ranges)
    if (!ShapedType::isDynamic(r)) // a symbolic range is unbounded: wide indices below
      parts.total *= r;
  // Index type: 32-bit when every offset fits.
  // `i += gridDim.x * blockDim.x` must not overflow an int past the bound.
  // Symbolic sizes are unbounded: 64-bit indices.
  parts.wide =
      parts.dynamic || parts.total + kMaxPointwiseGrid * kPointwiseBlock >= (int64_t(1) << 31);
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      if (t.hasStaticShape() && t.getNumElements() >= (int64_t(1) << 31))
        parts.wide = true;
  parts.ity = parts.wide ? "long long" : "int";
  parts.indent = parts.isReduction ? "      " : "    ";
  parts.usedDims.resize(parts.ranges.size());

  if (failed(collectGenericInputs(op, parts)) || failed(collectGenericOutputs(op, parts)))
    return failure();
  llvm::raw_string_ostream bs(parts.body);
  // Tensors the body reads with tensor.extract become extra parameters.
  Gathers gathered;
  gathers = &gathered;
  auto noGathers = llvm::make_scope_exit([&] { gathers = nullptr; });
  if (parts.isReduction) {
    FailureOr<ReductionBody> red = translateReductionBody(op, bs, parts.indent);
    if (failed(red))
      return failure();
    parts.combiner = red->combiner;
    parts.partial = red->partial;
  } else if (failed(translateBody(op, nullptr, bs, parts.indent))) {
    return failure();
  }
  bs.flush();
  parts.params.insert(parts.params.end(), gathered.params.begin(), gathered.params.end());
  parts.args.insert(parts.args.end(), gathered.args.begin(), gathered.args.end());
  // Gathered reads are scalar: keep the scalar kernel.
  parts.usesIndex |= !gathered.params.empty();
  if (failed(collectGenericStores(op, parts)))
    return failure();

  KernelInfo k;
  k.name = kname;
  k.function = func.getSymName().str();
  k.args = parts.args;
  if (parts.isReduction)
    printRowReductionKernel(op, k, parts);
  else
    printPointwiseKernel(op, k, parts);
  addKernel(std::move(k));
  return success();
}

LogicalResult FunctionEmitter::collectGenericInputs(linalg::GenericOp op,
                                                    GenericKernelParts &parts) {
  Block &block = op.getRegion().front();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  llvm::raw_string_ostream ls(parts.loads);
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
      if (!arg.use_empty() && !parts.isReduction) {
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
             << i
             << " is not backed by a buffer (only function arguments and "
                "generic results are; constant tensors are not supported yet)";
    if (arg.use_empty())
      continue;
    std::string p = "in" + std::to_string(parts.params.size());
    parts.params.push_back("const " + *storageType(tt.getElementType()) + " *__restrict__ " + p);
    parts.args.push_back(buffers[info.buffer].name);
    FailureOr<SymShape> shape = shapeOf(operand.get());
    if (failed(shape))
      return failure();
    std::string off =
        offsetExpr(maps[i], *shape, parts.symRanges, !parts.isReduction, "i", parts.usedDims);
    parts.pointwise.push_back({p, "a" + std::to_string(i), maps[i], tt, false, ""});
    auto vt = valueType(tt.getElementType());
    ls << parts.indent << "const " << *vt << " a" << i << " = "
       << loadExpr(p, off, tt.getElementType()) << ";\n";
    names[arg] = "a" + std::to_string(i);
  }
  ls.flush();
  return success();
}

LogicalResult FunctionEmitter::collectGenericOutputs(linalg::GenericOp op,
                                                     GenericKernelParts &parts) {
  for (auto [k, init] : llvm::enumerate(op.getDpsInits())) {
    auto tt = cast<RankedTensorType>(init.getType());
    if (!storageType(tt.getElementType()))
      return op.emitError("CUDA emitter: unsupported element type ") << tt.getElementType();
    FailureOr<SymShape> shape = shapeOf(init);
    if (failed(shape))
      return failure();
    int b = newBuffer(tt, "temporary", "", *shape);
    tensors[op->getResult(k)] = TensorInfo{b, std::nullopt, false};
    parts.params.push_back(*storageType(tt.getElementType()) + " *__restrict__ out" +
                           std::to_string(k));
    parts.args.push_back(buffers[b].name);
  }
  return success();
}

LogicalResult FunctionEmitter::collectGenericStores(linalg::GenericOp op,
                                                    GenericKernelParts &parts) {
  Block &block = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned numLoops = parts.ranges.size();
  // Dims decoded from the linear index (pointwise) or row (reduction).
  for (Operation &inner : block)
    if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
      parts.usedDims.set(idx.getDim());
      parts.usesIndex = true;
    }
  llvm::raw_string_ostream ss(parts.stores);
  llvm::SmallBitVector outDims(numLoops);
  for (auto [k, init] : llvm::enumerate(op.getDpsInits())) {
    auto tt = cast<RankedTensorType>(init.getType());
    unsigned opIdx = op.getNumDpsInputs() + k;
    FailureOr<SymShape> shape = shapeOf(init);
    if (failed(shape))
      return failure();
    std::string off =
        offsetExpr(maps[opIdx], *shape, parts.symRanges, !parts.isReduction, "i", outDims);
    std::string value;
    if (!parts.isReduction) {
      auto v = scalarOf(yield.getOperand(k), yield);
      if (!v)
        return failure();
      value = *v;
      parts.pointwise.push_back({"out" + std::to_string(k), "", maps[opIdx], tt, true, value});
    } else {
      TensorInfo info = tensors.lookup(init);
      if (!info.fill)
        return op.emitError("CUDA emitter: a reduction's init must be a linalg.fill");
      std::string id = identityLiteral(*parts.combiner, tt.getElementType());
      value = combineWithInit(*parts.combiner, *info.fill, id);
      ss << "    if (threadIdx.x == 0)\n";
    }
    ss << parts.indent << "out" << k << "[" << off
       << "] = " << storeValue(value, tt.getElementType()) << ";\n";
  }
  ss.flush();
  if (parts.isReduction && outDims.test(numLoops - 1))
    return op.emitError("CUDA emitter: a reduction output indexed by the reduction dim");
  parts.usedDims |= outDims;
  return success();
}

/// `ranges` as "AxBxC".
static std::string shapeText(ArrayRef<SymSize> ranges) {
  return llvm::join(llvm::map_range(ranges, [](const SymSize &r) { return r.paren(); }), "x");
}

void FunctionEmitter::printPointwiseKernel(linalg::GenericOp op, KernelInfo &k,
                                           const GenericKernelParts &parts) {
  unsigned numLoops = parts.ranges.size();
  int64_t total = parts.total;
  std::string totalText = product(parts.symRanges).str();
  k.kind = KernelInfo::Pointwise;
  k.blockX = kPointwiseBlock;
  // Symbolic sizes: scalar loads only (the vector form needs a static
  // innermost extent and tail).
  int64_t vw = vectorize && !parts.usesIndex && !parts.dynamic
                   ? vectorWidth(parts.pointwise, parts.ranges, total)
                   : 1;
  k.gridX = parts.dynamic ? 0 : pointwiseGridSize((total + vw - 1) / vw);
  std::vector<std::string> params = parts.params;
  if (parts.dynamic) {
    k.work = totalText;
    k.symbols = int(fplan.symbols.size());
    llvm::append_range(params, symbolParams());
  }
  os << "// " << k.name << ": pointwise over " << shapeText(parts.symRanges) << " (" << totalText
     << " elements)" << (vw > 1 ? ", " + std::to_string(vw) + " per thread (128-bit accesses)" : "")
     << ", " << locationString(op.getLoc()) << "\n";
  openKernel(k, params);
  std::string stride = parts.wide ? "(long long)gridDim.x * blockDim.x" : "gridDim.x * blockDim.x";
  std::string start = parts.wide ? "(long long)blockIdx.x * blockDim.x + threadIdx.x"
                                 : "blockIdx.x * blockDim.x + threadIdx.x";
  // The scalar grid-stride loop from `from`, each line indented by `ind`.
  auto scalarLoop = [&](const std::string &from, const std::string &ind) {
    std::string t;
    llvm::raw_string_ostream ts(t);
    ts << "  for (" << parts.ity << " i = " << from << "; i < " << totalText << "; i += " << stride
       << ") {\n";
    SmallVector<std::string> decode = decodeLinearIndex("i", parts.symRanges);
    for (unsigned d = 0; d < numLoops; ++d)
      if (parts.usedDims.test(d))
        ts << "    const " << parts.ity << " d" << d << " = " << decode[d] << ";\n";
    ts << parts.loads << parts.body << parts.stores << "  }\n";
    ts.flush();
    std::string r;
    for (StringRef line : llvm::split(StringRef(t).rtrim('\n'), '\n'))
      r += ind + line.str() + "\n";
    return r;
  };
  if (vw == 1) {
    os << scalarLoop(start, "");
  } else {
    SmallVector<std::string> ptrs;
    for (const PointwiseOperand &p : parts.pointwise)
      ptrs.push_back("(unsigned long long)" + p.param);
    os << "  if (((" << llvm::join(ptrs, " | ") << ") & 15) == 0) {\n";
    os << "    // " << vw << " elements per thread: one 128-bit access per operand\n";
    printVectorLoop(os, parts.pointwise, parts.ranges, vw, parts.ity, start, stride, parts.body);
    if (total % vw) {
      os << "    // tail: the last " << total % vw << " element(s)\n";
      os << scalarLoop(std::to_string(total / vw * vw) + " + " + start, "  ");
    }
    os << "  } else {\n    // unaligned pointers (views): the scalar loop\n";
    os << scalarLoop(start, "  ") << "  }\n";
  }
  os << "}\n\n";
}

void FunctionEmitter::printRowReductionKernel(linalg::GenericOp op, KernelInfo &k,
                                              const GenericKernelParts &parts) {
  unsigned numLoops = parts.ranges.size();
  Type accElt = cast<RankedTensorType>(op.getDpsInits()[0].getType()).getElementType();
  k.kind = KernelInfo::RowReduction;
  // Symbolic sizes: the launch rule runs per call (block ≤ 1024).
  std::string rowLen = parts.symRanges.back().str();
  std::string rows = product(ArrayRef<SymSize>(parts.symRanges).drop_back()).str();
  std::vector<std::string> params = parts.params;
  if (parts.dynamic) {
    k.blockX = 1024;
    k.gridX = 0;
    k.work = rows;
    k.rowLength = rowLen;
    k.symbols = int(fplan.symbols.size());
    llvm::append_range(params, symbolParams());
  } else {
    int64_t staticRows = parts.total / std::max<int64_t>(parts.ranges.back(), 1);
    k.blockX = reductionBlockSize(parts.ranges.back());
    k.gridX = std::max<int64_t>(1, std::min(staticRows, kMaxGrid));
  }
  std::string acc = *valueType(accElt);
  std::string id = identityLiteral(*parts.combiner, accElt);
  const std::string &ity = parts.ity;
  os << "// " << k.name << ": row reduction (" << parts.combiner->functor << ") over "
     << shapeText(parts.symRanges) << ": " << rows << " rows of " << rowLen
     << ", one block per row, " << locationString(op.getLoc()) << "\n";
  openKernel(k, params);
  if (parts.dynamic)
    k.blockX = 0;
  os << "  __shared__ " << acc << " partials[32];\n";
  os << "  for (" << ity << " row = blockIdx.x; row < " << rows << "; row += gridDim.x) {\n";
  SmallVector<std::string> decode =
      decodeLinearIndex("row", ArrayRef<SymSize>(parts.symRanges).drop_back());
  for (unsigned d = 0; d + 1 < numLoops; ++d)
    if (parts.usedDims.test(d))
      os << "    const " << ity << " d" << d << " = " << decode[d] << ";\n";
  unsigned rd = numLoops - 1;
  os << "    " << acc << " acc = " << id << ";\n";
  os << "    for (" << ity << " d" << rd << " = threadIdx.x; d" << rd << " < " << rowLen << "; d"
     << rd << " += blockDim.x) {\n";
  os << parts.loads << parts.body;
  os << "      acc = " << parts.combiner->functor << "{}(acc, " << parts.partial << ");\n";
  os << "    }\n";
  os << "    acc = kiln_block_reduce<" << acc << ">(acc, partials, " << parts.combiner->functor
     << "{}, " << id << ");\n";
  os << parts.stores << "  }\n}\n\n";
}

} // namespace mlir::kiln::cuda::detail
