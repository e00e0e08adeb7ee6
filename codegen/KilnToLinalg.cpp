// SKELETON (being written): ConvertKilnToLinalgPass.
#include "codegen/Passes.h"
namespace mlir::kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALGPASS
#include "codegen/Passes.h.inc"
namespace {
struct ConvertKilnToLinalgPass : impl::ConvertKilnToLinalgPassBase<ConvertKilnToLinalgPass> {
  void runOnOperation() override {}
};
} // namespace
} // namespace mlir::kiln
