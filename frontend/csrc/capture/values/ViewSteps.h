//===- ViewSteps.h - view steps as Python data, replayed at capture -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to frontend/csrc/capture. A view Var records the torch calls that
// rebuild it from its root (Var::viewSteps, ops/OpTracking.cpp). These
// helpers turn them into the tuples kiln._fallback replays, give an input's
// eager layout, and answer whether a view's steps copy in eager (a
// contiguous() or reshape of a strided input): such a "view" is a new tensor
// in eager (ops/OpTracking.cpp makes it a fresh one), never replayed from
// the input after the graph, which would see later in-place updates.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_VALUES_VIEWSTEPS_H
#define KILN_FRONTEND_CAPTURE_VALUES_VIEWSTEPS_H

#include "capture/Capture.h"
#include "capture/values/Value.h"

namespace kiln {

/// The view steps of `v` as a tuple of (method name, argument tuple[,
/// keywords]) tuples.
PyRef viewStepsTuple(const Var &v);

/// Eager's layout of graph input `input` as kiln._fallback reads it:
/// (sizes, strides, steps) with `view`'s steps (or none); null when no
/// tensor guard records the input's strides.
PyRef inputLayout(const Capture &out, int input, const Var *view);

/// kiln._fallback.view_positions (borrowed; null if it cannot be imported).
PyObject *viewPositionsFunction();

/// Whether view `v` of a graph input (viewInput >= 0) is a copy in eager:
/// its steps replayed on the input laid out as `layout` (inputLayout's
/// tuple) do not alias it. False where kiln cannot tell (no layout,
/// symbolic sizes).
bool viewStepsCopy(PyObject *layout, const Var &v);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_VALUES_VIEWSTEPS_H
