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
#include "llvm/IR/ModuleSlotTracker.h"
#include "llvm/ADT/StringMap.h"
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

/// `f`'s type and body as text, with every metadata attachment replaced by
/// a form that is equal for equivalent functions: alias scopes numbered by
/// first sight (with their domain), a `noalias` list reduced to the scopes
/// some access of `f` is in (the others tell nothing about `f`'s accesses:
/// kiln-cpu-alias-scopes lists every disjoint root of the graph), loop
/// properties and other uniqued nodes by identity, distinct nodes other
/// than a loop's own ID by identity (never equal across functions). Empty
/// when `f` holds metadata as an operand (left alone).
std::string signature(llvm::Function &f, llvm::ModuleSlotTracker &slots) {
  // Local names (the translation's are numbers, a hand-written nest's are
  // not) must not make equal nests differ.
  for (llvm::Argument &arg : f.args())
    arg.setName("");
  llvm::DenseMap<const llvm::Metadata *, unsigned> scopeNumbers;
  for (llvm::BasicBlock &block : f) {
    block.setName("");
    for (llvm::Instruction &inst : block) {
      inst.setName("");
      for (llvm::Value *operand : inst.operands())
        if (llvm::isa<llvm::MetadataAsValue>(operand))
          return "";
      if (llvm::MDNode *scopes = inst.getMetadata(llvm::LLVMContext::MD_alias_scope))
        for (const llvm::MDOperand &scope : scopes->operands())
          scopeNumbers.try_emplace(scope.get(), scopeNumbers.size());
    }
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  f.getFunctionType()->print(os);
  slots.incorporateFunction(f);
  auto node = [&](const llvm::Metadata *m) { os << ' ' << static_cast<const void *>(m); };
  llvm::SmallVector<std::pair<unsigned, llvm::MDNode *>> attached;
  llvm::SmallVector<unsigned> numbers;
  for (llvm::BasicBlock &block : f) {
    os << "\n^";
    for (llvm::Instruction &inst : block) {
      std::string line;
      llvm::raw_string_ostream lineOs(line);
      inst.print(lineOs, slots);
      // The attachments print last (`, !alias.scope !7, !noalias !8`).
      os << "\n" << llvm::StringRef(line).take_front(line.find(", !"));
      inst.getAllMetadata(attached);
      for (auto [kind, md] : attached) {
        os << " |" << kind;
        if (kind == llvm::LLVMContext::MD_alias_scope || kind == llvm::LLVMContext::MD_noalias) {
          numbers.clear();
          for (const llvm::MDOperand &scope : md->operands()) {
            auto it = scopeNumbers.find(scope.get());
            if (it == scopeNumbers.end())
              continue;
            numbers.push_back(it->second);
            auto *scopeNode = llvm::dyn_cast<llvm::MDNode>(scope.get());
            if (scopeNode && scopeNode->getNumOperands() > 1)
              node(scopeNode->getOperand(1).get()); // the domain
          }
          llvm::sort(numbers);
          for (unsigned n : numbers)
            os << " s" << n;
        } else if (kind == llvm::LLVMContext::MD_loop) {
          for (const llvm::MDOperand &property : llvm::drop_begin(md->operands()))
            node(property.get());
        } else {
          node(md);
        }
      }
    }
  }
  return text;
}

/// Replaces each nest of `nests` whose signature equals an earlier one's by
/// that one; returns how many went. Model graphs repeat blocks of equal
/// shapes (a transformer's layers, a CNN stage's blocks): their nests
/// differ only in the buffers they are passed. Equal signatures mean equal
/// code and alias facts that correspond scope for scope, so the kept
/// nest's metadata holds for the other's arguments too.
unsigned mergeEqualNests(llvm::Module &module, llvm::ArrayRef<llvm::Function *> nests) {
  llvm::ModuleSlotTracker slots(&module);
  llvm::StringMap<llvm::Function *> kept;
  unsigned merged = 0;
  for (llvm::Function *nest : nests) {
    std::string key = signature(*nest, slots);
    if (key.empty())
      continue;
    auto [it, fresh] = kept.try_emplace(key, nest);
    if (fresh)
      continue;
    nest->replaceAllUsesWith(it->second);
    nest->eraseFromParent();
    ++merged;
  }
  return merged;
}

} // namespace

OutlinedNests outlineLoopNests(llvm::Module &module, unsigned minInstructions) {
  // The functions to split, listed first: extraction adds functions.
  llvm::SmallVector<llvm::Function *> big;
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && f.getInstructionCount() > minInstructions)
      big.push_back(&f);
  OutlinedNests result;
  llvm::SmallVector<llvm::Function *> outlinedNests;
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
      outlinedNests.push_back(outlined);
    }
  }
  result.moved = outlinedNests.size();
  result.merged = mergeEqualNests(module, outlinedNests);
  return result;
}

} // namespace mlir::kiln
