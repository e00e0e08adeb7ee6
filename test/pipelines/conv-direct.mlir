// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-optimize,func.func(kiln-convert-to-linalg{shared-lhs-gemm=true},canonicalize,cse,kiln-fuse-linalg-elementwise,canonicalize,cse),kiln-destination-outputs,eliminate-empty-tensors,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,func.func(kiln-cpu-fuse-rows),kiln-cpu-linalg-to-blas)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-optimize,kiln-cpu-lowering)' | FileCheck %s --check-prefix=LLVM

// The CPU lowering of convolutions without im2col (transforms/DecomposeNN.cpp),
// run through the CPU pipeline's stages up to the BLAS calls (the first RUN
// line spells out kiln-cpu-lowering's passes up to kiln-cpu-linalg-to-blas; the
// second runs the whole pipeline).

// Tests that a depthwise 3x3 stride-2 convolution is ONE loop nest (one
// linalg.generic reading 9 strided views of the padded input and 9 weight
// columns, writing the caller's output buffer); the only copies are those
// that pad the input, all into ONE buffer (the nested H and W padding
// concats are lowered as one: the input is copied once, plus the 4 zero
// borders); no GEMM is called.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: linalg.generic
// CHECK: memref.alloc() {{.*}} : memref<2x4x10x10xf32>
// CHECK-NOT: memref.alloc
// CHECK-COUNT-5: memref.copy
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {indexing_maps = [#map, #map1, #map, #map1, #map, #map1, #map, #map1, #map, #map1, #map, #map1, #map, #map1, #map, #map1, #map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%{{.*}} : memref<2x4x4x4xf32, strided<[400, 100, 20, 2]>>, memref<4x1x1xf32, strided<[9, 9, 3]>>,
// CHECK-SAME: outs(%arg2 : memref<2x4x4x4xf32>)
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.copy
// CHECK-NOT: kiln_blas
// CHECK: return
// LLVM-LABEL: llvm.func @depthwise
// LLVM-NOT: kiln_blas
// LLVM: llvm.return
func.func @depthwise(%x: tensor<2x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<2x4x4x4xf32> {
  %0 = kiln.conv2d %x, %w {groups = 4 : i64, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x4x4xf32>
  return %0 : tensor<2x4x4x4xf32>
}

// -----

// Tests that a batched 1x1 convolution is one batched BLAS call whose left
// operand is the [6, 4] weight viewed with batch stride 0 (not a copy per
// image), the right one the input as [2, 4, 25], writing the NCHW output
// buffer directly: no copy, no loop nest (kiln-cpu-fuse-rows leaves the
// fill + contraction alone: one call per image would be no better).
// CHECK-LABEL: func.func @pointwise
// CHECK-SAME: (%[[X:.*]]: memref<2x4x5x5xf32> {{.*}}, %[[W:.*]]: memref<6x4x1x1xf32> {{.*}}, %[[OUT:.*]]: memref<2x6x5x5xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg.generic
// CHECK-NOT: scf.for
// CHECK-DAG: %[[O3:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0], [1], [2, 3]] : memref<2x6x5x5xf32> into memref<2x6x25xf32>
// CHECK-DAG: %[[X3:.*]] = memref.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : memref<2x4x5x5xf32> into memref<2x4x25xf32>
// CHECK-DAG: %[[W2:.*]] = memref.collapse_shape %[[W]] {{\[}}[0], [1, 2, 3]] : memref<6x4x1x1xf32> into memref<6x4xf32>
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %[[SIZES:.*]]:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %[[W2]]
// CHECK: %[[WB:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [2, %[[SIZES]]#0, %[[SIZES]]#1], strides: [0, %[[STRIDES]]#0, %[[STRIDES]]#1]
// CHECK: %[[XC:.*]] = memref.cast %[[X3]]
// CHECK: %[[OC:.*]] = memref.cast %[[O3]]
// CHECK: call @kiln_blas_sgemm_batched(%[[WB]], %[[XC]], %[[OC]], %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.generic
// CHECK-NOT: scf.for
// CHECK-NOT: memref.copy
// CHECK: return
// LLVM-LABEL: llvm.func @pointwise
// LLVM: llvm.call @kiln_blas_sgemm_batched(
func.func @pointwise(%x: tensor<2x4x5x5xf32>, %w: tensor<6x4x1x1xf32>) -> tensor<2x6x5x5xf32> {
  %0 = kiln.conv2d %x, %w : tensor<2x4x5x5xf32>, tensor<6x4x1x1xf32> -> tensor<2x6x5x5xf32>
  return %0 : tensor<2x6x5x5xf32>
}
