// SKELETON (being written): ApproximateMathPass.
#include "codegen/Passes.h"
namespace mlir::kiln {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "codegen/Passes.h.inc"
namespace {
struct ApproximateMathPass : impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {}
};
} // namespace
} // namespace mlir::kiln
