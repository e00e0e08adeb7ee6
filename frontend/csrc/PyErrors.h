//===- PyErrors.h - Python exceptions as text ---------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The one way the extension turns a pending Python exception into text when
// it handles the error itself (a graph break, a fallback to eager, a
// compile failure): the text is kept in what it reports, never dropped.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_PYERRORS_H
#define KILN_FRONTEND_PYERRORS_H

#include <string>

namespace kiln {

/// The pending Python exception as "TypeName: message" (just "TypeName"
/// when the message is empty), cleared; "" when none is set. Ownership: the
/// fetched exception references are released here.
std::string takePythonErrorText();

} // namespace kiln

#endif // KILN_FRONTEND_PYERRORS_H
