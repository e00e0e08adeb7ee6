//===- kiln-opt.cpp - mlir-opt for kiln ---------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Parses, verifies, prints and transforms .mlir files with the kiln dialect,
// every kiln pass, the upstream passes kiln's pipelines use, and the named
// pipelines (kiln-optimize, kiln-cpu-lowering).
//===----------------------------------------------------------------------===//
#include "registration/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  mlir::kiln::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "kiln optimizer driver\n", registry));
}
