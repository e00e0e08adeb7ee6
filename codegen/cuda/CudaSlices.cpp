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

static SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

static bool isStatic(ArrayRef<int64_t> values) {
  return llvm::none_of(values, ShapedType::isDynamic);
}

/// `offset + sum(d_k * strides[k])` over the dims of `shape` that are not 1.
static std::string stridedOffset(int64_t offset, ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> shape) {
  std::vector<std::string> terms;
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] != 1 && strides[k] != 0)
      terms.push_back("d" + std::to_string(k) +
                      (strides[k] == 1 ? "" : " * " + std::to_string(strides[k])));
  if (offset != 0 || terms.empty())
    terms.push_back(std::to_string(offset));
  return llvm::join(terms, " + ");
}

void FunctionEmitter::printStridedCopy(int src, const std::string &literal, int64_t srcOffset,
                                       ArrayRef<int64_t> srcStrides, int dst, int64_t dstOffset,
                                       ArrayRef<int64_t> dstStrides, ArrayRef<int64_t> shape,
                                       Type elt, const std::string &what, Location loc) {
  int64_t total = 1;
  for (int64_t s : shape)
    total *= s;
  if (total == 0)
    return;
  std::string st = *storageType(elt);
  bool wide = total + kMaxPointwiseGrid * kPointwiseBlock >= (int64_t(1) << 31) ||
              buffers[dst].type.getNumElements() >= (int64_t(1) << 31) ||
              (src >= 0 && buffers[src].type.getNumElements() >= (int64_t(1) << 31));
  std::string ity = wide ? "long long" : "int";
  KernelInfo k;
  k.name = nextKernelName();
  k.function = func.getSymName().str();
  k.kind = KernelInfo::Pointwise;
  k.blockX = kPointwiseBlock;
  k.gridX = pointwiseGridSize(total);
  std::vector<std::string> params;
  if (src >= 0) {
    params.push_back("const " + st + " *__restrict__ in0");
    k.args.push_back(buffers[src].name);
  }
  params.push_back(st + " *__restrict__ out0");
  k.args.push_back(buffers[dst].name);
  os << "// " << k.name << ": " << what << " over "
     << llvm::join(llvm::map_range(shape, [](int64_t d) { return std::to_string(d); }), "x") << " ("
     << total << " elements), " << locationString(loc) << "\n";
  openKernel(k, params);
  os << "  for (" << ity << " i = "
     << (wide ? "(long long)blockIdx.x * blockDim.x + threadIdx.x"
              : "blockIdx.x * blockDim.x + threadIdx.x")
     << "; i < " << total
     << "; i += " << (wide ? "(long long)gridDim.x * blockDim.x" : "gridDim.x * blockDim.x")
     << ") {\n";
  SmallVector<std::string> decode = decodeLinearIndex("i", shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
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
  int fresh = newBuffer(t, "temporary");
  SmallVector<int64_t> strides = rowMajorStrides(t.getShape());
  if (info.buffer >= 0)
    printStridedCopy(info.buffer, "", 0, strides, fresh, 0, strides, t.getShape(),
                     t.getElementType(), "copy", loc);
  else if (info.fill)
    printStridedCopy(-1, *info.fill, 0, strides, fresh, 0, strides, t.getShape(),
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

LogicalResult FunctionEmitter::emitExtractSlice(tensor::ExtractSliceOp op) {
  RankedTensorType st = op.getSourceType(), rt = op.getResultType();
  if (!st.hasStaticShape() || !rt.hasStaticShape() || !isStatic(op.getStaticOffsets()) ||
      !isStatic(op.getStaticSizes()) || !isStatic(op.getStaticStrides()))
    return op.emitError("CUDA emitter: dynamic shapes are not supported yet");
  if (!storageType(rt.getElementType()))
    return op.emitError("CUDA emitter: unsupported element type ") << rt.getElementType();
  TensorInfo in = tensors.lookup(op.getSource());
  if (in.buffer < 0 && (in.fill || in.empty)) { // a slice of a constant is that constant
    tensors[op.getResult()] = TensorInfo{-1, in.fill, in.empty};
    return success();
  }
  if (in.buffer < 0)
    return op.emitError("CUDA emitter: a slice of a tensor that is not backed by a buffer");
  SmallVector<int64_t> base = rowMajorStrides(st.getShape());
  llvm::SmallBitVector dropped = op.getDroppedDims();
  int64_t offset = 0;
  SmallVector<int64_t> strides;
  for (int64_t k = 0; k < st.getRank(); ++k) {
    offset += op.getStaticOffsets()[k] * base[k];
    if (!dropped.test(k))
      strides.push_back(base[k] * op.getStaticStrides()[k]);
  }
  if (int64_t(strides.size()) != rt.getRank())
    return op.emitError("CUDA emitter: unexpected rank-reducing slice");
  // Only inserted somewhere (an im2col tap), maybe after reshapes that add
  // or drop unit dims: the insert copies it directly.
  if (Value inserted = insertedOnly(op.getResult())) {
    SmallVector<int64_t> viewStrides;
    auto it = strides.begin();
    for (int64_t d : cast<RankedTensorType>(inserted.getType()).getShape()) {
      while (d != 1 && it != strides.end() && rt.getDimSize(it - strides.begin()) == 1)
        ++it;
      viewStrides.push_back(d == 1 || it == strides.end() ? 0 : *it++);
    }
    sliceViews[inserted] = SliceView{in.buffer, offset, viewStrides};
    return success();
  }
  int out = newBuffer(rt, "temporary");
  tensors[op.getResult()] = TensorInfo{out, std::nullopt, false};
  printStridedCopy(in.buffer, "", offset, strides, out, 0, rowMajorStrides(rt.getShape()),
                   rt.getShape(), rt.getElementType(), "slice", op.getLoc());
  return success();
}

LogicalResult FunctionEmitter::emitInsertSlice(tensor::InsertSliceOp op) {
  RankedTensorType st = op.getSourceType(), dt = op.getDestType();
  if (!st.hasStaticShape() || !dt.hasStaticShape() || !isStatic(op.getStaticOffsets()) ||
      !isStatic(op.getStaticSizes()) || !isStatic(op.getStaticStrides()))
    return op.emitError("CUDA emitter: dynamic shapes are not supported yet");
  if (!storageType(dt.getElementType()))
    return op.emitError("CUDA emitter: unsupported element type ") << dt.getElementType();
  auto mask = computeRankReductionMask(op.getStaticSizes(), st.getShape());
  if (!mask)
    return op.emitError("CUDA emitter: unexpected rank-reducing insert_slice");
  TensorInfo src = tensors.lookup(op.getSource());
  auto view = sliceViews.find(op.getSource());
  if (src.buffer < 0 && !src.fill && !src.empty && view == sliceViews.end())
    return op.emitError("CUDA emitter: an inserted tensor that is not backed by a buffer");
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
  SmallVector<int64_t> base = rowMajorStrides(dt.getShape());
  int64_t offset = 0;
  SmallVector<int64_t> strides;
  for (int64_t k = 0; k < dt.getRank(); ++k) {
    offset += op.getStaticOffsets()[k] * base[k];
    if (!mask->contains(k))
      strides.push_back(base[k] * op.getStaticStrides()[k]);
  }
  if (view != sliceViews.end()) {
    printStridedCopy(view->second.buffer, "", view->second.offset, view->second.strides, dst,
                     offset, strides, st.getShape(), dt.getElementType(), "slice into a concat",
                     op.getLoc());
    return success();
  }
  if (src.empty && src.buffer < 0)
    return success(); // undefined contents: nothing to copy
  printStridedCopy(src.buffer, src.fill.value_or(""), 0, rowMajorStrides(st.getShape()), dst,
                   offset, strides, st.getShape(), dt.getElementType(),
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
  if (!tt.hasStaticShape() || !storageType(tt.getElementType())) {
    op.emitError("CUDA emitter: tensor.extract from ") << tt << " is not supported";
    return std::nullopt;
  }
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
  SmallVector<int64_t> strides = rowMajorStrides(tt.getShape());
  std::vector<std::string> terms;
  for (auto [k, index] : llvm::enumerate(op.getIndices())) {
    if (tt.getDimSize(k) == 1)
      continue;
    auto s = scalarOf(index, op);
    if (!s)
      return std::nullopt;
    terms.push_back("(" + *s + ")" + (strides[k] == 1 ? "" : " * " + std::to_string(strides[k])));
  }
  return loadExpr(it->second, terms.empty() ? "0" : llvm::join(terms, " + "), tt.getElementType());
}

} // namespace mlir::kiln::cuda::detail
