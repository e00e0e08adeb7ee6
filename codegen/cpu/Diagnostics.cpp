//===- Diagnostics.cpp - MLIR diagnostics as compiler-style text --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Diagnostics.h.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Diagnostics.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::kiln {
namespace {

/// Prints `loc` the way compilers do: `file:line:col`, a NameLoc as
/// `name (file:line:col)`, fused/call-site locations by their first part.
void printLocation(Location loc, llvm::raw_ostream &os) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
  } else if (auto name = dyn_cast<NameLoc>(loc)) {
    os << name.getName().getValue();
    if (!isa<UnknownLoc>(name.getChildLoc())) {
      os << " (";
      printLocation(name.getChildLoc(), os);
      os << ")";
    }
  } else if (auto fused = dyn_cast<FusedLoc>(loc); fused && !fused.getLocations().empty()) {
    printLocation(fused.getLocations().front(), os);
  } else if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    printLocation(call.getCallee(), os);
  } else {
    os << loc;
  }
}

} // namespace

void printDiagnostic(Diagnostic &d, llvm::raw_ostream &os) {
  const char *severity = d.getSeverity() == DiagnosticSeverity::Error     ? "error"
                         : d.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                         : d.getSeverity() == DiagnosticSeverity::Remark  ? "remark"
                                                                          : "note";
  printLocation(d.getLocation(), os);
  os << ": " << severity << ": " << d << "\n";
  for (Diagnostic &note : d.getNotes()) {
    printLocation(note.getLocation(), os);
    os << ": note: " << note << "\n";
  }
}

} // namespace mlir::kiln
