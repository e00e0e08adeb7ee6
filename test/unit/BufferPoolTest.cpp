//===- BufferPoolTest.cpp - the buffer pool of compiled code ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// runtime/cpu/BufferPool: large freed blocks are handed out again for the same
// size, small ones are not kept, the per-thread limits hold; and JIT'd code
// allocates its intermediates from the pool (a second call reuses them and
// computes the same result).
//===----------------------------------------------------------------------===//
#include "registration/Registration.h"
#include "codegen/cpu/JitCompiler.h"
#include "runtime/cpu/BufferPool.h"
#include "runtime/MemRefDescriptor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using kiln::rt::bufferPoolStats;

TEST(BufferPoolTest, LargeBlocksAreReusedBySize) {
  const size_t big = kiln::rt::kPoolMinBlock + 123;
  void *a = kilnPoolMalloc(big);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 16, 0u);
  std::memset(a, 0x5a, big);
  kilnPoolFree(a);
  auto before = bufferPoolStats();
  void *b = kilnPoolMalloc(big);
  EXPECT_EQ(a, b);
  EXPECT_EQ(bufferPoolStats().hits, before.hits + 1);
  void *c = kilnPoolMalloc(big); // the kept block is taken: a fresh one
  EXPECT_NE(c, b);
  EXPECT_EQ(bufferPoolStats().misses, before.misses + 1);
  void *d = kilnPoolMalloc(big + 16); // another size never matches
  EXPECT_NE(d, b);
  kilnPoolFree(b);
  kilnPoolFree(c);
  kilnPoolFree(d);
  kilnPoolFree(nullptr);
}

TEST(BufferPoolTest, SmallBlocksAreNotCounted) {
  auto before = bufferPoolStats();
  void *p = kilnPoolMalloc(100);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, 100);
  kilnPoolFree(p);
  kilnPoolFree(kilnPoolMalloc(0));
  EXPECT_EQ(bufferPoolStats().hits, before.hits);
  EXPECT_EQ(bufferPoolStats().misses, before.misses);
}

TEST(BufferPoolTest, LiveAndPeakBytesFollowMallocAndFree) {
  kiln::rt::resetBufferPoolPeak();
  auto before = bufferPoolStats();
  EXPECT_EQ(before.peakBytes, before.liveBytes);
  const size_t big = kiln::rt::kPoolMinBlock * 2;
  void *a = kilnPoolMalloc(big);
  void *b = kilnPoolMalloc(100); // small blocks count too
  EXPECT_EQ(bufferPoolStats().liveBytes, before.liveBytes + long(big) + 100);
  kilnPoolFree(a);
  void *c = kilnPoolMalloc(big); // a kept block handed out again is live again
  kilnPoolFree(c);
  kilnPoolFree(b);
  auto after = bufferPoolStats();
  EXPECT_EQ(after.liveBytes, before.liveBytes);
  EXPECT_EQ(after.peakBytes, before.liveBytes + long(big) + 100);
  kiln::rt::resetBufferPoolPeak();
  EXPECT_EQ(bufferPoolStats().peakBytes, before.liveBytes);
}

TEST(BufferPoolTest, KeepsAtMostTheLimitOldestEvicted) {
  // On a fresh thread: free more distinct sizes than the block limit; the
  // oldest are evicted (reallocating them misses), the newest are kept.
  std::thread([] {
    const size_t n = kiln::rt::kPoolMaxBlocks + 6;
    std::vector<void *> ptrs;
    for (size_t i = 0; i < n; ++i)
      ptrs.push_back(kilnPoolMalloc(kiln::rt::kPoolMinBlock + 64 * i));
    for (void *p : ptrs)
      kilnPoolFree(p);
    auto before = bufferPoolStats();
    void *oldest = kilnPoolMalloc(kiln::rt::kPoolMinBlock);
    EXPECT_EQ(bufferPoolStats().misses, before.misses + 1);
    void *newest = kilnPoolMalloc(kiln::rt::kPoolMinBlock + 64 * (n - 1));
    EXPECT_EQ(bufferPoolStats().hits, before.hits + 1);
    EXPECT_EQ(newest, ptrs.back());
    kilnPoolFree(oldest);
    kilnPoolFree(newest);
    // A block over the byte limit is never kept.
    void *huge = kilnPoolMalloc(kiln::rt::kPoolMaxBytes + 1);
    kilnPoolFree(huge);
    auto mid = bufferPoolStats();
    kilnPoolFree(kilnPoolMalloc(kiln::rt::kPoolMaxBytes + 1));
    EXPECT_EQ(bufferPoolStats().misses, mid.misses + 1);
  }).join();
}

TEST(BufferPoolTest, CompiledCodeReusesItsIntermediates) {
  // The GEMM result (128x256 f32 = 128 KiB) is an intermediate of tanh.
  mlir::MLIRContext ctx;
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
    func.func @forward(%x: tensor<128x64xf32>, %w: tensor<64x256xf32>) -> tensor<128x256xf32> {
      %m = kiln.matmul %x, %w : tensor<128x64xf32>, tensor<64x256xf32>
      %r = kiln.tanh %m : tensor<128x256xf32>
      return %r : tensor<128x256xf32>
    })mlir",
                                                        &ctx);
  ASSERT_TRUE(module);
  std::string error;
  auto fn = mlir::kiln::compileForCpu(*module, "forward", {}, error);
  ASSERT_TRUE(fn.entry) << error;
  std::vector<float> x(128 * 64), w(64 * 256), out(128 * 256);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.01f * float(i % 53) - 0.2f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.01f * float(i % 29) - 0.1f;
  int64_t xs[] = {128, 64}, xst[] = {64, 1}, ws[] = {64, 256}, wst[] = {256, 1}, os[] = {128, 256},
          ost[] = {256, 1};
  kiln::rt::MemRefDescriptor dx, dw, dout;
  dx.reset(x.data(), xs, xst, 2);
  dw.reset(w.data(), ws, wst, 2);
  dout.reset(out.data(), os, ost, 2);
  void *ptrs[] = {dx.data(), dw.data(), dout.data()};
  void *args[] = {&ptrs[0], &ptrs[1], &ptrs[2]};
  fn(args);
  std::vector<float> first = out;
  auto before = bufferPoolStats();
  std::fill(out.begin(), out.end(), 0.0f);
  fn(args);
  EXPECT_GE(bufferPoolStats().hits, before.hits + 1);
  EXPECT_EQ(out, first);
  for (int i = 0; i < 128; i += 37)
    for (int j = 0; j < 256; j += 41) {
      double acc = 0;
      for (int k = 0; k < 64; ++k)
        acc += double(x[i * 64 + k]) * w[k * 256 + j];
      EXPECT_NEAR(out[i * 256 + j], std::tanh(acc), 1e-5) << i << "," << j;
    }
}

} // namespace
