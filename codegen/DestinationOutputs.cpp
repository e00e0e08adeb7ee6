// SKELETON (being written): DestinationOutputsPass.
#include "codegen/Passes.h"
namespace mlir::kiln {
#define GEN_PASS_DEF_DESTINATIONOUTPUTSPASS
#include "codegen/Passes.h.inc"
namespace {
struct DestinationOutputsPass : impl::DestinationOutputsPassBase<DestinationOutputsPass> {
  void runOnOperation() override {}
};
} // namespace
} // namespace mlir::kiln
