//===- LiveIterators.h - iterators that see their container change -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to frontend/csrc/capture. CPython's list iterator keeps an index
// and reads the list at each step: items stored ahead of it are seen,
// items appended during the loop are visited, a list shortened under it
// ends the loop early. Its dict and set iterators raise RuntimeError when
// the size changes during the loop, and a dict view reads the dict at each
// step. Iterators made by getIter (LiveIterators.cpp) follow the same rules,
// on the Var the frame mutates: a list or dict built in the frame, a
// caller's list or dict (whose Const Var becomes the tracked List/Dict Var
// when first mutated, SideEffects.cpp containerVar), or a list, dict or set
// object made at capture. A size change of a dict or set is a user-error
// break (eager raises).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_LIVEITERATORS_H
#define KILN_FRONTEND_CAPTURE_INTERP_LIVEITERATORS_H

#include "capture/values/Value.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln {

/// iter() of list Var `list` (a List Var, or a caller's list as a Const Var
/// whose items, read through their sources, are `snapshot`).
VarP liveListIter(const VarP &list, std::vector<VarP> snapshot);
/// iter() of a Python list object `list` held by a Const Var without a
/// source (made at capture): items read from the object at each step.
VarP liveListObjectIter(PyRef list);
/// iter() of `which` ("keys", "values", "items") of the dict `dictNow`
/// returns at each step: a Dict Var, or a caller's dict as a Const Var whose
/// `which` items are `snapshot` (until the frame mutates it:
/// Interpreter::trackedNow).
VarP liveDictIter(std::function<VarP()> dictNow, const std::string &which,
                  std::vector<VarP> snapshot);
/// iter() of a dict or set object made at capture whose items are
/// `snapshot`: a size change during the loop is a user-error break.
VarP sizeCheckedIter(PyRef container, std::vector<VarP> snapshot);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_LIVEITERATORS_H
