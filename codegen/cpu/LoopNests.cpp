//===- LoopNests.cpp - Shaping kiln's loop nests for LLVM's O3 ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// See LoopNests.h.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/LoopNests.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Scalar/EarlyCSE.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"

namespace mlir::kiln {

void keepOuterLoopsRolled(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    llvm::DominatorTree dom(f);
    llvm::LoopInfo loops(dom);
    for (llvm::Loop *loop : loops.getLoopsInPreorder()) {
      if (loop->getSubLoops().empty())
        continue;
      llvm::MDNode *disable =
          llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
      loop->setLoopID(llvm::makePostTransformationMetadata(ctx, loop->getLoopID(), {}, {disable}));
    }
  }
}

namespace {

/// Folds what the translation left for O3 to fold (descriptor field
/// reads of `insertvalue` chains, the same view's address computed twice):
/// a nest's live-ins are then the pointers it uses, and two accesses to
/// one buffer pass one pointer. Otherwise the nest gets descriptor structs
/// by value, and an in-place update (load and store through the same
/// address) gets two pointers that may overlap, which keeps it scalar.
void foldCopies(llvm::Function &f) {
  llvm::PassBuilder builder;
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::FunctionPassManager passes;
  passes.addPass(llvm::EarlyCSEPass());
  passes.run(f, functions);
}

} // namespace

unsigned outlineLoopNests(llvm::Module &module, unsigned minInstructions) {
  // The functions to split, listed first: extraction adds functions.
  llvm::SmallVector<llvm::Function *> big;
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && f.getInstructionCount() > minInstructions)
      big.push_back(&f);
  unsigned moved = 0;
  for (llvm::Function *f : big) {
    foldCopies(*f);
    llvm::DominatorTree dom(*f);
    llvm::LoopInfo loops(dom);
    llvm::CodeExtractorAnalysisCache cache(*f);
    llvm::SmallVector<llvm::Loop *> nests(loops.begin(), loops.end());
    for (llvm::Loop *nest : nests) {
      // The extractor keeps `dom` up to date; the other nests' blocks are
      // untouched, so `loops` stays right for them.
      llvm::CodeExtractor extractor(dom, *nest, /*AggregateArgs=*/false, nullptr, nullptr, nullptr,
                                    "nest");
      if (!extractor.isEligible())
        continue;
      llvm::Function *outlined = extractor.extractCodeRegion(cache);
      if (!outlined)
        continue;
      // Extracted functions copy their parent's attributes: the entry
      // function is always-inline (JitCompiler.cpp), a nest must not be.
      outlined->removeFnAttr(llvm::Attribute::AlwaysInline);
      outlined->addFnAttr(llvm::Attribute::NoInline);
      ++moved;
    }
  }
  return moved;
}

} // namespace mlir::kiln
