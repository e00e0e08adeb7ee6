//===- KilnNNOps.cpp - shape inference of convolution and pooling ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Result-type inference (which also checks the attributes) of kiln.conv2d,
// kiln.max_pool2d and kiln.avg_pool2d. The output sizes follow ATen's
// formulas through windowOutputSize (ir/ShapeUtils.h), shared with the
// frontend and the decompositions. Each diagnostic has a case in
// test/ir/invalid.mlir.
//===----------------------------------------------------------------------===//
#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Checks that `values` has `n` entries, each >= `min`.
LogicalResult checkEntries(std::optional<Location> loc, ArrayRef<int64_t> values, size_t n,
                           int64_t min, StringRef what) {
  if (values.size() != n)
    return emitOptionalError(loc, what, " must have ", n, " entries, got ", values.size());
  for (int64_t v : values)
    if (v < min)
      return emitOptionalError(loc, what, " entries must be >= ", min, ", got ", v);
  return success();
}

/// The output spatial sizes; fails when a static one is < 1.
LogicalResult windowSizes(std::optional<Location> loc, RankedTensorType in,
                          ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                          ArrayRef<int64_t> padding4, ArrayRef<int64_t> dilation, bool ceilMode,
                          SmallVectorImpl<int64_t> &out) {
  for (int i = 0; i < 2; ++i) {
    std::optional<int64_t> wide =
        windowOutputSize(in.getDimSize(2 + i), kernel[i], stride[i], padding4[2 * i],
                         padding4[2 * i + 1], dilation[i], ceilMode);
    if (!wide)
      return emitOptionalError(loc, "the output size of dim ", 2 + i, " of ", in,
                               " does not fit in 64 bits");
    int64_t size = *wide;
    if (!ShapedType::isDynamic(size) && size < 1)
      return emitOptionalError(loc, "the output would be empty: input ", in,
                               " is smaller than the window in dim ", 2 + i);
    out.push_back(size);
  }
  return success();
}

/// Pooling attributes shared by max and avg pooling.
LogicalResult checkPooling(std::optional<Location> loc, RankedTensorType in,
                           ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                           ArrayRef<int64_t> padding) {
  if (in.getRank() != 4)
    return emitOptionalError(loc, "input must be 4-D [N, C, H, W], got ", in);
  if (failed(checkEntries(loc, kernel, 2, 1, "kernel")) ||
      failed(checkEntries(loc, stride, 2, 1, "stride")) ||
      failed(checkEntries(loc, padding, 2, 0, "padding")))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (padding[i] > kernel[i] / 2)
      return emitOptionalError(loc, "padding ", padding[i],
                               " must be at most half the kernel size ", kernel[i]);
  return success();
}

} // namespace

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         ValueRange operands, DictionaryAttr attrs,
                                         OpaqueProperties props, RegionRange regions,
                                         SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto in = llvm::cast<RankedTensorType>(adaptor.getInput().getType());
  auto w = llvm::cast<RankedTensorType>(adaptor.getWeight().getType());
  if (in.getRank() != 4 || w.getRank() != 4)
    return emitOptionalError(loc, "input and weight must be 4-D, got ", in, " and ", w);
  if (in.getElementType() != w.getElementType())
    return emitOptionalError(loc, "input and weight have different element types (",
                             in.getElementType(), " vs ", w.getElementType(), ")");
  if (failed(checkEntries(loc, adaptor.getStride(), 2, 1, "stride")) ||
      failed(checkEntries(loc, adaptor.getDilation(), 2, 1, "dilation")) ||
      failed(checkEntries(loc, adaptor.getPadding(), 4, 0, "padding")))
    return failure();
  int64_t groups = adaptor.getGroups();
  if (groups < 1)
    return emitOptionalError(loc, "groups must be >= 1, got ", groups);
  int64_t c = in.getDimSize(1), f = w.getDimSize(0), wc = w.getDimSize(1);
  if (!ShapedType::isDynamic(f) && f % groups != 0)
    return emitOptionalError(loc, "groups ", groups, " does not divide the ", f,
                             " output channels");
  // c != wc * groups, written so that a huge `groups` cannot overflow.
  if (!ShapedType::isDynamic(c) && !ShapedType::isDynamic(wc) &&
      (c % groups != 0 || c / groups != wc))
    return emitOptionalError(loc, "input has ", c, " channels but weight ", w, " expects ", wc,
                             " x ", groups, " groups");
  SmallVector<int64_t> kernel = {w.getDimSize(2), w.getDimSize(3)};
  if (ShapedType::isDynamic(kernel[0]) || ShapedType::isDynamic(kernel[1]))
    return emitOptionalError(loc, "the kernel size must be static, got ", w);
  if (kernel[0] < 1 || kernel[1] < 1)
    return emitOptionalError(loc, "the kernel must not be empty, got ", w);
  SmallVector<int64_t> shape = {in.getDimSize(0), f};
  if (failed(windowSizes(loc, in, kernel, adaptor.getStride(), adaptor.getPadding(),
                         adaptor.getDilation(), false, shape)))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            ValueRange operands, DictionaryAttr attrs,
                                            OpaqueProperties props, RegionRange regions,
                                            SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto in = llvm::cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> pad = adaptor.getPadding();
  if (failed(checkPooling(loc, in, adaptor.getKernel(), adaptor.getStride(), pad)) ||
      failed(checkEntries(loc, adaptor.getDilation(), 2, 1, "dilation")))
    return failure();
  SmallVector<int64_t> shape = {in.getDimSize(0), in.getDimSize(1)};
  SmallVector<int64_t> pad4 = {pad[0], pad[0], pad[1], pad[1]};
  if (failed(windowSizes(loc, in, adaptor.getKernel(), adaptor.getStride(), pad4,
                         adaptor.getDilation(), adaptor.getCeilMode(), shape)))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            ValueRange operands, DictionaryAttr attrs,
                                            OpaqueProperties props, RegionRange regions,
                                            SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto in = llvm::cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> pad = adaptor.getPadding();
  if (failed(checkPooling(loc, in, adaptor.getKernel(), adaptor.getStride(), pad)))
    return failure();
  // I64Attr getters return uint64_t: compare as signed.
  if (static_cast<int64_t>(adaptor.getDivisorOverride()) < 0)
    return emitOptionalError(loc, "divisor_override must be >= 0, got ",
                             static_cast<int64_t>(adaptor.getDivisorOverride()));
  SmallVector<int64_t> shape = {in.getDimSize(0), in.getDimSize(1)};
  SmallVector<int64_t> pad4 = {pad[0], pad[0], pad[1], pad[1]};
  SmallVector<int64_t> dilation = {1, 1};
  if (failed(windowSizes(loc, in, adaptor.getKernel(), adaptor.getStride(), pad4, dilation,
                         adaptor.getCeilMode(), shape)))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
