//===- ProgramCompile.h - compiling a graph split at fallback calls -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Turns the steps of a capture with per-op fallbacks (capture/ops/Partition.cpp)
// into an Entry's Program (Program.h): each segment is compiled like a
// whole graph (CPU JIT, or kiln.cuda when the inputs are on CUDA/meta) into
// its own sub-entry; each fallback step keeps its torch call.
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_PROGRAMCOMPILE_H
#define KILN_FRONTEND_PROGRAMCOMPILE_H

#include "Entry.h"
#include "codegen/cpu/JitCompiler.h"

#include <functional>
#include <string>

namespace kiln {

/// mlir::kiln::compileForCpu with the GIL released, so other Python threads
/// (calls of compiled code among them) keep running while the passes and
/// LLVM work; nothing in it touches Python. Called with the GIL held, by
/// the holder of the compile lock (hook/CompileLock.h), which keeps every
/// other thread off the shared MLIR context meanwhile.
rt::CompiledFunction compileForCpuWithoutGil(mlir::ModuleOp module,
                                             const mlir::kiln::CpuCompileOptions &options,
                                             std::string &error, mlir::kiln::CpuCompileInfo *info);

/// One CPU compilation of compileForCpuPair: its inputs and what it gave.
struct CpuCompileJob {
  mlir::ModuleOp module;
  mlir::kiln::CpuCompileOptions options;
  rt::CompiledFunction fn; ///< null entry on failure, with `error` set
  std::string error;
  mlir::kiln::CpuCompileInfo info;
};

/// Compiles two modules at once (a training graph's forward and backward):
/// `first` on this thread, `second` on another, in an MLIR context of its
/// own holding a copy of the module (the shared context is single-threaded),
/// both with the GIL released. The two compiles share nothing but LLVM's
/// thread-safe globals; a training graph then compiles in about the time of
/// its bigger half where a second core is free. Called like
/// compileForCpuWithoutGil.
void compileForCpuPair(CpuCompileJob &first, CpuCompileJob &second);

/// Compiles `cap.steps` for `device` (TensorMeta::device) into
/// `entry.program`; `onCpuCompile` sees what each CPU compilation did with
/// the disk cache. False with `error` set (no Python error) on failure.
bool compileProgram(Capture &cap, Entry &entry, int device,
                    const mlir::kiln::CpuCompileOptions &options,
                    const std::function<void(const mlir::kiln::CpuCompileInfo &)> &onCpuCompile,
                    std::string &error);

} // namespace kiln

#endif // KILN_FRONTEND_PROGRAMCOMPILE_H
