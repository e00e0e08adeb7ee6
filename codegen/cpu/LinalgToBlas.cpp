// SKELETON (being written): LinalgToBlasPass.
#include "codegen/Passes.h"
namespace mlir::kiln {
#define GEN_PASS_DEF_LINALGTOBLASPASS
#include "codegen/Passes.h.inc"
namespace {
struct LinalgToBlasPass : impl::LinalgToBlasPassBase<LinalgToBlasPass> {
  void runOnOperation() override {}
};
} // namespace
} // namespace mlir::kiln
