//===- ObjectCode.h - LLVM IR → host object file → ORC ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The last steps of the CPU backend, split so that a compiled graph can be
// stored as a relocatable object file and loaded again without MLIR: O3 for
// the host, a packed `void(void **)` entry wrapper, object emission with the
// host TargetMachine, and loading an object into its own ORC LLJIT with
// kiln's runtime symbols (BLAS shims, memrefCopy) and the process's symbols
// (libc/libm). Also the host and build identities that key the disk cache.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_OBJECTCODE_H
#define KILN_CODEGEN_CPU_OBJECTCODE_H

#include "runtime/CompiledFunction.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace mlir::kiln {

/// A TargetMachine for the host CPU (its name and features) at O3; with
/// `pic`, position-independent code (for a shared library, kiln.export);
/// with `baseline`, for the host architecture's baseline CPU instead
/// (x86-64: no feature beyond SSE2; kiln.export's portable build).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> hostTargetMachine(bool pic = false,
                                                                       bool baseline = false);

/// "triple cpu features" of the host, as the JIT compiles for it.
const std::string &hostCpuIdentity();

/// An identity of the kiln binary this code runs in: its ELF build id, or
/// path, size and modification time when it has none. Changes whenever
/// kiln is rebuilt, so cached objects never outlive the compiler that made
/// them.
const std::string &kilnBuildIdentity();

/// Adds `void <name>(void **args)` to `fn`'s module: loads argument i from
/// the variable `args[i]` points to, calls `fn`, and stores a non-void
/// result through `args[<num params>]`.
void addPackedWrapper(llvm::Function &fn, llvm::StringRef name);

/// Runs LLVM's O3 pipeline for `tm` on `module` (full-width vectors on
/// AVX-512 hosts, outer loops kept rolled, the loop nests of big functions
/// outlined: LoopNests.h) and emits a relocatable object
/// file; with `optimizedIRPath`, also writes the optimized LLVM IR there.
/// `beforeEmit`, when given, rewrites the optimized module before code
/// generation (kiln.export's import table, ExportObject.h).
llvm::Expected<std::string>
compileToObject(llvm::Module &module, llvm::TargetMachine &tm,
                const std::string &optimizedIRPath = "",
                const std::function<llvm::Error(llvm::Module &)> &beforeEmit = {});

/// Checks that `object` is a well-formed relocatable ELF object for the host
/// (machine, class, byte order) before anything links it: every section
/// header, section name and contents, symbol table entry and relocation is
/// read through LLVM's Expected-returning APIs, and every relocation must
/// name an existing symbol and lie inside its section. RuntimeDyld trusts
/// its input (malformed objects reach report_fatal_error or worse), so
/// untrusted bytes (a disk-cache entry) go through this first.
llvm::Error validateObject(llvm::StringRef object);

/// Loads `object` into a fresh ORC JIT, resolving `symbols` (name,
/// address) first and the process's own symbols after them, and returns
/// the packed entry `entry` (see addPackedWrapper) kept alive by the JIT.
/// With `perfJitdump`, LLVM's perf JIT listener writes jit-<pid>.dump
/// records for `perf inject --jit` (docs/performance.md, "Profiling
/// compiled code").
llvm::Expected<::kiln::rt::CompiledFunction>
loadObject(llvm::StringRef object, llvm::StringRef entry,
           const std::vector<std::pair<const char *, void *>> &symbols, bool perfJitdump = false);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_OBJECTCODE_H
