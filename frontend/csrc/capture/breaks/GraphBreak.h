//===- GraphBreak.h - why a capture stopped -----------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A graph break is a structured record, not a free-text string: a category
// (what kind of construct stopped the capture), the message (with the text
// of the Python exception that caused it, when there was one), the user's
// file:line and a hint. `Unsupported` carries one from the throw site to the
// capture boundary (Capture.cpp), which turns it into a CaptureFailure;
// PyRaised, a Python exception eager raises there, may first be caught by a
// try/except of the interpreted frames (interp/Exceptions.cpp);
// kiln.explain groups breaks by category and KILN_LOGS=graph_breaks prints
// the same records.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_BREAKS_GRAPHBREAK_H
#define KILN_FRONTEND_CAPTURE_BREAKS_GRAPHBREAK_H

#include "PyErrors.h"
#include "PyRef.h"

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

/// A Python exception that eager raises at this point of the user's code
/// and that the capture models (a missing key of a dict built here, next()
/// of an exhausted iterator, `raise` of an exception built at capture, a
/// pure builtin raising on constants): a handler of an interpreted frame
/// covering the raising instruction catches it as CPython does
/// (Interpreter::catchRaised, Exceptions.cpp); uncaught, it is the
/// user-error break it derives from (the frame runs eagerly and raises).
struct PyRaised : Unsupported {
  PyRaised(PyRef exc, const std::string &message)
      : Unsupported(BreakCategory::UserError, message, hint::kRaisesInEager), exc(std::move(exc)) {}
  PyRef exc; ///< the exception instance (never null)
  /// Raised by the instruction that threw it (not re-raised): the first
  /// frame it reaches chains it to the exception being handled.
  mutable bool fresh = true;
};

/// Throws PyRaised with the pending Python error (cleared) when it is an
/// ordinary Exception (not MemoryError/RecursionError/SystemError/
/// KeyboardInterrupt ...), else Unsupported(UserError) with its text;
/// `message` describes what raised (Exceptions.cpp).
[[noreturn]] void raisePending(const std::string &message);

/// Throws PyRaised of `type(*args)` (a new exception; `arg` null: no
/// argument) with `message` (Exceptions.cpp).
[[noreturn]] void raiseNew(PyObject *type, PyObject *arg, const std::string &message);

/// `message`, followed by ": <Python error text>" when a Python exception is
/// pending (which is cleared).
std::string withPythonError(const std::string &message);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_BREAKS_GRAPHBREAK_H
