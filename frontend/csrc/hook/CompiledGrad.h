//===- CompiledGrad.h - graphs compiled with their backward -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A captured graph that needs gradients is compiled as two functions built
// by kiln-autodiff (transforms/Autodiff.h): a forward returning the results
// and the values its backward saves, and a backward mapping result
// gradients to input gradients. kiln._autograd.apply_compiled runs them as
// one torch.autograd.Function. A graph kiln-autodiff cannot differentiate
// (an op without a gradient rule) keeps the eager recompute backward
// (Recompute.h) — never a missing or wrong gradient.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_HOOK_COMPILEDGRAD_H
#define KILN_FRONTEND_HOOK_COMPILEDGRAD_H

#include "Entry.h"
#include "codegen/cpu/JitCompiler.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// The compiled forward and backward of one entry (the layout of
/// mlir::kiln::GradientFunctions).
struct CompiledGrad {
  std::shared_ptr<Entry> forward;  ///< inputs → results + saved extras
  std::shared_ptr<Entry> backward; ///< gradResults' grads + saved → gradInputs' grads
  std::vector<int64_t> gradResults, gradInputs, savedInputs, savedResults;
  int64_t numSaved = 0;
  std::vector<std::vector<int64_t>> inputDeps; ///< per gradInputs entry
  /// compiledGradCallables' objects, built on the first call (with the GIL;
  /// a racing second build is dropped).
  mutable PyRef forwardFn, backwardFn, layout;
};

/// Compiles `cap`'s graph with its backward into `entry.grad` when kiln can
/// (CPU, static shapes, no torch calls, side effects or dynamic sizes, and
/// a gradient rule for every op on a gradient path); otherwise returns
/// false with `why` set and leaves `entry` alone. A compilation error is
/// returned as false too (the caller compiles the graph the usual way).
bool compileWithBackward(Capture &cap, Entry &entry, const mlir::kiln::CpuCompileOptions &options,
                         std::string &why);

/// The arguments of kiln._autograd.apply_compiled after the inputs' tuple:
/// (forward, backward, layout), forward/backward bound runners (new
/// references); false with a Python error set.
bool compiledGradCallables(const std::shared_ptr<Entry> &entry, PyRef &forward, PyRef &backward,
                           PyRef &layout);

} // namespace kiln

#endif // KILN_FRONTEND_HOOK_COMPILEDGRAD_H
