//===- CompiledFunction.h - a callable compiled graph -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The runtime's view of a compiled graph: a packed entry point taking one
// pointer per argument, plus whatever keeps the code alive. It knows nothing
// about MLIR; codegen produces it, the frontend calls it.
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMPILEDFUNCTION_H
#define KILN_RUNTIME_COMPILEDFUNCTION_H

#include <memory>

namespace kiln::rt {

/// A compiled graph with the calling convention of MLIR's C interface
/// wrappers (`_mlir_ciface_<name>` called through its packed form): `args[i]`
/// points to a variable holding a `MemRefDescriptor*` for argument i
/// (inputs first, then the caller-allocated outputs).
struct CompiledFunction {
  /// Packed entry point: `void(void **args)`.
  using PackedFn = void (*)(void **);

  /// The entry point; valid while `owner` is alive.
  PackedFn entry = nullptr;
  /// Keeps the JIT'd code (an mlir::ExecutionEngine) alive.
  std::shared_ptr<void> owner;

  /// Calls the compiled code.
  void operator()(void **args) const { entry(args); }
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_COMPILEDFUNCTION_H
