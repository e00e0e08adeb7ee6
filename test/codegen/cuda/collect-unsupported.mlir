// RUN: kiln-translate --kiln-to-cuda --collect-unsupported %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// Tests that with --collect-unsupported an op without a kernel (argmax: a
// reduction with two outputs, value and index) is listed with its location
// and reason, its results get buffers, and the cast that reads the index
// is still emitted.

// ERR: unsupported: @argmax_cast: linalg.generic at {{.*}}collect-unsupported.mlir{{"?}}:[[@LINE+7]]:8{{\)?}}: CUDA emitter: a reduction with several outputs is not supported
// CHECK-LABEL: func @argmax_cast: 1 kernel(s), 1 other step(s)
// CHECK:   [[V:buf[0-9]+]]: float[8], 32 bytes, temporary
// CHECK:   [[I:buf[0-9]+]]: long long[8], 64 bytes, temporary
// CHECK: unsupported linalg.generic ({{.*}}) -> ([[V]], [[I]])
// CHECK-NEXT: argmax_cast_k0<<<1, 256>>>([[I]], {{buf[0-9]+}})
func.func @argmax_cast(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %0 = kiln.argmax %x {dim = 1 : i64} : tensor<8x16xf32> -> tensor<8xi64>
  %1 = kiln.cast %0 : tensor<8xi64> -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
