// RUN: kiln-translate --kiln-to-cuda --collect-unsupported %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// Tests that with --collect-unsupported an op without a kernel (a call of
// another function) is listed with its location and reason, its result gets
// a buffer, and the kernel that reads it is still emitted.

// ERR: unsupported: @call_exp: func.call at {{.*}}collect-unsupported.mlir{{"?}}:[[@LINE+6]]:8{{\)?}}: CUDA emitter: 'func.call' is not supported yet
// CHECK-LABEL: func @call_exp: 1 kernel(s), 1 other step(s)
// CHECK:   [[R:buf[0-9]+]]: float[8], 32 bytes, temporary
// CHECK: unsupported func.call ({{.*}}) -> ([[R]])
// CHECK-NEXT: call_exp_k0<<<1, 256>>>([[R]], {{buf[0-9]+}})
func.func @call_exp(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = func.call @ext(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = kiln.exp %0 : tensor<8xf32>
  return %1 : tensor<8xf32>
}
func.func private @ext(tensor<8xf32>) -> tensor<8xf32>
