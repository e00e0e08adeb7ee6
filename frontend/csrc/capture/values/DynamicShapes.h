//===- DynamicShapes.h - symbolic input sizes of a capture --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Dynamic shapes (kiln.compile's `dynamic`, kiln.mark_dynamic): which input
// dims become `?` in the captured IR, the symbolic sizes they form, the
// reshape rule for symbolic sizes, and the check that makes a dynamic graph
// safe to reuse: the same frame is captured again with every size static,
// and the two graphs must be the same ops, attributes and wiring, differing
// only where a symbolic size stands for its captured value. Anything that
// depended on a size's value (a Python int read from it, a constant, a
// static size equal to it) shows up as a difference, and the frame is then
// compiled with static sizes instead.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_DYNAMICSHAPES_H
#define KILN_FRONTEND_CAPTURE_DYNAMICSHAPES_H

#include "capture/Capture.h"

#include <set>
#include <string>
#include <vector>

namespace kiln {

struct Var;

/// The dims of tensor input `t` (metadata `meta`, source described as
/// `sourceDesc`) that become symbolic under `policy`: sizes >= 2 of a
/// contiguous input that dynamic=True, kiln.mark_dynamic or an earlier
/// size change (dynamic=None) made dynamic. Borrowed `t`.
std::vector<bool> symbolicDims(const DynamicPolicy &policy, PyObject *t,
                               const std::string &sourceDesc, const TensorMeta &meta,
                               bool contiguous);

/// Records the symbolic dims `dyn` of graph input `input` (capture sizes
/// `sizes`) in `cap.symbols`: dims of equal captured size share a symbol.
void addSymbolicDims(Capture &cap, int input, const std::vector<int64_t> &sizes,
                     const std::vector<bool> &dyn);

/// The result shape of reshaping `in` (may hold `?`) to `target` (ints,
/// -1 for the inferred dim, `?` for a symbolic size read from a tensor).
/// Throws Unsupported where a symbolic size cannot be followed (then the
/// frame is compiled with static sizes).
std::vector<int64_t> symbolicReshape(llvm::ArrayRef<int64_t> in, std::vector<int64_t> target);

/// True when `module` convolves a batch of symbolic size (kiln.conv2d with
/// a dynamic dim 0): kiln.compile's automatic dims then specialize (the
/// per-image GEMMs of a symbolic batch run ~2x slower than the static
/// channel-major form); kiln.export and kiln.mark_dynamic keep it.
bool convolvesSymbolicBatch(mlir::ModuleOp module);

/// The shape of a reshape of `in` with several symbolic dims (a [b, t, 64]
/// -> [b, t, 4, 16] head split): `inSymbols` holds each input dim's symbol
/// (-1 for a static dim, -2 for a `?` kiln does not track), `targetSymbols`
/// each target entry's (-1 for an int of `target`, which may be one -1 to
/// infer). Valid when the symbols appear in the same order on both sides
/// and the static sizes between them multiply to the same products (the
/// -1 takes its segment's rest, or stands for the one symbol the target
/// lacks when the static sizes around it match exactly: `view(bsz, -1, 4,
/// 16)` of [b, s, 64]); the result keeps `?` there
/// (mlir::kiln::keepsDynamicDims). Throws Unsupported otherwise.
std::vector<int64_t> segmentReshape(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int> inSymbols,
                                    std::vector<int64_t> target, llvm::ArrayRef<int> targetSymbols);

/// Checks dynamic capture `dyn` against static capture `stat` of the same
/// frame (see the file comment) and fills `dyn.results[i].symbolOf`;
/// false with the difference in `why`, and in `collide` the captured
/// sizes of symbols that equal a static size of the graph (capturing again
/// with those static may succeed).
bool checkAgainstStatic(Capture &dyn, const Capture &stat, std::string &why,
                        std::set<int64_t> &collide);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_DYNAMICSHAPES_H
