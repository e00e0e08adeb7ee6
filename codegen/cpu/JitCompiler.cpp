//===- JitCompiler.cpp - kiln IR → ORC-JIT'd host code ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Runs kiln-optimize and kiln-cpu-lowering on a module, translates it to
// LLVM IR, optimizes it at O3 for the host CPU (with the host TargetMachine,
// so the loop vectorizer uses real cost models), emits a relocatable object
// and loads it into an ORC JIT with kiln's BLAS shims registered
// (ObjectCode.h). With a cache folder the object is stored on disk keyed by
// the input IR, pipeline, host CPU and kiln build, and a later compilation
// of the same key (in any process) loads it without running anything else.
// Diagnostics are collected into the caller's error string, never printed
// or fatal. With a debug folder, the input, the IR after every pass and a
// kiln-opt reproducer are written there.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/JitCompiler.h"

#include "codegen/cpu/Passes.h"
#include "codegen/cpu/Passes.h"
#include "runtime/cpu/BlasShims.h"
#include "codegen/cpu/ObjectCode.h"
#include "runtime/cpu/MemrefCopy.h"
#include "runtime/cpu/OpenMPShim.h"
#include "runtime/cpu/BufferPool.h"
#include "runtime/CompileCache.h"
#include "transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

namespace mlir::kiln {
namespace {

/// Writes the module after every pass to `<dir>/NN-<pass-argument>.mlir`.
class DebugDirPrinter : public PassManager::IRPrinterConfig {
public:
  explicit DebugDirPrinter(std::string dir)
      : IRPrinterConfig(/*printModuleScope=*/true), dir_(std::move(dir)) {}

  void printAfterIfEnabled(Pass *pass, Operation *, PrintCallbackFn print) override {
    std::string path =
        llvm::formatv("{0}/{1:d2}-{2}.mlir", dir_, ++index_, pass->getArgument().str());
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (!ec)
      print(os);
  }

private:
  std::string dir_;
  int index_ = 0;
};

/// Writes `text` to `path`, ignoring failures (debug output only).
void writeFile(const std::string &path, llvm::function_ref<void(llvm::raw_ostream &)> text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec)
    text(os);
}

/// Prepares the debug folder: input IR, IR printing, reproducer script.
void setUpDebugDir(const std::string &dir, ModuleOp module, PassManager &pm) {
  llvm::sys::fs::create_directories(dir);
  // Drop a previous run's NN-<pass>.mlir files so the folder is consistent.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.size() > 3 && llvm::isDigit(name[0]) && llvm::isDigit(name[1]) && name[2] == '-' &&
        name.ends_with(".mlir"))
      llvm::sys::fs::remove(it->path());
  }
  writeFile(dir + "/00-input.mlir", [&](llvm::raw_ostream &os) {
    module->print(os, OpPrintingFlags().enableDebugInfo(true, false));
  });
  std::string pipeline;
  llvm::raw_string_ostream ps(pipeline);
  pm.printAsTextualPipeline(ps);
  writeFile(dir + "/repro.sh", [&](llvm::raw_ostream &os) {
    os << "#!/bin/sh\n# Reproduces this compilation's pass pipeline.\n"
       << "kiln-opt \"$(dirname \"$0\")/00-input.mlir\" --mlir-print-debuginfo \\\n"
       << "  --pass-pipeline='" << ps.str() << "' \"$@\"\n";
  });
  llvm::sys::fs::setPermissions(dir + "/repro.sh", llvm::sys::fs::all_read |
                                                       llvm::sys::fs::all_exe |
                                                       llvm::sys::fs::owner_write);
  // Module-scope printing needs a single-threaded pass manager.
  module.getContext()->disableMultithreading();
  pm.enableIRPrinting(std::make_unique<DebugDirPrinter>(dir));
}

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

/// Appends one diagnostic and its notes, compiler-style.
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

/// "" when every OpenMP call in `module` is one the shim implements
/// (OpenMPShim.cpp), else what is not.
std::string checkOpenMPCalls(const llvm::Module &module) {
  std::set<std::string> known;
  for (auto &[name, address] : ::kiln::rt::openMPShimSymbols())
    known.insert(name);
  for (const llvm::Function &f : module) {
    llvm::StringRef name = f.getName();
    if (!f.isDeclaration() || !(name.starts_with("__kmpc_") || name.starts_with("omp_")))
      continue;
    if (!known.count(name.str()))
      return "kiln: the generated code calls " + name.str() +
             ", which kiln's OpenMP shim does not implement";
    if (name != "__kmpc_fork_call")
      continue;
    for (const llvm::User *user : f.users()) {
      auto *call = llvm::dyn_cast<llvm::CallBase>(user);
      auto *argc = call ? llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(1)) : nullptr;
      if (!argc || argc->getZExtValue() > static_cast<uint64_t>(::kiln::rt::kMaxForkArgs))
        return "kiln: a parallel region takes more than " +
               std::to_string(::kiln::rt::kMaxForkArgs) + " arguments";
    }
  }
  return "";
}

/// Symbols the generated code calls that kiln itself provides.
std::vector<std::pair<const char *, void *>> runtimeSymbols() {
  std::vector<std::pair<const char *, void *>> symbols = ::kiln::rt::blasShimSymbols();
  symbols.emplace_back("memrefCopy", reinterpret_cast<void *>(&kilnMemrefCopy));
  // Intermediate buffers come from kiln's pool (runtime/cpu/BufferPool.h).
  symbols.emplace_back("malloc", reinterpret_cast<void *>(&kilnPoolMalloc));
  symbols.emplace_back("free", reinterpret_cast<void *>(&kilnPoolFree));
  // Parallel loops: OpenMP entry points on torch's libgomp.
  for (auto symbol : ::kiln::rt::openMPShimSymbols())
    symbols.push_back(symbol);
  return symbols;
}

/// The disk-cache key of compiling `module` with `pm`: everything the
/// object code depends on, as text (the entry stores it and compares it
/// exactly on load).
std::string cacheKey(ModuleOp module, PassManager &pm, const std::string &entry) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << "kiln-cpu-object v1\nbuild: " << kilnBuildIdentity()
     << "\nllvm: " LLVM_VERSION_STRING "\nhost: " << hostCpuIdentity() << "\nentry: " << entry
     << "\npipeline: ";
  pm.printAsTextualPipeline(os);
  os << "\n";
  module->print(os);
  return key;
}

/// Name of the packed `void(void **)` wrapper of `entry`'s C interface.
std::string packedName(const std::string &entry) { return "_kiln_packed_" + entry; }

/// Runs `pm` on `module`, translates it to LLVM IR, adds the packed entry
/// wrapper and emits a host object file into `object` (and, with a debug
/// folder, the optimized LLVM IR as `llvm-optimized.ll` there). Returns "" or what
/// failed (diagnostics are collected by the caller's handler).
std::string lowerToObject(ModuleOp module, PassManager &pm, const std::string &entry,
                          const std::string &debugDir, std::string &object) {
  if (failed(pm.run(module)))
    return "kiln: CPU lowering failed";
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln-graph");
  if (!llvmModule)
    return "kiln: translation to LLVM IR failed";
  if (std::string why = checkOpenMPCalls(*llvmModule); !why.empty())
    return why;
  llvm::Function *cInterface = llvmModule->getFunction("_mlir_ciface_" + entry);
  if (!cInterface)
    return "kiln: no C interface for @" + entry + " after lowering";
  addPackedWrapper(*cInterface, packedName(entry));
  auto tm = hostTargetMachine();
  if (!tm)
    return "kiln: no host target machine: " + llvm::toString(tm.takeError());
  auto compiled =
      compileToObject(*llvmModule, **tm, debugDir.empty() ? "" : debugDir + "/llvm-optimized.ll");
  if (!compiled)
    return "kiln: LLVM code generation failed: " + llvm::toString(compiled.takeError());
  object = std::move(*compiled);
  return "";
}

/// Looks `key` up in the disk cache and loads the object it holds; a null
/// function on a miss. Entries that do not validate or load are reported
/// in `info` and never used.
::kiln::rt::CompiledFunction loadCached(const ::kiln::rt::DiskCache &cache, const std::string &key,
                                        const std::string &entry, CpuCompileInfo &info) {
  ::kiln::rt::CacheLookup found = cache.load(key);
  if (found.status == ::kiln::rt::CacheLookup::Status::Hit) {
    auto loaded =
        loadObject(found.payload, packedName(entry), runtimeSymbols(), options.perfJitdump);
    if (loaded) {
      info.diskHit = true;
      return std::move(*loaded);
    }
    found.status = ::kiln::rt::CacheLookup::Status::Corrupt;
    found.message = cache.entryPath(key) + ": cannot load: " + llvm::toString(loaded.takeError());
  }
  info.diskMiss = true;
  if (found.status == ::kiln::rt::CacheLookup::Status::Corrupt) {
    info.diskCorrupt = true;
    info.cacheMessage = "invalid compile-cache entry " + found.message + " (recompiling)";
  }
  return {};
}

} // namespace

::kiln::rt::CompiledFunction compileForCpu(ModuleOp module, const std::string &entry,
                                           const CpuCompileOptions &options, std::string &error,
                                           CpuCompileInfo *infoOut) {
  static std::once_flag initOnce;
  std::call_once(initOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  CpuCompileInfo localInfo;
  CpuCompileInfo &info = infoOut ? *infoOut : localInfo;
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerCpuDialects(registry);
  ctx->appendDialectRegistry(registry);

  std::string diagnostics;
  llvm::raw_string_ostream diag(diagnostics);
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    printDiagnostic(d, diag);
    return success();
  });
  auto fail = [&](const std::string &what) {
    error = what + (diagnostics.empty() ? "" : ":\n" + diagnostics);
    return ::kiln::rt::CompiledFunction{};
  };

  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func || func.isExternal())
    return fail("kiln: no function @" + entry + " to compile");

  PassManager pm(ctx, ModuleOp::getOperationName());
  buildOptimizePipeline(pm);
  buildCpuLoweringPipeline(pm, CpuLoweringOptions{options.parallelLoops});
  std::optional<::kiln::rt::DiskCache> cache;
  std::string key;
  if (!options.cacheDir.empty()) {
    cache.emplace(options.cacheDir);
    key = cacheKey(module, pm, entry);
    if (!options.debugDir.empty())
      info.diskMiss = true; // Not read: every pass must run to be dumped.
    else if (auto cached = loadCached(*cache, key, entry, info); cached.entry)
      return cached;
  }
  if (!options.debugDir.empty())
    setUpDebugDir(options.debugDir, module, pm);

  std::string object;
  if (std::string what = lowerToObject(module, pm, entry, options.debugDir, object); !what.empty())
    return fail(what);
  if (cache) {
    std::string storeError;
    info.diskStored = cache->store(key, object, storeError);
    if (!info.diskStored)
      info.cacheMessage += (info.cacheMessage.empty() ? "" : "; ") + storeError;
  }
  auto loaded = loadObject(object, packedName(entry), runtimeSymbols(), options.perfJitdump);
  if (!loaded)
    return fail("kiln: JIT failed: " + llvm::toString(loaded.takeError()));
  return std::move(*loaded);
}

} // namespace mlir::kiln
