//===- JitTest.cpp - end-to-end tests of the CPU JIT ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Compiles small kiln modules with compileForCpu, runs them on real buffers
// through the packed calling convention the frontend uses, and compares with
// reference results computed here in double precision (atol/rtol 1e-5 for
// f32, as the Python tests use against torch).
//===----------------------------------------------------------------------===//
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

namespace {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape &s) {
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

TEST_F(JitTest, LinearReluUsesTransposedWeight) {
  // F.linear as the frontend captures it, then relu.
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<64x128xf32>, %w: tensor<96x128xf32>, %b: tensor<96xf32>) -> tensor<64x96xf32> {
      %wt = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<96x128xf32> -> tensor<128x96xf32>
      %m = kiln.matmul %x, %wt : tensor<64x128xf32>, tensor<128x96xf32>
      %a = kiln.add %m, %b : tensor<64x96xf32>, tensor<96xf32>
      %r = kiln.relu %a : tensor<64x96xf32>
      return %r : tensor<64x96xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({64, 128}, 1), w = random<float>({96, 128}, 2), b = random<float>({96}, 3);
  Buf<float> out({64, 96});
  c({&x.desc, &w.desc, &b.desc, &out.desc});
  std::vector<double> want(64 * 96);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 96; ++j) {
      double acc = b[j];
      for (int k = 0; k < 128; ++k)
        acc += double(x[i * 128 + k]) * w[j * 128 + k];
      want[i * 96 + j] = std::max(acc, 0.0);
    }
  expectNear(out, want, 1e-4);
}

TEST_F(JitTest, BatchedMatmulBroadcastsBatchDims) {
  // [2,1,3,4] x [5,4,6] → [2,5,3,6]; and rank-3 lhs with a 2-D rhs.
  Compiled c(R"mlir(
    func.func @forward(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>, %m: tensor<6x2xf32>) -> (tensor<2x5x3x6xf32>, tensor<2x5x3x2xf32>) {
      %0 = kiln.matmul %a, %b : tensor<2x1x3x4xf32>, tensor<5x4x6xf32>
      %1 = kiln.matmul %0, %m : tensor<2x5x3x6xf32>, tensor<6x2xf32>
      return %0, %1 : tensor<2x5x3x6xf32>, tensor<2x5x3x2xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto a = random<float>({2, 1, 3, 4}, 4), b = random<float>({5, 4, 6}, 5),
       m = random<float>({6, 2}, 6);
  Buf<float> out0({2, 5, 3, 6}), out1({2, 5, 3, 2});
  c({&a.desc, &b.desc, &m.desc, &out0.desc, &out1.desc});
  std::vector<double> want0(2 * 5 * 3 * 6), want1(2 * 5 * 3 * 2);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 5; ++q)
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 6; ++j) {
          double acc = 0;
          for (int k = 0; k < 4; ++k)
            acc += double(a[(p * 3 + i) * 4 + k]) * b[(q * 4 + k) * 6 + j];
          want0[((p * 5 + q) * 3 + i) * 6 + j] = acc;
        }
        for (int j = 0; j < 2; ++j) {
          double acc = 0;
          for (int k = 0; k < 6; ++k)
            acc += want0[((p * 5 + q) * 3 + i) * 6 + k] * m[k * 2 + j];
          want1[((p * 5 + q) * 3 + i) * 2 + j] = acc;
        }
      }
  expectNear(out0, want0, 1e-4);
  expectNear(out1, want1, 1e-4);
}

TEST_F(JitTest, FusedElementwiseChainWithBroadcasting) {
  // (a[4,1,8] * b[3,1] + 2) - exp(c[8]), then where(x > 0, x, tanh(x)*sigmoid(x)).
  Compiled c(R"mlir(
    func.func @forward(%a: tensor<4x1x8xf32>, %b: tensor<3x1xf32>, %c: tensor<8xf32>) -> tensor<4x3x8xf32> {
      %two = kiln.constant dense<2.0> : tensor<f32>
      %zero = kiln.constant dense<0.0> : tensor<f32>
      %0 = kiln.mul %a, %b : tensor<4x1x8xf32>, tensor<3x1xf32>
      %1 = kiln.add %0, %two : tensor<4x3x8xf32>, tensor<f32>
      %e = kiln.exp %c : tensor<8xf32>
      %2 = kiln.sub %1, %e : tensor<4x3x8xf32>, tensor<8xf32>
      %t = kiln.tanh %2 : tensor<4x3x8xf32>
      %s = kiln.sigmoid %2 : tensor<4x3x8xf32>
      %ts = kiln.mul %t, %s : tensor<4x3x8xf32>, tensor<4x3x8xf32>
      %p = kiln.gt %2, %zero : tensor<4x3x8xf32>, tensor<f32>
      %r = kiln.select %p, %2, %ts : tensor<4x3x8xi1>, tensor<4x3x8xf32>, tensor<4x3x8xf32>
      return %r : tensor<4x3x8xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto a = random<float>({4, 1, 8}, 7), b = random<float>({3, 1}, 8), cc = random<float>({8}, 9);
  Buf<float> out({4, 3, 8});
  c({&a.desc, &b.desc, &cc.desc, &out.desc});
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 8; ++k) {
        double v = double(a[i * 8 + k]) * b[j] + 2.0 - std::exp(double(cc[k]));
        want.push_back(v > 0 ? v : std::tanh(v) / (1 + std::exp(-v)));
      }
  expectNear(out, want);
}

/// softmax over the last dim of [rows, cols], as kiln-decompose writes it.
const char *kDecomposedSoftmax = R"mlir(
  func.func @forward(%x: tensor<16x33xf32>) -> tensor<16x33xf32> {
    %m = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<16x33xf32> -> tensor<16x1xf32>
    %d = kiln.sub %x, %m : tensor<16x33xf32>, tensor<16x1xf32>
    %e = kiln.exp %d : tensor<16x33xf32>
    %s = kiln.sum %e {dims = array<i64: 1>, keepdim = true} : tensor<16x33xf32> -> tensor<16x1xf32>
    %r = kiln.div %e, %s : tensor<16x33xf32>, tensor<16x1xf32>
    return %r : tensor<16x33xf32>
  })mlir";

const char *kSoftmaxOp = R"mlir(
  func.func @forward(%x: tensor<16x33xf32>) -> tensor<16x33xf32> {
    %r = kiln.softmax %x {dim = 1 : i64} : tensor<16x33xf32>
    return %r : tensor<16x33xf32>
  })mlir";

void checkSoftmax(const char *source) {
  Compiled c(source);
  ASSERT_COMPILED(c);
  auto x = random<float>({16, 33}, 10, -8, 8);
  Buf<float> out({16, 33});
  c({&x.desc, &out.desc});
  std::vector<double> want(16 * 33);
  for (int i = 0; i < 16; ++i) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 33; ++j)
      m = std::max(m, double(x[i * 33 + j]));
    for (int j = 0; j < 33; ++j)
      s += std::exp(x[i * 33 + j] - m);
    for (int j = 0; j < 33; ++j)
      want[i * 33 + j] = std::exp(x[i * 33 + j] - m) / s;
  }
  expectNear(out, want);
}

TEST_F(JitTest, SoftmaxDecomposedForm) { checkSoftmax(kDecomposedSoftmax); }
TEST_F(JitTest, SoftmaxOpThroughDecompose) { checkSoftmax(kSoftmaxOp); }

TEST_F(JitTest, LayerNormDecomposedForm) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<8x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
      %eps = kiln.constant dense<1.0e-5> : tensor<f32>
      %mu = kiln.mean %x {dims = array<i64: 1>, keepdim = true} : tensor<8x64xf32> -> tensor<8x1xf32>
      %d = kiln.sub %x, %mu : tensor<8x64xf32>, tensor<8x1xf32>
      %sq = kiln.mul %d, %d : tensor<8x64xf32>, tensor<8x64xf32>
      %var = kiln.mean %sq {dims = array<i64: 1>, keepdim = true} : tensor<8x64xf32> -> tensor<8x1xf32>
      %ve = kiln.add %var, %eps : tensor<8x1xf32>, tensor<f32>
      %rs = kiln.rsqrt %ve : tensor<8x1xf32>
      %n = kiln.mul %d, %rs : tensor<8x64xf32>, tensor<8x1xf32>
      %nw = kiln.mul %n, %w : tensor<8x64xf32>, tensor<64xf32>
      %r = kiln.add %nw, %b : tensor<8x64xf32>, tensor<64xf32>
      return %r : tensor<8x64xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({8, 64}, 11, -3, 5), w = random<float>({64}, 12),
       b = random<float>({64}, 13);
  Buf<float> out({8, 64});
  c({&x.desc, &w.desc, &b.desc, &out.desc});
  std::vector<double> want(8 * 64);
  for (int i = 0; i < 8; ++i) {
    double mu = 0, var = 0;
    for (int j = 0; j < 64; ++j)
      mu += x[i * 64 + j];
    mu /= 64;
    for (int j = 0; j < 64; ++j)
      var += (x[i * 64 + j] - mu) * (x[i * 64 + j] - mu);
    var /= 64;
    for (int j = 0; j < 64; ++j)
      want[i * 64 + j] = (x[i * 64 + j] - mu) / std::sqrt(var + 1e-5) * w[j] + b[j];
  }
  expectNear(out, want, 2e-5);
}

TEST_F(JitTest, GeluBothFormsAndErfAccuracy) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<4001xf32>) -> (tensor<4001xf32>, tensor<4001xf32>, tensor<4001xf32>, tensor<4001xf32>, tensor<4001xf32>) {
      %0 = kiln.gelu %x : tensor<4001xf32>
      %1 = kiln.gelu %x {approximate = "tanh"} : tensor<4001xf32>
      %2 = kiln.erf %x : tensor<4001xf32>
      %3 = kiln.tanh %x : tensor<4001xf32>
      %4 = kiln.exp %x : tensor<4001xf32>
      return %0, %1, %2, %3, %4 : tensor<4001xf32>, tensor<4001xf32>, tensor<4001xf32>, tensor<4001xf32>, tensor<4001xf32>
    })mlir");
  ASSERT_COMPILED(c);
  Buf<float> x({4001});
  for (int i = 0; i < 4001; ++i)
    x[i] = -10.0f + 0.005f * i;
  Buf<float> g({4001}), gt({4001}), e({4001}), t({4001}), ex({4001});
  c({&x.desc, &g.desc, &gt.desc, &e.desc, &t.desc, &ex.desc});
  std::vector<double> wg, wgt, we, wt, wex;
  for (float vf : x.data) {
    double v = vf;
    wg.push_back(0.5 * v * (1 + std::erf(v * M_SQRT1_2)));
    wgt.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
    we.push_back(std::erf(v));
    wt.push_back(std::tanh(v));
    wex.push_back(std::exp(v));
  }
  expectNear(g, wg);
  expectNear(gt, wgt);
  expectNear(e, we);
  expectNear(t, wt);
  expectNear(ex, wex);
}

TEST_F(JitTest, ReductionsWithKeepdimAndNaN) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<3x4x5xf32>) -> (tensor<1x4x1xf32>, tensor<3x1x5xf32>, tensor<4xf32>) {
      %0 = kiln.sum %x {dims = array<i64: 0, 2>, keepdim = true} : tensor<3x4x5xf32> -> tensor<1x4x1xf32>
      %1 = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<3x4x5xf32> -> tensor<3x1x5xf32>
      %2 = kiln.mean %x {dims = array<i64: 0, 2>} : tensor<3x4x5xf32> -> tensor<4xf32>
      return %0, %1, %2 : tensor<1x4x1xf32>, tensor<3x1x5xf32>, tensor<4xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({3, 4, 5}, 14);
  x[(1 * 4 + 2) * 5 + 3] = NAN; // max over dim 1 at [1, :, 3] is NaN.
  x[(2 * 4 + 0) * 5 + 1] = -INFINITY;
  Buf<float> s({1, 4, 1}), m({3, 1, 5}), mean({4});
  c({&x.desc, &s.desc, &m.desc, &mean.desc});
  std::vector<double> ws(4, 0), wm(15, -INFINITY), wmean(4, 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) {
        double v = x[(i * 4 + j) * 5 + k];
        ws[j] += v;
        double &mv = wm[i * 5 + k];
        mv = (std::isnan(v) || std::isnan(mv)) ? NAN : std::max(mv, v);
      }
  for (int j = 0; j < 4; ++j)
    wmean[j] = ws[j] / 15;
  expectNear(s, ws);
  expectNear(m, wm);
  expectNear(mean, wmean);
}

TEST_F(JitTest, IntegerAndBoolCasts) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<6xf32>, %i: tensor<6xi64>) -> (tensor<6xi64>, tensor<6xf32>, tensor<6xf32>, tensor<6xi64>) {
      %0 = kiln.cast %x : tensor<6xf32> -> tensor<6xi64>
      %1 = kiln.cast %i : tensor<6xi64> -> tensor<6xf32>
      %b = kiln.cast %x : tensor<6xf32> -> tensor<6xi1>
      %2 = kiln.cast %b : tensor<6xi1> -> tensor<6xf32>
      %3 = kiln.add %0, %i : tensor<6xi64>, tensor<6xi64>
      %4 = kiln.neg %3 : tensor<6xi64>
      return %0, %1, %2, %4 : tensor<6xi64>, tensor<6xf32>, tensor<6xf32>, tensor<6xi64>
    })mlir");
  ASSERT_COMPILED(c);
  Buf<float> x({6});
  x.data = {-2.7f, -0.5f, 0.0f, 0.4f, 3.9f, NAN};
  x.desc.reset(x.data.data(), x.shape.data(), std::vector<int64_t>{1}.data(), 1);
  Buf<int64_t> i({6});
  i.data = {-3, 0, 1, 2, 1000000007, -1};
  i.desc.reset(i.data.data(), i.shape.data(), std::vector<int64_t>{1}.data(), 1);
  Buf<int64_t> o0({6}), o3({6});
  Buf<float> o1({6}), o2({6});
  c({&x.desc, &i.desc, &o0.desc, &o1.desc, &o2.desc, &o3.desc});
  std::vector<int64_t> want0 = {-2, 0, 0, 0, 3};
  for (int k = 0; k < 5; ++k) // NaN → int is unspecified.
    EXPECT_EQ(o0[k], want0[k]) << k;
  expectNear(o1, {-3, 0, 1, 2, 1000000007.0, -1});
  expectNear(o2, {1, 1, 0, 1, 1, 1}); // NaN → true, as in torch.
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(o3[k], -(want0[k] + i[k])) << k;
}

TEST_F(JitTest, ShapeOps) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<3x8xf32>, tensor<5x2x3x4xf32>) {
      %0 = kiln.permute %x {dims = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
      %1 = kiln.reshape %0 : tensor<4x2x3xf32> -> tensor<3x8xf32>
      %2 = kiln.broadcast_to %x : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
      return %0, %1, %2 : tensor<4x2x3xf32>, tensor<3x8xf32>, tensor<5x2x3x4xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({2, 3, 4}, 15);
  Buf<float> p({4, 2, 3}), r({3, 8}), b({5, 2, 3, 4});
  c({&x.desc, &p.desc, &r.desc, &b.desc});
  std::vector<double> wp;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        wp.push_back(x[(i * 3 + j) * 4 + k]);
  expectNear(p, wp);
  expectNear(r, wp); // Same row-major order.
  std::vector<double> wb;
  for (int n = 0; n < 5; ++n)
    for (float v : x.data)
      wb.push_back(v);
  expectNear(b, wb);
}

TEST_F(JitTest, SliceConcatEmbeddingThroughStridedCopies) {
  // A strided slice returned directly and a concat are copied between
  // non-contiguous memrefs: memref.copy → memrefCopy, which the JIT provides.
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<4x6xf32>, %i: tensor<3xi64>) -> (tensor<3x3xf32>, tensor<4x9xf32>, tensor<3x6xf32>) {
      %0 = kiln.slice %x {start = array<i64: 1, 0>, end = array<i64: 4, 5>, step = array<i64: 1, 2>} : tensor<4x6xf32> -> tensor<3x3xf32>
      %n = kiln.neg %x : tensor<4x6xf32>
      %s = kiln.slice %n {start = array<i64: 0, 3>, end = array<i64: 4, 6>, step = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x3xf32>
      %1 = kiln.concat %s, %n {dim = 1 : i64} : tensor<4x3xf32>, tensor<4x6xf32> -> tensor<4x9xf32>
      %2 = kiln.embedding %x, %i : tensor<4x6xf32>, tensor<3xi64> -> tensor<3x6xf32>
      return %0, %1, %2 : tensor<3x3xf32>, tensor<4x9xf32>, tensor<3x6xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({4, 6}, 21);
  Buf<int64_t> idx({3});
  idx[0] = 3;
  idx[1] = 0;
  idx[2] = 2;
  Buf<float> o0({3, 3}), o1({4, 9}), o2({3, 6});
  c({&x.desc, &idx.desc, &o0.desc, &o1.desc, &o2.desc});
  std::vector<double> w0, w1, w2;
  for (int i = 1; i < 4; ++i)
    for (int j = 0; j < 5; j += 2)
      w0.push_back(x[i * 6 + j]);
  for (int i = 0; i < 4; ++i) {
    for (int j = 3; j < 6; ++j)
      w1.push_back(-x[i * 6 + j]);
    for (int j = 0; j < 6; ++j)
      w1.push_back(-x[i * 6 + j]);
  }
  for (int64_t r : idx.data)
    for (int j = 0; j < 6; ++j)
      w2.push_back(x[r * 6 + j]);
  expectNear(o0, w0);
  expectNear(o1, w1);
  expectNear(o2, w2);
}

TEST_F(JitTest, StridedCopiesMergeContiguousDimsAndCopyTypedElements) {
  // memrefCopy on f64: a step-2 slice of dim 0 keeps dims 1-2 contiguous on
  // both sides (merged into one 12-element row per step), a step-3 slice of
  // the innermost dim copies 8-byte elements one by one, and a unit dim is
  // dropped.
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<5x1x3x4xf64>) -> (tensor<3x1x3x4xf64>, tensor<5x1x3x2xf64>) {
      %0 = kiln.slice %x {start = array<i64: 0, 0, 0, 0>, end = array<i64: 5, 1, 3, 4>, step = array<i64: 2, 1, 1, 1>} : tensor<5x1x3x4xf64> -> tensor<3x1x3x4xf64>
      %1 = kiln.slice %x {start = array<i64: 0, 0, 0, 0>, end = array<i64: 5, 1, 3, 4>, step = array<i64: 1, 1, 1, 3>} : tensor<5x1x3x4xf64> -> tensor<5x1x3x2xf64>
      return %0, %1 : tensor<3x1x3x4xf64>, tensor<5x1x3x2xf64>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<double>({5, 1, 3, 4}, 7);
  Buf<double> o0({3, 1, 3, 4}), o1({5, 1, 3, 2});
  c({&x.desc, &o0.desc, &o1.desc});
  std::vector<double> w0, w1;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 12; ++j) {
      if (i % 2 == 0)
        w0.push_back(x[i * 12 + j]);
      if (j % 4 == 0 || j % 4 == 3)
        w1.push_back(x[i * 12 + j]);
    }
  expectNear(o0, w0);
  expectNear(o1, w1);
}

TEST_F(JitTest, ResultThatIsAnArgumentAndInputsStayUntouched) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
      %0 = kiln.neg %x : tensor<8xf32>
      return %x, %0 : tensor<8xf32>, tensor<8xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({8}, 16);
  auto before = x.data;
  Buf<float> o0({8}), o1({8});
  c({&x.desc, &o0.desc, &o1.desc});
  EXPECT_EQ(x.data, before);
  std::vector<double> w0(before.begin(), before.end()), w1;
  for (float v : before)
    w1.push_back(-v);
  expectNear(o0, w0);
  expectNear(o1, w1);
}

TEST_F(JitTest, ErrorsCarryLocations) {
  // A broadcast to a dynamic shape cannot be lowered: the error names the
  // op and its Python source location, and nothing aborts.
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<1x8xf32>) -> tensor<?x8xf32> {
      %0 = kiln.broadcast_to %x : tensor<1x8xf32> -> tensor<?x8xf32> loc("my_model.py":12:3)
      return %0 : tensor<?x8xf32>
    })mlir");
  EXPECT_FALSE(c.fn.entry);
  EXPECT_NE(
      c.error.find("my_model.py:12:3: error: failed to legalize operation 'kiln.broadcast_to'"),
      std::string::npos)
      << c.error;
  Compiled missing(R"mlir(
    func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
      return %x : tensor<4xf32>
    })mlir");
  EXPECT_FALSE(missing.fn.entry);
  EXPECT_NE(missing.error.find("@forward"), std::string::npos) << missing.error;
}

TEST_F(JitTest, DebugDirGetsIRAfterEveryPass) {
  std::string dir = ::testing::TempDir() + "kiln-jit-debug";
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = kiln.relu %x : tensor<4xf32>
      return %0 : tensor<4xf32>
    })mlir",
             dir);
  ASSERT_COMPILED(c);
  auto read = [](const std::string &path) {
    std::string text;
    if (FILE *f = std::fopen(path.c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
        text.append(buf, n);
      std::fclose(f);
    }
    return text;
  };
  EXPECT_NE(read(dir + "/00-input.mlir").find("kiln.relu"), std::string::npos);
  EXPECT_NE(read(dir + "/06-kiln-convert-to-linalg.mlir").find("linalg.generic"),
            std::string::npos);
  // The reproducer carries the real bufferization options.
  std::string repro = read(dir + "/repro.sh");
  EXPECT_NE(repro.find("kiln-opt"), std::string::npos);
  EXPECT_NE(repro.find("bufferize-function-boundaries=true"), std::string::npos) << repro;
  EXPECT_NE(repro.find("function-boundary-type-conversion=identity-layout-map"), std::string::npos);
}

TEST_F(JitTest, CompileTimeOfMlp) {
  const char *src = R"mlir(
    func.func @forward(%x: tensor<32x256xf32>, %w1: tensor<512x256xf32>, %b1: tensor<512xf32>, %w2: tensor<10x512xf32>, %b2: tensor<10xf32>) -> tensor<32x10xf32> {
      %w1t = kiln.permute %w1 {dims = array<i64: 1, 0>} : tensor<512x256xf32> -> tensor<256x512xf32>
      %h = kiln.matmul %x, %w1t : tensor<32x256xf32>, tensor<256x512xf32>
      %hb = kiln.add %h, %b1 : tensor<32x512xf32>, tensor<512xf32>
      %r = kiln.relu %hb : tensor<32x512xf32>
      %w2t = kiln.permute %w2 {dims = array<i64: 1, 0>} : tensor<10x512xf32> -> tensor<512x10xf32>
      %o = kiln.matmul %r, %w2t : tensor<32x512xf32>, tensor<512x10xf32>
      %ob = kiln.add %o, %b2 : tensor<32x10xf32>, tensor<10xf32>
      return %ob : tensor<32x10xf32>
    })mlir";
  auto start = std::chrono::steady_clock::now();
  Compiled c(src);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_COMPILED(c);
  std::printf("[ info ] MLP parse+compile+JIT: %.1f ms\n", ms);
}

TEST_F(JitTest, DynamicBatchDim) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<?x16xf32> {
      %wt = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
      %m = kiln.matmul %x, %wt : tensor<?x8xf32>, tensor<8x16xf32>
      %a = kiln.add %m, %b : tensor<?x16xf32>, tensor<16xf32>
      %r = kiln.relu %a : tensor<?x16xf32>
      %s = kiln.sum %r {dims = array<i64: 1>, keepdim = true} : tensor<?x16xf32> -> tensor<?x1xf32>
      %one = kiln.constant dense<1.0> : tensor<f32>
      %s1 = kiln.add %s, %one : tensor<?x1xf32>, tensor<f32>
      %d = kiln.div %r, %s1 : tensor<?x16xf32>, tensor<?x1xf32>
      return %d : tensor<?x16xf32>
    })mlir");
  ASSERT_COMPILED(c);
  for (int64_t n : {1, 5, 33}) {
    auto x = random<float>({n, 8}, 30), w = random<float>({16, 8}, 31), b = random<float>({16}, 32);
    Buf<float> out({n, 16});
    c({&x.desc, &w.desc, &b.desc, &out.desc});
    std::vector<double> want(n * 16);
    for (int64_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int j = 0; j < 16; ++j) {
        double acc = b[j];
        for (int k = 0; k < 8; ++k)
          acc += double(x[i * 8 + k]) * w[j * 8 + k];
        want[i * 16 + j] = std::max(acc, 0.0);
        sum += want[i * 16 + j];
      }
      for (int j = 0; j < 16; ++j)
        want[i * 16 + j] /= sum + 1;
    }
    expectNear(out, want, 1e-4);
  }
}

TEST_F(JitTest, SameShapeReductionsGetTheirOwnOutputs) {
  // CSE merges the two zero-filled accumulators; each result must still be
  // written into its own output (once a miscompile: both got one value).
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<8xf32>) -> (tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) {
      %two = kiln.constant dense<2.0> : tensor<f32>
      %0 = kiln.sum %x {dims = array<i64: 0>} : tensor<8xf32> -> tensor<f32>
      %m = kiln.mul %x, %two : tensor<8xf32>, tensor<f32>
      %1 = kiln.sum %m {dims = array<i64: 0>} : tensor<8xf32> -> tensor<f32>
      %z = kiln.constant dense<0.0> : tensor<8xf32>
      return %0, %1, %z, %z : tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({8}, 40);
  Buf<float> o0({}), o1({}), o2({8}, 7.f), o3({8}, 7.f);
  c({&x.desc, &o0.desc, &o1.desc, &o2.desc, &o3.desc});
  double sum = 0;
  for (float v : x.data)
    sum += v;
  expectNear(o0, {sum});
  expectNear(o1, {2 * sum});
  expectNear(o2, std::vector<double>(8, 0.0));
  expectNear(o3, std::vector<double>(8, 0.0));
}

TEST_F(JitTest, LogSigmoidPowSqrtAccuracy) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<4000xf32>, %s: tensor<4000xf32>) -> (tensor<4000xf32>, tensor<4000xf32>, tensor<4000xf32>, tensor<4000xf32>, tensor<4000xf32>, tensor<4000xf32>) {
      %half = kiln.constant dense<0.5> : tensor<f32>
      %three = kiln.constant dense<3.0> : tensor<f32>
      %0 = kiln.log %x : tensor<4000xf32>
      %1 = kiln.sigmoid %s : tensor<4000xf32>
      %2 = kiln.pow %x, %half : tensor<4000xf32>, tensor<f32>
      %3 = kiln.pow %s, %three : tensor<4000xf32>, tensor<f32>
      %4 = kiln.rsqrt %x : tensor<4000xf32>
      %5 = kiln.silu %s : tensor<4000xf32>
      return %0, %1, %2, %3, %4, %5 : tensor<4000xf32>, tensor<4000xf32>, tensor<4000xf32>, tensor<4000xf32>, tensor<4000xf32>, tensor<4000xf32>
    })mlir");
  ASSERT_COMPILED(c);
  Buf<float> x({4000}), sx({4000});
  for (int i = 0; i < 4000; ++i) {
    x[i] = std::ldexp(1.0f + (i % 100) / 100.0f, i / 100 - 20); // 2^-20 .. 2^20
    sx[i] = -20.0f + 0.01f * i;
  }
  Buf<float> o0({4000}), o1({4000}), o2({4000}), o3({4000}), o4({4000}), o5({4000});
  c({&x.desc, &sx.desc, &o0.desc, &o1.desc, &o2.desc, &o3.desc, &o4.desc, &o5.desc});
  std::vector<double> w0, w1, w2, w3, w4, w5;
  for (int i = 0; i < 4000; ++i) {
    double v = x[i], s = sx[i];
    w0.push_back(std::log(v));
    w1.push_back(1 / (1 + std::exp(-s)));
    w2.push_back(std::sqrt(v));
    w3.push_back(s * s * s);
    w4.push_back(1 / std::sqrt(v));
    w5.push_back(s / (1 + std::exp(-s)));
  }
  expectNear(o0, w0);
  expectNear(o1, w1);
  expectNear(o2, w2);
  expectNear(o3, w3);
  expectNear(o4, w4);
  expectNear(o5, w5);
}

TEST_F(JitTest, SoftmaxOverLeadingAndMiddleDims) {
  // Reductions over outer loops feeding elementwise consumers: a loop
  // fusion that ignores the accumulation would read partial maxima/sums.
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<5x7x3xf32>) -> (tensor<5x7x3xf32>, tensor<5x7x3xf32>) {
      %0 = kiln.softmax %x {dim = 0 : i64} : tensor<5x7x3xf32>
      %1 = kiln.softmax %x {dim = 1 : i64} : tensor<5x7x3xf32>
      return %0, %1 : tensor<5x7x3xf32>, tensor<5x7x3xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({5, 7, 3}, 50, -4, 4);
  Buf<float> o0({5, 7, 3}), o1({5, 7, 3});
  c({&x.desc, &o0.desc, &o1.desc});
  auto at = [&](int i, int j, int k) { return double(x[(i * 7 + j) * 3 + k]); };
  std::vector<double> w0(105), w1(105);
  for (int j = 0; j < 7; ++j)
    for (int k = 0; k < 3; ++k) {
      double m = -INFINITY, s = 0;
      for (int i = 0; i < 5; ++i)
        m = std::max(m, at(i, j, k));
      for (int i = 0; i < 5; ++i)
        s += std::exp(at(i, j, k) - m);
      for (int i = 0; i < 5; ++i)
        w0[(i * 7 + j) * 3 + k] = std::exp(at(i, j, k) - m) / s;
    }
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 3; ++k) {
      double m = -INFINITY, s = 0;
      for (int j = 0; j < 7; ++j)
        m = std::max(m, at(i, j, k));
      for (int j = 0; j < 7; ++j)
        s += std::exp(at(i, j, k) - m);
      for (int j = 0; j < 7; ++j)
        w1[(i * 7 + j) * 3 + k] = std::exp(at(i, j, k) - m) / s;
    }
  expectNear(o0, w0);
  expectNear(o1, w1);
}

TEST_F(JitTest, VectorizedMaxPropagatesNaN) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<6x1000xf32>) -> (tensor<6xf32>, tensor<6x1000xf32>) {
      %0 = kiln.max %x {dims = array<i64: 1>} : tensor<6x1000xf32> -> tensor<6xf32>
      %1 = kiln.relu %x : tensor<6x1000xf32>
      return %0, %1 : tensor<6xf32>, tensor<6x1000xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({6, 1000}, 60);
  x[0 * 1000 + 0] = NAN;   // first element
  x[1 * 1000 + 517] = NAN; // inside the vector body
  x[2 * 1000 + 999] = NAN; // in the remainder
  for (int j = 0; j < 1000; ++j)
    x[3 * 1000 + j] = -INFINITY;
  x[4 * 1000 + 3] = INFINITY;
  Buf<float> m({6}), r({6, 1000});
  c({&x.desc, &m.desc, &r.desc});
  double row5 = -INFINITY;
  for (int j = 0; j < 1000; ++j)
    row5 = std::max(row5, double(x[5 * 1000 + j]));
  expectNear(m, {NAN, NAN, NAN, -INFINITY, INFINITY, row5});
  EXPECT_TRUE(std::isnan(r[1 * 1000 + 517]));
  EXPECT_EQ(r[3 * 1000], 0.0f);
}

TEST_F(JitTest, RowChainsNextToTransposesAndColumnReductions) {
  // Row-wise softmax next to ops that must not be cut into rows: a
  // transposed read and a reduction over rows.
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>) {
      %0 = kiln.softmax %x {dim = 1 : i64} : tensor<16x16xf32>
      %t = kiln.permute %x {dims = array<i64: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
      %1 = kiln.maximum %0, %t : tensor<16x16xf32>, tensor<16x16xf32>
      %2 = kiln.sum %1 {dims = array<i64: 0>} : tensor<16x16xf32> -> tensor<16xf32>
      return %0, %1, %2 : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>
    })mlir");
  ASSERT_COMPILED(c);
  auto x = random<float>({16, 16}, 70, -3, 3);
  Buf<float> o0({16, 16}), o1({16, 16}), o2({16});
  c({&x.desc, &o0.desc, &o1.desc, &o2.desc});
  std::vector<double> w0(256), w1(256), w2(16, 0.0);
  for (int i = 0; i < 16; ++i) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 16; ++j)
      m = std::max(m, double(x[i * 16 + j]));
    for (int j = 0; j < 16; ++j)
      s += std::exp(x[i * 16 + j] - m);
    for (int j = 0; j < 16; ++j)
      w0[i * 16 + j] = std::exp(x[i * 16 + j] - m) / s;
  }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      w1[i * 16 + j] = std::max(w0[i * 16 + j], double(x[j * 16 + i]));
      w2[j] += w1[i * 16 + j];
    }
  expectNear(o0, w0);
  expectNear(o1, w1);
  expectNear(o2, w2);
}

TEST_F(JitTest, RowFusedSoftmaxWithDynamicColumns) {
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<8x?xf32>) -> tensor<8x?xf32> {
      %0 = kiln.softmax %x {dim = 1 : i64} : tensor<8x?xf32>
      return %0 : tensor<8x?xf32>
    })mlir");
  ASSERT_COMPILED(c);
  for (int64_t cols : {1, 7, 100}) {
    auto x = random<float>({8, cols}, 80, -5, 5);
    Buf<float> out({8, cols});
    c({&x.desc, &out.desc});
    std::vector<double> want(8 * cols);
    for (int64_t i = 0; i < 8; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < cols; ++j)
        m = std::max(m, double(x[i * cols + j]));
      for (int64_t j = 0; j < cols; ++j)
        s += std::exp(x[i * cols + j] - m);
      for (int64_t j = 0; j < cols; ++j)
        want[i * cols + j] = std::exp(x[i * cols + j] - m) / s;
    }
    expectNear(out, want);
  }
}

/// IEEE half → float.
float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v =
      exp == 0 ? std::ldexp(float(mant), -24) : std::ldexp(float(mant | 0x400), int(exp) - 25);
  return sign ? -v : v;
}
/// Float → IEEE half (round to nearest, normal range only).
uint16_t floatToHalf(float f) {
  int e;
  float m = std::frexp(std::fabs(f), &e); // f = m * 2^e, m in [0.5, 1)
  uint16_t sign = f < 0 ? 0x8000 : 0;
  if (f == 0)
    return sign;
  uint32_t mant = uint32_t(std::lround(std::ldexp(m, 11))); // 11 bits incl. implicit
  if (mant == 2048) {
    mant = 1024;
    ++e;
  }
  return sign | uint16_t((e + 14) << 10) | uint16_t(mant & 0x3ff);
}

TEST_F(JitTest, ScalarsHalfBf16F64IntsAndEmpty) {
  Compiled c(R"mlir(
    func.func @forward(%a: tensor<f32>, %b: tensor<3x4xf32>, %h: tensor<8xf16>, %bf: tensor<8xbf16>, %d: tensor<4x4xf64>, %i: tensor<3x4xi64>, %z: tensor<0x4xf32>) -> (tensor<f32>, tensor<f32>, tensor<3x4xi1>, tensor<8xf16>, tensor<8xbf16>, tensor<4x4xf64>, tensor<1x1xf32>, tensor<i64>, tensor<4xi64>, tensor<1xf32>, tensor<4xf32>, tensor<8x8xf16>) {
      %0 = kiln.add %a, %a : tensor<f32>, tensor<f32>
      %1 = kiln.sum %b {dims = array<i64: 0, 1>} : tensor<3x4xf32> -> tensor<f32>
      %2 = kiln.gt %b, %a : tensor<3x4xf32>, tensor<f32>
      %3 = kiln.exp %h : tensor<8xf16>
      %4 = kiln.tanh %bf : tensor<8xbf16>
      %5 = kiln.matmul %d, %d : tensor<4x4xf64>, tensor<4x4xf64>
      %6 = kiln.mean %b {dims = array<i64: 0, 1>, keepdim = true} : tensor<3x4xf32> -> tensor<1x1xf32>
      %7 = kiln.sum %i {dims = array<i64: 0, 1>} : tensor<3x4xi64> -> tensor<i64>
      %8 = kiln.max %i {dims = array<i64: 0>} : tensor<3x4xi64> -> tensor<4xi64>
      %9 = kiln.reshape %a : tensor<f32> -> tensor<1xf32>
      %10 = kiln.sum %z {dims = array<i64: 0>} : tensor<0x4xf32> -> tensor<4xf32>
      %hr = kiln.reshape %h : tensor<8xf16> -> tensor<8x1xf16>
      %ht = kiln.permute %hr {dims = array<i64: 1, 0>} : tensor<8x1xf16> -> tensor<1x8xf16>
      %11 = kiln.matmul %hr, %ht : tensor<8x1xf16>, tensor<1x8xf16>
      return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<f32>, tensor<f32>, tensor<3x4xi1>, tensor<8xf16>, tensor<8xbf16>, tensor<4x4xf64>, tensor<1x1xf32>, tensor<i64>, tensor<4xi64>, tensor<1xf32>, tensor<4xf32>, tensor<8x8xf16>
    })mlir");
  ASSERT_COMPILED(c);
  Buf<float> a({}, 0.25f);
  auto b = random<float>({3, 4}, 20);
  Buf<uint16_t> h({8}), bf({8});
  for (int k = 0; k < 8; ++k) {
    float v = -2.0f + 0.5f * k;
    h[k] = floatToHalf(v);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bf[k] = uint16_t(bits >> 16); // exact: v has few mantissa bits
  }
  auto d = random<double>({4, 4}, 21);
  Buf<int64_t> i({3, 4});
  for (int k = 0; k < 12; ++k)
    i[k] = (k * 7919) % 23 - 11;
  Buf<float> z({0, 4});
  Buf<float> o0({}), o1({}), o6({1, 1}), o9({1}), o10({4}, 123.f);
  Buf<uint8_t> o2({3, 4});
  Buf<uint16_t> o3({8}), o4({8}), o11({8, 8});
  Buf<double> o5({4, 4});
  Buf<int64_t> o7({}), o8({4});
  c({&a.desc, &b.desc, &h.desc, &bf.desc, &d.desc, &i.desc, &z.desc, &o0.desc, &o1.desc, &o2.desc,
     &o3.desc, &o4.desc, &o5.desc, &o6.desc, &o7.desc, &o8.desc, &o9.desc, &o10.desc, &o11.desc});
  double sum = 0;
  for (float v : b.data)
    sum += v;
  expectNear(o0, {0.5});
  expectNear(o1, {sum});
  for (int k = 0; k < 12; ++k)
    EXPECT_EQ(o2[k], b[k] > 0.25f ? 1 : 0) << k;
  for (int k = 0; k < 8; ++k) {
    float v = -2.0f + 0.5f * k;
    EXPECT_NEAR(halfToFloat(o3[k]), std::exp(v), 2e-3 * std::exp(v)) << k;
    uint32_t bits = uint32_t(o4[k]) << 16;
    float t;
    std::memcpy(&t, &bits, 4);
    EXPECT_NEAR(t, std::tanh(v), 1e-2) << k;
    for (int l = 0; l < 8; ++l)
      EXPECT_NEAR(halfToFloat(o11[k * 8 + l]), v * (-2.0f + 0.5f * l), 1e-2) << k << "," << l;
  }
  std::vector<double> wd;
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 4; ++col) {
      double acc = 0;
      for (int k = 0; k < 4; ++k)
        acc += d[r * 4 + k] * d[k * 4 + col];
      wd.push_back(acc);
    }
  expectNear(o5, wd, 1e-12);
  expectNear(o6, {sum / 12});
  int64_t isum = 0;
  std::vector<int64_t> imax(4, INT64_MIN);
  for (int k = 0; k < 12; ++k) {
    isum += i[k];
    imax[k % 4] = std::max(imax[k % 4], i[k]);
  }
  EXPECT_EQ(o7[0], isum);
  EXPECT_EQ(o8.data, imax);
  expectNear(o9, {0.25});
  expectNear(o10, {0, 0, 0, 0});
}

TEST_F(JitTest, HalfSumsAndMatmulsAccumulateInF32) {
  // 4096 ones: an f16 accumulator would stop at 2048 (2048 + 1 rounds to
  // 2048); torch accumulates in f32 and so must kiln.
  Compiled c(R"mlir(
    func.func @forward(%x: tensor<1x4096xf16>, %y: tensor<4096x1xf16>, %b: tensor<4096xbf16>) -> (tensor<1xf16>, tensor<1x1xf16>, tensor<bf16>, tensor<1xf16>) {
      %0 = kiln.sum %x {dims = array<i64: 1>} : tensor<1x4096xf16> -> tensor<1xf16>
      %1 = kiln.matmul %x, %y : tensor<1x4096xf16>, tensor<4096x1xf16>
      %2 = kiln.sum %b {dims = array<i64: 0>} : tensor<4096xbf16> -> tensor<bf16>
      %3 = kiln.mean %x {dims = array<i64: 1>} : tensor<1x4096xf16> -> tensor<1xf16>
      return %0, %1, %2, %3 : tensor<1xf16>, tensor<1x1xf16>, tensor<bf16>, tensor<1xf16>
    })mlir");
  ASSERT_COMPILED(c);
  Buf<uint16_t> x({1, 4096}, floatToHalf(1.0f)), y({4096, 1}, floatToHalf(1.0f));
  Buf<uint16_t> b({4096}, 0x3f80); // bf16 1.0
  Buf<uint16_t> o0({1}), o1({1, 1}), o2({}), o3({1});
  c({&x.desc, &y.desc, &b.desc, &o0.desc, &o1.desc, &o2.desc, &o3.desc});
  EXPECT_EQ(halfToFloat(o0[0]), 4096.0f);
  EXPECT_EQ(halfToFloat(o1[0]), 4096.0f);
  EXPECT_EQ(o2[0], 0x4580); // bf16 4096
  EXPECT_EQ(halfToFloat(o3[0]), 1.0f);
}

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
