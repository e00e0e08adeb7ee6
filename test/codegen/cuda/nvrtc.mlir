// RUN: kiln-translate --kiln-to-cuda %s --nvrtc-arch=80,90 -o /dev/null 2>&1 | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda %s --nvrtc-arch=90 --nvrtc-ptx -o /dev/null 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: kiln-translate --kiln-to-cuda %s --no-row-fusion --nvrtc-arch=80,90 -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNFUSED
// REQUIRES: nvrtc

// Tests that the emitted source of a mixed module (pointwise with
// broadcasting, a softmax and a bf16 reduction) compiles with NVRTC to
// cubins for sm_80 and sm_90 and to PTX (no GPU needed): one kernel each
// (softmax and the bf16 sum with its rounding are row groups).

// CHECK-LABEL: nvrtc {{[0-9.]+}}: sm_80 ok, 3 kernel(s), {{[0-9]+}} bytes of cubin
// CHECK: nvrtc {{[0-9.]+}}: sm_90 ok, 3 kernel(s), {{[0-9]+}} bytes of cubin
// PTX-LABEL: nvrtc {{[0-9.]+}}: sm_90 ok, 3 kernel(s), {{[0-9]+}} bytes of PTX
// UNFUSED-LABEL: nvrtc {{[0-9.]+}}: sm_80 ok, 7 kernel(s)
// UNFUSED: nvrtc {{[0-9.]+}}: sm_90 ok, 7 kernel(s)
func.func @bias_gelu(%x: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<64x128xf32> {
  %0 = kiln.add %x, %b : tensor<64x128xf32>, tensor<128xf32>
  %1 = kiln.gelu %0 : tensor<64x128xf32>
  return %1 : tensor<64x128xf32>
}

func.func @softmax(%x: tensor<32x1000xf32>) -> tensor<32x1000xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<32x1000xf32>
  return %0 : tensor<32x1000xf32>
}

func.func @sum_bf16(%x: tensor<16x4096xbf16>) -> tensor<16xbf16> {
  %0 = kiln.sum %x {dims = array<i64: 1>} : tensor<16x4096xbf16> -> tensor<16xbf16>
  return %0 : tensor<16xbf16>
}
