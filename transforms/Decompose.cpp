// SKELETON (being written): kiln-decompose.
#include "transforms/Passes.h"
namespace mlir::kiln {
#define GEN_PASS_DEF_DECOMPOSEPASS
#include "transforms/Passes.h.inc"
namespace {
struct DecomposePass : impl::DecomposePassBase<DecomposePass> {
  void runOnOperation() override {}
};
} // namespace
} // namespace mlir::kiln
