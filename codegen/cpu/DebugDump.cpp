//===- DebugDump.cpp - a compilation's debug folder ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements DebugDump.h: the input IR, the IR after every pass
// (NN-<pass>.mlir) and a kiln-opt reproducer script in KILN_DEBUG_DIR's
// per-compilation folder. Write failures are ignored: debug output only.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/DebugDump.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

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

} // namespace

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

} // namespace mlir::kiln
