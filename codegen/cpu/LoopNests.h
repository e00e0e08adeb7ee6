//===- LoopNests.h - Shaping kiln's loop nests for LLVM's O3 ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Two rewrites of the translated LLVM module before O3 (ObjectCode.cpp's
// compileToObject), each about compile time: outer loops kept rolled, and
// the top-level loop nests of big functions outlined into functions of
// their own.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_LOOPNESTS_H
#define KILN_CODEGEN_CPU_LOOPNESTS_H

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::kiln {

/// Marks every loop that contains another loop `llvm.loop.unroll.disable`.
/// kiln's loop nests have static trip counts; LLVM fully unrolls any small
/// one, and an outer loop (a batch of 8 over a vectorized row of 240) then
/// becomes a block of thousands of instructions whose instruction selection
/// is quadratic in its stores: MobileNetV3's graph spent 7 s in X86 ISel.
/// Inner loops still unroll (short rows, taps), vectorize and interleave.
void keepOuterLoopsRolled(llvm::Module &module);

/// What outlineLoopNests did: nests moved into functions of their own, and
/// of those, how many were dropped for an equal one.
struct OutlinedNests {
  unsigned moved = 0;
  unsigned merged = 0;
};

/// In every function of more than `minInstructions` instructions, moves
/// each top-level loop nest into a `noinline` internal function of its own
/// (llvm::CodeExtractor; the nest's live-in values become arguments). A
/// whole graph lowers to one function whose loop nests are independent;
/// several O3 passes (loop rotation, LICM, induction-variable
/// simplification, GVN) are superlinear in a function's size, and on a
/// training graph's backward (mobilenet_v2: 60,000 lines of IR in one
/// function) they were most of the compile. The nests' loads and stores
/// keep their alias-scope metadata (kiln-cpu-alias-scopes), which does not
/// depend on the function they sit in. Then nests equal up to the buffers
/// they are passed (same code, alias scopes in the same pattern) share one
/// function: a model's repeated blocks are optimized and emitted once.
OutlinedNests outlineLoopNests(llvm::Module &module, unsigned minInstructions);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_CPU_LOOPNESTS_H
