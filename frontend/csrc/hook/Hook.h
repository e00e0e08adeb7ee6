//===- Hook.h - frame interception, per-code caches, compiled calls -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What kiln._C (Module.cpp) calls of the C++ side of the PEP 523 hook. The
// hook decides which frames to compile (FrameHook.cpp), keeps the
// per-code-object cache of compiled entries (CodeCache.h), captures and
// compiles (CompileDriver.h), checks guards, runs compiled code (with an
// eager recompute for autograd, Recompute.h), and falls back to eager with
// a reported graph break (BreakLog.h). Its state lives in FrontendState.h.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_HOOK_H
#define KILN_FRONTEND_HOOK_HOOK_H

#include "PyRef.h"
#include "hook/BreakLog.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

/// Installs the frame hook and initializes MLIR and torch handles once.
/// False with a Python error set on failure.
bool initHook();

/// Calls `fn(*args, **kwargs)` with the hook active on this thread; the
/// frame of `fn` is always eligible for compilation, frames it calls are
/// eligible unless they belong to torch, kiln or the standard library.
/// `autogradApply` is kiln._autograd.apply. New reference or null.
/// `dynamic`: 0 static sizes, 1 every size >= 2 symbolic, 2 a size
/// becomes symbolic once a recompile was caused by its change (kiln.compile's
/// dynamic=False/True/None; capture/values/DynamicShapes.h).
PyObject *callCompiled(PyObject *fn, PyObject *args, PyObject *kwargs, bool fullgraph,
                       PyObject *autogradApply, int dynamic = 2);

/// Calls `fn(*args, **kwargs)` with the hook inactive (eager recompute).
PyObject *callEager(PyObject *fn, PyObject *args, PyObject *kwargs);

/// Counters since the last reset, by name (kiln.stats(); hook/Stats.h).
std::map<std::string, long> stats();

/// The graph breaks reported since the last reset, oldest first.
std::vector<BreakRecord> graphBreaks();

/// Drops every compiled entry, zeroes the counters, forgets the breaks.
void resetCaches();
/// Sends enabled log messages to `sink(channel, message)` instead of
/// stderr (kiln.explain); null restores stderr. Borrowed: the hook keeps
/// its own reference.
void setLogSink(PyObject *sink);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_HOOK_H
