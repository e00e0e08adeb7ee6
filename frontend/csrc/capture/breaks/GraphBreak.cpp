//===- GraphBreak.cpp - why a capture stopped --------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements GraphBreak.h.
//===----------------------------------------------------------------------===//
#include <Python.h>

#include "capture/breaks/GraphBreak.h"

namespace kiln {

const char *breakCategoryName(BreakCategory category) {
  switch (category) {
  case BreakCategory::UnsupportedOp:
    return "unsupported-op";
  case BreakCategory::UnsupportedOpcode:
    return "unsupported-opcode";
  case BreakCategory::PythonBuiltin:
    return "python-builtin";
  case BreakCategory::DataDependent:
    return "data-dependent";
  case BreakCategory::SideEffect:
    return "side-effect";
  case BreakCategory::Random:
    return "random";
  case BreakCategory::DynamicShape:
    return "dynamic-shape";
  case BreakCategory::UserError:
    return "user-error";
  case BreakCategory::Verifier:
    return "verifier";
  case BreakCategory::Numpy:
    return "numpy";
  case BreakCategory::Backend:
    return "backend";
  case BreakCategory::Other:
  case BreakCategory::Count:
    break;
  }
  return "other";
}

BreakCategory breakCategoryFromName(const std::string &name) {
  for (int i = 0; i < static_cast<int>(BreakCategory::Count); ++i)
    if (name == breakCategoryName(static_cast<BreakCategory>(i)))
      return static_cast<BreakCategory>(i);
  return BreakCategory::Other;
}

std::string withPythonError(const std::string &message) {
  std::string error = takePythonErrorText();
  return error.empty() ? message : message + ": " + error;
}

} // namespace kiln
