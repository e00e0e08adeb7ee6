//===- LowerOutputAllocs.cpp - output allocs → the frontend's tensors --------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-lower-output-allocs`: each `memref.alloc` carrying
// `kiln.output_index = i` (placed by kiln-cpu-lazy-outputs) becomes a call
// `kilnOutputData(i, bytes)` (runtime/cpu/CallHooks.h: the frontend
// allocates the caller's tensor and returns its data) and a descriptor
// built around the pointer. Runs after kiln-cpu-alias-scopes (which sees
// the alloc as a root of its own) and before finalize-memref-to-llvm
// (which would make it a malloc).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPULOWEROUTPUTALLOCSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

struct OutputAllocLowering : ConvertOpToLLVMPattern<memref::AllocOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult matchAndRewrite(memref::AllocOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto index = op->getAttrOfType<IntegerAttr>(kOutputIndexAttr);
    MemRefType type = op.getType();
    if (!index || !isConvertibleAndHasIdentityMaps(type))
      return failure();
    Location loc = op.getLoc();
    SmallVector<Value, 4> sizes, strides;
    Value bytes;
    getMemRefDescriptorSizes(loc, type, adaptor.getDynamicSizes(), rewriter, sizes, strides, bytes);
    Type i64 = rewriter.getI64Type();
    LLVM::LLVMFuncOp fn = LLVM::lookupOrCreateFn(op->getParentOfType<ModuleOp>(), "kilnOutputData",
                                                 {i64, i64}, getVoidPtrType());
    Value i = rewriter.create<LLVM::ConstantOp>(loc, i64, index.getInt());
    Value data = rewriter.create<LLVM::CallOp>(loc, fn, ValueRange{i, bytes}).getResult();
    rewriter.replaceOp(op,
                       {createMemRefDescriptor(loc, type, data, data, sizes, strides, rewriter)});
    return success();
  }
};

struct CpuLowerOutputAllocsPass : impl::CpuLowerOutputAllocsPassBase<CpuLowerOutputAllocsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    module.walk([&](memref::AllocOp op) { any |= op->hasAttr(kOutputIndexAttr); });
    if (!any)
      return;
    LLVMTypeConverter converter(&getContext());
    RewritePatternSet patterns(&getContext());
    patterns.add<OutputAllocLowering>(converter);
    ConversionTarget target(getContext());
    target.addLegalDialect<LLVM::LLVMDialect>();
    target.addDynamicallyLegalOp<memref::AllocOp>(
        [](memref::AllocOp op) { return !op->hasAttr(kOutputIndexAttr); });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln
