// RUN: kiln-translate --kiln-to-cuda --collect-unsupported %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// Tests that with --collect-unsupported an op without a kernel (a slice,
// tensor.extract_slice) is listed with its location and reason, its result
// gets a buffer, and the relu that reads it is still emitted.

// ERR: unsupported: @slice_relu: tensor.extract_slice at {{.*}}collect-unsupported.mlir{{"?}}:[[@LINE+6]]:8{{\)?}}: CUDA emitter: 'tensor.extract_slice' is not supported yet
// CHECK-LABEL: func @slice_relu: 1 kernel(s), 1 other step(s)
// CHECK:   [[S:buf[0-9]+]]: float[8x4], 128 bytes, temporary
// CHECK: unsupported tensor.extract_slice ({{.*}}) -> ([[S]])
// CHECK-NEXT: slice_relu_k0<<<1, 256>>>([[S]], {{buf[0-9]+}})
func.func @slice_relu(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %0 = kiln.slice %x {end = array<i64: 8, 6>, start = array<i64: 0, 2>, step = array<i64: 1, 1>} : tensor<8x16xf32> -> tensor<8x4xf32>
  %1 = kiln.relu %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
