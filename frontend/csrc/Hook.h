//===- Hook.h - frame interception, per-code caches, compiled calls -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The C++ side of the PEP 523 hook: decides which frames to compile, keeps
// the per-code-object cache of compiled entries (co_extra), checks guards,
// runs compiled code, and falls back to eager with a logged reason.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_H
#define KILN_FRONTEND_HOOK_H

#include "PyRef.h"

#include <map>
#include <string>

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

/// Counters since the last reset.
std::map<std::string, long> stats();

/// Drops every compiled entry and zeroes the counters.
void resetCaches();
/// Sends enabled log messages to `sink(channel, message)` instead of
/// stderr (kiln.explain); null restores stderr. Borrowed: the hook keeps
/// its own reference.
void setLogSink(PyObject *sink);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_H
