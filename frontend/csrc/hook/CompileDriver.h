//===- CompileDriver.h - capture, compile, entry ------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Turns a frame into a cached Entry: captures it (capture/Capture.h), keeps
// or drops symbolic sizes (capture/values/DynamicShapes.h), compiles the
// graph for its device (CPU JIT, CUDA, or segments around torch fallback
// calls) and moves the capture's guards and result layout into the entry.
// On a failed capture it builds either a graph break's prefix entry
// (compileBreak) or an eager entry guarded by what the capture assumed.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_COMPILEDRIVER_H
#define KILN_FRONTEND_HOOK_COMPILEDRIVER_H

#include "Entry.h"
#include "hook/CodeCache.h"

#include <memory>
#include <set>
#include <string>

namespace kiln {

/// Captures and compiles a new entry for a frame of `code` (borrowed, as
/// `func`); `mode` and the code's `cache` (CodeCache::autoDynamic) say which
/// sizes and number arguments may be symbolic (number arguments a use needed
/// as constants are pinned there). Null (no
/// Python error) on failure, with `failure` saying why and `failed` set to
/// an eager entry guarded by what the capture had assumed up to the failure
/// (the same assumptions fail the same way). `entries`: how many entries
/// the frame's cache holds already (a convolution's batch that became
/// symbolic by itself stays static for the first kConvBatchStaticEntries).
std::unique_ptr<Entry> compileEntry(PyObject *code, PyObject *func, const FrameView &view,
                                    DynamicPolicy::Mode mode, CodeCache &cache,
                                    CaptureFailure &failure, std::unique_ptr<Entry> &failed,
                                    bool scalarsAsBreaks = false, size_t entries = 0);

/// dynamic=None: a frame convolving a batch that became symbolic by itself
/// compiles a static graph per batch size while its cache holds fewer
/// entries than this (a symbolic batch's per-image GEMMs run ~2x slower);
/// from then on one `?` graph serves every batch (instead of a graph per
/// size up to the recompile limit, then eager).
constexpr size_t kConvBatchStaticEntries = 4;

/// After a failed capture that stopped inside the root frame's instruction
/// at failure.rootOffset: captures the frame again up to that instruction
/// and compiles it as a graph break's prefix (the rest runs through
/// kiln/_resume.py's stub and resume function). Null, with the reason it
/// cannot resume appended to `failure.reason`, when that is impossible.
/// `scalarsAsBreaks`: Capture::scalarsAsBreaks of both captures. The
/// prefix has symbolic sizes under `mode`/`autoDynamic` as compileEntry's
/// capture would (a break no longer specializes the frame's sizes).
std::unique_ptr<Entry> compileBreak(PyObject *code, PyObject *func, const FrameView &view,
                                    CaptureFailure &failure, DynamicPolicy::Mode mode,
                                    const std::set<std::string> &autoDynamic,
                                    bool scalarsAsBreaks = false, size_t entries = 0);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_COMPILEDRIVER_H
