//===- FusedLinalgPipeline.cpp - kiln → fused linalg on tensors ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The stages both backends run first: kiln → linalg on tensors, then
// elementwise fusion, each followed by canonicalize + CSE.
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/ErrorHandling.h"

namespace mlir::kiln {

void addPassWithOptions(OpPassManager &pm, std::unique_ptr<Pass> pass, llvm::StringRef options) {
  std::string error;
  if (failed(pass->initializeOptions(options, [&](const Twine &message) {
        error = message.str();
        return failure();
      })))
    llvm::report_fatal_error(llvm::Twine("kiln: bad options '") + options + "' for " +
                             pass->getArgument() + ": " + error);
  pm.addPass(std::move(pass));
}

void buildFusedLinalgPipeline(OpPassManager &pm, const FusedLinalgOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  addPassWithOptions(fn, createConvertKilnToLinalgPass(),
                     options.sharedLhsGemm ? "shared-lhs-gemm=true" : "");
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  addPassWithOptions(fn, createFuseLinalgElementwisePass(),
                     "transcendental-cost=" + std::to_string(options.transcendentalCost) +
                         (options.fuseBroadcastCasts ? " fuse-broadcast-casts=true" : "") +
                         (options.keepProducerResults ? " keep-producer-results=true" : ""));
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
}

} // namespace mlir::kiln
