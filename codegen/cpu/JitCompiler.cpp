//===- JitCompiler.cpp - kiln IR → ORC-JIT'd host code ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The CPU compile driver. Runs kiln-optimize and kiln-cpu-lowering on a module, translates it to
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

#include "codegen/cpu/DebugDump.h"
#include "codegen/cpu/ExportObject.h"
#include "codegen/cpu/Diagnostics.h"
#include "codegen/cpu/ObjectCode.h"
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/QuantPasses.h"
#include "transforms/QuantPasses.h"
#include "codegen/cpu/RuntimeSymbols.h"
#include "ir/KilnOps.h"
#include "runtime/CompileCache.h"
#include "runtime/cpu/DnnlConv.h"
#include "ir/ConvGradMarks.h"
#include "transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <mutex>
#include <optional>

namespace mlir::kiln {

std::string packedName(const std::string &entry) { return "_kiln_packed_" + entry; }

namespace {

/// Without dnnlConvs, a convolution whose im2col columns would take at
/// least this many bytes (and 8x its weight's) still runs as a oneDNN call
/// (kiln-cpu-convs-to-dnnl's min-columns-bytes): resnet50's stem and first
/// stage have 7 MiB of columns each, two thirds of eager's whole peak.
constexpr int64_t kBigColumnsBytes = 1 << 20;

/// Without dnnlConvs, a convolution with at least this many output
/// positions (batch x height x width; 14x14 at batch 1) runs as a oneDNN
/// call too (kiln-cpu-convs-to-dnnl's min-output-positions): the weight's
/// per-call reorder is then a few percent of the call (efficientnet_b0 at
/// 224 px 20 -> 14 ms, resnet50 62 -> 58; 7x7 stages stay on kiln's path,
/// where the reorder would cost as much as oneDNN saves).
constexpr int64_t kMinOutputPositions = 196;

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

/// Makes the entry function and its C interface internal and always
/// inlined, so that LLVM's O3 inlines both into the packed wrapper (the
/// only symbol anything looks up). Left as calls, the C interface passes
/// every memref descriptor field as a separate argument (thousands for a
/// resnet50: its weights), and instruction selection of that one call's
/// argument stores is quadratic: 4.3 of resnet50's 5.4 s of X86 codegen.
void inlineIntoPackedWrapper(llvm::Module &module, llvm::Function &cInterface,
                             const std::string &entry) {
  for (llvm::Function *f : {&cInterface, module.getFunction(entry)}) {
    if (!f || f->isDeclaration())
      continue;
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
    f->removeFnAttr(llvm::Attribute::NoInline);
    f->addFnAttr(llvm::Attribute::AlwaysInline);
  }
}

/// Runs `pm` on `module`, translates it to LLVM IR, adds the packed entry
/// wrapper and emits a host object file (and, with a debug folder, the
/// optimized LLVM IR as `llvm-optimized.ll` there). Diagnostics are
/// collected by the caller's handler; the error says which stage failed.
llvm::Expected<std::string>
lowerToObject(ModuleOp module, PassManager &pm, const std::string &entry,
              const std::string &debugDir, bool pic = false, bool baseline = false,
              const std::function<llvm::Error(llvm::Module &)> &beforeEmit = {}) {
  if (failed(pm.run(module)))
    return llvm::createStringError("kiln: CPU lowering failed");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln-graph");
  if (!llvmModule)
    return llvm::createStringError("kiln: translation to LLVM IR failed");
  if (llvm::Error err = checkRuntimeCalls(*llvmModule))
    return std::move(err);
  llvm::Function *cInterface = llvmModule->getFunction("_mlir_ciface_" + entry);
  if (!cInterface)
    return llvm::createStringError("kiln: no C interface for @" + entry + " after lowering");
  addPackedWrapper(*cInterface, packedName(entry));
  inlineIntoPackedWrapper(*llvmModule, *cInterface, entry);
  auto tm = hostTargetMachine(pic, baseline);
  if (!tm)
    return llvm::createStringError("kiln: no host target machine: " +
                                   llvm::toString(tm.takeError()));
  auto compiled = compileToObject(
      *llvmModule, **tm, debugDir.empty() ? "" : debugDir + "/llvm-optimized.ll", beforeEmit);
  if (!compiled)
    return llvm::createStringError("kiln: LLVM code generation failed: " +
                                   llvm::toString(compiled.takeError()));
  return std::move(*compiled);
}

/// Looks `key` up in the disk cache and loads the object it holds; a null
/// function on a miss. Entries that do not validate or load are reported
/// in `info` and never used.
::kiln::rt::CompiledFunction loadCached(const ::kiln::rt::DiskCache &cache, const std::string &key,
                                        const std::string &entry, bool perfJitdump,
                                        CpuCompileInfo &info) {
  ::kiln::rt::CacheLookup found = cache.load(key);
  if (found.status == ::kiln::rt::CacheLookup::Status::Hit) {
    // Authenticated, but still parsed defensively before RuntimeDyld sees it.
    llvm::Error invalid = validateObject(found.payload);
    auto loaded = invalid
                      ? llvm::Expected<::kiln::rt::CompiledFunction>(std::move(invalid))
                      : loadObject(found.payload, packedName(entry), runtimeSymbols(), perfJitdump);
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

/// Initializes LLVM's host target once and registers the dialects the CPU
/// pipeline produces in `module`'s context.
void prepareCpuCompile(ModuleOp module) {
  static std::once_flag initOnce;
  std::call_once(initOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  DialectRegistry registry;
  registerCpuDialects(registry);
  module.getContext()->appendDialectRegistry(registry);
}

} // namespace

std::string compileForCpuExport(ModuleOp module, const std::string &entry, bool parallelLoops,
                                bool baseline, std::vector<std::string> &imports,
                                std::string &error) {
  prepareCpuCompile(module);
  MLIRContext *ctx = module.getContext();
  std::string diagnostics;
  llvm::raw_string_ostream diag(diagnostics);
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    printDiagnostic(d, diag);
    return success();
  });
  PassManager pm(ctx, ModuleOp::getOperationName());
  buildOptimizePipeline(pm);
  buildCpuLoweringPipeline(pm, CpuLoweringOptions{parallelLoops});
  auto rewrite = [&](llvm::Module &m) { return indirectRuntimeCalls(m, imports); };
  llvm::Expected<std::string> object =
      lowerToObject(module, pm, entry, "", /*pic=*/true, baseline, rewrite);
  if (!object) {
    error = llvm::toString(object.takeError()) + (diagnostics.empty() ? "" : ":\n" + diagnostics);
    return "";
  }
  return std::move(*object);
}

::kiln::rt::CompiledFunction compileForCpu(ModuleOp module, const std::string &entry,
                                           const CpuCompileOptions &options, std::string &error,
                                           CpuCompileInfo *infoOut) {
  prepareCpuCompile(module);
  CpuCompileInfo localInfo;
  CpuCompileInfo &info = infoOut ? *infoOut : localInfo;
  MLIRContext *ctx = module.getContext();

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
  // Convolutions go to oneDNN before kiln-decompose would expand them:
  // all f32 ones with dnnlConvs; otherwise those whose im2col columns would
  // be big next to their weight (kBigColumnsBytes) or with many output
  // positions (kMinOutputPositions); statically quantized
  // ones always (oneDNN's int8 convolution).
  bool quantized = containsQuantOps(module);
  bool convs = module.walk([](Conv2dOp) { return WalkResult::interrupt(); }).wasInterrupted();
  // The pass also turns the convolution gradients kiln-autodiff marked
  // into oneDNN backward calls (ConvGradsToDnnl.cpp), whatever its options.
  bool grads = options.dnnlConvGrads && module
                                            .walk([](Operation *op) {
                                              return op->hasAttr(kConvGradDataAttr) ||
                                                             op->hasAttr(kConvGradWeightsAttr)
                                                         ? WalkResult::interrupt()
                                                         : WalkResult::advance();
                                            })
                                            .wasInterrupted();
  int64_t minPositions = options.dnnlConvs          ? 0
                         : options.bigColumnsToDnnl ? kMinOutputPositions
                                                    : options.minOutputPositionsToDnnl;
  int64_t minColumns = options.dnnlConvs || !options.bigColumnsToDnnl ? 0 : kBigColumnsBytes;
  if (convs && ::kiln::rt::haveDnnl() &&
      (options.dnnlConvs || options.bigColumnsToDnnl || minPositions > 0))
    pm.addPass(createCpuConvsToDnnlPass(
        CpuConvsToDnnlPassOptions{false, minColumns, minPositions, grads}));
  else if ((quantized || grads) && ::kiln::rt::haveDnnl())
    pm.addPass(createCpuConvsToDnnlPass(CpuConvsToDnnlPassOptions{true, 0, 0, grads}));
  // Channels-last regions (ConvNeXt's permuted blocks) stay channels-last:
  // permutes sink and cancel, the convolutions between them run on NHWC.
  if (convs && options.layout)
    pm.addNestedPass<func::FuncOp>(createLayoutPass());
  // Quantized layers: q/dq → kiln.qlinear → int8 GEMM calls (Int8Gemm.cpp).
  if (quantized) {
    pm.addNestedPass<func::FuncOp>(createFoldQuantPass());
    pm.addPass(createCpuQuantToCallsPass());
  }
  buildOptimizePipeline(pm);
  buildCpuLoweringPipeline(pm, CpuLoweringOptions{options.parallelLoops});
  std::optional<::kiln::rt::DiskCache> cache;
  std::string key;
  if (!options.cacheDir.empty()) {
    std::string refused;
    cache = ::kiln::rt::DiskCache::open(options.cacheDir, {options.cacheMaxBytes}, refused);
    if (!cache)
      info.cacheMessage = "compile cache disabled: " + refused;
  }
  if (cache) {
    key = cacheKey(module, pm, entry);
    if (!options.debugDir.empty())
      info.diskMiss = true; // Not read: every pass must run to be dumped.
    else if (auto cached = loadCached(*cache, key, entry, options.perfJitdump, info); cached.entry)
      return cached;
  }
  if (!options.debugDir.empty())
    setUpDebugDir(options.debugDir, module, pm);

  llvm::Expected<std::string> object = lowerToObject(module, pm, entry, options.debugDir);
  if (!object)
    return fail(llvm::toString(object.takeError()));
  if (cache) {
    std::string storeError;
    info.diskStored = cache->store(key, *object, storeError);
    if (!info.diskStored)
      info.cacheMessage += (info.cacheMessage.empty() ? "" : "; ") + storeError;
  }
  auto loaded = loadObject(*object, packedName(entry), runtimeSymbols(), options.perfJitdump);
  if (!loaded)
    return fail("kiln: JIT failed: " + llvm::toString(loaded.takeError()));
  return std::move(*loaded);
}

} // namespace mlir::kiln
