//===- ActivationBudget.h - the partitioner's activation-memory budget -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln.config.activation_memory_budget (KILN_ACTIVATION_MEMORY_BUDGET), set
// from Python by `_C.set_activation_memory_budget` and read when a graph is
// compiled with its backward (CompiledGrad.cpp): the `memory-budget` of
// kiln-autodiff's min-cut partitioner (transforms/autodiff/Partition.h).
// Implemented in CompiledGrad.cpp.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_ACTIVATIONBUDGET_H
#define KILN_FRONTEND_HOOK_ACTIVATIONBUDGET_H

namespace kiln {

/// Sets the budget (clamped to [0, 1]; 1: the default min-cut).
void setActivationMemoryBudget(double budget);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_ACTIVATIONBUDGET_H
