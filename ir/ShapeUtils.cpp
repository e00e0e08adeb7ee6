//===- ShapeUtils.cpp - broadcasting and shape helpers ----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the shape arithmetic declared in ShapeUtils.h.
//===----------------------------------------------------------------------===//
#include "ir/ShapeUtils.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;

namespace mlir::kiln {

std::optional<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                                          llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t r;
    if (da == 1)
      r = db;
    else if (db == 1)
      r = da;
    else if (ShapedType::isDynamic(da))
      r = db;
    else if (ShapedType::isDynamic(db) || da == db)
      r = da;
    else
      return std::nullopt;
    out[rank - 1 - i] = r;
  }
  return out;
}

bool isBroadcastableTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i];
    int64_t t = to[to.size() - 1 - i];
    if (f == 1 || f == t || ShapedType::isDynamic(f) || ShapedType::isDynamic(t))
      continue;
    return false;
  }
  return true;
}

llvm::SmallVector<int64_t> reducedShape(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> dims,
                                        bool keepdim) {
  llvm::SmallVector<int64_t> out;
  for (auto [i, d] : llvm::enumerate(shape)) {
    bool reduced = llvm::is_contained(dims, static_cast<int64_t>(i));
    if (!reduced)
      out.push_back(d);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

std::optional<int64_t> staticElementCount(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0 || llvm::MulOverflow(count, d, count))
      return std::nullopt;
  return count;
}

namespace {

/// The static products of the segments of `shape` between its dynamic dims
/// (one more segment than dynamic dims); empty on overflow.
llvm::SmallVector<int64_t> staticSegments(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> segments(1, 1);
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      segments.push_back(1);
    else if (d < 0 || llvm::MulOverflow(segments.back(), d, segments.back()))
      return {};
  }
  return segments;
}

} // namespace

bool keepsDynamicDims(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  llvm::SmallVector<int64_t> a = staticSegments(from), b = staticSegments(to);
  return !a.empty() && a == b;
}

std::optional<int64_t> windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padLow,
                                        int64_t padHigh, int64_t dilation, bool ceilMode) {
  if (ShapedType::isDynamic(in))
    return ShapedType::kDynamic;
  using Wide = __int128; // attributes are arbitrary int64 values
  Wide span = Wide(in) + padLow + padHigh - Wide(dilation) * (Wide(kernel) - 1) - 1 +
              (ceilMode ? Wide(stride) - 1 : 0);
  // Floor division (span may be negative).
  Wide out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceilMode && out > 0 && (out - 1) * stride >= Wide(in) + padLow)
    --out;
  if (out > std::numeric_limits<int64_t>::max() || out < std::numeric_limits<int64_t>::min() + 1)
    return std::nullopt;
  return static_cast<int64_t>(out);
}

std::pair<int64_t, int64_t> sliceBounds(int64_t start, int64_t end, int64_t size) {
  return {start < 0 ? size + start : start, end < 0 ? size + 1 + end : end};
}

} // namespace mlir::kiln
