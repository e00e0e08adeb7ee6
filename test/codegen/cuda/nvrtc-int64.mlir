// RUN: kiln-translate --kiln-to-cuda %s --nvrtc-arch=80,90 2>&1 >/dev/null | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s --check-prefix=SRC
// REQUIRES: nvrtc

// Tests that i64 max reductions (init INT64_MIN, which has no literal of
// its own type in C++: `-9223372036854775808LL` negates an unsigned
// literal) compile with NVRTC, as a row reduction and as a reduction over
// all dims; the init is recognized as the identity and not combined again.

// CHECK-LABEL: nvrtc {{[0-9.]+}}: sm_80 ok, 2 kernel(s)
// CHECK: nvrtc {{[0-9.]+}}: sm_90 ok, 2 kernel(s)
// SRC-LABEL: func @amax_i64
// SRC: long long acc = (-9223372036854775807LL - 1);
// SRC: out0[d0] = acc;
// SRC-NOT: -9223372036854775808LL
func.func @amax_i64(%x: tensor<3x4xi64>) -> tensor<3xi64> {
  %0 = kiln.max %x {dims = array<i64: 1>} : tensor<3x4xi64> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

func.func @amax_all_i64(%x: tensor<3x4xi64>) -> tensor<i64> {
  %0 = kiln.max %x {dims = array<i64: 0, 1>} : tensor<3x4xi64> -> tensor<i64>
  return %0 : tensor<i64>
}
