//===- Coverage.h - what the torch → kiln table maps -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Read-only view of the op registry (capture/ops/OpRegistry.h) for the
// coverage command:
// `kiln._C.mapped_ops()` (frontend/csrc/Module.cpp) returns it to
// `python -m kiln.coverage`, which compares it with what torch offers.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_COVERAGE_H
#define KILN_FRONTEND_CAPTURE_COVERAGE_H

#include <string>
#include <vector>

namespace kiln {

/// A mapped torch callable `module.name`, the kiln-level op it becomes and
/// the parameter names it binds.
struct MappedFunction {
  std::string module, name, op;
  std::vector<std::string> params;
};

/// A mapped Tensor method; `inplace`: its `name_` form is mapped too.
struct MappedMethod {
  std::string name, op;
  bool inplace;
  std::vector<std::string> params;
};

/// Every mapped torch callable, in registration order (imports torch).
std::vector<MappedFunction> mappedFunctions();
/// Every mapped Tensor method, in registration order.
std::vector<MappedMethod> mappedMethods();
/// Torch names, operators and ops registered more than once (empty when
/// each name is written once in the mapping layer).
std::vector<std::string> duplicateOpNames();

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_COVERAGE_H
