//===- ShapeUtils.h - broadcasting and shape helpers --------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Shape arithmetic shared by the dialect's verifiers/shape inference, the
// frontend and codegen. Dynamic dims are ShapedType::kDynamic.
//===----------------------------------------------------------------------===//
#ifndef KILN_IR_SHAPEUTILS_H
#define KILN_IR_SHAPEUTILS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <cstdint>
#include <optional>
#include <utility>

namespace mlir::kiln {

/// Broadcasts two shapes with torch (numpy) rules, aligned from the trailing
/// dim. A dynamic dim against 1 stays dynamic; against a static N gives N.
/// Returns std::nullopt when two static dims differ and neither is 1.
std::optional<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                                          llvm::ArrayRef<int64_t> b);

/// True when `from` can be broadcast to exactly `to` (rank(to) >= rank(from),
/// each aligned dim of `from` is 1 or equal to the `to` dim, dynamic dims
/// compatible).
bool isBroadcastableTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// The shape after reducing `dims` of `shape`; `keepdim` keeps them as 1.
llvm::SmallVector<int64_t> reducedShape(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> dims,
                                        bool keepdim);

/// The number of elements of a static `shape`; std::nullopt when the
/// product does not fit in int64_t.
std::optional<int64_t> staticElementCount(llvm::ArrayRef<int64_t> shape);

/// True when a reshape `from` -> `to` keeps its dynamic dims: both have the
/// same number of them, the k-th of `to` standing for the k-th of `from`,
/// and the static dims before, between and after them multiply to the same
/// products on both sides (a [?, ?, 64] -> [?, ?, 4, 16] head split). The
/// caller guarantees the pairing (kiln's capture emits such a reshape only
/// when the dims carry the same symbols in order).
bool keepsDynamicDims(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// torch's output size of a sliding window (convolution or pooling) along
/// one dim of size `in` (ATen's pooling_output_shape_pad_lr): windows of
/// `kernel` taps `dilation` apart, `stride` apart, over the input padded by
/// `padLow` / `padHigh`; with `ceilMode` a partial last window counts unless
/// it would start in the high padding. May be <= 0 (no window fits);
/// ShapedType::kDynamic for a dynamic `in`; std::nullopt when the size does
/// not fit in int64_t (computed in 128 bits, so no input overflows). Needs
/// `stride >= 1`.
std::optional<int64_t> windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padLow,
                                        int64_t padHigh, int64_t dilation, bool ceilMode);

/// The bounds of a kiln.slice along a dim of static size `size`: a start
/// < 0 counts from the end (`size + start`, Python's), an end < 0 from one
/// past it (`size + 1 + end`: -1 is the end, -2 drops the last element),
/// so a slice of a symbolic dim can keep bounds relative to its size.
/// Returns {start, end} as offsets from the front (not checked).
std::pair<int64_t, int64_t> sliceBounds(int64_t start, int64_t end, int64_t size);

} // namespace mlir::kiln

#endif // KILN_IR_SHAPEUTILS_H
