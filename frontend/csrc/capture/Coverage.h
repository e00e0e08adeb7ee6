//===- Coverage.h - what the torch → kiln table maps -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Read-only view of the op table (TorchOps.cpp) for the coverage command:
// `kiln._C.mapped_ops()` (frontend/csrc/Module.cpp) returns it to
// `python -m kiln.coverage`, which compares it with what torch offers.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_COVERAGE_H
#define KILN_FRONTEND_CAPTURE_COVERAGE_H

#include <string>
#include <vector>

namespace kiln {

/// A mapped torch callable `module.name` and the kiln-level op it becomes.
struct MappedFunction {
  std::string module, name, op;
};

/// A mapped Tensor method; `inplace`: its `name_` form is mapped too.
struct MappedMethod {
  std::string name, op;
  bool inplace;
};

/// Every mapped torch callable, in registration order (imports torch).
std::vector<MappedFunction> mappedFunctions();
/// Every mapped Tensor method.
std::vector<MappedMethod> mappedMethods();

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_COVERAGE_H
