// SKELETON (being written): the CPU lowering pipeline.
#include "codegen/Passes.h"
namespace mlir::kiln {
void buildCpuLoweringPipeline(OpPassManager &pm) {}
} // namespace mlir::kiln
