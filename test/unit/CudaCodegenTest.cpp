//===- CudaCodegenTest.cpp - emitted CUDA kernels compile with NVRTC ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Runs the CUDA prepare pipeline + emitter on every source-emission case of
// test/codegen/cuda (the lit files, minus the error cases), with and without
// row fusion, and compiles the result with NVRTC to cubins for sm_80 and sm_90, checking that every
// kernel of the launch plan is in the cubin. Skipped when kiln was built
// without NVRTC. No GPU or driver is needed.
//===----------------------------------------------------------------------===//
#include "registration/Registration.h"
#include "codegen/cuda/CudaEmitter.h"
#ifdef KILN_HAVE_NVRTC
#include "codegen/cuda/NvrtcCompiler.h"
#endif

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

std::vector<std::string> cudaCases() {
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(KILN_CUDA_TEST_DIR, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    // errors*: emission fails on purpose; collect-*: needs collectUnsupported.
    if (name.ends_with(".mlir") && !name.starts_with("errors") && !name.starts_with("collect"))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Emits CUDA for one .mlir file; fails the test on any error.
mlir::FailureOr<mlir::kiln::cuda::CudaModule> emitFile(mlir::MLIRContext &ctx,
                                                       const std::string &path,
                                                       bool fuseRows = true,
                                                       bool onePassRows = true) {
  llvm::SourceMgr sm;
  std::string err;
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return mlir::failure();
  sm.AddNewSourceBuffer(std::move(*buf), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(sm, &ctx);
  if (!module)
    return mlir::failure();
  mlir::PassManager pm(&ctx);
  mlir::kiln::cuda::buildCudaPreparePipeline(pm);
  if (mlir::failed(pm.run(*module)))
    return mlir::failure();
  mlir::kiln::cuda::EmitOptions options;
  options.fuseRows = fuseRows;
  options.onePassRows = onePassRows;
  return mlir::kiln::cuda::emitCuda(*module, options);
}

std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  mlir::kiln::registerAllPasses();
  auto ctx = std::make_unique<mlir::MLIRContext>(registry);
  ctx->loadAllAvailableDialects();
  return ctx;
}

TEST(CudaEmitter, EmitsEveryLitCase) {
  auto ctx = makeContext();
  std::vector<std::string> files = cudaCases();
  ASSERT_GE(files.size(), 4u) << "test/codegen/cuda cases not found in " << KILN_CUDA_TEST_DIR;
  for (const std::string &f : files)
    // Row groups with one-pass statistics, row groups with one loop per
    // reduction, one kernel per generic.
    for (int variant : {0, 1, 2}) {
      auto cu = emitFile(*ctx, f, variant < 2, variant == 0);
      ASSERT_TRUE(mlir::succeeded(cu)) << f;
      EXPECT_FALSE(cu->kernels.empty()) << f;
      for (const auto &k : cu->kernels) {
        // Symbolic sizes (dynamic.mlir): launch rules per call; a row
        // kernel's block is chosen then (launch bounds 1024).
        int64_t bounds =
            k.symbols && k.kind == mlir::kiln::cuda::KernelInfo::RowReduction ? 1024 : k.blockX;
        EXPECT_NE(cu->source.find("void __launch_bounds__(" + std::to_string(bounds) + ") " +
                                  k.name + "("),
                  std::string::npos)
            << k.name;
        EXPECT_EQ(k.blockX % 32, 0) << k.name;
        EXPECT_LE(k.blockX, 1024) << k.name;
        if (k.symbols) {
          EXPECT_EQ(k.gridX, 0) << k.name;
          EXPECT_FALSE(k.work.empty()) << k.name;
        } else {
          EXPECT_GE(k.gridX, 1) << k.name;
        }
      }
    }
}

TEST(CudaEmitter, PlanHasGemmStepsAndCollectedUnsupportedOps) {
  auto ctx = makeContext();
  const char *ir = R"mlir(
    func.func @f(%x: tensor<?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?xf32> {
      %0 = kiln.matmul %x, %w : tensor<?x16xf32>, tensor<16x32xf32>
      %1 = kiln.argmax %0 {dim = 1 : i64} : tensor<?x32xf32> -> tensor<?xi64>
      %2 = kiln.cast %1 : tensor<?xi64> -> tensor<?xf32>
      return %2 : tensor<?xf32>
    })mlir";
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(ir, ctx.get());
  ASSERT_TRUE(module);
  mlir::PassManager pm(ctx.get());
  mlir::kiln::cuda::buildCudaPreparePipeline(pm);
  ASSERT_TRUE(mlir::succeeded(pm.run(*module)));
  mlir::kiln::cuda::EmitOptions options;
  // Without collecting, argmax over a `?` dim (a two-output reduction) fails
  // the whole module.
  {
    mlir::ScopedDiagnosticHandler quiet(ctx.get(),
                                        [](mlir::Diagnostic &) { return mlir::success(); });
    EXPECT_TRUE(mlir::failed(mlir::kiln::cuda::emitCuda(*module, options)));
  }
  options.collectUnsupported = true;
  auto cu = mlir::kiln::cuda::emitCuda(*module, options);
  ASSERT_TRUE(mlir::succeeded(cu));
  ASSERT_EQ(cu->functions.size(), 1u);
  const auto &steps = cu->functions[0].steps;
  using Step = mlir::kiln::cuda::LaunchStep;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].kind, Step::Extern);
  EXPECT_EQ(steps[1].kind, Step::Unsupported);
  EXPECT_EQ(steps[2].kind, Step::Kernel);
  ASSERT_EQ(cu->externs.size(), 1u);
  // The GEMM's M is the symbol s0 (evaluated per call), N and K static.
  const auto &g = cu->externs[0];
  EXPECT_EQ(g.m, -1);
  EXPECT_EQ(g.n, 32);
  EXPECT_EQ(g.k, 16);
  EXPECT_EQ(g.dims, (std::vector<std::string>{"1", "s0", "32", "16"}));
  EXPECT_FALSE(g.transB);
  ASSERT_EQ(cu->unsupported.size(), 1u);
  EXPECT_NE(cu->unsupported[0].reason.find("single-output reductions only"), std::string::npos);
  // The unsupported op reads the GEMM's buffer; the cast reads its indices.
  ASSERT_EQ(cu->unsupported[0].results.size(), 2u);
  ASSERT_EQ(cu->kernels.size(), 1u);
  EXPECT_EQ(cu->kernels[0].args[0], cu->unsupported[0].results[1]);
  EXPECT_EQ(cu->functions[0].results.size(), 1u);
}

TEST(CudaEmitter, LaunchRule) {
  using namespace mlir::kiln::cuda;
  EXPECT_EQ(reductionBlockSize(1), 32);
  EXPECT_EQ(reductionBlockSize(1000), 256);
  EXPECT_EQ(reductionBlockSize(4096), 1024);
  EXPECT_EQ(reductionBlockSize(1 << 20), 1024);
  EXPECT_EQ(pointwiseGridSize(1), 1);
  EXPECT_EQ(pointwiseGridSize(8192), 32);
  EXPECT_EQ(pointwiseGridSize(int64_t(1) << 30), 4096);
}

TEST(CudaNvrtc, CompilesEveryEmittedKernelForSm80AndSm90) {
#ifndef KILN_HAVE_NVRTC
  GTEST_SKIP() << "kiln was built without NVRTC";
#else
  using namespace mlir::kiln::cuda;
  auto ctx = makeContext();
  int kernels = 0;
  double seconds[2] = {0, 0};
  for (const std::string &f : cudaCases())
    // Row groups with one-pass statistics, row groups with one loop per
    // reduction, one kernel per generic.
    for (int variant : {0, 1, 2}) {
      auto cu = emitFile(*ctx, f, variant < 2, variant == 0);
      ASSERT_TRUE(mlir::succeeded(cu)) << f;
      for (int i = 0; i < 2; ++i) {
        NvrtcOptions o;
        o.arch = i == 0 ? 80 : 90;
        auto r = compileWithNvrtc(cu->source, llvm::sys::path::filename(f), o);
        if (!r) {
          ADD_FAILURE() << f << ": " << llvm::toString(r.takeError());
          continue;
        }
        seconds[i] += r->seconds;
        EXPECT_FALSE(r->binary.empty());
        // extern "C" kernels keep their names in the cubin's symbol table.
        for (const KernelInfo &k : cu->kernels)
          EXPECT_NE(r->binary.find(k.name), std::string::npos) << k.name << " sm_" << o.arch;
      }
      kernels += int(cu->kernels.size());
    }
  std::printf("[ nvrtc %s ] %d kernels: sm_80 %.3f s, sm_90 %.3f s\n", nvrtcVersion().c_str(),
              kernels, seconds[0], seconds[1]);
#endif
}

TEST(CudaNvrtc, ErrorCarriesLogAndSource) {
#ifndef KILN_HAVE_NVRTC
  GTEST_SKIP() << "kiln was built without NVRTC";
#else
  using namespace mlir::kiln::cuda;
  auto r = compileWithNvrtc("extern \"C\" __global__ void k() { undefined_thing(); }\n", "bad.cu",
                            NvrtcOptions());
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("NVRTC compilation failed for sm_80"), std::string::npos) << msg;
  EXPECT_NE(msg.find("undefined_thing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--- source ---"), std::string::npos) << msg;
#endif
}

} // namespace
