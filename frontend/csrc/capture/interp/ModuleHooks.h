//===- ModuleHooks.h - nn.Module forward hooks inlined ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Private to capture/interp: Interpreter::callModule hands the call of a
// module's forward to callModuleForward (ModuleHooks.cpp), which runs the
// forward pre-hooks, forward and the forward hooks the way Module.__call__
// does, through the interpreter operations in ModuleHookOps.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_INTERP_MODULEHOOKS_H
#define KILN_FRONTEND_CAPTURE_INTERP_MODULEHOOKS_H

#include "capture/values/Value.h"
#include "Guards.h"

#include <functional>

namespace kiln {

/// The interpreter operations the hook inlining uses.
struct ModuleHookOps {
  std::function<int(Source::Kind, int, int, PyObject *)> addSource;
  std::function<void(int, Py_ssize_t)> guardLength;
  /// The guarded Var of `value` read from `source` (not lazy).
  std::function<VarP(PyObject *, int)> fromSource;
  std::function<VarP(const VarP &, std::vector<VarP> &, std::map<std::string, VarP> &)> call;
  /// Inlines forward with (module, *args, **kwargs).
  std::function<VarP(std::vector<VarP> &, std::map<std::string, VarP> &)> forward;
};

/// Module.__call__ of `module` (Var `callee`, read through source `modSrc`,
/// -1: none): forward pre-hooks (global, then the module's), forward, then
/// forward hooks, each hook inlined and its dict guarded; backward hooks
/// break the graph.
VarP callModuleForward(const ModuleHookOps &ops, const VarP &callee, int modSrc, PyObject *module,
                       std::vector<VarP> &args, std::map<std::string, VarP> &kwargs);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_INTERP_MODULEHOOKS_H
