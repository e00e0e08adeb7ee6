//===- Recompute.h - compiled calls that need gradients -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A compiled entry whose inputs require grad runs through
// kiln._autograd.apply: the forward is the compiled graph, the backward
// differentiates an eager recompute of the original function (or of a
// graph break's prefix function) at the graph results' positions in its
// Python result.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_RECOMPUTE_H
#define KILN_FRONTEND_HOOK_RECOMPUTE_H

#include "Entry.h"

#include "llvm/ADT/ArrayRef.h"

namespace kiln {

/// Runs `entry` on `inputs` (borrowed graph inputs) through
/// `autogradApply` (kiln._autograd.apply, borrowed) with an eager recompute
/// of `func` called with the frame's `locals` (borrowed) for the backward,
/// then replays the entry's side effects on the objects of this call
/// (`values`, the resolved sources) under no grad; the recompute undoes and
/// redoes them around itself (kiln._autograd.restoring). New reference to
/// the Python result, or null with a Python error set.
PyObject *runWithAutograd(const std::shared_ptr<Entry> &entry, llvm::ArrayRef<PyObject *> inputs,
                          PyObject *func, PyObject *code, PyObject **locals,
                          PyObject *autogradApply, const std::vector<PyRef> &values);

/// A "kiln.Entry" capsule owning a shared reference to `entry` (new
/// reference; null with a Python error set).
PyObject *entryCapsule(const std::shared_ptr<Entry> &entry);

/// The entry of a capsule made by entryCapsule (borrowed: valid while the
/// capsule lives), or null with a Python error set.
const Entry *entryOfCapsule(PyObject *capsule);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_RECOMPUTE_H
