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
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

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

// Three copies of `dst[i] = src[i] * 2` on different buffers: the first
// two with the same alias pattern (source and destination disjoint), the
// third with the same attachments in another pattern: source and
// destination in one scope (they may overlap).
constexpr const char *kRepeatedNests = R"ll(
define void @forward(ptr %a, ptr %b, ptr %c, ptr %d, ptr %e, ptr %f) {
entry:
  br label %first
first:
  %i = phi i64 [ 0, %entry ], [ %i.next, %first ]
  %x = getelementptr float, ptr %a, i64 %i
  %xv = load float, ptr %x, !alias.scope !3, !noalias !4
  %xw = fmul float %xv, 2.0
  %y = getelementptr float, ptr %b, i64 %i
  store float %xw, ptr %y, !alias.scope !4, !noalias !3
  %i.next = add i64 %i, 1
  %i.more = icmp ult i64 %i.next, 16
  br i1 %i.more, label %first, label %second.pre
second.pre:
  br label %second
second:
  %j = phi i64 [ 0, %second.pre ], [ %j.next, %second ]
  %u = getelementptr float, ptr %c, i64 %j
  %uv = load float, ptr %u, !alias.scope !5, !noalias !6
  %uw = fmul float %uv, 2.0
  %v = getelementptr float, ptr %d, i64 %j
  store float %uw, ptr %v, !alias.scope !6, !noalias !5
  %j.next = add i64 %j, 1
  %j.more = icmp ult i64 %j.next, 16
  br i1 %j.more, label %second, label %third.pre
third.pre:
  br label %third
third:
  %k = phi i64 [ 0, %third.pre ], [ %k.next, %third ]
  %p = getelementptr float, ptr %e, i64 %k
  %pv = load float, ptr %p, !alias.scope !7, !noalias !6
  %pw = fmul float %pv, 2.0
  %q = getelementptr float, ptr %f, i64 %k
  store float %pw, ptr %q, !alias.scope !7, !noalias !6
  %k.next = add i64 %k, 1
  %k.more = icmp ult i64 %k.next, 16
  br i1 %k.more, label %third, label %done
done:
  ret void
}
!0 = distinct !{!0, !"kiln"}
!1 = distinct !{!1, !0, !"root a"}
!2 = distinct !{!2, !0, !"root b"}
!8 = distinct !{!8, !0, !"root c"}
!9 = distinct !{!9, !0, !"root d"}
!10 = distinct !{!10, !0, !"root e"}
!3 = !{!1}
!4 = !{!2}
!5 = !{!8}
!6 = !{!9}
!7 = !{!10}
)ll";

TEST(LoopNestsTest, NestsEqualUpToTheirBuffersShareOneFunction) {
  llvm::LLVMContext ctx;
  auto module = parse(ctx, kRepeatedNests);
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
