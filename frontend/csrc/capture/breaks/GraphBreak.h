//===- GraphBreak.h - why a capture stopped -----------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A graph break is a structured record, not a free-text string: a category
// (what kind of construct stopped the capture), the message (with the text
// of the Python exception that caused it, when there was one), the user's
// file:line and a hint. `Unsupported` carries one from the throw site to the
// capture boundary (Capture.cpp), which turns it into a CaptureFailure;
// kiln.explain groups breaks by category and KILN_LOGS=graph_breaks prints
// the same records.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_BREAKS_GRAPHBREAK_H
#define KILN_FRONTEND_CAPTURE_BREAKS_GRAPHBREAK_H

#include "PyErrors.h"

#include <stdexcept>
#include <string>

namespace kiln {

/// What kind of construct stopped a capture. Names (breakCategoryName) are
/// the strings kiln.explain and the logs show.
enum class BreakCategory {
  UnsupportedOp,     ///< a torch/ATen call kiln has no mapping for
  UnsupportedOpcode, ///< a bytecode instruction the interpreter does not run
  PythonBuiltin,     ///< a Python builtin or library call kiln cannot model
  DataDependent,     ///< control flow or shapes that depend on tensor data
  SideEffect,        ///< a mutation kiln cannot replay (in-place on views, ...)
  Random,            ///< random number generation
  DynamicShape,      ///< a symbolic size used where kiln needs a number
  UserError,         ///< the code raises in eager too (index out of range, ...)
  Verifier,          ///< the captured IR does not verify (a kiln bug)
  Backend,           ///< the captured graph does not compile (code generation)
  Numpy,             ///< NumPy code kiln does not map to tensor ops
  Other,             ///< not yet classified
  Count
};

/// The stable, kebab-case name of `category` ("unsupported-op", ...).
const char *breakCategoryName(BreakCategory category);

/// The category whose breakCategoryName is `name`; Other when there is none.
BreakCategory breakCategoryFromName(const std::string &name);

/// Thrown inside the interpreter for an unsupported construct; caught at
/// the capture boundary and turned into a CaptureFailure (never escapes).
struct Unsupported : std::runtime_error {
  /// An unclassified break (BreakCategory::Other).
  explicit Unsupported(const std::string &message)
      : std::runtime_error(message), category(BreakCategory::Other) {}
  /// A break of `category`; `hint` says what the user can do (may be empty).
  Unsupported(BreakCategory category, const std::string &message, std::string hint = "")
      : std::runtime_error(message), category(category), hint(std::move(hint)) {}

  BreakCategory category;
  std::string hint;
  /// False: the frame must not resume after this break (the eager part
  /// would see something the graph gives differently from eager, e.g. a
  /// computed tensor's layout); the whole frame then runs eagerly.
  bool resumable = true;
};

/// Hints shared by many break sites.
namespace hint {
/// For a construct that raises in eager too (user-error).
inline constexpr const char *kRaisesInEager =
    "it raises in eager too: kiln runs it eagerly, so the exception reaches the code as usual";
/// For a Python branch on a tensor's values (data-dependent).
inline constexpr const char *kTensorBranch =
    "select with torch.where instead of branching, or move the condition out of the compiled "
    "function";
/// For a symbolic size kiln cannot handle (dynamic-shape).
inline constexpr const char *kSpecializeSizes =
    "compile with dynamic=False (or without mark_dynamic) to specialize the sizes";
} // namespace hint

/// `message`, followed by ": <Python error text>" when a Python exception is
/// pending (which is cleared).
std::string withPythonError(const std::string &message);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_BREAKS_GRAPHBREAK_H
