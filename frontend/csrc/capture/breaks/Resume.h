//===- Resume.h - running the rest of a frame after a graph break -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A frame whose capture stops at an unsupported instruction is compiled up
// to it; the graph returns the interpreter state (stack items, locals,
// cells), and the code objects made by kiln/_resume.py run the instruction
// eagerly and resume in a function the frame hook captures like any other.
// This file asks kiln._resume for those code objects and calls them.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_RESUME_H
#define KILN_FRONTEND_RESUME_H

#include "PyRef.h"
#include "capture/Capture.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// The code objects and state fix-ups of one graph break.
struct ResumePlan {
  PyRef stub;                 ///< runs the break, returns resume(...)
  std::vector<PyRef> resumes; ///< one per way control leaves the break
  PyRef prefix;               ///< original code returning the state (autograd recompute)
  std::vector<std::pair<int, int>> sourced; ///< BreakState::sourced
  std::vector<int> copied;                  ///< BreakState::copied
  std::string where;                        ///< "reason at file:line" for logs
};

/// The offset where the eager part of a break at `failOffset` of `code`
/// starts, or -1 with `why` set when kiln cannot resume there. No Python
/// error is left set.
int planBreak(PyObject *code, int failOffset, std::string &why);

/// Builds the code objects of the break captured with `state`; null with
/// `why` set on failure (no Python error left set).
std::shared_ptr<ResumePlan> buildResumePlan(PyObject *code, int startOffset, int failOffset,
                                            const BreakState &state, std::string &why);

/// The prefix function of `plan` for frame function `func` (new reference).
PyObject *prefixFunction(const ResumePlan &plan, PyObject *func);

/// Runs the rest of the frame: `state` (borrowed) is the graph's result,
/// `values` the entry's resolved sources. New reference, or null with a
/// Python error (an exception of the eager part or of the rest).
PyObject *runBreak(const ResumePlan &plan, PyObject *state, const std::vector<PyRef> &values,
                   PyObject *func);

} // namespace kiln

#endif // KILN_FRONTEND_RESUME_H
