//===- CudaSlices.cpp - slices, concats and gathers as CUDA kernels ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// tensor.extract_slice (kiln.slice, the taps of an im2col convolution or a
// pooling window) becomes a strided copy kernel into a fresh contiguous
// buffer; tensor.insert_slice (kiln.concat: padding, im2col columns, the
// concatenation of tensors) copies its source into the destination's
// region. A concat is a chain of insert_slices into one tensor.empty: the
// first allocates the buffer, the others write into it in place (the
// chain owns the buffer and each link has no other use); any other
// destination is copied first, so no buffer another value still reads is
// ever written. A splat constant (zero or -inf padding) is stored as a
// literal, no buffer. `tensor.extract` in a generic body (embedding
// lookups, gathers) reads the tensor through an extra kernel parameter at
// the row-major offset of its indices. Layout rules: codegen/cuda/README.md.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

static bool isZero(const SymSize &s) { return s.isStatic() && s.value() == 0; }

/// `offset + sum(d_k * strides[k])` over the dims of `shape` that are not 1.
static std::string stridedOffset(const SymSize &offset, ArrayRef<SymSize> strides,
                                 ArrayRef<SymSize> shape) {
  std::vector<std::string> terms;
  for (size_t k = 0; k < shape.size(); ++k)
    if (!shape[k].isOne() && !isZero(strides[k]))
      terms.push_back("d" + std::to_string(k) +
                      (strides[k].isOne() ? "" : " * " + strides[k].paren()));
  if (!isZero(offset) || terms.empty())
    terms.push_back(offset.str());
  return llvm::join(terms, " + ");
}

void FunctionEmitter::printStridedCopy(int src, const std::string &literal,
                                       const SymSize &srcOffset, ArrayRef<SymSize> srcStrides,
                                       int dst, const SymSize &dstOffset,
                                       ArrayRef<SymSize> dstStrides, ArrayRef<SymSize> shape,
                                       Type elt, const std::string &what, Location loc) {
  SymSize total = product(shape);
  if (isZero(total))
    return;
  auto symbolic = [](ArrayRef<SymSize> v) { return !isStatic(v); };
  bool dynamic = symbolic(shape) || symbolic(srcStrides) || symbolic(dstStrides) ||
                 !srcOffset.isStatic() || !dstOffset.isStatic();
  auto huge = [](int b, const std::vector<Buffer> &bufs) {
    return b >= 0 && bufs[b].type.hasStaticShape() &&
           bufs[b].type.getNumElements() >= (int64_t(1) << 31);
  };
  // Symbolic sizes are unbounded: 64-bit indices.
  bool wide = dynamic ||
              total.value() + kMaxPointwiseGrid * kPointwiseBlock >= (int64_t(1) << 31) ||
              huge(dst, buffers) || huge(src, buffers);
  std::string st = *storageType(elt);
  std::string ity = wide ? "long long" : "int";
  KernelInfo k;
  k.name = nextKernelName();
  k.function = func.getSymName().str();
  k.kind = KernelInfo::Pointwise;
  k.blockX = kPointwiseBlock;
  k.gridX = dynamic ? 0 : pointwiseGridSize(total.value());
  std::vector<std::string> params;
  if (src >= 0) {
    params.push_back("const " + st + " *__restrict__ in0");
    k.args.push_back(buffers[src].name);
  }
  params.push_back(st + " *__restrict__ out0");
  k.args.push_back(buffers[dst].name);
  if (dynamic) {
    k.work = total.str();
    k.symbols = int(fplan.symbols.size());
    llvm::append_range(params, symbolParams());
  }
  os << "// " << k.name << ": " << what << " over "
     << llvm::join(llvm::map_range(shape, [](const SymSize &d) { return d.paren(); }), "x") << " ("
     << total.str() << " elements), " << locationString(loc) << "\n";
  openKernel(k, params);
  os << "  for (" << ity << " i = "
     << (wide ? "(long long)blockIdx.x * blockDim.x + threadIdx.x"
              : "blockIdx.x * blockDim.x + threadIdx.x")
     << "; i < " << total.str()
     << "; i += " << (wide ? "(long long)gridDim.x * blockDim.x" : "gridDim.x * blockDim.x")
     << ") {\n";
  SmallVector<std::string> decode = decodeLinearIndex("i", shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (!shape[d].isOne())
      os << "    const " << ity << " d" << d << " = " << decode[d] << ";\n";
  std::string value = src >= 0 ? "in0[" + stridedOffset(srcOffset, srcStrides, shape) + "]"
                               : storeValue(literal, elt);
  os << "    out0[" << stridedOffset(dstOffset, dstStrides, shape) << "] = " << value
     << ";\n  }\n}\n\n";
  addKernel(std::move(k));
}

int FunctionEmitter::copyToFreshBuffer(Value v, RankedTensorType t, Location loc) {
  TensorInfo info = tensors.lookup(v);
  if (info.buffer < 0 && !info.fill && !info.empty)
    return -1;
  FailureOr<SymShape> shape = shapeOf(v);
  if (failed(shape))
    return -1;
  int fresh = newBuffer(t, "temporary", "", *shape);
  SmallVector<SymSize> strides = rowMajorStrides(*shape);
  if (info.buffer >= 0)
    printStridedCopy(info.buffer, "", SymSize(0), strides, fresh, SymSize(0), strides, *shape,
                     t.getElementType(), "copy", loc);
  else if (info.fill)
    printStridedCopy(-1, *info.fill, SymSize(0), strides, fresh, SymSize(0), strides, *shape,
                     t.getElementType(), "fill", loc);
  return fresh;
}

/// The non-unit dims of `t`.
static SmallVector<int64_t> nonUnitDims(Type t) {
  SmallVector<int64_t> dims;
  for (int64_t d : cast<RankedTensorType>(t).getShape())
    if (d != 1)
      dims.push_back(d);
  return dims;
}

/// `v`, or the reshape of it that adds or drops unit dims, when its only
/// use is as the source of a tensor.insert_slice; null otherwise.
static Value insertedOnly(Value v) {
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (auto ins = dyn_cast<tensor::InsertSliceOp>(user))
      return ins.getSource() == v && ins.getDest() != v ? v : Value();
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user) ||
        nonUnitDims(user->getResult(0).getType()) != nonUnitDims(v.getType()))
      return Value();
    v = user->getResult(0);
  }
  return Value();
}

/// The element offset of a slice at `offsets` (static or traced values) of
/// a row-major tensor of shape `full`, and the slice's own strides (`steps`
/// times the tensor's, dims in `keep` only). With symbolic sizes each dim's
/// end (offset + (size - 1) * step + 1) is checked per call: an extracted
/// slice must end within the tensor (a bound); an inserted one too, and it
/// must fill the dim exactly unless it provably fits (a concat's other
/// dims: `[s0, 8] ++ [s1, 8]` needs s0 == s1, never a partial write that
/// leaves rows unset). Failure: a dynamic step or an offset that is not a
/// polynomial in the symbols (an error at `op`).
LogicalResult FunctionEmitter::sliceLayout(Operation *op, ArrayRef<OpFoldResult> offsets,
                                           ArrayRef<OpFoldResult> sizes, ArrayRef<int64_t> steps,
                                           ArrayRef<SymSize> full, bool insert,
                                           function_ref<bool(int64_t)> keep, SymSize &offset,
                                           SmallVector<SymSize> &strides) {
  SmallVector<SymSize> base = rowMajorStrides(full);
  for (auto [k, o] : llvm::enumerate(offsets)) {
    if (ShapedType::isDynamic(steps[k]))
      return op->emitError("CUDA emitter: a slice with a dynamic step is not supported");
    FailureOr<SymSize> at = sizeOf(o, op), size = sizeOf(sizes[k], op);
    if (failed(at) || failed(size))
      return failure();
    offset = offset + *at * base[k];
    if (keep(k))
      strides.push_back(base[k] * SymSize(steps[k]));
    if (at->isStatic() && size->isStatic() && full[k].isStatic())
      continue; // static: the verifier's business
    if (size->isStatic() && size->value() == 0)
      continue;
    SymSize end = *at + (*size - SymSize(1)) * SymSize(steps[k]) + SymSize(1);
    if (!insert)
      requireAtMost(end, full[k]);
    else if (!(full[k] - end).isNonNegative())
      requireEqual(end, full[k]);
  }
  return success();
}

LogicalResult FunctionEmitter::emitExtractSlice(tensor::ExtractSliceOp op) {
  RankedTensorType rt = op.getResultType();
  if (!storageType(rt.getElementType()))
    return op.emitError("CUDA emitter: unsupported element type ") << rt.getElementType();
  TensorInfo in = tensors.lookup(op.getSource());
  if (in.buffer < 0 && (in.fill || in.empty)) { // a slice of a constant is that constant
    tensors[op.getResult()] = TensorInfo{-1, in.fill, in.empty};
    return success();
  }
  if (in.buffer < 0)
    return op.emitError("CUDA emitter: a slice of a tensor that is not backed by a buffer");
  FailureOr<SymShape> source = shapeOf(op.getSource()), shape = shapeOf(op.getResult());
  if (failed(source) || failed(shape))
    return failure();
  llvm::SmallBitVector dropped = op.getDroppedDims();
  SymSize offset(0);
  SmallVector<SymSize> strides;
  if (failed(sliceLayout(
          op, op.getMixedOffsets(), op.getMixedSizes(), op.getStaticStrides(), *source,
          /*insert=*/false, [&](int64_t k) { return !dropped.test(k); }, offset, strides)))
    return failure();
  if (int64_t(strides.size()) != rt.getRank())
    return op.emitError("CUDA emitter: unexpected rank-reducing slice");
  // Only inserted somewhere (an im2col tap), maybe after reshapes that add
  // or drop unit dims: the insert copies it directly.
  if (Value inserted = insertedOnly(op.getResult())) {
    SmallVector<SymSize> viewStrides;
    auto it = strides.begin();
    for (int64_t d : cast<RankedTensorType>(inserted.getType()).getShape()) {
      while (d != 1 && it != strides.end() && rt.getDimSize(it - strides.begin()) == 1)
        ++it;
      viewStrides.push_back(d == 1 || it == strides.end() ? SymSize(0) : *it++);
    }
    sliceViews[inserted] = SliceView{in.buffer, offset, viewStrides};
    return success();
  }
  int out = newBuffer(rt, "temporary", "", *shape);
  tensors[op.getResult()] = TensorInfo{out, std::nullopt, false};
  printStridedCopy(in.buffer, "", offset, strides, out, SymSize(0), rowMajorStrides(*shape), *shape,
                   rt.getElementType(), "slice", op.getLoc());
  return success();
}

LogicalResult FunctionEmitter::emitInsertSlice(tensor::InsertSliceOp op) {
  RankedTensorType st = op.getSourceType(), dt = op.getDestType();
  if (!storageType(dt.getElementType()))
    return op.emitError("CUDA emitter: unsupported element type ") << dt.getElementType();
  auto mask = computeRankReductionMask(op.getStaticSizes(), st.getShape());
  if (!mask)
    return op.emitError("CUDA emitter: unexpected rank-reducing insert_slice");
  TensorInfo src = tensors.lookup(op.getSource());
  auto view = sliceViews.find(op.getSource());
  if (src.buffer < 0 && !src.fill && !src.empty && view == sliceViews.end())
    return op.emitError("CUDA emitter: an inserted tensor that is not backed by a buffer");
  FailureOr<SymShape> dshape = shapeOf(op.getDest()), sshape = shapeOf(op.getSource());
  if (failed(dshape) || failed(sshape))
    return failure();
  // The destination: written in place only when it is the previous link
  // of this chain (its owned buffer) and nothing else reads it.
  Value dest = op.getDest();
  TensorInfo d = tensors.lookup(dest);
  int dst;
  if (d.buffer >= 0 && ownedBuffers.contains(d.buffer) && dest.hasOneUse() &&
      dest.getDefiningOp<tensor::InsertSliceOp>())
    dst = d.buffer;
  else
    dst = copyToFreshBuffer(dest, dt, op.getLoc());
  if (dst < 0)
    return op.emitError("CUDA emitter: an insert_slice destination that is not backed by a "
                        "buffer");
  ownedBuffers.insert(dst);
  tensors[op.getResult()] = TensorInfo{dst, std::nullopt, false};
  SymSize offset(0);
  SmallVector<SymSize> strides;
  if (failed(sliceLayout(
          op, op.getMixedOffsets(), op.getMixedSizes(), op.getStaticStrides(), *dshape,
          /*insert=*/true, [&](int64_t k) { return !mask->contains(k); }, offset, strides)))
    return failure();
  if (view != sliceViews.end()) {
    printStridedCopy(view->second.buffer, "", view->second.offset, view->second.strides, dst,
                     offset, strides, *sshape, dt.getElementType(), "slice into a concat",
                     op.getLoc());
    return success();
  }
  if (src.empty && src.buffer < 0)
    return success(); // undefined contents: nothing to copy
  printStridedCopy(src.buffer, src.fill.value_or(""), SymSize(0), rowMajorStrides(*sshape), dst,
                   offset, strides, *sshape, dt.getElementType(),
                   src.buffer >= 0 ? "insert" : "insert constant", op.getLoc());
  return success();
}

std::optional<std::string> FunctionEmitter::translateExtract(tensor::ExtractOp op) {
  Value t = op.getTensor();
  auto tt = cast<RankedTensorType>(t.getType());
  if (!gathers) {
    op.emitError("CUDA emitter: tensor.extract is supported in pointwise and row-reduction "
                 "kernels only");
    return std::nullopt;
  }
  if (!storageType(tt.getElementType())) {
    op.emitError("CUDA emitter: tensor.extract from ") << tt << " is not supported";
    return std::nullopt;
  }
  // Dynamic dims: strides are symbol polynomials (the kernel takes the
  // symbols: a generic reading a dynamic tensor is a dynamic kernel).
  FailureOr<SymShape> shape = shapeOf(t);
  if (failed(shape))
    return std::nullopt;
  TensorInfo info = tensors.lookup(t);
  if (info.buffer < 0 && info.fill)
    return *info.fill;
  int b = materialize(t);
  if (b < 0) {
    op.emitError("CUDA emitter: tensor.extract from a tensor that is not backed by a buffer");
    return std::nullopt;
  }
  auto [it, added] =
      gathers->paramOfBuffer.try_emplace(b, "g" + std::to_string(gathers->params.size()));
  if (added) {
    gathers->params.push_back("const " + *storageType(tt.getElementType()) + " *__restrict__ " +
                              it->second);
    gathers->args.push_back(buffers[b].name);
  }
  SmallVector<SymSize> strides = rowMajorStrides(*shape);
  std::vector<std::string> terms;
  for (auto [k, index] : llvm::enumerate(op.getIndices())) {
    if ((*shape)[k].isOne())
      continue;
    auto s = scalarOf(index, op);
    if (!s)
      return std::nullopt;
    terms.push_back("(" + *s + ")" + (strides[k].isOne() ? "" : " * " + strides[k].paren()));
  }
  return loadExpr(it->second, terms.empty() ? "0" : llvm::join(terms, " + "), tt.getElementType());
}

} // namespace mlir::kiln::cuda::detail
