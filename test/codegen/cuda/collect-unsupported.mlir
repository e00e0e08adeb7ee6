// RUN: kiln-translate --kiln-to-cuda --collect-unsupported %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// Tests that with --collect-unsupported an op without a kernel (a column
// reduction) is listed with its location and reason, its result gets a
// buffer, and the relu that reads it is still emitted.

// ERR: unsupported: @col_sum_relu: linalg.generic at {{.*}}collect-unsupported.mlir{{"?}}:[[@LINE+6]]:8{{\)?}}: CUDA emitter: only all-parallel generics and row reductions over the innermost dim are supported
// CHECK-LABEL: func @col_sum_relu: 1 kernel(s), 1 other step(s)
// CHECK:   [[SUM:buf[0-9]+]]: float[16], 64 bytes, temporary
// CHECK: unsupported linalg.generic ({{.*}}) -> ([[SUM]])
// CHECK-NEXT: col_sum_relu_k0<<<1, 256>>>([[SUM]], {{buf[0-9]+}})
func.func @col_sum_relu(%x: tensor<8x16xf32>) -> tensor<16xf32> {
  %0 = kiln.sum %x {dims = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  %1 = kiln.relu %0 : tensor<16xf32>
  return %1 : tensor<16xf32>
}
