// SKELETON (being written): the ORC JIT driver.
#include "codegen/cpu/JitCompiler.h"
#include "mlir/IR/BuiltinOps.h"
namespace mlir::kiln {
::kiln::rt::CompiledFunction compileForCpu(ModuleOp, const std::string &,
                                         const CpuCompileOptions &, std::string &error) {
  error = "not yet";
  return {};
}
} // namespace mlir::kiln
