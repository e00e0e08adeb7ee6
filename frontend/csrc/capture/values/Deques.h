//===- Deques.h - collections.deque built in the frame -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to frontend/csrc/capture. `d = deque(maxlen=n)` in compiled code
// is an Object Var whose class is collections.deque: `items` its contents
// (tensors or any values), `name` its maxlen ("" for None), `pos` 1 once it
// was iterated. append/appendleft/pop/popleft/extend/extendleft/clear/
// rotate/reverse/copy/count/insert, `maxlen`, len(), truth, `in`,
// `d[i]` and iteration run at capture with deque's semantics (a full
// bounded deque drops from the other end). Iteration reads a snapshot: a
// mutation after the deque was iterated is a break (eager raises when the
// deque changes during a loop over it, which the capture cannot tell
// apart from a change after the loop). Anything else falls to the Object
// paths, which break (deque's methods are not Python code); a deque
// returned, stored or live at a graph break is a break too (Capture.cpp,
// BreakState.cpp, SideEffects.cpp). A deque passed in by the caller is not
// covered (a break where it is iterated).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_VALUES_DEQUES_H
#define KILN_FRONTEND_CAPTURE_VALUES_DEQUES_H

#include "capture/values/Value.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln {

/// The items of an iterable Var (the interpreter's iterItems).
using ItemsOf = std::function<std::vector<VarP>(const VarP &)>;

/// `fn(*args, **kwargs)` when `fn` is collections.deque: the new deque;
/// nullptr for any other callee.
VarP makeDeque(PyObject *fn, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs,
               const ItemsOf &itemsOf);

/// Whether `v` is a deque built in the frame.
bool isDeque(const VarP &v);

/// `d.<name>`: a ListMethod Var for a method, `maxlen` as a constant;
/// nullptr when `d` is not a deque (a break for other attributes).
VarP dequeAttr(const VarP &d, const std::string &name);

/// `d.<name>(*args)` of a method dequeAttr returned.
VarP dequeMethod(const VarP &d, const std::string &name, std::vector<VarP> &args,
                 std::map<std::string, VarP> &kwargs, const ItemsOf &itemsOf);

/// `d[i]` of deque `d` (an int constant index); nullptr when `d` is not one.
VarP dequeItem(const VarP &d, const VarP &index);

/// A List Var snapshot of `d`'s items to iterate or search (`iterated`:
/// later mutations break); nullptr when `d` is not a deque.
VarP dequeSnapshot(const VarP &d, bool iterated);

/// iter(v) of a value iterated by the interpreter's getIter: for a deque
/// its snapshot (dequeSnapshot, iterated), a break for a set of tensors
/// (IdentitySets.h), nullptr for others.
VarP iterationSnapshot(const VarP &v);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_VALUES_DEQUES_H
