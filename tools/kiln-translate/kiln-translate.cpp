//===- kiln-translate.cpp - kiln IR → target source ----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-translate --kiln-to-cuda file.mlir` runs kiln-optimize and the
// shared kiln → fused-linalg stages, then prints the CUDA C++ source (with
// each function's launch plan). `--nvrtc-arch=80,90` also compiles the
// source with NVRTC for each arch and prints one line per arch (builds with
// NVRTC only). `--no-prepare` emits from IR that is already fused linalg.
// `--print-prepared` prints that fused linalg (what the emitter reads) and
// stops. `--collect-unsupported` emits what it can and lists the ops it cannot
// (one `unsupported:` line each on stderr) instead of failing.
//===----------------------------------------------------------------------===//
#include "registration/Registration.h"
#include "codegen/cuda/CudaEmitter.h"
#ifdef KILN_HAVE_NVRTC
#include "codegen/cuda/NvrtcCompiler.h"
#endif

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .mlir>"), cl::init("-"));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file"), cl::init("-"));
static cl::opt<bool> toCuda("kiln-to-cuda", cl::desc("Emit CUDA C++ source"));
static cl::opt<bool> noPrepare("no-prepare",
                               cl::desc("Input is already fused linalg: skip the pipeline"));
static cl::opt<bool>
    printPrepared("print-prepared",
                  cl::desc("Print the fused linalg the emitter reads (after the pipeline), stop"));
static cl::opt<bool> noRowFusion("no-row-fusion",
                                 cl::desc("One kernel per generic (no row groups)"));
static cl::opt<bool>
    noOnePassRows("no-one-pass-rows",
                  cl::desc("Row groups: one loop per reduction (no online softmax / Welford)"));
static cl::opt<bool> noVectorize("no-vectorize",
                                 cl::desc("Pointwise kernels: scalar loads/stores only"));
static cl::opt<bool> noGemmEpilogues("no-gemm-epilogues",
                                     cl::desc("GEMMs never carry a bias/ReLU epilogue"));
static cl::list<int> nvrtcArchs("nvrtc-arch", cl::CommaSeparated,
                                cl::desc("Also compile with NVRTC for these sm_ archs"));
static cl::opt<bool> collectUnsupported(
    "collect-unsupported",
    cl::desc("Emit what is supported; list unsupported ops (stderr) instead of failing"));
static cl::opt<bool> nvrtcPtx("nvrtc-ptx", cl::desc("With --nvrtc-arch: PTX instead of cubin"));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "kiln translation driver\n");
  if (!toCuda) {
    llvm::errs() << "kiln-translate: choose a translation (--kiln-to-cuda)\n";
    return 2;
  }
  DialectRegistry registry;
  kiln::registerAllDialects(registry);
  kiln::registerAllPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);

  std::string error;
  auto file = openInputFile(inputFilename, &error);
  if (!file) {
    llvm::errs() << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  if (!noPrepare) {
    PassManager pm(&context);
    kiln::cuda::buildCudaPreparePipeline(pm);
    if (failed(pm.run(*module)))
      return 1;
  }
  if (printPrepared) {
    module->print(llvm::outs());
    return 0;
  }
  kiln::cuda::EmitOptions emitOptions;
  emitOptions.fuseRows = !noRowFusion;
  emitOptions.onePassRows = !noOnePassRows;
  emitOptions.vectorize = !noVectorize;
  emitOptions.gemmEpilogues = !noGemmEpilogues;
  emitOptions.collectUnsupported = collectUnsupported;
  FailureOr<kiln::cuda::CudaModule> cu = kiln::cuda::emitCuda(*module, emitOptions);
  if (failed(cu))
    return 1;
  for (const kiln::cuda::UnsupportedOp &u : cu->unsupported)
    llvm::errs() << "unsupported: @" << u.function << ": " << u.op << " at " << u.location << ": "
                 << u.reason << "\n";

  auto output = openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  output->os() << cu->source;
  output->keep();

  if (!nvrtcArchs.empty()) {
#ifdef KILN_HAVE_NVRTC
    for (int arch : nvrtcArchs) {
      kiln::cuda::NvrtcOptions o;
      o.arch = arch;
      o.cubin = !nvrtcPtx;
      auto r = kiln::cuda::compileWithNvrtc(cu->source, "kiln.cu", o);
      if (!r) {
        llvm::errs() << llvm::toString(r.takeError()) << "\n";
        return 1;
      }
      llvm::errs() << "nvrtc " << kiln::cuda::nvrtcVersion() << ": sm_" << arch << " ok, "
                   << cu->kernels.size() << " kernel(s), " << r->binary.size() << " bytes of "
                   << (o.cubin ? "cubin" : "PTX") << "\n";
    }
#else
    llvm::errs() << "kiln-translate: built without NVRTC\n";
    return 1;
#endif
  }
  return 0;
}
