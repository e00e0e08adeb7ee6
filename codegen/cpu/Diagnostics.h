//===- Diagnostics.h - MLIR diagnostics as compiler-style text ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Compilation failures reach the user as text with locations
// (`file:line:col: error: ...`), collected by a handler instead of printed
// or fatal.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_DIAGNOSTICS_H
#define KILN_CODEGEN_CPU_DIAGNOSTICS_H

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir {
class Diagnostic;
} // namespace mlir

namespace mlir::kiln {

/// Appends `d` and its notes to `os`, one line each, compiler-style: the
/// location as `file:line:col` (a NameLoc as `name (file:line:col)`,
/// fused/call-site locations by their first part), the severity, the text.
void printDiagnostic(Diagnostic &d, llvm::raw_ostream &os);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_DIAGNOSTICS_H
