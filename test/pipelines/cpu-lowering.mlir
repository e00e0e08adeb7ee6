// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-optimize,kiln-cpu-lowering)' | FileCheck %s

// Tests that an F.linear + gelu + softmax graph lowers all the way to the
// LLVM dialect: a C-interface entry taking the output buffer, the matmul as
// a BLAS call, polynomial math (fma, no libm calls), softmax's per-row
// buffers (max, exp row, sum) on the stack, the one heap intermediate (the
// GEMM result, the call's memory-planning arena, allocated at its first use
// by kiln-cpu-free-early) freed, and nothing left of kiln, linalg,
// memref or math.
// CHECK-NOT: kiln.
// CHECK-NOT: linalg.
// CHECK-DAG: llvm.func @free(!llvm.ptr)
// CHECK-DAG: llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @_mlir_ciface_kiln_blas_sgemm(!llvm.ptr, !llvm.ptr, !llvm.ptr, i32, f32)
// CHECK-LABEL: llvm.func @forward
// CHECK-NOT: llvm.call @malloc
// CHECK-COUNT-3: llvm.alloca
// CHECK: llvm.call @malloc
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.call @kiln_blas_sgemm
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.intr.fma
// CHECK: llvm.intr.maximum
// CHECK: llvm.call @free
// CHECK-NOT: llvm.call @free
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_forward
// CHECK-SAME: (%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias})
// CHECK-NOT: math.
// CHECK-NOT: memref.
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %wt = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %m = kiln.matmul %x, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  %a = kiln.add %m, %b : tensor<4x16xf32>, tensor<16xf32>
  %g = kiln.gelu %a : tensor<4x16xf32>
  %s = kiln.softmax %g {dim = 1 : i64} : tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// Tests that a pure elementwise chain fuses into one loop nest writing
// straight into the caller's buffer: no allocation at all.
// CHECK-LABEL: llvm.func @forward
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.intr.maximum
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.return
func.func @forward(%x: tensor<64x32xf32>, %y: tensor<32xf32>) -> tensor<64x32xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %0 = kiln.mul %x, %two : tensor<64x32xf32>, tensor<f32>
  %1 = kiln.add %0, %y : tensor<64x32xf32>, tensor<32xf32>
  %2 = kiln.relu %1 : tensor<64x32xf32>
  return %2 : tensor<64x32xf32>
}

// -----

// Tests that f64 math without a polynomial approximation becomes a libm
// call while integer arithmetic and casts lower inline.
// CHECK-DAG: llvm.func @erf(f64) -> f64
// CHECK-LABEL: llvm.func @forward
// CHECK: llvm.call @erf
// CHECK: llvm.fptosi
// CHECK: llvm.add
// CHECK: llvm.sitofp
func.func @forward(%x: tensor<8xf64>, %a: tensor<4x4xf32>) -> (tensor<8xf64>, tensor<4x4xf32>) {
  %0 = kiln.erf %x : tensor<8xf64>
  %ai = kiln.cast %a : tensor<4x4xf32> -> tensor<4x4xi32>
  %c = kiln.constant dense<1> : tensor<4x4xi32>
  %s = kiln.add %ai, %c : tensor<4x4xi32>, tensor<4x4xi32>
  %f = kiln.cast %s : tensor<4x4xi32> -> tensor<4x4xf32>
  return %0, %f : tensor<8xf64>, tensor<4x4xf32>
}
