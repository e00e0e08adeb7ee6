//===- AtenOps.h - torch.ops.<ns>.<op> calls in captured code ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The interpreter's entry for operator-level callees: OpOverload and
// OpOverloadPacket objects (`torch.ops.aten.add.Tensor`, `torch.ops.aten.add`,
// prims, custom ops registered with torch.library) and CustomOpDef objects
// (`torch.library.custom_op`). What each overload becomes is decided once by
// kiln/_aten.py (`plan`); AtenOps.cpp applies it.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_OPS_ATENOPS_H
#define KILN_FRONTEND_CAPTURE_OPS_ATENOPS_H

#include "capture/interp/Interp.h"

#include <functional>

namespace kiln {

/// Calls a Python callable as captured code (the interpreter's `call`).
using CallTarget =
    std::function<VarP(PyObject *, std::vector<VarP> &, std::map<std::string, VarP> &)>;

/// A call of operator object `fn`: its torch-level equivalent (through
/// `callTarget`), its decomposition, or the per-op fallback; a graph break
/// naming the overload when none applies. nullptr when `fn` is no operator
/// object.
VarP callTorchOp(Interpreter &I, PyObject *fn, std::vector<VarP> &args,
                 std::map<std::string, VarP> &kwargs, const CallTarget &callTarget);

/// Whether `fn` is an OpOverload, OpOverloadPacket or CustomOpDef.
bool isOperatorObject(PyObject *fn);

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_OPS_ATENOPS_H
