//===- ExportObject.cpp - run-time calls through an import table -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements ExportObject.h. Runs after LLVM's O3 pipeline (so the
// optimizer still sees `malloc`/`free` by name, as in the JIT) and before
// code generation.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/ExportObject.h"

#include "codegen/cpu/RuntimeSymbols.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

#include <set>

namespace mlir::kiln {
namespace {

/// Whether `module` truncates to bf16 anywhere: on CPUs without AVX-512
/// BF16 instruction selection turns that into a call of `__truncsfbf2`,
/// which no IR rewrite sees.
bool truncatesToBF16(llvm::Module &module) {
  for (llvm::Function &f : module)
    for (llvm::Instruction &i : llvm::instructions(f))
      if (llvm::isa<llvm::FPTruncInst>(i) && i.getType()->getScalarType()->isBFloatTy())
        return true;
  return false;
}

/// Defines a hidden `__truncsfbf2` that calls import slot `slot` (kiln's
/// kilnTruncSfBf2; libgcc 12 has none), so that the libcall binds inside
/// the library.
void defineTruncSfBf2(llvm::Module &module, llvm::GlobalVariable *table, size_t slot,
                      std::vector<std::string> &imports) {
  if (llvm::Function *old = module.getFunction("__truncsfbf2"); old && old->use_empty())
    old->eraseFromParent(); // an unused declaration would take the name
  llvm::LLVMContext &ctx = module.getContext();
  auto *type =
      llvm::FunctionType::get(llvm::Type::getBFloatTy(ctx), {llvm::Type::getFloatTy(ctx)}, false);
  auto *f =
      llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, "__truncsfbf2", module);
  f->setVisibility(llvm::GlobalValue::HiddenVisibility);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Value *at = b.CreateConstInBoundsGEP2_64(table->getValueType(), table, 0, slot);
  b.CreateRet(b.CreateCall(type, b.CreateLoad(ptr, at), {f->getArg(0)}));
  imports.push_back("__truncsfbf2");
}

} // namespace

llvm::Error indirectRuntimeCalls(llvm::Module &module, std::vector<std::string> &imports) {
  std::set<std::string> known;
  for (auto &[name, address] : runtimeSymbols())
    known.insert(name);
  std::vector<llvm::Function *> used;
  for (llvm::Function &f : module)
    if (f.isDeclaration() && !f.use_empty() && known.count(f.getName().str()))
      used.push_back(&f);
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  bool bf16 = truncatesToBF16(module);
  auto *tableType = llvm::ArrayType::get(ptr, std::max<size_t>(used.size() + bf16, 1));
  auto *table = new llvm::GlobalVariable(
      module, tableType, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantAggregateZero::get(tableType), kImportTableName);
  imports.clear();
  for (auto [slot, f] : llvm::enumerate(used)) {
    imports.push_back(f->getName().str());
    for (llvm::Use &use : llvm::make_early_inc_range(f->uses())) {
      auto *inst = llvm::dyn_cast<llvm::Instruction>(use.getUser());
      if (!inst || llvm::isa<llvm::PHINode>(inst))
        return llvm::createStringError("kiln.export: " + f->getName().str() +
                                       " is used outside a call; cannot route it through the "
                                       "import table");
      llvm::IRBuilder<> b(inst);
      llvm::Value *at = b.CreateConstInBoundsGEP2_64(tableType, table, 0, slot);
      use.set(b.CreateLoad(ptr, at, f->getName() + ".import"));
    }
    f->eraseFromParent();
  }
  if (bf16)
    defineTruncSfBf2(module, table, used.size(), imports);
  return llvm::Error::success();
}

} // namespace mlir::kiln
