//===- InPlaceResults.h - results written straight into updated inputs -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A graph result whose only use is the write-back of a whole graph input
// (`p.add_(...)` on a parameter, an optimizer's state update) can be
// computed straight into that input's memory: no result buffer, no copy
// back. The frontend marks such results `kiln.in_place_input` for
// kiln-cpu-in-place-outputs (which keeps the compiled code correct when the
// input is read after the result is written) and passes the input tensor as
// the result's buffer (Entry.cpp's runGraph); the write-back then only sets
// the version counter (Entry.cpp's copyInto). Only in graphs that return
// no tensor, have no index check and whose only effects are such
// write-backs: a returned value or a replayed effect may read an input's
// old value after the graph, and an index check raises after it ran.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_INPLACERESULTS_H
#define KILN_FRONTEND_HOOK_INPLACERESULTS_H

#include "capture/Capture.h"

#include <vector>

namespace kiln {

/// Per graph result of a static CPU capture: the graph input it is written
/// into in place, or -1. Marks those results on the module's forward
/// function. Empty when none qualifies.
std::vector<int> markInPlaceResults(Capture &cap);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_INPLACERESULTS_H
