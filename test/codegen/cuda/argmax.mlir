// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// Tests that argmax / argmin (one linalg.generic with two outputs: the
// extreme so far and its index) become one kernel. Over the innermost dim
// (rows): one block per row, each thread folds its strided slice with the
// body, then a (value, index) tree merge in shared memory (NaN beats a
// number, else the greater / less value, ties to the lower index). The
// unused value output gets no buffer or store.

// CHECK-LABEL: func @argmax_rows: 1 kernel(s)
// CHECK:   [[I:buf[0-9]+]]: long long[8], 64 bytes, result 0
// CHECK-NOT: temporary
// CHECK: argmax_rows_k0<<<8, 32>>>(arg0, [[I]])
// CHECK: argmax_rows_k0: row argmax over 8x16: one block per row
// CHECK: argmax_rows_k0(const float *__restrict__ in0, long long *__restrict__ out1)
// CHECK: __shared__ float s_v[32];
// CHECK-NEXT: __shared__ long long s_i[32];
// CHECK: float acc0 = __int_as_float((int)0xff800000u);
// CHECK-NEXT: long long acc1 = 0LL;
// CHECK-NEXT: for (int d1 = threadIdx.x; d1 < 16; d1 += blockDim.x) {
// CHECK: const bool [[GT:v[0-9]+]] = (a0 > acc0);
// CHECK: acc0 = y0;
// CHECK-NEXT: acc1 = y1;
// CHECK-NEXT: }
// CHECK: if (bn ? (!an || ib < ia) : (!an && ((b > a) || (b == a && ib < ia)))) {
// CHECK: if (threadIdx.x == 0) {
// CHECK: out1[d0] = acc1;
func.func @argmax_rows(%x: tensor<8x16xf32>) -> tensor<8xi64> {
  %0 = kiln.argmax %x {dim = 1 : i64} : tensor<8x16xf32> -> tensor<8xi64>
  return %0 : tensor<8xi64>
}

// An integer argmin over rows: `b < a` in the merge, no NaN clause.
// CHECK-LABEL: func @argmin_rows_i32: 1 kernel(s)
// CHECK: argmin_rows_i32_k0: row argmin over 4x300
// CHECK: __launch_bounds__(128)
// CHECK: ((b < a) || (b == a && ib < ia))
func.func @argmin_rows_i32(%x: tensor<4x300xi32>) -> tensor<4xi64> {
  %0 = kiln.argmin %x {dim = 1 : i64} : tensor<4x300xi32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// Over other dims the reduction keeps one thread per output, folding in
// order (serial loops).
// A bf16 argmin over the outer dim (keepdim): columns, the value compared
// in float, the index stored through the kept dim's reshape.
// CHECK-LABEL: func @argmin_cols_bf16: 1 kernel(s)
// CHECK: argmin_cols_bf16_k0: reduction with 2 outputs over 6x1x10
// CHECK: float acc0 = __int_as_float(0x7f800000);
// CHECK: for (int d0 = 0; d0 < 6; ++d0) {
// CHECK: const float a0 = __bfloat162float(in0[d0 * 10 + d2]);
// CHECK: (a0 < acc0)
// CHECK: out1[d2] = acc1;
func.func @argmin_cols_bf16(%x: tensor<6x10xbf16>) -> tensor<1x10xi64> {
  %0 = kiln.argmin %x {dim = 0 : i64, keepdim = true} : tensor<6x10xbf16> -> tensor<1x10xi64>
  return %0 : tensor<1x10xi64>
}

// An index used by a later kernel (an int64 → f32 cast).
// CHECK-LABEL: func @argmax_cast: 2 kernel(s)
// CHECK: argmax_cast_k0<<<1, 256>>>(arg0, [[I:buf[0-9]+]])
// CHECK-NEXT: argmax_cast_k1<<<1, 256>>>([[I]], {{buf[0-9]+}})
func.func @argmax_cast(%x: tensor<3x4x5xf32>) -> tensor<3x5xf32> {
  %0 = kiln.argmax %x {dim = 1 : i64} : tensor<3x4x5xf32> -> tensor<3x5xi64>
  %1 = kiln.cast %0 : tensor<3x5xi64> -> tensor<3x5xf32>
  return %1 : tensor<3x5xf32>
}
