//===- BreakLog.h - reporting graph breaks ------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A graph break as the frame hook reports it: the capture's structured
// failure (category, message with the Python error text, the user's
// file:line, hint; capture/breaks/GraphBreak.h) plus the frame it happened
// in and what kiln did about it. reportBreak counts it, keeps it for
// kiln.explain (kiln._C.graph_breaks()) and logs it on KILN_LOGS=graph_breaks
// in one stable format.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_BREAKLOG_H
#define KILN_FRONTEND_HOOK_BREAKLOG_H

#include "capture/breaks/GraphBreak.h"

#include <string>

namespace kiln {

struct CaptureFailure;

/// One reported graph break.
struct BreakRecord {
  BreakCategory category = BreakCategory::Other;
  std::string function; ///< qualified name of the frame's code
  std::string message;  ///< why, including the original Python error text
  std::string location; ///< the user's "file:line" ("" when unknown)
  std::string hint;     ///< what the user can do ("" when none)
  /// True: the graph before the break is compiled and the rest of the frame
  /// resumes in a new frame; false: the whole frame runs eagerly.
  bool resumed = false;
};

/// A record for a break in `function` from a failed capture.
BreakRecord breakFromFailure(const std::string &function, const CaptureFailure &failure,
                             bool resumed);

/// The record as one line, the format KILN_LOGS=graph_breaks prints after
/// "[kiln:graph_breaks] " and kiln.explain shows:
///   <category> at <file>:<line>: graph break in <function>: <message>; the
///   graph before it is compiled, the rest resumes in a new frame (hint: <hint>)
/// or, when the frame runs eagerly,
///   <category> at <file>:<line>: <function> runs eagerly: <message> (hint: <hint>)
/// (" at <file>:<line>" and " (hint: ...)" are left out when empty).
std::string formatBreak(const BreakRecord &record);

/// The record in one phrase for an error message (fullgraph=True):
///   <function>: <category>: <message> at <file>:<line> (hint: <hint>)
std::string breakSummary(const BreakRecord &record);

/// Counts the break (kiln.stats()["graph_breaks"]), keeps it in
/// FrontendState::breaks and logs it on the graph_breaks channel.
void reportBreak(BreakRecord record);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_BREAKLOG_H
