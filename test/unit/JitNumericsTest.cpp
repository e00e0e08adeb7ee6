//===- JitNumericsTest.cpp - CPU JIT numerics and shapes ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Dynamic dims, accuracy of transcendental functions, NaN propagation,
// row-fused reductions, f16/bf16/f64/integer/empty tensors and f32
// accumulation of half-precision sums and matmuls.
//===----------------------------------------------------------------------===//
#include "JitTestUtils.h"

namespace kiln::test {
namespace {

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

} // namespace
} // namespace kiln::test
