//===- Pipelines.cpp - kiln's target-independent pipeline --------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The named pipeline every compilation runs before codegen.
//===----------------------------------------------------------------------===//
#include "transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::kiln {

void buildOptimizePipeline(OpPassManager &pm) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  fn.addPass(createDecomposePass());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
}

void registerKilnPipelines() {
  static bool done = [] {
    PassPipelineRegistration<>("kiln-optimize", "kiln's target-independent pipeline",
                               buildOptimizePipeline);
    return true;
  }();
  (void)done;
}

} // namespace mlir::kiln
