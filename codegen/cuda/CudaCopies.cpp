//===- CudaCopies.cpp - data movement ops as CUDA kernels ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// FunctionEmitter::emitTranspose: a standalone linalg.transpose (one the
// elementwise fusion could not fold into a consumer, e.g. `x.T` returned
// or fed to a GEMM) becomes a grid-stride pointwise kernel over the output
// that reads the input through the permutation; elements are copied in
// their storage type (no conversion). FunctionEmitter::materialize: a
// splat constant / linalg.fill read where a buffer is needed (a GEMM
// operand, a transpose input, a returned constant) is written by a fill
// kernel first.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

LogicalResult FunctionEmitter::emitTranspose(linalg::TransposeOp op) {
  if (!op.hasPureTensorSemantics())
    return op.emitError("CUDA emitter: expected linalg.transpose on tensors");
  auto ot = cast<RankedTensorType>(op.getInit().getType());
  auto elt = storageType(ot.getElementType());
  if (!elt)
    return op.emitError("CUDA emitter: unsupported element type ") << ot.getElementType();
  TensorInfo in = tensors.lookup(op.getInput());
  in.buffer = materialize(op.getInput());
  if (in.buffer < 0)
    return op.emitError("CUDA emitter: a transpose of a tensor that is not backed by a "
                        "buffer (constant tensors are not supported yet)");
  // Sizes (dynamic dims: products of the symbols, kernel arguments).
  FailureOr<SymShape> ishape = shapeOf(op.getInput()), oshape = shapeOf(op.getInit());
  if (failed(ishape) || failed(oshape))
    return failure();
  ArrayRef<int64_t> perm = op.getPermutation();
  for (size_t k = 0; k < perm.size(); ++k)
    requireEqual((*oshape)[k], (*ishape)[perm[k]]);
  bool dynamic = !isStatic(*ishape) || !isStatic(*oshape);
  SymSize total = product(*oshape);
  bool wide = dynamic || total.value() + kMaxPointwiseGrid * kPointwiseBlock >= (int64_t(1) << 31);
  std::string ity = wide ? "long long" : "int";
  // Output coordinate k is input dim perm[k]; the input offset sums
  // coordinate * row-major stride of that input dim.
  SmallVector<SymSize> istride = rowMajorStrides(*ishape);
  SmallVector<std::string> decode = decodeLinearIndex("i", *oshape);
  std::vector<std::string> terms;
  for (size_t k = 0; k < oshape->size(); ++k)
    if (!(*oshape)[k].isOne())
      terms.push_back("d" + std::to_string(k) +
                      (istride[perm[k]].isOne() ? "" : " * " + istride[perm[k]].paren()));
  std::string off = terms.empty() ? "0" : llvm::join(terms, " + ");

  int out = newBuffer(ot, "temporary", "", *oshape);
  tensors[op->getResult(0)] = TensorInfo{out, std::nullopt, false};
  KernelInfo k;
  k.name = nextKernelName();
  k.function = func.getSymName().str();
  k.kind = KernelInfo::Pointwise;
  k.blockX = kPointwiseBlock;
  k.gridX = dynamic ? 0 : pointwiseGridSize(total.value());
  k.args = {buffers[in.buffer].name, buffers[out].name};
  std::vector<std::string> params = {"const " + *elt + " *__restrict__ in0",
                                     *elt + " *__restrict__ out0"};
  if (dynamic) {
    k.work = total.str();
    k.symbols = int(fplan.symbols.size());
    llvm::append_range(params, symbolParams());
  }
  std::string permText =
      llvm::join(llvm::map_range(perm, [](int64_t p) { return std::to_string(p); }), ", ");
  os << "// " << k.name << ": transpose [" << permText << "] to "
     << llvm::join(llvm::map_range(*oshape, [](const SymSize &d) { return d.paren(); }), "x")
     << " (" << total.str() << " elements), " << locationString(op.getLoc()) << "\n";
  openKernel(k, params);
  std::string stride = wide ? "(long long)gridDim.x * blockDim.x" : "gridDim.x * blockDim.x";
  std::string start = wide ? "(long long)blockIdx.x * blockDim.x + threadIdx.x"
                           : "blockIdx.x * blockDim.x + threadIdx.x";
  os << "  for (" << ity << " i = " << start << "; i < " << total.str() << "; i += " << stride
     << ") {\n";
  for (size_t d = 0; d < oshape->size(); ++d)
    if (!(*oshape)[d].isOne())
      os << "    const " << ity << " d" << d << " = " << decode[d] << ";\n";
  os << "    out0[i] = in0[" << off << "];\n  }\n}\n\n";
  addKernel(std::move(k));
  return success();
}

/// Elements of a constant table: at most this many (index tables, small
/// lookup constants; large weights are graph inputs, not constants).
static constexpr int64_t kMaxConstantTable = 1 << 16;

LogicalResult FunctionEmitter::emitConstantTable(arith::ConstantOp c) {
  auto tt = cast<RankedTensorType>(c.getType());
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  auto elt = storageType(tt.getElementType());
  if (!dense || !tt.hasStaticShape() || !elt)
    return c.emitError("CUDA emitter: unsupported constant tensor ") << tt;
  if (tt.getNumElements() > kMaxConstantTable)
    return c.emitError("CUDA emitter: a constant tensor of ")
           << tt.getNumElements() << " elements (more than " << kMaxConstantTable << ")";
  std::vector<std::string> values;
  for (Attribute a : dense.getValues<Attribute>()) {
    auto lit = attrLiteral(cast<TypedAttr>(a));
    // Bit-pattern literals (inf, NaN) call device functions: not a constant initializer.
    if (!lit || lit->find("__") != std::string::npos)
      return c.emitError("CUDA emitter: a constant tensor with non-finite or unsupported "
                         "elements");
    values.push_back(*lit);
  }
  int out = newBuffer(tt, "temporary");
  tensors[c.getResult()] = TensorInfo{out, std::nullopt, false};
  std::string table = func.getSymName().str() + "_c" + std::to_string(out);
  os << "// " << table << ": constant " << tt << ", " << locationString(c.getLoc()) << "\n";
  os << "__device__ const " << *valueType(tt.getElementType()) << " " << table << "["
     << values.size() << "] = {" << llvm::join(values, ", ") << "};\n";
  int64_t total = tt.getNumElements();
  KernelInfo k;
  k.name = nextKernelName();
  k.function = func.getSymName().str();
  k.kind = KernelInfo::Pointwise;
  k.blockX = kPointwiseBlock;
  k.gridX = pointwiseGridSize(total);
  k.args = {buffers[out].name};
  os << "// " << k.name << ": copy " << table << " (" << total << " elements)\n";
  openKernel(k, {*elt + " *__restrict__ out0"});
  os << "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < " << total
     << "; i += gridDim.x * blockDim.x)\n";
  os << "    out0[i] = " << storeValue(table + "[i]", tt.getElementType()) << ";\n}\n\n";
  addKernel(std::move(k));
  return success();
}

int FunctionEmitter::materialize(Value v) {
  TensorInfo info = tensors.lookup(v);
  auto tt = dyn_cast<RankedTensorType>(v.getType());
  if (info.buffer >= 0 || !info.fill || !tt || !tt.hasStaticShape() ||
      !storageType(tt.getElementType()))
    return info.buffer;
  std::string elt = *storageType(tt.getElementType());
  int64_t total = tt.getNumElements();
  int out = newBuffer(tt, "temporary");
  tensors[v] = TensorInfo{out, info.fill, false};
  KernelInfo k;
  k.name = nextKernelName();
  k.function = func.getSymName().str();
  k.kind = KernelInfo::Pointwise;
  k.blockX = kPointwiseBlock;
  k.gridX = pointwiseGridSize(total);
  k.args = {buffers[out].name};
  bool wide = total + kMaxPointwiseGrid * kPointwiseBlock >= (int64_t(1) << 31);
  std::string ity = wide ? "long long" : "int";
  os << "// " << k.name << ": fill " << total << " elements with " << *info.fill << ", "
     << locationString(v.getLoc()) << "\n";
  openKernel(k, {elt + " *__restrict__ out0"});
  os << "  for (" << ity << " i = "
     << (wide ? "(long long)blockIdx.x * blockDim.x + threadIdx.x"
              : "blockIdx.x * blockDim.x + threadIdx.x")
     << "; i < " << total
     << "; i += " << (wide ? "(long long)gridDim.x * blockDim.x" : "gridDim.x * blockDim.x")
     << ")\n";
  os << "    out0[i] = " << storeValue(*info.fill, tt.getElementType()) << ";\n}\n\n";
  addKernel(std::move(k));
  return out;
}

} // namespace mlir::kiln::cuda::detail
