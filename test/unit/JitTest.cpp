//===- JitTest.cpp - the CPU JIT end to end -------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Compiles small kiln modules with compileForCpu, runs them on real buffers
// and compares with references computed in double precision: matmuls,
// fusion, softmax/layer_norm, reductions, casts, shape ops, strided copies,
// errors with locations, debug folders.
//===----------------------------------------------------------------------===//
#include "JitTestUtils.h"

#include <filesystem>

namespace kiln::test {
namespace {

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
  // Files are numbered in pipeline order; found by pass name so a pass
  // added before it does not break the test.
  std::string linalg;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    if (entry.path().filename().string().find("-kiln-convert-to-linalg.mlir") != std::string::npos)
      linalg = read(entry.path().string());
  EXPECT_NE(linalg.find("linalg.generic"), std::string::npos);
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

} // namespace
} // namespace kiln::test
