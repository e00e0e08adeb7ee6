//===- CallAttrs.h - attributes on run-time function declarations -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Attributes that passes put on the declarations of run-time functions the
// generated code calls, for later passes of the CPU lowering.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_CALLATTRS_H
#define KILN_CODEGEN_CPU_CALLATTRS_H

namespace mlir::kiln {

/// Unit attribute: the function reads and writes its memref arguments only
/// while it runs and keeps no pointer to them (kiln-cpu-convs-to-dnnl's
/// oneDNN shim), so kiln-cpu-plan-memory may place buffers passed to it in
/// the arena (live at the call only).
inline constexpr const char kBufferArgsOnlyAttr[] = "kiln.buffer_args_only";

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_CALLATTRS_H
