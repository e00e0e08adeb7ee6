//===- Autocast.h - CPU autocast state of a capture ----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to capture/: the CPU autocast state (`torch.autocast("cpu",
// dtype=torch.bfloat16)`) the capture is in at the current instruction. It
// starts as the caller's state (guarded by value in GlobalState.cpp), each
// `with torch.autocast("cpu", ...)` block pushes a region and its
// `__exit__` pops it; capture/ops/AutocastPolicy.cpp applies eager's
// per-op cast policy to mapped ops while it is on. Kept in a side table per
// Interpreter (reset when a capture starts) so Interp.h stays unchanged.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_AUTOCAST_H
#define KILN_FRONTEND_CAPTURE_INTERP_AUTOCAST_H

#include "capture/interp/Interp.h"

#include <optional>

namespace kiln {

/// The CPU autocast state of a region.
struct AutocastState {
  bool enabled = false;
  DType dtype = DType::BF16; ///< the lower-precision dtype (bf16 or f16)
};

/// Starts `I`'s capture in the caller's state `entry`.
void autocastReset(const Interpreter &I, AutocastState entry);
/// The caller's state (at the graph's entry: the state the graph runs in).
AutocastState autocastEntry(const Interpreter &I);
/// The state at the current instruction.
AutocastState autocastCurrent(const Interpreter &I);
/// The lower-precision dtype when autocast applies to the op being mapped
/// now: on at this instruction and not inside another mapped op (kiln's own
/// decompositions are not re-cast: eager's listed ops run their inner ops
/// with autocast excluded).
std::optional<DType> autocastForOp(const Interpreter &I);
/// Brackets one mapped op (AutocastPolicy.cpp's scope).
void autocastOpDepth(const Interpreter &I, int delta);

/// Registers `ctx`, a torch.autocast("cpu", ...) object built at capture,
/// with the state its with-block sets.
void autocastRegister(const Interpreter &I, PyRef ctx, AutocastState state);
/// `with ctx:` for a registered `ctx`: enters its region and returns the
/// `__exit__` to call at the block's end (a new reference kept by the
/// table); null for any other object.
PyObject *autocastEnter(const Interpreter &I, PyObject *ctx);
/// Whether `fn` is the `__exit__` of an entered region (then it leaves it).
bool autocastExit(const Interpreter &I, PyObject *fn);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_AUTOCAST_H
