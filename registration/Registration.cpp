//===- Registration.cpp - every dialect and pass kiln uses -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Registers the dialects, external interface models, passes and named
// pipelines of every layer: each layer registers its own (transforms/:
// kiln-optimize, codegen/cpu: kiln-cpu-lowering), this file only calls them.
//===----------------------------------------------------------------------===//
#include "registration/Registration.h"

#include "codegen/common/Passes.h"
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/QuantPasses.h"
#include "transforms/Passes.h"
#include "transforms/QuantPasses.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::kiln {

void registerAllDialects(DialectRegistry &registry) {
  // The CPU lowering's dialects are a superset of what the CUDA emitter reads.
  registerCpuDialects(registry);
}

void registerAllPasses() {
  static bool done = [] {
    registerTransformsPasses();
    registerConversionPasses();
    arith::registerArithPasses();
    bufferization::registerBufferizationPasses();
    bufferization::registerBufferizationPipelines();
    affine::registerAffinePasses();
    registerLinalgPasses();
    memref::registerMemRefPasses();
    registerKilnPasses();
    registerKilnQuantPasses();
    registerKilnPipelines();
    registerKilnCodegenCommonPasses();
    registerKilnCpuPasses();
    registerKilnCpuQuantPasses();
    registerCpuPipelines();
    return true;
  }();
  (void)done;
}

} // namespace mlir::kiln
