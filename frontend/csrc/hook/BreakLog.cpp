//===- BreakLog.cpp - reporting graph breaks ---------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements BreakLog.h. No Python objects are owned here (logging may call
// kiln.explain's sink, see Log.cpp).
//===----------------------------------------------------------------------===//
#include "hook/BreakLog.h"

#include "Log.h"
#include "capture/Capture.h"
#include "hook/FrontendState.h"

namespace kiln {

BreakRecord breakFromFailure(const std::string &function, const CaptureFailure &failure,
                             bool resumed) {
  BreakRecord r;
  r.category = failure.category;
  r.function = function;
  r.message = failure.reason;
  r.location = failure.location;
  r.hint = failure.hint;
  r.resumed = resumed;
  return r;
}

std::string formatBreak(const BreakRecord &r) {
  std::string text = breakCategoryName(r.category);
  if (!r.location.empty())
    text += " at " + r.location;
  text += r.resumed ? ": graph break in " + r.function + ": " + r.message +
                          "; the graph before it is compiled, the rest resumes in a new frame"
                    : ": " + r.function + " runs eagerly: " + r.message;
  if (!r.hint.empty())
    text += " (hint: " + r.hint + ")";
  return text;
}

std::string breakSummary(const BreakRecord &r) {
  std::string text = r.function + ": " + breakCategoryName(r.category) + ": " + r.message;
  if (!r.location.empty())
    text += " at " + r.location;
  if (!r.hint.empty())
    text += " (hint: " + r.hint + ")";
  return text;
}

void reportBreak(BreakRecord record) {
  FrontendState &state = frontend();
  ++state.counters.graphBreaks;
  if (logEnabled(LogChannel::GraphBreaks))
    log(LogChannel::GraphBreaks, formatBreak(record));
  state.breaks.push_back(std::move(record));
  if (state.breaks.size() > FrontendState::kMaxBreakRecords)
    state.breaks.pop_front();
}

} // namespace kiln
