//===- LoopNestsTest.cpp - loop nests outlined before O3 ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// outlineLoopNests (codegen/cpu/LoopNests.h) on hand-written LLVM IR: each
// top-level nest of a big function becomes a noinline function, one buffer
// reached through two copies of its address is passed once (an in-place
// update must stay provably in place, or it stays scalar), small functions
// are left alone, and the outlined module still verifies and computes the
// same values.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/LoopNests.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln::test {
namespace {

// Two nests: an in-place `a[16 + i] += 1` whose load and store addresses
// are two copies of one `getelementptr`, then `b[j] = 0`.
constexpr const char *kTwoNests = R"ll(
define void @forward(ptr %a, ptr %b) alwaysinline {
entry:
  %p = getelementptr i8, ptr %a, i64 64
  %q = getelementptr i8, ptr %a, i64 64
  br label %inc
inc:
  %i = phi i64 [ 0, %entry ], [ %i.next, %inc ]
  %src = getelementptr float, ptr %p, i64 %i
  %v = load float, ptr %src
  %w = fadd float %v, 1.0
  %dst = getelementptr float, ptr %q, i64 %i
  store float %w, ptr %dst
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, 16
  br i1 %more, label %inc, label %between
between:
  br label %zero
zero:
  %j = phi i64 [ 0, %between ], [ %j.next, %zero ]
  %out = getelementptr float, ptr %b, i64 %j
  store float 0.0, ptr %out
  %j.next = add i64 %j, 1
  %again = icmp ult i64 %j.next, 8
  br i1 %again, label %zero, label %done
done:
  ret void
}
)ll";

std::unique_ptr<llvm::Module> parse(llvm::LLVMContext &ctx, const char *text) {
  llvm::SMDiagnostic error;
  auto module = llvm::parseAssemblyString(text, error, ctx);
  if (!module)
    error.print("LoopNestsTest", llvm::errs());
  return module;
}

TEST(LoopNestsTest, EachNestOfABigFunctionBecomesANoinlineFunction) {
  llvm::LLVMContext ctx;
  auto module = parse(ctx, kTwoNests);
  ASSERT_TRUE(module);
  mlir::kiln::OutlinedNests done = mlir::kiln::outlineLoopNests(*module, /*minInstructions=*/0);
  EXPECT_EQ(done.moved, 2u);
  EXPECT_EQ(done.merged, 0u);
  EXPECT_FALSE(llvm::verifyModule(*module, &llvm::errs()));
  std::vector<llvm::Function *> nests;
  for (llvm::Function &f : *module)
    if (&f != module->getFunction("forward"))
      nests.push_back(&f);
  ASSERT_EQ(nests.size(), 2u);
  for (llvm::Function *nest : nests) {
    EXPECT_TRUE(nest->hasFnAttribute(llvm::Attribute::NoInline)) << nest->getName().str();
    EXPECT_FALSE(nest->hasFnAttribute(llvm::Attribute::AlwaysInline)) << nest->getName().str();
    EXPECT_TRUE(nest->hasInternalLinkage()) << nest->getName().str();
    // The in-place nest reads and writes through one pointer argument (the
    // two address copies were folded first), the other gets `b`.
    EXPECT_EQ(nest->arg_size(), 1u) << nest->getName().str();
  }
  // What is left of the entry function: no loop, two calls.
  unsigned calls = 0;
  for (llvm::Instruction &inst : llvm::instructions(*module->getFunction("forward")))
    calls += llvm::isa<llvm::CallInst>(inst);
  EXPECT_EQ(calls, 2u);
}

TEST(LoopNestsTest, SmallFunctionsStayWhole) {
  llvm::LLVMContext ctx;
  auto module = parse(ctx, kTwoNests);
  ASSERT_TRUE(module);
  std::string before;
  llvm::raw_string_ostream(before) << *module;
  EXPECT_EQ(mlir::kiln::outlineLoopNests(*module, /*minInstructions=*/1000).moved, 0u);
  std::string after;
  llvm::raw_string_ostream(after) << *module;
  EXPECT_EQ(before, after);
}

/// One nest `dst[i] = src[i] * 2` in block `name` (entered from
/// `name.pre`, leaving to `next`), with the load's and the store's
/// alias-scope attachments.
std::string scaleNest(const std::string &name, const std::string &src, const std::string &dst,
                      const std::string &loadMd, const std::string &storeMd,
                      const std::string &next) {
  return llvm::formatv(R"ll({0}.pre:
  br label %{0}
{0}:
  %{0}.i = phi i64 [ 0, %{0}.pre ], [ %{0}.next, %{0} ]
  %{0}.src = getelementptr float, ptr {1}, i64 %{0}.i
  %{0}.v = load float, ptr %{0}.src, {3}
  %{0}.w = fmul float %{0}.v, 2.0
  %{0}.dst = getelementptr float, ptr {2}, i64 %{0}.i
  store float %{0}.w, ptr %{0}.dst, {4}
  %{0}.next = add i64 %{0}.i, 1
  %{0}.more = icmp ult i64 %{0}.next, 16
  br i1 %{0}.more, label %{0}, label %{5}
)ll",
                       name, src, dst, loadMd, storeMd, next)
      .str();
}

// Three copies of `dst[i] = src[i] * 2` on different buffers: the first
// two with the same alias pattern (source and destination disjoint), the
// third with the same attachments in another pattern: source and
// destination in one scope (they may overlap).
std::string repeatedNests() {
  return "define void @forward(ptr %a, ptr %b, ptr %c, ptr %d, ptr %e, ptr %f) {\n"
         "entry:\n  br label %first.pre\n" +
         scaleNest("first", "%a", "%b", "!alias.scope !3, !noalias !4",
                   "!alias.scope !4, !noalias !3", "second.pre") +
         scaleNest("second", "%c", "%d", "!alias.scope !5, !noalias !6",
                   "!alias.scope !6, !noalias !5", "third.pre") +
         scaleNest("third", "%e", "%f", "!alias.scope !7, !noalias !6",
                   "!alias.scope !7, !noalias !6", "done") +
         "done:\n  ret void\n}\n"
         "!0 = distinct !{!0, !\"kiln\"}\n"
         "!1 = distinct !{!1, !0, !\"root a\"}\n"
         "!2 = distinct !{!2, !0, !\"root b\"}\n"
         "!8 = distinct !{!8, !0, !\"root c\"}\n"
         "!9 = distinct !{!9, !0, !\"root d\"}\n"
         "!10 = distinct !{!10, !0, !\"root e\"}\n"
         "!3 = !{!1}\n!4 = !{!2}\n!5 = !{!8}\n!6 = !{!9}\n!7 = !{!10}\n";
}

TEST(LoopNestsTest, NestsEqualUpToTheirBuffersShareOneFunction) {
  llvm::LLVMContext ctx;
  auto module = parse(ctx, repeatedNests().c_str());
  ASSERT_TRUE(module);
  mlir::kiln::OutlinedNests done = mlir::kiln::outlineLoopNests(*module, /*minInstructions=*/0);
  EXPECT_EQ(done.moved, 3u);
  EXPECT_EQ(done.merged, 1u);
  EXPECT_FALSE(llvm::verifyModule(*module, &llvm::errs()));
  // Left: @forward, the shared nest (called twice) and the may-overlap one.
  llvm::SmallVector<unsigned> callsPerNest;
  for (llvm::Function &f : *module)
    if (&f != module->getFunction("forward"))
      callsPerNest.push_back(f.getNumUses());
  llvm::sort(callsPerNest);
  EXPECT_EQ(callsPerNest, (llvm::SmallVector<unsigned>{1, 2}));
}

} // namespace
} // namespace kiln::test
