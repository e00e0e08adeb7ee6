//===- JitThroughputTest.cpp - CPU JIT timings ----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Single-thread timings of compiled kernels against simple references;
// disabled by default (`kiln-unit-tests --gtest_also_run_disabled_tests
// --gtest_filter='*Throughput*'`).
//===----------------------------------------------------------------------===//
#include "JitTestUtils.h"

namespace kiln::test {
namespace {

/// Median wall time of `fn` over `reps` runs, in ms.
double medianMs(const std::function<void()> &fn, int reps = 21) {
  std::vector<double> times;
  fn();
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Run with --gtest_also_run_disabled_tests to print single-thread timings.
TEST_F(JitTest, DISABLED_Throughput) {
  auto bench = [](const char *name, const std::string &src, std::vector<Shape> ins, Shape out) {
    Compiled c(src);
    ASSERT_COMPILED(c);
    std::vector<Buf<float>> bufs;
    for (size_t i = 0; i < ins.size(); ++i)
      bufs.push_back(random<float>(ins[i], 100 + i));
    bufs.emplace_back(out);
    std::vector<kiln::rt::MemRefDescriptor *> descs;
    for (auto &b : bufs)
      descs.push_back(&b.desc);
    std::printf("[ bench ] %-34s %8.3f ms\n", name, medianMs([&] { c(descs); }));
  };
  bench("relu(x*2+1) 4M f32", R"mlir(
    func.func @forward(%x: tensor<4194304xf32>) -> tensor<4194304xf32> {
      %two = kiln.constant dense<2.0> : tensor<f32>
      %one = kiln.constant dense<1.0> : tensor<f32>
      %0 = kiln.mul %x, %two : tensor<4194304xf32>, tensor<f32>
      %1 = kiln.add %0, %one : tensor<4194304xf32>, tensor<f32>
      %2 = kiln.relu %1 : tensor<4194304xf32>
      return %2 : tensor<4194304xf32>
    })mlir",
        {{4194304}}, {4194304});
  bench("gelu(x) 4M f32", R"mlir(
    func.func @forward(%x: tensor<4194304xf32>) -> tensor<4194304xf32> {
      %0 = kiln.gelu %x : tensor<4194304xf32>
      return %0 : tensor<4194304xf32>
    })mlir",
        {{4194304}}, {4194304});
  bench("x + y[1024] (2048x1024)", R"mlir(
    func.func @forward(%x: tensor<2048x1024xf32>, %y: tensor<1024xf32>) -> tensor<2048x1024xf32> {
      %0 = kiln.add %x, %y : tensor<2048x1024xf32>, tensor<1024xf32>
      return %0 : tensor<2048x1024xf32>
    })mlir",
        {{2048, 1024}, {1024}}, {2048, 1024});
  bench("sum(x, -1) 2048x1024", R"mlir(
    func.func @forward(%x: tensor<2048x1024xf32>) -> tensor<2048xf32> {
      %0 = kiln.sum %x {dims = array<i64: 1>} : tensor<2048x1024xf32> -> tensor<2048xf32>
      return %0 : tensor<2048xf32>
    })mlir",
        {{2048, 1024}}, {2048});
  bench("max(x, -1) 2048x1024", R"mlir(
    func.func @forward(%x: tensor<2048x1024xf32>) -> tensor<2048xf32> {
      %0 = kiln.max %x {dims = array<i64: 1>} : tensor<2048x1024xf32> -> tensor<2048xf32>
      return %0 : tensor<2048xf32>
    })mlir",
        {{2048, 1024}}, {2048});
  bench("exp(x) 2048x1024", R"mlir(
    func.func @forward(%x: tensor<2048x1024xf32>) -> tensor<2048x1024xf32> {
      %0 = kiln.exp %x : tensor<2048x1024xf32>
      return %0 : tensor<2048x1024xf32>
    })mlir",
        {{2048, 1024}}, {2048, 1024});
  bench("softmax(x, -1) 2048x1024", R"mlir(
    func.func @forward(%x: tensor<2048x1024xf32>) -> tensor<2048x1024xf32> {
      %0 = kiln.softmax %x {dim = 1 : i64} : tensor<2048x1024xf32>
      return %0 : tensor<2048x1024xf32>
    })mlir",
        {{2048, 1024}}, {2048, 1024});
  bench("layer_norm 2048x1024", R"mlir(
    func.func @forward(%x: tensor<2048x1024xf32>, %w: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<2048x1024xf32> {
      %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64, eps = 1.0e-05 : f64} : tensor<2048x1024xf32>, tensor<1024xf32>, tensor<1024xf32>
      return %0 : tensor<2048x1024xf32>
    })mlir",
        {{2048, 1024}, {1024}, {1024}}, {2048, 1024});
  bench("MLP 32x256 -> 512 -> 10", R"mlir(
    func.func @forward(%x: tensor<32x256xf32>, %w1: tensor<512x256xf32>, %b1: tensor<512xf32>, %w2: tensor<10x512xf32>, %b2: tensor<10xf32>) -> tensor<32x10xf32> {
      %w1t = kiln.permute %w1 {dims = array<i64: 1, 0>} : tensor<512x256xf32> -> tensor<256x512xf32>
      %h = kiln.matmul %x, %w1t : tensor<32x256xf32>, tensor<256x512xf32>
      %hb = kiln.add %h, %b1 : tensor<32x512xf32>, tensor<512xf32>
      %r = kiln.relu %hb : tensor<32x512xf32>
      %w2t = kiln.permute %w2 {dims = array<i64: 1, 0>} : tensor<10x512xf32> -> tensor<512x10xf32>
      %o = kiln.matmul %r, %w2t : tensor<32x512xf32>, tensor<512x10xf32>
      %ob = kiln.add %o, %b2 : tensor<32x10xf32>, tensor<10xf32>
      return %ob : tensor<32x10xf32>
    })mlir",
        {{32, 256}, {512, 256}, {512}, {10, 512}, {10}}, {32, 10});
  bench("linear 512x512x512 + relu", R"mlir(
    func.func @forward(%x: tensor<512x512xf32>, %w: tensor<512x512xf32>, %b: tensor<512xf32>) -> tensor<512x512xf32> {
      %wt = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<512x512xf32> -> tensor<512x512xf32>
      %m = kiln.matmul %x, %wt : tensor<512x512xf32>, tensor<512x512xf32>
      %a = kiln.add %m, %b : tensor<512x512xf32>, tensor<512xf32>
      %r = kiln.relu %a : tensor<512x512xf32>
      return %r : tensor<512x512xf32>
    })mlir",
        {{512, 512}, {512, 512}, {512}}, {512, 512});
}

} // namespace
} // namespace kiln::test
