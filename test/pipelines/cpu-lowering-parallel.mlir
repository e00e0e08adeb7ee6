// RUN: kiln-opt %s -split-input-file -kiln-cpu-lowering | FileCheck %s

// Tests that a big elementwise graph reaches the LLVM dialect as one OpenMP
// work-sharing loop over its leading dims (kiln-cpu-parallelize-loops, then
// convert-scf-to-openmp); the parallel body's alloca scope is inlined.
// CHECK-LABEL: llvm.func @big
// CHECK:       omp.parallel {
// CHECK-NEXT:    omp.wsloop {
// CHECK-NEXT:      omp.loop_nest (%{{.*}}, %{{.*}}) : i64
// CHECK-NOT:   memref.alloca_scope
func.func @big(%x: tensor<8x512x1024xf32>) -> tensor<8x512x1024xf32> {
  %0 = kiln.sin %x : tensor<8x512x1024xf32>
  %1 = kiln.add %0, %x : tensor<8x512x1024xf32>, tensor<8x512x1024xf32>
  return %1 : tensor<8x512x1024xf32>
}

// -----

// Tests that a small graph has no parallel region at all.
// CHECK-LABEL: llvm.func @negative_small
// CHECK-NOT:   omp.parallel
func.func @negative_small(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.sin %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
