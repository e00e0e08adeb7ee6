//===- IdentitySets.h - sets of tensors built in the frame -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to frontend/csrc/capture. A tensor hashes and compares by
// identity in a set (`Tensor.__hash__` is `id`), so `s = {a, b}; a in s`
// is answered from which tensors are one object (sameTensorIdentity). Such
// a set is an Object Var whose class is set/frozenset and whose `items` are
// its distinct tensors (no attributes). Membership, len(), truth, add,
// discard and remove run at capture; anything else falls to the Object
// paths, which break for a class that is not Python code: iteration (eager's
// order follows the tensors' addresses), set operators, and the set
// returned, stored or live at a graph break (Capture.cpp, BreakState.cpp,
// SideEffects.cpp refuse it).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_VALUES_IDENTITYSETS_H
#define KILN_FRONTEND_CAPTURE_VALUES_IDENTITYSETS_H

#include "capture/values/Value.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

/// The set of `items` when one is a tensor (all must be tensors, else a
/// break), duplicates removed by identity; nullptr when none is a tensor.
VarP makeIdentitySet(const std::vector<VarP> &items, bool frozen);

/// Whether `v` is such a set.
bool isIdentitySet(const VarP &v);

/// Whether `x` is in identity set `s` (a break when eager's answer is not
/// known at capture: two graph inputs that may be one object per call).
bool identitySetContains(const VarP &s, const VarP &x);

/// `s.<name>(*args)`: add/discard/remove (on a set, not a frozenset), a
/// break for any other method.
VarP identitySetMethod(const VarP &s, const std::string &name, std::vector<VarP> &args,
                       std::map<std::string, VarP> &kwargs);

/// A break when `v` is such a set: iterating it gives eager's tensors in
/// the order of their addresses, which the capture cannot know.
void refuseIdentitySetIteration(const VarP &v);

/// A ListMethod Var for `s.<name>`, or nullptr when `v` is not such a set.
VarP identitySetAttr(const VarP &s, const std::string &name);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_VALUES_IDENTITYSETS_H
