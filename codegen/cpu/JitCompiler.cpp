//===- JitCompiler.cpp - kiln IR → ORC-JIT'd host code ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Runs kiln-optimize and kiln-cpu-lowering on a module, translates it to
// LLVM IR, optimizes it at O3 for the host CPU (the optimizing transformer
// gets the host TargetMachine so the loop vectorizer uses real cost models)
// and JITs it with mlir::ExecutionEngine, with kiln's BLAS shims registered.
// Diagnostics are collected into the caller's error string, never printed
// or fatal. With a debug folder, the input, the IR after every pass and a
// kiln-opt reproducer are written there.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/JitCompiler.h"

#include "codegen/Passes.h"
#include "codegen/Registration.h"
#include "codegen/cpu/BlasShims.h"
#include "transforms/Passes.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <functional>
#include <vector>
#include <mutex>

namespace mlir::kiln {
namespace {

/// Writes the module after every pass to `<dir>/NN-<pass-argument>.mlir`.
class DebugDirPrinter : public PassManager::IRPrinterConfig {
public:
  explicit DebugDirPrinter(std::string dir)
      : IRPrinterConfig(/*printModuleScope=*/true), dir_(std::move(dir)) {}

  void printAfterIfEnabled(Pass *pass, Operation *, PrintCallbackFn print) override {
    std::string path = llvm::formatv("{0}/{1:d2}-{2}.mlir", dir_, ++index_,
                                     pass->getArgument().str());
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
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.size() > 3 && llvm::isDigit(name[0]) && llvm::isDigit(name[1]) &&
        name[2] == '-' && name.ends_with(".mlir"))
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
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
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

/// Builds a host TargetMachine at O3.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> hostTargetMachine() {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return builder->createTargetMachine();
}

/// MLIR's `memrefCopy` runtime function (CRunnerUtils), which
/// memref-to-llvm calls for a `memref.copy` between non-contiguous layouts
/// (strided views from kiln.slice / kiln.concat after bufferization). The
/// JIT does not link MLIR's runtime libraries, so kiln provides it: a
/// row-major walk over the sizes with each side's strides.
struct UnrankedDescriptor {
  int64_t rank;
  void *descriptor;
};

extern "C" void kilnMemrefCopy(int64_t elemSize, UnrankedDescriptor *src,
                               UnrankedDescriptor *dst) {
  // Ranked descriptor layout: base, aligned, offset, sizes[rank], strides[rank].
  struct View {
    char *data;
    const int64_t *sizes, *strides;
  };
  auto view = [&](UnrankedDescriptor *u) {
    auto *words = static_cast<int64_t *>(u->descriptor);
    char *aligned = reinterpret_cast<char **>(words)[1];
    return View{aligned + words[2] * elemSize, words + 3, words + 3 + u->rank};
  };
  int64_t rank = src->rank;
  View s = view(src), d = view(dst);
  for (int64_t i = 0; i < rank; ++i)
    if (s.sizes[i] == 0)
      return;
  // Rows along the innermost dim: one memcpy when both sides are unit-stride
  // there (concat's inserts, row slices), element by element otherwise.
  int64_t inner = rank > 0 ? s.sizes[rank - 1] : 1;
  int64_t sInner = rank > 0 ? s.strides[rank - 1] : 1;
  int64_t dInner = rank > 0 ? d.strides[rank - 1] : 1;
  bool rows = sInner == 1 && dInner == 1;
  int64_t outerRank = rank > 0 ? rank - 1 : 0;
  std::vector<int64_t> index(outerRank, 0);
  int64_t so = 0, dO = 0;
  while (true) {
    char *to = d.data + dO * elemSize;
    const char *from = s.data + so * elemSize;
    if (rows) {
      std::memcpy(to, from, inner * elemSize);
    } else {
      for (int64_t k = 0; k < inner; ++k)
        std::memcpy(to + k * dInner * elemSize, from + k * sInner * elemSize, elemSize);
    }
    int64_t i = outerRank - 1;
    for (; i >= 0; --i) {
      so += s.strides[i];
      dO += d.strides[i];
      if (++index[i] < s.sizes[i])
        break;
      so -= s.strides[i] * s.sizes[i];
      dO -= d.strides[i] * s.sizes[i];
      index[i] = 0;
    }
    if (i < 0)
      return;
  }
}

} // namespace

::kiln::rt::CompiledFunction compileForCpu(ModuleOp module, const std::string &entry,
                                         const CpuCompileOptions &options,
                                         std::string &error) {
  static std::once_flag initOnce;
  std::call_once(initOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerAllDialects(registry);
  ctx->appendDialectRegistry(registry);

  std::string diagnostics;
  llvm::raw_string_ostream diag(diagnostics);
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    const char *severity = d.getSeverity() == DiagnosticSeverity::Error     ? "error"
                           : d.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                           : d.getSeverity() == DiagnosticSeverity::Remark  ? "remark"
                                                                            : "note";
    printLocation(d.getLocation(), diag);
    diag << ": " << severity << ": " << d << "\n";
    for (Diagnostic &note : d.getNotes()) {
      printLocation(note.getLocation(), diag);
      diag << ": note: " << note << "\n";
    }
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
  buildCpuLoweringPipeline(pm);
  if (!options.debugDir.empty())
    setUpDebugDir(options.debugDir, module, pm);
  if (failed(pm.run(module)))
    return fail("kiln: CPU lowering failed");

  auto optTm = hostTargetMachine();
  auto jitTm = hostTargetMachine();
  if (!optTm || !jitTm)
    return fail("kiln: no host target machine: " +
                llvm::toString(optTm ? jitTm.takeError() : optTm.takeError()));
  // ExecutionEngineOptions::transformer is a function_ref: keep the
  // std::function alive for the duration of create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0, optTm->get());
  std::function<llvm::Error(llvm::Module *)> transformer = [&](llvm::Module *m) {
    // Intel cores with AVX-512 default to 256-bit vectors; kiln's loops are
    // long and throughput-bound, where full width wins (no-op elsewhere).
    for (llvm::Function &f : *m)
      if (!f.isDeclaration())
        f.addFnAttr("prefer-vector-width", "512");
    return optimize(m);
  };
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  engineOptions.enableGDBNotificationListener = false;
  engineOptions.enablePerfNotificationListener = false;
  auto engine = ExecutionEngine::create(module, engineOptions, std::move(*jitTm));
  if (!engine)
    return fail("kiln: JIT failed: " + llvm::toString(engine.takeError()));

  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    for (auto [name, address] : blasShimSymbols())
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                 llvm::JITSymbolFlags::Exported};
    symbols[interner("memrefCopy")] = {
        llvm::orc::ExecutorAddr::fromPtr(&kilnMemrefCopy),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  auto packed = (*engine)->lookupPacked("_mlir_ciface_" + entry);
  if (!packed)
    return fail("kiln: JIT lookup failed: " + llvm::toString(packed.takeError()));

  ::kiln::rt::CompiledFunction compiled;
  compiled.entry = *packed;
  compiled.owner = std::shared_ptr<ExecutionEngine>(std::move(*engine));
  return compiled;
}

} // namespace mlir::kiln
