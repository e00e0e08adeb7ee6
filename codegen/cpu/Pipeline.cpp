//===- Pipeline.cpp - kiln-cpu-lowering ---------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The CPU lowering from optimized kiln IR to the LLVM dialect, in order:
// kiln → linalg on tensors, elementwise fusion, destination-passing outputs,
// one-shot bufferization (identity layouts at function boundaries), row-wise
// loops around reduction chains, one arena per call for the static
// intermediates (packed by liveness), ownership-based deallocation so
// intermediates are freed, BLAS calls for f32/f64 matmuls, strided copies
// as loops, loops (LLVM's O3 vectorizer does the vectorizing) with the big
// top-level nests run by OpenMP work sharing (kiln-cpu-parallelize-loops,
// OpenMPShim.cpp), polynomial math, loads/stores with alias scopes from the
// buffers' roots, and the standard conversions to LLVM.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::kiln {

void buildCpuLoweringPipeline(OpPassManager &pm, const CpuLoweringOptions &options) {
  // Long f32 sums in short stages (accuracy), still on kiln IR.
  pm.nest<func::FuncOp>().addPass(createCpuSplitLongSumsPass());
  // kiln → linalg on tensors, fused (shared with the CUDA backend).
  buildFusedLinalgPipeline(pm, {/*transcendentalCost=*/8, /*sharedLhsGemm=*/true,
                                /*fuseBroadcastCasts=*/false, /*keepProducerResults=*/true});
  // GEMMs read transposed operands in place (the BLAS's transpose flags).
  pm.nest<func::FuncOp>().addPass(createCpuFoldTransposedOperandsPass());
  // Tensors → buffers, writing results into the caller's buffers.
  pm.addPass(createDestinationOutputsPass());
  // Concat pieces computed in their place in the concat's buffer.
  pm.nest<func::FuncOp>().addPass(createCpuOrderSliceInsertsPass());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  // Elementwise results over dead inputs that are views of bigger buffers.
  pm.nest<func::FuncOp>().addPass(createCpuWriteOverDeadViewsPass());
  // Options set textually so that the printed pipeline (debug reproducers)
  // shows them; a pass built from an options struct prints its defaults.
  addPassWithOptions(pm, bufferization::createOneShotBufferizePass(),
                     "bufferize-function-boundaries "
                     "function-boundary-type-conversion=identity-layout-map");
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createCanonicalizerPass());
  // Results of calls bufferization could not place: computed in the output.
  pm.nest<func::FuncOp>().addPass(createCpuElideOutputCopiesPass());
  // Row-wise chains (softmax, layer_norm) run row by row, in cache.
  pm.nest<func::FuncOp>().addPass(createCpuFuseRowsPass());
  // Static intermediates share one arena by liveness; the deallocation
  // below frees the arena and whatever the planning could not follow.
  pm.nest<func::FuncOp>().addPass(createCpuPlanMemoryPass());
  bufferization::buildBufferDeallocationPipeline(
      pm, bufferization::BufferDeallocationPipelineOptions());
  pm.addPass(createBufferizationToMemRefPass());
  // Results the frontend writes straight into the input they update.
  pm.nest<func::FuncOp>().addPass(createCpuInPlaceOutputsPass());
  // Reshapes of planned slots as views of the arena: one memref per slot.
  pm.nest<func::FuncOp>().addPass(createCpuFoldViewReshapesPass());
  // Buffers freed after their last use, not at the function's end.
  pm.nest<func::FuncOp>().addPass(createCpuFreeEarlyPass());
  // A backward's saved activations handed back after their last read.
  pm.addPass(createCpuReleaseDeadInputsPass());

  // Buffers → calls and loops.
  pm.addPass(createCpuLinalgToBlasPass());
  pm.addPass(createCpuCopiesToLoopsPass());
  {
    OpPassManager &fn = pm.nest<func::FuncOp>();
    fn.addPass(createConvertLinalgToParallelLoopsPass());
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createCSEPass());
    // Big top-level loop nests stay parallel; everything else is serial
    // (all of them when options.parallelLoops is off). Set textually: the
    // printed pipeline is part of the compile-cache key.
    addPassWithOptions(fn, createCpuParallelizeLoopsPass(),
                       options.parallelLoops ? "enabled=true" : "enabled=false");
  }
  pm.addPass(createCpuApproximateMathPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.nest<func::FuncOp>().addPass(createCpuLowerAllocaScopesPass());
  // Outputs the frontend left unallocated: allocated before their first write.
  pm.nest<func::FuncOp>().addPass(createCpuLazyOutputsPass());

  // → LLVM dialect.
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Loads/stores with alias scopes from the buffers' roots (arena views).
  pm.nest<func::FuncOp>().addPass(createCpuAliasScopesPass());
  pm.addPass(createCpuLowerOutputAllocsPass());
  pm.addPass(createConvertVectorToLLVMPass()); // kiln-cpu-copies-to-loops' rows
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // Intrinsics first (fma, floor, exp... stay vectorizable); what has no
  // intrinsic (f64 erf/tanh) becomes a libm call.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void registerCpuPipelines() {
  static bool done = [] {
    PassPipelineRegistration<>("kiln-cpu-lowering",
                               "Lower optimized kiln IR to LLVM for the host CPU",
                               [](OpPassManager &pm) { buildCpuLoweringPipeline(pm); });
    return true;
  }();
  (void)done;
}

} // namespace mlir::kiln
