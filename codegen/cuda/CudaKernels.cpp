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

#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

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
  if (isReduction && op.getNumDpsInits() != 1)
    return op.emitError("CUDA emitter: a reduction with several outputs is not supported");
  if (numReductions > 1 || (isReduction && iters.back() != utils::IteratorType::reduction))
    return emitSerialReduction(op);

  std::string kname = nextKernelName();
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
  SmallVector<PointwiseOperand> pw; // for the vectorized form
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
             << i
             << " is not backed by a buffer (only function arguments and "
                "generic results are; constant tensors are not supported yet)";
    if (arg.use_empty())
      continue;
    std::string p = "in" + std::to_string(params.size());
    params.push_back("const " + *storageType(tt.getElementType()) + " *__restrict__ " + p);
    args.push_back(buffers[info.buffer].name);
    std::string off = offsetExpr(maps[i], tt, ranges, !isReduction, "i", usedDims);
    pw.push_back({p, "a" + std::to_string(i), maps[i], tt, false, ""});
    auto vt = valueType(tt.getElementType());
    ls << in << "const " << *vt << " a" << i << " = " << loadExpr(p, off, tt.getElementType())
       << ";\n";
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
    params.push_back(*storageType(tt.getElementType()) + " *__restrict__ out" + std::to_string(k));
    args.push_back(buffers[b].name);
  }

  // Reduction: the combiner is the yielded op that reads the output block arg.
  std::optional<Combiner> combiner;
  std::string partial;
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  if (isReduction) {
    FailureOr<ReductionBody> red = translateReductionBody(op, bs, in);
    if (failed(red))
      return failure();
    combiner = red->combiner;
    partial = red->partial;
  } else {
    if (failed(translateBody(op, nullptr, bs, in)))
      return failure();
  }
  bs.flush();
  ls.flush();

  // Dims decoded from the linear index (pointwise) or row (reduction).
  bool usesIndex = false;
  for (Operation &inner : block)
    if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
      usedDims.set(idx.getDim());
      usesIndex = true;
    }
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
      pw.push_back({"out" + std::to_string(k), "", maps[opIdx], tt, true, value});
    } else {
      TensorInfo info = tensors.lookup(init);
      if (!info.fill)
        return op.emitError("CUDA emitter: a reduction's init must be a linalg.fill");
      std::string id = identityLiteral(*combiner, tt.getElementType());
      value = combineWithInit(*combiner, *info.fill, id);
      ss << "    if (threadIdx.x == 0)\n";
    }
    ss << in << "out" << k << "[" << off << "] = " << storeValue(value, tt.getElementType())
       << ";\n";
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
  std::string loc = locationString(op.getLoc());
  std::string shape =
      llvm::join(llvm::map_range(ranges, [](int64_t r) { return std::to_string(r); }), "x");
  if (!isReduction) {
    k.kind = KernelInfo::Pointwise;
    k.blockX = kPointwiseBlock;
    int64_t vw = vectorize && !usesIndex ? vectorWidth(pw, ranges, total) : 1;
    k.gridX = pointwiseGridSize((total + vw - 1) / vw);
    os << "// " << kname << ": pointwise over " << shape << " (" << total << " elements)"
       << (vw > 1 ? ", " + std::to_string(vw) + " per thread (128-bit accesses)" : "") << ", "
       << loc << "\n";
    openKernel(k, params);
    std::string stride = wide ? "(long long)gridDim.x * blockDim.x" : "gridDim.x * blockDim.x";
    std::string start = wide ? "(long long)blockIdx.x * blockDim.x + threadIdx.x"
                             : "blockIdx.x * blockDim.x + threadIdx.x";
    // The scalar grid-stride loop from `from`, each line indented by `ind`.
    auto scalarLoop = [&](const std::string &from, const std::string &ind) {
      std::string t;
      llvm::raw_string_ostream ts(t);
      ts << "  for (" << ity << " i = " << from << "; i < " << total << "; i += " << stride
         << ") {\n";
      SmallVector<std::string> decode = decodeLinearIndex("i", ranges);
      for (unsigned d = 0; d < numLoops; ++d)
        if (usedDims.test(d))
          ts << "    const " << ity << " d" << d << " = " << decode[d] << ";\n";
      ts << loads << body << stores << "  }\n";
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
      for (const PointwiseOperand &p : pw)
        ptrs.push_back("(unsigned long long)" + p.param);
      os << "  if (((" << llvm::join(ptrs, " | ") << ") & 15) == 0) {\n";
      os << "    // " << vw << " elements per thread: one 128-bit access per operand\n";
      printVectorLoop(os, pw, ranges, vw, ity, start, stride, body);
      if (total % vw) {
        os << "    // tail: the last " << total % vw << " element(s)\n";
        os << scalarLoop(std::to_string(total / vw * vw) + " + " + start, "  ");
      }
      os << "  } else {\n    // unaligned pointers (views): the scalar loop\n";
      os << scalarLoop(start, "  ") << "  }\n";
    }
    os << "}\n\n";
  } else {
    k.kind = KernelInfo::RowReduction;
    int64_t rowLen = ranges.back();
    int64_t rows = total / std::max<int64_t>(rowLen, 1);
    k.blockX = reductionBlockSize(rowLen);
    k.gridX = std::max<int64_t>(1, std::min(rows, kMaxGrid));
    std::string acc = *valueType(accElt);
    std::string id = identityLiteral(*combiner, accElt);
    os << "// " << kname << ": row reduction (" << combiner->functor << ") over " << shape << ": "
       << rows << " rows of " << rowLen << ", one block per row, " << loc << "\n";
    openKernel(k, params);
    os << "  __shared__ " << acc << " partials[32];\n";
    os << "  for (" << ity << " row = blockIdx.x; row < " << rows << "; row += gridDim.x) {\n";
    SmallVector<std::string> decode =
        decodeLinearIndex("row", ArrayRef<int64_t>(ranges).drop_back());
    for (unsigned d = 0; d + 1 < numLoops; ++d)
      if (usedDims.test(d))
        os << "    const " << ity << " d" << d << " = " << decode[d] << ";\n";
    unsigned rd = numLoops - 1;
    os << "    " << acc << " acc = " << id << ";\n";
    os << "    for (" << ity << " d" << rd << " = threadIdx.x; d" << rd << " < " << rowLen << "; d"
       << rd << " += blockDim.x) {\n";
    os << loads << body;
    os << "      acc = " << combiner->functor << "{}(acc, " << partial << ");\n";
    os << "    }\n";
    os << "    acc = kiln_block_reduce<" << acc << ">(acc, partials, " << combiner->functor
       << "{}, " << id << ");\n";
    os << stores << "  }\n}\n\n";
  }
  addKernel(std::move(k));
  return success();
}

} // namespace mlir::kiln::cuda::detail
