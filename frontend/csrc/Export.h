//===- Export.h - what kiln.export records of one compilation -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln.export (kiln/_export.py) calls the model once through kiln with
// fullgraph=True while a record is open (`_C.export_begin`/`export_end`).
// The compile driver hands the root frame's capture to the record, which
// refuses what an artifact cannot hold (per-op fallbacks, side effects,
// random graphs, conditions on symbolic sizes, CUDA inputs, several
// graphs), compiles a position-independent copy of the graph for a shared
// library (codegen/cpu/JitCompiler.h compileForCpuExport) and keeps the
// graph's inputs, results and symbols; the frame hook adds the tensors of
// the entry's first run. The Python side then writes the artifact.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_EXPORT_H
#define KILN_FRONTEND_EXPORT_H

#include "Entry.h"

#include "mlir/IR/OwningOpRef.h"

namespace nanobind {
class module_;
} // namespace nanobind

namespace kiln {

/// Whether an export record is open (the compile driver then keeps a copy
/// of each captured module for recordExportEntry).
bool exportRecording();

/// Records a compiled entry (moved out of `cap`, whose steps and fallbacks
/// are still there) with `copy`, the captured module before lowering.
/// Called with the GIL held.
void recordExportEntry(mlir::OwningOpRef<mlir::ModuleOp> copy, const Capture &cap,
                       const std::string &irText, const Entry &entry);

/// Records the graph inputs and results of a run of the recorded entry.
void recordExportRun(const Entry &entry, llvm::ArrayRef<PyObject *> inputs,
                     const std::vector<PyRef> &results);

/// `_C.export_begin()` and `_C.export_end()`.
void registerExportBindings(nanobind::module_ &m);

} // namespace kiln

#endif // KILN_FRONTEND_EXPORT_H
