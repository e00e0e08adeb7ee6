//===- JitTestUtils.h - helpers of the CPU JIT tests -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Buffers, random inputs, compiling a module with compileForCpu and calling
// it through the packed calling convention the frontend uses, and
// comparisons against double-precision references (atol/rtol 1e-5 for f32,
// as the Python tests use against torch). Shared by the JitTest*.cpp files.
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_UNIT_JITTESTUTILS_H
#define KILN_TEST_UNIT_JITTESTUTILS_H

#include "registration/Registration.h"
#include "codegen/cpu/JitCompiler.h"
#include "runtime/cpu/Threads.h"
#include "runtime/MemRefDescriptor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// A contiguous host buffer with its memref descriptor.
template <typename T> struct Buf {
  Shape shape;
  std::vector<T> data;
  kiln::rt::MemRefDescriptor desc;

  explicit Buf(Shape s, T fill = T()) : shape(std::move(s)), data(numel(shape), fill) {
    Shape strides(shape.size(), 1);
    for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * shape[i + 1];
    desc.reset(data.data(), shape.data(), strides.data(), shape.size());
  }
  T &operator[](int64_t i) { return data[i]; }
};

template <typename T> Buf<T> random(Shape s, unsigned seed, double lo = -2, double hi = 2) {
  Buf<T> b(std::move(s));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (T &v : b.data)
    v = static_cast<T>(dist(gen));
  return b;
}

/// Parses and compiles `source` (entry @forward); the result stays callable
/// while this object lives.
struct Compiled {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  kiln::rt::CompiledFunction fn;
  std::string error;

  explicit Compiled(const std::string &source, std::string debugDir = "") {
    mlir::DialectRegistry registry;
    mlir::kiln::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
    if (!module) {
      error = "parse failed";
      return;
    }
    mlir::kiln::CpuCompileOptions options;
    options.debugDir = std::move(debugDir);
    fn = mlir::kiln::compileForCpu(*module, "forward", options, error);
  }

  /// Calls the entry with descriptors of inputs then outputs.
  void operator()(std::vector<kiln::rt::MemRefDescriptor *> descs) const {
    std::vector<void *> ptrs, args;
    for (auto *d : descs)
      ptrs.push_back(d->data());
    for (void *&p : ptrs)
      args.push_back(&p);
    fn(args.data());
  }
};

#define ASSERT_COMPILED(c) ASSERT_TRUE((c).fn.entry) << (c).error

template <typename T>
void expectNear(const Buf<T> &got, const std::vector<double> &want, double tol = 1e-5) {
  ASSERT_EQ(got.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(double(got.data[i]))) << "at " << i;
      continue;
    }
    if (std::isinf(want[i])) {
      EXPECT_EQ(double(got.data[i]), want[i]) << "at " << i;
      continue;
    }
    EXPECT_NEAR(double(got.data[i]), want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
  }
}

class JitTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { kilnSetNumThreads(1); }
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_JITTESTUTILS_H
